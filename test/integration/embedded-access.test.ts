import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { chmod, constants, copyFile, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { existingClusterDir, passwordFileOf, placeCluster, runningPostmaster } from '../../server/db/cluster-placement.ts';
import { openDatabase, socketUrl, startEmbeddedPostgres } from '../../server/db/embedded.ts';
import { sqlClient } from '../../server/db/sql.ts';
import { inheritedEnv, PROJECT_ROOT, runNode } from './child-process.ts';
import { until } from '../support/until.ts';

// Another OS user is only observable as root (CI runs as root).
const asRoot = process.getuid?.() === 0;
const CLI = path.join(PROJECT_ROOT, 'server', 'cli', 'mds.mjs');

/** The inodes of the TCP sockets in LISTEN state on this machine, IPv4 and IPv6. */
function tcpListenerInodes(): Set<string> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // st is the fourth field, 0A = LISTEN; the inode is the tenth.
      if (fields[3] === '0A') inodes.add(fields[9]);
    }
  }
  return inodes;
}

/** The socket inodes that the processes of a PostgreSQL server (the postmaster and its children) hold open. */
function socketInodesOf(postmasterPid: number): string[] {
  const pids = [
    postmasterPid,
    ...spawnSync('pgrep', ['-P', String(postmasterPid)], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter(Boolean)
      .map(Number),
  ];
  return pids.flatMap((pid) => {
    try {
      return readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
        const target = (() => {
          try {
            return readlinkSync(`/proc/${pid}/fd/${fd}`);
          } catch {
            return '';
          }
        })();
        const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
        return inode ? [inode] : [];
      });
    } catch {
      return [];
    }
  });
}

// What the other user tries, each attempt's outcome as an error code (or
// "connected"/"read"). `own` is the probe's folder, the parent of the
// service's data directory: reading it shows that no folder above keeps the
// user out, so the other refusals are the service's doing.
const PROBE = `
const net = require('node:net');
const fs = require('node:fs');
const [socketPath, passwordFile, dataDir] = process.argv.slice(2);
const attempt = (fn) => { try { return fn(); } catch (err) { return err.code ?? String(err); } };
const socket = new Promise((resolve) => {
  const s = net.connect(socketPath, () => { s.destroy(); resolve('connected'); });
  s.on('error', (err) => resolve(err.code));
});
socket.then((socketOutcome) => {
  process.stdout.write(JSON.stringify({
    own: attempt(() => (fs.readdirSync(__dirname), 'read')),
    socket: socketOutcome,
    password: attempt(() => (fs.readFileSync(passwordFile), 'read')),
    dataDir: attempt(() => (fs.readdirSync(dataDir), 'read')),
  }));
});
`;

/** Runs npm start's entry point with an embedded cluster under `dataDir`, plus `env`; resolves with its public URL once ready. */
async function startNpmStart(dataDir: string, env: Record<string, string> = {}) {
  const child = spawn(process.execPath, ['server/main.ts'], {
    cwd: PROJECT_ROOT,
    env: { ...inheritedEnv(), DATA_DIR: dataDir, PORT: '0', ADMIN_PORT: '0', DEMO_DATA: 'off', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const publicUrl = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const ready = output.split('\n').find((l) => l.includes('market-data-service ready'));
      if (ready) resolve(JSON.parse(ready).public);
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.once('close', (code) => reject(new Error(`npm start exited (${code}): ${output.slice(-2000)}`)));
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('close', () => resolve());
      child.kill('SIGTERM');
    });
  return { publicUrl, stop, output: () => output };
}

describe.runIf(asRoot)('embedded PostgreSQL: only the service’s own OS user can connect', () => {
  it('when npm start runs the embedded cluster, then the service, the CLI and the tests connect, and another OS user (nobody) cannot by any route', async () => {
    const parent = await mkdtemp(path.join(os.tmpdir(), 'mds-access-'));
    await chmod(parent, 0o755); // an open folder: the cluster stays beside the project's data
    const dataDir = path.join(parent, '.data');
    const service = await startNpmStart(dataDir);
    try {
      expect((await fetch(`${service.publicUrl}/readyz`)).status).toBe(200);

      // The CLI joins the running cluster.
      const created = await runNode([CLI, 'accounts', 'create', '--name', 'access test'], { cwd: parent, env: { DATA_DIR: dataDir } });
      expect(created.stderr).toBe('');
      expect(created.code).toBe(0);

      // So does a test, as the CLI does.
      const db = await openDatabase({ DATA_DIR: dataDir }, { create: false });
      const sql = sqlClient(db.url, { max: 1, onnotice: () => {} });
      try {
        const [row] = await sql<{ accounts: number; listen: string }[]>`
          select (select count(*)::int from accounts where name = 'access test') as accounts, current_setting('listen_addresses') as listen
        `;
        expect(row).toEqual({ accounts: 1, listen: '' });
      } finally {
        await sql.end();
      }

      const cluster = existingClusterDir(path.join(dataDir, 'pg'))!;
      const postmaster = runningPostmaster(cluster)!;
      expect(postmaster.socketDir).toBe(cluster);
      // No TCP route: none of the server's processes holds a listening TCP socket.
      const listening = tcpListenerInodes();
      expect(socketInodesOf(postmaster.pid).filter((inode) => listening.has(inode))).toEqual([]);

      // The Unix socket, the password and the cluster's files are out of the other user's reach.
      // The other user runs a copy of this node from the open folder: the
      // project's own may sit in a folder it cannot enter (a clone under a
      // 0700 home or mktemp -d folder), and that is not what is tested here.
      const probe = path.join(parent, 'probe.cjs');
      await writeFile(probe, PROBE, { mode: 0o644 });
      const node = path.join(parent, 'node');
      await copyFile(process.execPath, node, constants.COPYFILE_FICLONE);
      await chmod(node, 0o755);
      const socketPath = path.join(postmaster.socketDir, `.s.PGSQL.${postmaster.port}`);
      const run = spawnSync('runuser', ['-u', 'nobody', '--', node, probe, socketPath, passwordFileOf(path.join(dataDir, 'pg')), cluster], {
        encoding: 'utf8',
        cwd: '/',
      });
      expect(run.stderr).toBe('');
      expect(JSON.parse(run.stdout)).toEqual({ own: 'read', socket: 'EACCES', password: 'EACCES', dataDir: 'EACCES' });

      // And no fixed password works, even from a user who can reach the socket.
      const guessed = sqlClient(socketUrl(postmaster.socketDir, postmaster.port, 'embedded'), { max: 1, onnotice: () => {} });
      await expect(guessed`select 1`).rejects.toMatchObject({ code: '28P01' });
      await guessed.end();
    } finally {
      await service.stop();
      await rm(parent, { recursive: true, force: true });
    }
  }, 120_000);

  it('when a cluster has no kept password (an earlier version set a fixed one), then its next start sets a new random one, and the old one stops working', async () => {
    const parent = await mkdtemp(path.join(os.tmpdir(), 'mds-rekey-'));
    await chmod(parent, 0o755);
    const dir = path.join(parent, 'pg');
    try {
      let db = await startEmbeddedPostgres(dir, { persistent: true });
      const sql = sqlClient(db.url, { max: 1, onnotice: () => {} });
      await sql`alter role postgres password 'embedded'`;
      await sql.end();
      await db.stop();
      await unlink(passwordFileOf(dir));

      db = await startEmbeddedPostgres(dir, { persistent: true });
      try {
        const kept = readFileSync(passwordFileOf(dir), 'utf8').trim();
        expect(kept).toMatch(/^[A-Za-z0-9_-]{43}$/);
        const fresh = sqlClient(db.url, { max: 1, onnotice: () => {} });
        expect(await fresh`select 1 as one`).toEqual([{ one: 1 }]);
        await fresh.end();
        const old = sqlClient(db.url.replace(encodeURIComponent(kept), 'embedded'), { max: 1, onnotice: () => {} });
        await expect(old`select 1`).rejects.toMatchObject({ code: '28P01' });
        await old.end();
      } finally {
        await db.stop();
      }
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  }, 60_000);
});

// The account the cluster runs as when the service is root, and the shared
// account an earlier version ran it as (whose clusters are migrated).
const CLUSTER_ACCOUNT = 'mds-postgres';
const SHARED_ACCOUNT = 'postgres';

/** An OS account's ids, or null when the machine has no such account. */
function accountIds(name: string): { uid: number; gid: number } | null {
  const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  return uid.status === 0 && gid.status === 0 ? { uid: Number(uid.stdout), gid: Number(gid.stdout) } : null;
}

/** The shared postgres account's ids, created as an earlier version of the service created it when the machine lacks it. */
function sharedAccount(): { uid: number; gid: number } {
  if (!accountIds(SHARED_ACCOUNT)) {
    spawnSync('groupadd', ['-f', '--system', SHARED_ACCOUNT], { stdio: 'ignore' });
    spawnSync('useradd', ['--system', '--gid', SHARED_ACCOUNT, '--no-create-home', SHARED_ACCOUNT], { stdio: 'ignore' });
  }
  return accountIds(SHARED_ACCOUNT)!;
}

/** What an earlier version left: the cluster's files owned by the shared postgres account. */
function ownBySharedAccount(dataDir: string): void {
  const { uid, gid } = sharedAccount();
  const r = spawnSync('chown', ['-R', `${uid}:${gid}`, dataDir], { encoding: 'utf8' });
  expect(r.stderr).toBe('');
}

/** The real and effective uids of a process, from /proc/<pid>/status. */
function uidsOf(pid: number): number[] {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Uid:'))!;
  return line.split(/\s+/).slice(1, 3).map(Number);
}

/** The owners of every entry under `dir`, `dir` included, without following links. */
function ownersUnder(dir: string): Set<number> {
  const owners = new Set<number>([lstatSync(dir).uid]);
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) owners.add(lstatSync(path.join(entry.parentPath, entry.name)).uid);
  return owners;
}

/** Whether the postmaster on `dataDir` says it is ready: postmaster.pid's eighth line is its status. */
function postmasterReady(dataDir: string): boolean {
  try {
    return readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[7]?.trim() === 'ready';
  } catch {
    return false;
  }
}

async function rowsOf(url: string): Promise<unknown[]> {
  const sql = sqlClient(url, { max: 1, onnotice: () => {} });
  try {
    return [...(await sql`select note from kept order by note`)];
  } finally {
    await sql.end();
  }
}

async function keepRows(url: string): Promise<void> {
  const sql = sqlClient(url, { max: 1, onnotice: () => {} });
  try {
    await sql`create table kept (note text not null)`;
    await sql`insert into kept values ('first'), ('second')`;
  } finally {
    await sql.end();
  }
}

// What the postmaster is given (docs/operations.md, "The embedded PostgreSQL"): nothing of the service's.
const POSTGRES_ENVIRONMENT = new Set(['PATH', 'LANG', 'LC_COLLATE', 'LC_CTYPE', 'LC_MESSAGES']);

describe.runIf(asRoot)('embedded PostgreSQL: its OS account and environment', () => {
  it('when npm start runs with secrets in its environment, then the postmaster’s environment holds none of them, and it runs as the dedicated mds-postgres account, not postgres', async () => {
    const parent = await mkdtemp(path.join(os.tmpdir(), 'mds-environ-'));
    await chmod(parent, 0o755);
    const dataDir = path.join(parent, '.data');
    const secrets = {
      ADMIN_TOKEN: `environ-admin-token-${randomUUID()}`,
      FRED_API_KEY: `environ-fred-key-${randomUUID()}`,
      FRED_BASE_URL: 'http://127.0.0.1:9/fred',
      MDS_ENVIRON_MARKER: `environ-marker-${randomUUID()}`,
    };
    const service = await startNpmStart(dataDir, secrets);
    try {
      const postmaster = runningPostmaster(existingClusterDir(path.join(dataDir, 'pg'))!)!;
      const environ = readFileSync(`/proc/${postmaster.pid}/environ`, 'utf8');
      const names = environ
        .split('\0')
        .filter(Boolean)
        .map((entry) => entry.slice(0, entry.indexOf('=')));
      expect(names.filter((name) => !POSTGRES_ENVIRONMENT.has(name))).toEqual([]);
      for (const value of [...Object.values(secrets), dataDir]) expect(environ).not.toContain(value);

      const account = accountIds(CLUSTER_ACCOUNT);
      expect(account).not.toBeNull();
      expect(uidsOf(postmaster.pid)).toEqual([account!.uid, account!.uid]);
      expect(account!.uid).not.toBe(accountIds(SHARED_ACCOUNT)?.uid);
      // A system account with a group of its own, no home and no login shell.
      const [, , uid, gid, , home, shell] = spawnSync('getent', ['passwd', CLUSTER_ACCOUNT], { encoding: 'utf8' }).stdout.trim().split(':');
      expect(Number(uid)).toBeLessThan(1000);
      expect(spawnSync('getent', ['group', gid], { encoding: 'utf8' }).stdout.split(':')[0]).toBe(CLUSTER_ACCOUNT);
      expect(existsSync(home)).toBe(false);
      expect(shell).toMatch(/\/nologin$/);
    } finally {
      await service.stop();
      await rm(parent, { recursive: true, force: true });
    }
  }, 120_000);

  it.each([
    { where: 'beside the project (an open folder)', mode: 0o755 },
    { where: 'under /var/lib/market-data-service (a private folder)', mode: 0o700 },
  ])(
    'when a cluster kept $where belongs to the shared postgres account (an earlier version), then its next start moves it to mds-postgres in one notice line, with its data',
    async ({ mode }) => {
      const parent = await mkdtemp(path.join(os.tmpdir(), 'mds-migrate-'));
      await chmod(parent, mode);
      const dir = path.join(parent, '.data', 'pg');
      try {
        let db = await startEmbeddedPostgres(dir, { persistent: true, onNotice: () => {} });
        await keepRows(db.url);
        await db.stop();
        ownBySharedAccount(db.dataDir);

        const notices: string[] = [];
        db = await startEmbeddedPostgres(dir, { persistent: true, onNotice: (m) => notices.push(m) });
        try {
          expect(await rowsOf(db.url)).toEqual([{ note: 'first' }, { note: 'second' }]);
          const account = accountIds(CLUSTER_ACCOUNT);
          expect(account).not.toBeNull();
          expect(ownersUnder(db.dataDir)).toEqual(new Set([account!.uid]));
          expect(uidsOf(runningPostmaster(db.dataDir)!.pid)).toEqual([account!.uid, account!.uid]);
          expect(notices).toHaveLength(1);
          expect(notices[0]).toContain(db.dataDir);
          expect(notices[0]).toContain(`'${SHARED_ACCOUNT}'`);
          expect(notices[0]).toContain(`'${CLUSTER_ACCOUNT}'`);
        } finally {
          await db.stop();
        }

        // Said once: the next start finds nothing to move.
        const later: string[] = [];
        db = await startEmbeddedPostgres(dir, { persistent: true, onNotice: (m) => later.push(m) });
        await db.stop();
        expect(later).toEqual([]);
      } finally {
        const linked = existingClusterDir(dir);
        await rm(parent, { recursive: true, force: true });
        if (linked && !linked.startsWith(parent)) await rm(path.dirname(linked), { recursive: true, force: true });
      }
    },
    90_000,
  );

  it('when another process runs the cluster as the shared postgres account, then it is joined as it is, and moved to mds-postgres at the first start after it stopped', async () => {
    const parent = await mkdtemp(path.join(os.tmpdir(), 'mds-migrate-running-'));
    await chmod(parent, 0o755);
    const DATA_DIR = path.join(parent, '.data');
    const dir = path.join(DATA_DIR, 'pg');
    let other: ReturnType<typeof spawn> | null = null;
    try {
      const first = await openDatabase({ DATA_DIR }, { create: true, onNotice: () => {} });
      await keepRows(first.url);
      await first.stop();
      // The binary the service runs, found the way the service finds it.
      const { postgres } = await placeCluster(dir, () => {});
      ownBySharedAccount(dir);

      // An earlier version's service, still up: its postmaster runs as postgres.
      other = spawn(
        'runuser',
        [
          '-u',
          SHARED_ACCOUNT,
          '--',
          postgres,
          '-D',
          dir,
          '-p',
          '5432',
          '-c',
          'listen_addresses=',
          '-c',
          `unix_socket_directories=${dir}`,
          '-c',
          'unix_socket_permissions=0700',
        ],
        { cwd: '/', stdio: 'ignore' },
      );
      await until(() => postmasterReady(dir), { timeoutMs: 30_000, what: 'the postmaster ready', intervalMs: 100 });
      const joined = await openDatabase({ DATA_DIR }, { create: false, onNotice: () => {} });
      expect(await rowsOf(joined.url)).toEqual([{ note: 'first' }, { note: 'second' }]);
      const shared = sharedAccount();
      expect(uidsOf(runningPostmaster(dir)!.pid)).toEqual([shared.uid, shared.uid]);
      expect(ownersUnder(dir)).toEqual(new Set([shared.uid]));

      const ended = new Promise((resolve) => other!.once('close', resolve));
      process.kill(runningPostmaster(dir)!.pid, 'SIGINT');
      await ended;
      other = null;

      const notices: string[] = [];
      const db = await openDatabase({ DATA_DIR }, { create: false, onNotice: (m) => notices.push(m) });
      try {
        expect(await rowsOf(db.url)).toEqual([{ note: 'first' }, { note: 'second' }]);
        const account = accountIds(CLUSTER_ACCOUNT);
        expect(account).not.toBeNull();
        expect(ownersUnder(dir)).toEqual(new Set([account!.uid]));
        expect(notices).toHaveLength(1);
      } finally {
        await db.stop();
      }
    } finally {
      if (other) {
        const pid = runningPostmaster(dir)?.pid;
        const ended = new Promise((resolve) => other!.once('close', resolve));
        if (pid) process.kill(pid, 'SIGINT');
        else other.kill('SIGINT');
        await ended;
      }
      await rm(parent, { recursive: true, force: true });
    }
  }, 120_000);
});
