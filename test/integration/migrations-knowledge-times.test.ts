import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrate } from '../../server/runtime/migrations.ts';
import { sqlClient } from '../../server/db/sql.ts';
import { ingest } from './fixtures.ts';
import { Service, startService } from './harness.ts';

// An installation left at migration 021 keeps its knowledge times through the
// rest. Up to 021 a bar revision carried two instants: as_of, the upload row's
// stated publication, which no read used, and known_at, which every asOf read
// filtered on; 022 makes known_at the one knowledge time, as_of. FX rates kept
// no revisions before 024, which starts fx_rate_revisions empty and keeps each
// stored rate's as_of as its knowledge time. The rows are written here as 021's
// schema holds them, on a database of this file's own, migrated to 021 and
// then the rest; the reads at each asOf are those the known_at rule gave.

const server = inject('databaseServerUrl');
const name = `mds_migrate_${process.pid}_${randomUUID().slice(0, 8)}`;
const url = new URL(server);
url.pathname = `/${name}`;
const admin = sqlClient(server, { max: 1, onnotice: () => {} });

const id = randomUUID();
let svc: Service;
let key: string;
let migratedOnwards: string[];

/** Pauses TimescaleDB's policy jobs, as the suite's template does (test/global-setup.ts): none compresses or refreshes under the test. */
async function pauseJobs(db: ReturnType<typeof sqlClient>) {
  const [{ tier }] = await db<{ tier: string }[]>`select tier from storage_tier`;
  if (tier === 'timescaledb') await db`select alter_job(job_id, scheduled => false) from timescaledb_information.jobs where job_id >= 1000`;
}

beforeAll(async () => {
  await admin`create database ${admin(name)}`;
  const at021 = await migrate(url.toString(), undefined, undefined, { through: 21 });
  expect(at021.applied.at(-1)?.version).toBe(21);
  const db = sqlClient(url.toString(), { max: 1, onnotice: () => {} });
  try {
    await pauseJobs(db);
    await db`
      insert into instruments (id, asset_class, display_name, exchange, region, quote_currency, quote_unit)
      values (${id}, 'equity', 'Migrated Company', 'XNYS', 'US', 'USD', 'USD per share')
    `;
    await db`insert into instrument_symbols (instrument_id, symbol, valid_from) values (${id}, 'MIGR', '1990-01-01')`;
    // 03-01: uploaded without knownAt on 03-02 at 09:00, so known from then, whatever the row's as_of said.
    // 03-02: 40.5 known at 22:00 that day, corrected to 45 with knownAt 2013-01-15 (version 1 kept the 40.5).
    // 03-05: known at 22:00 that day.
    await db`
      insert into daily_bars (
        instrument_id, bar_date, open_price, high_price, low_price, close_price, volume,
        quote_currency, quote_unit, source, as_of, known_at
      )
      values
        (${id}, '2012-03-01', 40, 41, 39, 40, 1000, 'USD', 'USD per share', 'vendor-file', '2012-03-01T22:00:00Z', '2012-03-02T09:00:00Z'),
        (${id}, '2012-03-02', 45, 46, 44, 45, 1000, 'USD', 'USD per share', 'vendor-file', '2013-01-15T00:00:00Z', '2013-01-15T00:00:00Z'),
        (${id}, '2012-03-05', 41, 42, 40, 41, 1000, 'USD', 'USD per share', 'vendor-file', '2012-03-05T20:30:00Z', '2012-03-05T22:00:00Z')
    `;
    await db`insert into action_set_versions (instrument_id, version) values (${id}, 1)`;
    await db`insert into daily_price_versions (instrument_id, version, made_at, prior_last_bar_date) values (${id}, 1, now(), '2012-03-05')`;
    await db`
      insert into daily_bar_revisions (
        instrument_id, bar_date, replaced_in_version, absent, open_price, high_price, low_price, close_price, volume,
        quote_currency, quote_unit, stale, price_basis, source, as_of, known_at
      )
      values (${id}, '2012-03-02', 1, false, 40.5, 41.5, 39.5, 40.5, 1000, 'USD', 'USD per share', false, 'raw', 'vendor-file', '2012-03-02T21:00:00Z', '2012-03-02T22:00:00Z')
    `;
    // The 14:31 minute: 41.0 known at 14:32:15, corrected to 44 with knownAt 2013-01-15.
    await db`
      insert into intraday_bars (
        instrument_id, bar_ts, open_price, high_price, low_price, close_price, volume, quote_currency, quote_unit, source, as_of, known_at
      )
      values
        (${id}, '2012-03-05T14:30:00Z', 40.9, 41.4, 40.4, 40.9, 10, 'USD', 'USD per share', 'vendor-file', '2012-03-05T14:31:00Z', '2012-03-05T14:31:15Z'),
        (${id}, '2012-03-05T14:31:00Z', 44, 44.5, 43.5, 44, 10, 'USD', 'USD per share', 'vendor-file', '2013-01-15T00:00:00Z', '2013-01-15T00:00:00Z')
    `;
    await db`
      insert into intraday_bar_revisions (
        instrument_id, bar_ts, known_at, open_price, high_price, low_price, close_price, volume, quote_currency, quote_unit, source, as_of
      )
      values (${id}, '2012-03-05T14:31:00Z', '2012-03-05T14:32:15Z', 41, 41.5, 40.5, 41, 10, 'USD', 'USD per share', 'vendor-file', '2012-03-05T14:32:00Z')
    `;
    await db`insert into fx_rates (base, quote, rate_date, rate, source, as_of) values ('USD', 'CHF', '2012-03-05', 0.9123, 'vendor-file', '2012-03-05T22:00:00Z')`;
  } finally {
    await db.end();
  }
  migratedOnwards = (await migrate(url.toString())).ranNow;
  const after = sqlClient(url.toString(), { max: 1, onnotice: () => {} });
  try {
    await pauseJobs(after);
  } finally {
    await after.end();
  }
  svc = await startService({ DATABASE_URL: url.toString() });
  key = await svc.keyWith(['prices:read', 'fx:read']);
});

afterAll(async () => {
  await svc?.stop();
  await admin`drop database if exists ${admin(name)} with (force)`;
  await admin.end();
});

const get = async (path: string) => {
  const res = await svc.get(path, key);
  expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
  return res.body;
};
const closes = (bars: { barDate: string; closePrice: number; asOf: string }[]) => bars.map((b) => [b.barDate, b.closePrice, b.asOf]);
const minutes = (bars: { barTimestamp: string; closePrice: number }[]) => bars.map((b) => [b.barTimestamp, b.closePrice]);

describe('a database left at migration 021, migrated to the latest', () => {
  it('runs every migration after 021, and each revision keeps its known_at as its one knowledge time, as_of', async () => {
    expect(migratedOnwards[0]).toMatch(/^022_/);
    expect(migratedOnwards.map((file) => Number(file.slice(0, 3)))).toEqual([...Array(migratedOnwards.length).keys()].map((k) => 22 + k));
    const daily = await svc.sql<
      { bar_date: string; as_of: Date }[]
    >`select bar_date::text, as_of from daily_bars where instrument_id = ${id} order by bar_date`;
    expect(daily.map((r) => [r.bar_date, r.as_of.toISOString()])).toEqual([
      ['2012-03-01', '2012-03-02T09:00:00.000Z'],
      ['2012-03-02', '2013-01-15T00:00:00.000Z'],
      ['2012-03-05', '2012-03-05T22:00:00.000Z'],
    ]);
    const [revision] = await svc.sql<{ as_of: Date }[]>`select as_of from daily_bar_revisions where instrument_id = ${id}`;
    expect(revision.as_of.toISOString()).toBe('2012-03-02T22:00:00.000Z');
    const [minute] = await svc.sql<{ as_of: Date }[]>`select as_of from intraday_bar_revisions where instrument_id = ${id}`;
    expect(minute.as_of.toISOString()).toBe('2012-03-05T14:32:15.000Z');
    const leftOver = await svc.sql`
      select table_name from information_schema.columns
      where table_schema = current_schema() and column_name = 'known_at'
        and table_name in ('daily_bars', 'daily_bar_revisions', 'intraday_bars', 'intraday_bar_revisions')
    `;
    expect(leftOver).toEqual([]);
    expect(await svc.sql`select 1 from fx_rate_revisions`).toEqual([]);
  });

  it('daily reads at each asOf give the bars known_at gave, each printed with its knowledge time', async () => {
    const range = `/v1/instruments/${id}/prices?from=2012-03-01&to=2012-03-09`;
    expect(closes((await get(`${range}&asOf=2012-03-05T22:00:00Z`)).data)).toEqual([
      ['2012-03-01', 40, '2012-03-02T09:00:00.000Z'],
      ['2012-03-02', 40.5, '2012-03-02T22:00:00.000Z'],
      ['2012-03-05', 41, '2012-03-05T22:00:00.000Z'],
    ]);
    // 03-01's row stated 22:00 that day, but was known only from its upload on 03-02 at 09:00.
    const early = await get(`${range}&asOf=2012-03-02T08:59:59.999Z`);
    expect(early.data).toEqual([]);
    expect(early.meta.emptyReason).toBe('not_yet_known');
    expect(closes((await get(`${range}&asOf=2012-03-05T21:59:59.999Z`)).data)).toEqual([
      ['2012-03-01', 40, '2012-03-02T09:00:00.000Z'],
      ['2012-03-02', 40.5, '2012-03-02T22:00:00.000Z'],
    ]);
    expect(closes((await get(range)).data)).toEqual([
      ['2012-03-01', 40, '2012-03-02T09:00:00.000Z'],
      ['2012-03-02', 45, '2013-01-15T00:00:00.000Z'],
      ['2012-03-05', 41, '2012-03-05T22:00:00.000Z'],
    ]);
  });

  it('1-minute reads at each asOf give the minutes known_at gave', async () => {
    const day = `/v1/instruments/${id}/intraday?from=2012-03-05&to=2012-03-05&interval=1min`;
    expect(minutes((await get(`${day}&asOf=2012-03-05T14:31:14.999Z`)).data)).toEqual([]);
    expect(minutes((await get(`${day}&asOf=2012-03-05T14:31:15Z`)).data)).toEqual([['2012-03-05T14:30:00.000Z', 40.9]]);
    expect(minutes((await get(`${day}&asOf=2012-03-05T14:32:15Z`)).data)).toEqual([
      ['2012-03-05T14:30:00.000Z', 40.9],
      ['2012-03-05T14:31:00.000Z', 41],
    ]);
    // Without asOf, the latest revisions, and meta.asOf the latest knowledge time among them.
    const latest = await get(day);
    expect(minutes(latest.data)).toEqual([
      ['2012-03-05T14:30:00.000Z', 40.9],
      ['2012-03-05T14:31:00.000Z', 44],
    ]);
    expect(latest.meta.asOf).toBe('2013-01-15T00:00:00.000Z');
  });

  it('an FX rate stored before 024 is known from its as_of, and a correction posted after keeps it for reads before the correction', async () => {
    const fx = (asOf: string) => svc.get(`/v1/fx/USD/CHF?date=2012-03-05${asOf ? `&asOf=${asOf}` : ''}`, key);
    const before = await fx('2012-03-05T21:59:59.999Z');
    expect(before.status).toBe(404);
    expect(before.body.error.details.asOf).toBeDefined();
    expect((await fx('2012-03-05T22:00:00Z')).body).toMatchObject({ data: { rate: 0.9123, asOf: '2012-03-05T22:00:00.000Z' } });

    await ingest(svc, '/fx', [{ base: 'USD', quote: 'CHF', rateDate: '2012-03-05', rate: 0.9133, source: 'vendor-file', asOf: '2012-03-07T09:00:00Z' }]);
    expect((await fx('2012-03-06')).body).toMatchObject({ data: { rate: 0.9123, asOf: '2012-03-05T22:00:00.000Z' } });
    expect((await fx('2012-03-07T09:00:00Z')).body).toMatchObject({ data: { rate: 0.9133, asOf: '2012-03-07T09:00:00.000Z' } });
    expect((await fx('')).body.data.rate).toBe(0.9133);
  });
});
