import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { sqlClient } from '../server/db/sql.ts';
import { EmbeddedPostgresError } from '../server/db/cluster-placement.ts';
import { startEmbeddedPostgres } from '../server/db/embedded.ts';
import { migrate } from '../server/runtime/migrations.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A database on the suite's server to run CREATE DATABASE from. */
    databaseServerUrl: string;
    /** The migrated database each test file's own database is cloned from (test/integration/file-database.ts). */
    templateDatabase: string;
  }
}

export const TIMESCALEDB_IMAGE = 'timescale/timescaledb:2.28.3-pg15';

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
 * Picks the suite's database server, in order: TEST_DATABASE_URL's; a
 * Testcontainers TimescaleDB when a Docker engine answers; an embedded plain
 * PostgreSQL. On it, one template database is created and migrated, once,
 * and the storage tier is printed; each integration test file then runs on a
 * clone of it (test/integration/file-database.ts), so files can run in
 * parallel without sharing rows. Everything this run created is dropped after it.
 */
export default async function setup(project: TestProject) {
  const cleanups: (() => Promise<unknown>)[] = [];
  let serverUrl: string;
  let source: string;
  if (process.env.TEST_DATABASE_URL) {
    serverUrl = process.env.TEST_DATABASE_URL;
    source = 'TEST_DATABASE_URL';
  } else if (await dockerAnswers()) {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    // The image docker-compose.yml pins: the release and PostgreSQL major CI tests (test/unit/ops-files.test.ts).
    const container = await new PostgreSqlContainer(TIMESCALEDB_IMAGE).start();
    serverUrl = container.getConnectionUri();
    source = `Testcontainers ${TIMESCALEDB_IMAGE}`;
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
    serverUrl = db.url;
    source = 'embedded PostgreSQL (no TEST_DATABASE_URL, no Docker engine)';
    cleanups.push(async () => {
      await db.stop();
      await rm(dir, { recursive: true, force: true });
    });
  }
  const admin = sqlClient(serverUrl, { max: 1, onnotice: () => {} });
  const template = `mds_template_${process.pid}_${Date.now()}`;
  await admin`create database ${admin(template)}`;
  cleanups.push(async () => {
    // Clones of a run that was cut short (a killed worker) are dropped too.
    const leftovers = await admin<{ datname: string }[]>`select datname from pg_database where datname like ${`mds_file_${process.pid}_%`}`;
    for (const { datname } of leftovers) await admin`drop database if exists ${admin(datname)} with (force)`;
    await admin`alter database ${admin(template)} is_template false`;
    await admin`drop database if exists ${admin(template)} with (force)`;
    await admin.end();
  });
  const templateUrl = new URL(serverUrl);
  templateUrl.pathname = `/${template}`;
  const report = await migrate(templateUrl.toString());
  if (report.tier === 'timescaledb') {
    // The policies (compression, continuous-aggregate refresh: job ids from
    // 1000) run on the scheduler's clock. Left on, each clone compressed its
    // old chunks whenever a job came due, and the FK constraints a compressed
    // chunk is given locked `instruments` meanwhile: a test waiting for that
    // table's lock ran out its 30 s (resilience.test.ts). The suite pauses
    // them; the tests that need compression or a refresh ask for it
    // (bar-knowledge.test.ts, and every intraday upload refreshes the rollups
    // it touched).
    const templateSql = sqlClient(templateUrl.toString(), { max: 1, onnotice: () => {} });
    await templateSql`select alter_job(job_id, scheduled => false) from timescaledb_information.jobs where job_id >= 1000`;
    await templateSql.end();
  }
  // A template must have no session while it is cloned: the migration's are
  // closed, and it admits no new one, TimescaleDB's background scheduler
  // included (it does not bypass allow_connections); the one it may already
  // have is ended.
  await admin`alter database ${admin(template)} with is_template true allow_connections false`;
  await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${template}`;
  process.stdout.write(
    `\n[test database] ${source}\n[test database] storage tier: ${report.tier}${report.timescaledbVersion ? ` (timescaledb ${report.timescaledbVersion})` : ''}\n\n`,
  );
  project.provide('databaseServerUrl', serverUrl);
  project.provide('templateDatabase', template);
  return async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  };
}
