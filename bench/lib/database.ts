// The PostgreSQL server a run measures against: BENCH_DATABASE_URL's (loopback
// only) or a throwaway embedded cluster, with one fresh database per scenario.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { sqlClient } from '../../server/db/sql.ts';
import { startEmbeddedPostgres } from '../../server/db/embedded.ts';
import { log, onCleanup } from './harness.ts';

export interface DbServer {
  kind: 'embedded' | 'external';
  /** A maintenance URL (some existing database on the server). */
  url: string;
  /** A fresh database on the server, dropped by the returned drop(). */
  createDatabase(name: string): Promise<{ url: string; name: string; drop(): Promise<void> }>;
  stop(): Promise<void>;
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

/** Runs `fn` on a one-connection client of `url`, then closes it. */
async function withClient<T>(url: string, fn: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const client = sqlClient(url, { max: 1, onnotice: () => {} });
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

function assertLoopback(url: string) {
  const host = new URL(url).hostname;
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host)) {
    throw new Error(`BENCH_DATABASE_URL must point at loopback (127.0.0.1); got host ${host}`);
  }
}

/** BENCH_DATABASE_URL's server when set, else a throwaway embedded PostgreSQL. */
export async function openDbServer(): Promise<DbServer> {
  const external = process.env.BENCH_DATABASE_URL;
  let url: string;
  let kind: DbServer['kind'];
  let stopServer: () => Promise<void>;
  if (external) {
    assertLoopback(external);
    url = external;
    kind = 'external';
    stopServer = async () => {};
  } else {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mds-bench-pg-'));
    // As root the cluster runs as the postgres user, which must reach the directory.
    await chmod(dir, 0o755);
    log(`starting embedded PostgreSQL in ${dir}`);
    const db = await startEmbeddedPostgres(path.join(dir, 'pg'), { persistent: false });
    url = db.url;
    kind = 'embedded';
    stopServer = onCleanup('embedded postgres', async () => {
      await db.stop();
      await rm(dir, { recursive: true, force: true });
    });
  }
  return {
    kind,
    url,
    async createDatabase(name: string) {
      if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`bad database name ${name}`);
      await withClient(url, (sql) => sql.unsafe(`create database ${name}`));
      const drop = onCleanup(`database ${name}`, async () => {
        await withClient(url, (sql) => sql.unsafe(`drop database if exists ${name} with (force)`));
      });
      return { url: withDatabase(url, name), name, drop };
    },
    stop: stopServer,
  };
}

/** A postgres.js client configured like the service's (dates stay yyyy-mm-dd strings). */
export function benchSql(url: string, max = 2) {
  return sqlClient(url, {
    max,
    onnotice: () => {},
    types: {
      date: { to: 1082, from: [1082], serialize: (x: string) => x, parse: (x: string) => x },
    },
  });
}
