import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { chmod, constants, copyFile, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { existingClusterDir, passwordFileOf, runningPostmaster } from '../../server/db/cluster-placement.ts';
import { openDatabase, socketUrl, startEmbeddedPostgres } from '../../server/db/embedded.ts';
import { sqlClient } from '../../server/db/sql.ts';
import { inheritedEnv, PROJECT_ROOT, runNode } from './child-process.ts';

// Another OS user is only observable as root (CI runs as root).
const asRoot = process.getuid?.() === 0;
const CLI = path.join(PROJECT_ROOT, 'server', 'mds.mjs');

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

/** Runs npm start's entry point with an embedded cluster under `dataDir`; resolves with its public URL once ready. */
async function startNpmStart(dataDir: string) {
  const child = spawn(process.execPath, ['server/main.ts'], {
    cwd: PROJECT_ROOT,
    env: { ...inheritedEnv(), DATA_DIR: dataDir, PORT: '0', ADMIN_PORT: '0', DEMO_DATA: 'off', LOG_LEVEL: 'info' },
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
