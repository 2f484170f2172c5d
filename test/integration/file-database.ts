import { afterAll, inject } from 'vitest';
import { sqlClient } from '../../server/db/sql.ts';

// Each integration test file gets a database of its own, cloned from the
// suite's migrated template (test/global-setup.ts) before the file's code
// runs, and dropped after its last hook: files run in parallel without seeing
// each other's rows, and none repeats the migrations. Run as a setup file
// (test/vitest.config.ts), so the clone exists before any test module loads.

const server = inject('databaseServerUrl');
const name = `mds_file_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
const template = inject('templateDatabase');
const admin = sqlClient(server, { max: 1, onnotice: () => {} });
// A clone needs the template without sessions. None is admitted any more
// (test/global-setup.ts), but a session that got in first, such as a
// TimescaleDB scheduler starting as the template was sealed, is ended and the
// clone tried again.
const SOURCE_IN_USE = '55006';
for (let attempt = 1; ; attempt++) {
  try {
    await admin`create database ${admin(name)} template ${admin(template)}`;
    break;
  } catch (err) {
    if ((err as { code?: string }).code !== SOURCE_IN_USE || attempt === 5) throw err;
    await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${template}`;
  }
}

const url = new URL(server);
url.pathname = `/${name}`;

/** This test file's database. */
export const fileDatabaseUrl = url.toString();

afterAll(async () => {
  await admin`drop database if exists ${admin(name)} with (force)`;
  await admin.end();
});
