import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyInto } from '../../server/ingest/repository.ts';
import { Service, startService } from './harness.ts';
import { createInstrument, dailyBar, weekdays } from './fixtures.ts';

// The batch ingest path at sizes that span several COPY batches (the first is
// written at 1 MiB of COPY text, about 7,000 daily bars, each next at twice
// the size of the one before, up to 16 MiB), so the
// straight-COPY path, its fallback to the staged upsert, and the checks made
// while streaming are all exercised against the real database.

let svc: Service;
beforeAll(async () => {
  svc = await startService();
});
afterAll(() => svc.stop());

const CSV_COLUMNS = ['instrumentId', 'barDate', 'openPrice', 'highPrice', 'lowPrice', 'closePrice', 'volume', 'quoteCurrency', 'quoteUnit', 'source', 'asOf'];
// Past days only: a bar is not known before its session closes.
const DAYS = weekdays('1980-01-01', '2019-12-31'); // 10,436 weekdays

function csvOf(rows: Record<string, unknown>[]): string {
  return [CSV_COLUMNS.join(','), ...rows.map((r) => CSV_COLUMNS.map((c) => (r[c] === null ? '' : String(r[c]))).join(','))].join('\n');
}

/** Bars for `ids` over the first `days` weekdays; close = base + day index. */
function bars(ids: string[], days: number, base = 100) {
  return ids.flatMap((id) => DAYS.slice(0, days).map((barDate, i) => dailyBar(id, { barDate, close: base + i })));
}

const postCsv = (rows: Record<string, unknown>[]) => svc.admin('POST', '/bars/daily', csvOf(rows), 'text/csv');
const stored = async (ids: string[]) =>
  (await svc.sql`select count(*)::int as n, sum(close_price)::float8 as total from daily_bars where instrument_id in ${svc.sql(ids)}`)[0];

/** One upload after another: six at once would queue behind INGEST_MAX_CONCURRENT (4) and, on a busy machine, outwait its one-second slot deadline. */
async function createInstruments(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await createInstrument(svc)).id);
  return ids;
}

describe('batch ingest across several COPY batches', () => {
  it('when a large upload is new, then partly stored, then corrected, then counts are exact and the stored bars match each time', async () => {
    const ids = await createInstruments(6);
    const first = bars(ids.slice(0, 4), 10_000); // 40,000 new rows: copied straight in
    let res = await postCsv(first);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ rows: 40_000, inserted: 40_000, updated: 0, unchanged: 0 });

    // 60,000 rows: the first 40,000 are stored already (their batches are not
    // appends, so they go through staging), 100 of them corrected, the rest new.
    const second = bars(ids, 10_000);
    for (let i = 5_000; i < 5_100; i++) second[i].closePrice += 0.5;
    for (let i = 5_000; i < 5_100; i++) second[i].highPrice += 0.5;
    res = await postCsv(second);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ rows: 60_000, inserted: 20_000, updated: 100, unchanged: 39_900 });

    const expectedTotal = second.reduce((n, r) => n + r.closePrice, 0);
    const after = await stored(ids);
    expect(after.n).toBe(60_000);
    expect(after.total).toBeCloseTo(expectedTotal, 6);
  });

  it('when a bad row, a repeated key or an unknown instrument comes after whole batches were written, then 400 names it and nothing is stored', async () => {
    const ids = await createInstruments(4);
    const rows = bars(ids, 10_000);
    const lastRow = rows.length - 1;

    const badValue = rows.map((r) => ({ ...r }));
    badValue[lastRow].closePrice = -1 as never;
    let res = await postCsv(badValue);
    expect(res.status).toBe(400);
    expect(res.body.error.details[`rows[${lastRow}].closePrice`]).toEqual(['must be a number greater than 0; received -1']);
    expect(Object.keys(res.body.error.details).every((k) => k.startsWith(`rows[${lastRow}].`))).toBe(true);

    const repeated = [...rows, { ...rows[123] }];
    res = await postCsv(repeated);
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual({ [`rows[${rows.length}].barDate`]: ['duplicates an earlier row of this batch'] });

    const unknown = [...rows, dailyBar(randomUUID(), { barDate: '2020-01-02', close: 5 })];
    res = await postCsv(unknown);
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual({ [`rows[${rows.length}].instrumentId`]: ['unknown instrument'] });

    expect((await stored(ids)).n).toBe(0);
  });

  it('when text holds a NUL character, then the row is refused by name rather than sent to COPY', async () => {
    const { id } = await createInstrument(svc);
    const res = await svc.admin('POST', '/bars/daily', [
      dailyBar(id, { barDate: '2020-01-02', close: 5 }),
      dailyBar(id, { barDate: '2020-01-03', close: 5 }, { source: 'a\u0000b' }),
    ]);
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual({ 'rows[1].source': ['must not contain NUL (U+0000)'] });
    expect((await stored([id])).n).toBe(0);
  });

  it('when anything tries to delete an instrument, then the database refuses (bars rely on instruments never disappearing)', async () => {
    const { id } = await createInstrument(svc);
    await expect(svc.sql`delete from instruments where id = ${id}`).rejects.toMatchObject({ code: '23001' });
    await expect(svc.sql`truncate instruments cascade`).rejects.toMatchObject({ code: '23001' });
  });
});

describe('copyInto', () => {
  it('when the server rejects COPY data after it has all arrived, then the promise rejects with the SQLSTATE instead of never settling', async () => {
    const table = `copy_probe_${randomUUID().replace(/-/g, '')}`;
    await svc.sql.unsafe(`create table ${table} (id integer primary key)`);
    try {
      await svc.sql.begin(async (tx) => {
        await copyInto(tx, table, '1\n2\n');
        // One small message holding a duplicate: the error can only arrive after the end of the data.
        await expect(tx.savepoint((s) => copyInto(s, table, '3\n1\n'))).rejects.toMatchObject({ code: '23505' });
        await expect(tx.savepoint((s) => copyInto(s, table, 'x\n'))).rejects.toMatchObject({ code: '22P02' });
        await copyInto(tx, table, '4\n');
      });
      expect((await svc.sql.unsafe(`select array_agg(id order by id) as ids from ${table}`))[0].ids).toEqual([1, 2, 4]);
    } finally {
      await svc.sql.unsafe(`drop table ${table}`);
    }
  });
});
