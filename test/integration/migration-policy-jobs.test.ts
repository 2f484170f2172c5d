import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { sqlClient } from '../../server/db/sql.ts';
import { migrate } from '../../server/runtime/migrations.ts';

// Full TimescaleDB's policy jobs are paused while migrations run (a refresh
// run racing 022's drop of its aggregate crashes TimescaleDB 2.28.3 and with
// it every session of the server; server/db/migrate.ts), and given back their
// schedule when the run ends: a job scheduled before the run is scheduled
// after it, one an operator paused stays paused, and the jobs a migration
// adds are scheduled.

const server = inject('databaseServerUrl');
const admin = sqlClient(server, { max: 1, onnotice: () => {} });
const name = `mds_policy_jobs_${process.pid}_${randomUUID().slice(0, 8)}`;
const url = new URL(server);
url.pathname = `/${name}`;
const db = sqlClient(url.toString(), { max: 1, onnotice: () => {} });

afterAll(async () => {
  await db.end();
  await admin`drop database if exists ${admin(name)} with (force)`;
  await admin.end();
});

type Job = { job_id: number; proc_name: string; hypertable_name: string; scheduled: boolean };
const jobs = () => db<Job[]>`select job_id, proc_name, hypertable_name, scheduled from timescaledb_information.jobs where job_id >= 1000 order by job_id`;

describe('migrations and TimescaleDB policy jobs', () => {
  it('when migrations run on full TimescaleDB, then the policy jobs keep the schedule they had, and those added are scheduled', async (ctx) => {
    await admin`create database ${admin(name)}`;
    const at021 = await migrate(url.toString(), undefined, undefined, { through: 21 });
    if (at021.tier !== 'timescaledb') ctx.skip();

    // sql/002: a refresh policy for each of the four intraday rollups, a compression policy for each bar table.
    const first = await jobs();
    expect(first.map((j) => j.proc_name).sort()).toEqual([
      'policy_compression',
      'policy_compression',
      'policy_refresh_continuous_aggregate',
      'policy_refresh_continuous_aggregate',
      'policy_refresh_continuous_aggregate',
      'policy_refresh_continuous_aggregate',
    ]);
    expect(first.every((j) => j.scheduled)).toBe(true);

    const paused = first.find((j) => j.proc_name === 'policy_compression' && j.hypertable_name === 'daily_bars');
    if (!paused) throw new Error('no compression policy on daily_bars');
    await db`select alter_job(${paused.job_id}, scheduled => false)`;

    const rest = await migrate(url.toString());
    expect(rest.ranNow[0]).toBe('022_one_knowledge_time.sql');

    // 022 drops the rollups with their policies; 025 adds them again.
    const after = await jobs();
    const refreshes = after.filter((j) => j.proc_name === 'policy_refresh_continuous_aggregate');
    expect(refreshes.map((j) => j.hypertable_name).sort()).toEqual(['intraday_bars_15min', 'intraday_bars_1hour', 'intraday_bars_30min', 'intraday_bars_5min']);
    expect(refreshes.every((j) => j.scheduled)).toBe(true);
    expect(after.filter((j) => j.proc_name === 'policy_compression').map((j) => [j.job_id, j.scheduled])).toEqual(
      first.filter((j) => j.proc_name === 'policy_compression').map((j) => [j.job_id, j.job_id !== paused.job_id]),
    );
  });
});
