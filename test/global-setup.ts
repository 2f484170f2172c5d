import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { sqlClient } from '../server/db/sql.ts';
import { EmbeddedPostgresError } from '../server/db/cluster-placement.ts';
import { startEmbeddedPostgres } from '../server/db/embedded.ts';
import { migrate } from '../server/db/migrate.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    databaseSource: string;
  }
}

async function dockerAnswers(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await Promise.race([getContainerRuntimeClient(), new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 5000))]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Picks the suite's database, in order: TEST_DATABASE_URL (a fresh database
 * is created on that server for this run and dropped after it); a Testcontainers
 * TimescaleDB when a Docker engine answers; an embedded plain PostgreSQL.
 * Migrations run once here, and the storage tier is printed.
 */
export default async function setup(project: TestProject) {
  const cleanups: (() => Promise<unknown>)[] = [];
  let url: string;
  let source: string;
  if (process.env.TEST_DATABASE_URL) {
    const admin = sqlClient(process.env.TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
    const name = `mds_test_${process.pid}_${Date.now()}`;
    await admin`create database ${admin(name)}`;
    const base = new URL(process.env.TEST_DATABASE_URL);
    base.pathname = `/${name}`;
    url = base.toString();
    source = 'TEST_DATABASE_URL';
    cleanups.push(async () => {
      await admin`drop database if exists ${admin(name)} with (force)`;
      await admin.end();
    });
  } else if (await dockerAnswers()) {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const container = await new PostgreSqlContainer('timescale/timescaledb:latest-pg17').start();
    url = container.getConnectionUri();
    source = 'Testcontainers timescale/timescaledb:latest-pg17';
    cleanups.push(() => container.stop());
  } else {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mds-test-pg-'));
    await chmod(dir, 0o755); // as root, the cluster runs as the postgres user
    const db = await startEmbeddedPostgres(path.join(dir, 'pg'), { persistent: false }).catch(async (err) => {
      if (!(err instanceof EmbeddedPostgresError)) throw err;
      await rm(dir, { recursive: true, force: true });
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    });
    url = db.url;
    source = 'embedded PostgreSQL (no TEST_DATABASE_URL, no Docker engine)';
    cleanups.push(async () => {
      await db.stop();
      await rm(dir, { recursive: true, force: true });
    });
  }
  const report = await migrate(url);
  process.stdout.write(
    `\n[test database] ${source}\n[test database] storage tier: ${report.tier}${report.timescaledbVersion ? ` (timescaledb ${report.timescaledbVersion})` : ''}\n\n`,
  );
  project.provide('databaseUrl', url);
  project.provide('databaseSource', source);
  return async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  };
}
