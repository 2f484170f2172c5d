import { migrate } from '../../server/runtime/migrations.ts';
import { createSql, type Sql } from '../../server/db/sql.ts';
import { databaseUrl } from './harness.ts';

/**
 * A schema of the suite's database for one test file, migrated like the real
 * one: plans read there are those of the real tables and indexes, and no
 * other test sees its rows. `name` labels the connections.
 */
export async function openScratchSchema(schema: string, name: string): Promise<Sql> {
  await withAdmin(name, (admin) => admin`create schema ${admin(schema)}`);
  const url = new URL(databaseUrl());
  url.searchParams.set('search_path', `${schema},public`);
  await migrate(url.toString());
  return createSql(url.toString(), { max: 1, name, statementTimeoutMs: 0 });
}

/** Closes the schema's connection and drops the schema with everything in it. */
export async function dropScratchSchema(schema: string, name: string, sql: Sql | undefined): Promise<void> {
  await sql?.end();
  await withAdmin(name, (admin) => admin`drop schema if exists ${admin(schema)} cascade`);
}

async function withAdmin(name: string, work: (admin: Sql) => PromiseLike<unknown>) {
  const admin = createSql(databaseUrl(), { max: 1, name: `${name}-admin`, statementTimeoutMs: 0 });
  try {
    await work(admin);
  } finally {
    await admin.end();
  }
}
