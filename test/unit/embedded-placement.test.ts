import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { CACHE_ROOT, CLUSTER_ACCOUNT, homeMarker, placeCluster } from '../../server/db/cluster-placement.ts';

// The decision is the OS's answer for the cluster's account (mds-postgres), so it is only observable as root.
const asRoot = process.getuid?.() === 0;

describe.skipIf(!asRoot)('embedded PostgreSQL placement as root', () => {
  it('when the data directory is under a folder the cluster account can enter, then the cluster stays there and nothing is announced', async () => {
    const open = await mkdtemp(path.join(os.tmpdir(), 'mds-place-open-'));
    await chmod(open, 0o755);
    const notices: string[] = [];
    try {
      const cluster = await placeCluster(path.join(open, 'data', 'pg'), (m) => notices.push(m));
      expect(cluster.dataDir).toBe(path.join(open, 'data', 'pg'));
      expect(notices.filter((n) => n.includes('cluster'))).toEqual([]);
    } finally {
      await rm(open, { recursive: true, force: true });
    }
  });

  it('when the data directory is under a 0700 folder, then the cluster moves to a directory outside it, owned by the account it runs as, and one line names the folder', async () => {
    const hidden = await mkdtemp(path.join(os.tmpdir(), 'mds-place-private-'));
    await chmod(hidden, 0o700);
    const notices: string[] = [];
    const dir = path.join(hidden, 'data', 'pg');
    try {
      const cluster = await placeCluster(dir, (m) => notices.push(m));
      try {
        expect(cluster.dataDir.startsWith(path.join(CACHE_ROOT, 'clusters') + path.sep)).toBe(true);
        expect(cluster.dataDir.startsWith(`${hidden}${path.sep}`)).toBe(false);
        expect((await stat(cluster.dataDir)).uid).toBe(Number(spawnSync('id', ['-u', CLUSTER_ACCOUNT], { encoding: 'utf8' }).stdout));
        expect(existsSync(dir)).toBe(false);
        expect(notices).toHaveLength(1);
        expect(notices[0]).toContain(`cannot reach ${hidden} (mode 0700), so it keeps the cluster for ${dir} in ${cluster.dataDir}`);
        // Once the cluster exists, its later starts say nothing (the CLI's stderr stays clean).
        await writeFile(path.join(cluster.dataDir, 'PG_VERSION'), '15\n');
        const later: string[] = [];
        expect((await placeCluster(dir, (m) => later.push(m))).dataDir).toBe(cluster.dataDir);
        expect(later).toEqual([]);
      } finally {
        await Promise.all(cluster.removeOnStop.map((p) => rm(p, { recursive: true, force: true })));
      }
    } finally {
      await rm(hidden, { recursive: true, force: true });
    }
  });

  it('when the data directory is removed (rm -rf .data), then the next start keeps a new cluster and removes the one that was kept for it', async () => {
    const hidden = await mkdtemp(path.join(os.tmpdir(), 'mds-place-reset-'));
    await chmod(hidden, 0o700);
    const dir = path.join(hidden, '.data', 'pg');
    try {
      const first = await placeCluster(dir, () => {});
      // What initdb would leave: the old cluster holds data.
      await writeFile(path.join(first.dataDir, 'PG_VERSION'), '15\n');
      expect(existsSync(homeMarker(dir))).toBe(true);
      await rm(path.join(hidden, '.data'), { recursive: true, force: true });

      const second = await placeCluster(dir, () => {});
      try {
        expect(second.dataDir).not.toBe(first.dataDir);
        expect(existsSync(first.dataDir)).toBe(false);
        expect(existsSync(path.join(second.dataDir, 'PG_VERSION'))).toBe(false);
      } finally {
        await Promise.all(second.removeOnStop.map((p) => rm(p, { recursive: true, force: true })));
      }
    } finally {
      await rm(hidden, { recursive: true, force: true });
    }
  });

  it('when an earlier version kept the cluster at a hash of the path, then it is adopted once: moved to a linked home with its data', async () => {
    const hidden = await mkdtemp(path.join(os.tmpdir(), 'mds-place-legacy-'));
    await chmod(hidden, 0o700);
    const dir = path.join(hidden, '.data', 'pg');
    const legacy = path.join(CACHE_ROOT, 'clusters', createHash('sha256').update(dir).digest('hex').slice(0, 16));
    try {
      await mkdir(path.join(legacy, 'pg'), { recursive: true });
      await writeFile(path.join(legacy, 'source'), `${dir}\n`);
      await writeFile(path.join(legacy, 'pg', 'PG_VERSION'), '15\n');
      const postgresUser = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout);
      await chown(path.join(legacy, 'pg'), postgresUser('-u'), postgresUser('-g'));
      const cluster = await placeCluster(dir, () => {});
      try {
        expect(existsSync(legacy)).toBe(false);
        expect(existsSync(path.join(cluster.dataDir, 'PG_VERSION'))).toBe(true);
        expect((await placeCluster(dir, () => {})).dataDir).toBe(cluster.dataDir);
      } finally {
        await Promise.all(cluster.removeOnStop.map((p) => rm(p, { recursive: true, force: true })));
      }
    } finally {
      await rm(legacy, { recursive: true, force: true });
      await rm(hidden, { recursive: true, force: true });
    }
  });
});
