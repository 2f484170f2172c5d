import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Service, startService } from './harness.ts';
import { createInstrument, dailyBar, ingest, minuteBar } from './fixtures.ts';

// Corrections as known at asOf (sql/019, docs/api.md "Point in time"): every
// revision of a bar carries the instant it became known, and a read with
// asOf=T gives each bar as known at T. The expected closes are the ones the
// test posted, picked by hand for each instant.

let svc: Service;
let key: string;
beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['prices:read']);
});
afterAll(() => svc.stop());

const closes = (body: { data: { closePrice: number }[] }) => body.data.map((b) => b.closePrice);

describe('daily bars as known at asOf', () => {
  let id: string;
  const window = 'from=2023-03-01&to=2023-03-03';
  const read = (query: string) => svc.get(`/v1/instruments/${id}/prices?${window}${query}`, key);

  beforeAll(async () => {
    ({ id } = await createInstrument(svc));
    // Each first revision known at the end of its day (the fixture's default).
    await ingest(svc, '/bars/daily', [
      dailyBar(id, { barDate: '2023-03-01', close: 100 }),
      dailyBar(id, { barDate: '2023-03-02', close: 101 }),
      dailyBar(id, { barDate: '2023-03-03', close: 102 }),
    ]);
    // 2023-03-02 corrected to 105, known from 2023-04-01T00:00Z (stated: a back-filled correction) ...
    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2023-03-02', close: 105 }, { knownAt: '2023-04-01T00:00:00.000Z' })]);
    // ... and again to 107, known when stored (no knownAt).
    const { knownAt: _stated, ...row } = dailyBar(id, { barDate: '2023-03-02', close: 107 });
    await ingest(svc, '/bars/daily', [row]);
  });

  it('without asOf gives the latest revision of each bar', async () => {
    const res = await read('');
    expect(res.status).toBe(200);
    expect(closes(res.body)).toEqual([100, 107, 102]);
  });

  it('with asOf gives each bar as known at that instant: before, at and after the stated correction', async () => {
    expect(closes((await read('&asOf=2023-03-15')).body)).toEqual([100, 101, 102]);
    expect(closes((await read('&asOf=2023-03-31T23:59:59.999Z')).body)).toEqual([100, 101, 102]);
    // A revision counts from the instant it became known, inclusive.
    expect(closes((await read('&asOf=2023-04-01T00:00:00Z')).body)).toEqual([100, 105, 102]);
    expect(closes((await read('&asOf=2024-01-01')).body)).toEqual([100, 105, 102]);
  });

  it('leaves out a bar not yet known at asOf', async () => {
    // A date means the end of that day: the bar of 03-02 is known then, the bar of 03-03 is not.
    expect(closes((await read('&asOf=2023-03-02')).body)).toEqual([100, 101]);
    expect(closes((await read('&asOf=2023-03-01T12:00:00Z')).body)).toEqual([]);
  });

  it('gives the same bars in CSV and in the bulk read', async () => {
    const csv = await read('&asOf=2023-03-15&format=csv');
    expect(csv.status).toBe(200);
    const lines = (csv.body as string).split('\r\n').filter((l) => l && !l.startsWith('#'));
    const closeAt = lines[0].split(',').indexOf('closePrice');
    expect(lines.slice(1).map((l) => Number(l.split(',')[closeAt]))).toEqual([100, 101, 102]);

    const bulk = await svc.get(`/v1/prices/bulk?instrumentIds=${id}&${window}&asOf=2023-03-15`, key);
    expect(bulk.status).toBe(200);
    expect(bulk.body.data[id].map((b: { closePrice: number }) => b.closePrice)).toEqual([100, 101, 102]);
    const bulkLater = await svc.get(`/v1/prices/bulk?instrumentIds=${id}&${window}&asOf=2024-01-01`, key);
    expect(bulkLater.body.data[id].map((b: { closePrice: number }) => b.closePrice)).toEqual([100, 105, 102]);
  });

  it('keeps actionSetVersion pinning as it was: each correction made a version, and asOf applies within it', async () => {
    // The first upload appended (no version); each correction made one: 1 holds 105, 2 holds 107.
    expect((await read('')).body.meta.actionSetVersion).toBe(2);
    expect(closes((await read('&actionSetVersion=0')).body)).toEqual([100, 101, 102]);
    expect(closes((await read('&actionSetVersion=1')).body)).toEqual([100, 105, 102]);
    expect(closes((await read('&actionSetVersion=1&asOf=2023-03-15')).body)).toEqual([100, 101, 102]);
    expect(closes((await read('&actionSetVersion=2&asOf=2023-04-02')).body)).toEqual([100, 105, 102]);
  });

  it('gives different ETags to different instants and the same ETag to the same read', async () => {
    const [a, b, c] = await Promise.all([read('&asOf=2023-03-15'), read('&asOf=2023-03-15'), read('&asOf=2024-01-01')]);
    expect(a.headers.get('etag')).toBe(b.headers.get('etag'));
    expect(a.headers.get('etag')).not.toBe(c.headers.get('etag'));
  });

  it('an unchanged re-post keeps the instant the values became known', async () => {
    const { knownAt: _stated, ...row } = dailyBar(id, { barDate: '2023-03-01', close: 100 });
    const res = await svc.admin('POST', '/bars/daily', [row]);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ rows: 1, inserted: 0, updated: 0, unchanged: 1 });
    expect(closes((await read('&asOf=2023-03-15')).body)).toEqual([100, 101, 102]);
  });
});

describe('the knowledge time an upload states', () => {
  it('is refused in the future, before the bar, or before the revision it would replace, and nothing is stored', async () => {
    const { id } = await createInstrument(svc);
    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2023-05-01', close: 50 }, { knownAt: '2023-06-01T00:00:00.000Z' })]);

    const future = await svc.admin('POST', '/bars/daily', [dailyBar(id, { barDate: '2023-05-02', close: 51 }, { knownAt: '2999-01-01T00:00:00.000Z' })]);
    expect(future.status).toBe(400);
    expect(future.body.error.details).toEqual({ 'rows[0].knownAt': ['must not be in the future'] });

    const beforeBar = await svc.admin('POST', '/bars/daily', [dailyBar(id, { barDate: '2023-05-02', close: 51 }, { knownAt: '2023-05-01T23:59:59.999Z' })]);
    expect(beforeBar.status).toBe(400);
    expect(beforeBar.body.error.details).toEqual({ 'rows[0].knownAt': ["must not precede the start of the bar's day"] });

    // A new bar on a later day and a correction stated known before the stored revision (2023-06-01), in one upload.
    const earlier = await svc.admin('POST', '/bars/daily', [
      dailyBar(id, { barDate: '2023-05-02', close: 51 }),
      dailyBar(id, { barDate: '2023-05-01', close: 55 }, { knownAt: '2023-05-20T00:00:00.000Z' }),
    ]);
    expect(earlier.status).toBe(400);
    expect(earlier.body.error.details.knownAt[0]).toContain('2023-05-20T00:00:00.000Z, before the stored revision');
    expect(earlier.body.error.details.knownAt[0]).toContain('2023-06-01T00:00:00.000Z');

    const after = await svc.get(`/v1/instruments/${id}/prices?from=2023-05-01&to=2023-05-31`, key);
    expect(closes(after.body)).toEqual([50]);
    expect(after.body.meta.actionSetVersion).toBe(0);
  });
});

describe('intraday bars as known at asOf', () => {
  let id: string;
  const read = (query: string) => svc.get(`/v1/instruments/${id}/intraday?from=2023-03-01&to=2023-03-01${query}`, key);

  beforeAll(async () => {
    ({ id } = await createInstrument(svc));
    // Each minute known when it ends.
    await ingest(svc, '/bars/intraday', [
      minuteBar(id, '2023-03-01T14:30:00Z', 10, { knownAt: '2023-03-01T14:31:00Z' }),
      minuteBar(id, '2023-03-01T14:31:00Z', 11, { knownAt: '2023-03-01T14:32:00Z' }),
      minuteBar(id, '2023-03-01T14:32:00Z', 12, { knownAt: '2023-03-01T14:33:00Z' }),
    ]);
    // The 14:31 minute corrected to 15, known the next day.
    await ingest(svc, '/bars/intraday', [minuteBar(id, '2023-03-01T14:31:00Z', 15, { knownAt: '2023-03-02T00:00:00Z' })]);
  });

  it('gives each 1-minute bar as known at asOf, and the latest without it', async () => {
    const latest = await read('&interval=1min');
    expect(latest.status).toBe(200);
    expect(closes(latest.body)).toEqual([10, 15, 12]);
    expect(latest.body.meta.readFrom).toBe('stored_minute_bars');

    const before = await read('&interval=1min&asOf=2023-03-01');
    expect(closes(before.body)).toEqual([10, 11, 12]);
    expect(before.body.meta).toMatchObject({ asOf: '2023-03-01', readFrom: 'minute_bars_known_at_asof' });
    expect(closes((await read('&interval=1min&asOf=2023-03-02T00:00:00Z')).body)).toEqual([10, 15, 12]);
    // Mid-session: only the minutes that had ended.
    expect(closes((await read('&interval=1min&asOf=2023-03-01T14:31:30Z')).body)).toEqual([10]);
  });

  it('rolls the minutes known at asOf up at read, as the stored rollup holds the latest', async () => {
    const stored = await read('&interval=1hour');
    expect(stored.body.meta.readFrom).toBe('stored_rollup');
    // One bucket, 14:00: open of the first minute, high and low over the minutes, close of the last, volume summed.
    expect(stored.body.data).toMatchObject([
      { barTimestamp: '2023-03-01T14:00:00.000Z', openPrice: 10, highPrice: 15.5, lowPrice: 9.5, closePrice: 12, volume: 30 },
    ]);

    const before = await read('&interval=1hour&asOf=2023-03-01');
    expect(before.body.meta.readFrom).toBe('minute_bars_known_at_asof');
    expect(before.body.data).toMatchObject([
      { barTimestamp: '2023-03-01T14:00:00.000Z', openPrice: 10, highPrice: 12.5, lowPrice: 9.5, closePrice: 12, volume: 30 },
    ]);
    const after = await read('&interval=1hour&asOf=2023-03-02');
    expect(after.body.data).toEqual(stored.body.data);
  });

  it('refuses a correction stated known before the minute it replaces', async () => {
    const res = await svc.admin('POST', '/bars/intraday', [minuteBar(id, '2023-03-01T14:32:00Z', 13, { knownAt: '2023-03-01T14:33:00Z' })]);
    // Same instant as the stored revision: allowed, the later upload is the later revision.
    expect(res.status).toBe(200);
    const early = await svc.admin('POST', '/bars/intraday', [minuteBar(id, '2023-03-01T14:32:00Z', 14, { knownAt: '2023-03-01T14:32:30Z' })]);
    expect(early.body.error.details).toEqual({ 'rows[0].knownAt': ["must not precede the end of the bar's minute"] });
    // The 14:31 minute stands at 15, known 2023-03-02: a revision stated known before that is refused.
    const refused = await svc.admin('POST', '/bars/intraday', [minuteBar(id, '2023-03-01T14:31:00Z', 16, { knownAt: '2023-03-01T15:00:00Z' })]);
    expect(refused.status).toBe(400);
    expect(refused.body.error.details.knownAt[0]).toContain('barTimestamp 2023-03-01T14:31:00.000Z states knownAt 2023-03-01T15:00:00.000Z');
    expect(closes((await read('&interval=1min')).body)).toEqual([10, 15, 13]);
    expect(closes((await read('&interval=1min&asOf=2023-03-01T14:40:00Z')).body)).toEqual([10, 11, 13]);
  });
});

describe('revisions of bars in compressed chunks (full TimescaleDB)', () => {
  // Production compresses daily chunks older than 3 years and minute chunks older than 30 days (sql/002). A
  // correction to a compressed bar must keep what it replaced and be read as known, as on any other chunk.
  it('keeps and reads the replaced revisions of daily and 1-minute bars whose chunks are compressed', async (ctx) => {
    const [{ tier }] = await svc.sql<{ tier: string }[]>`select tier from storage_tier`;
    if (tier !== 'timescaledb') return ctx.skip();
    const { id } = await createInstrument(svc);
    await ingest(svc, '/bars/daily', [
      dailyBar(id, { barDate: '2019-03-01', close: 100 }),
      dailyBar(id, { barDate: '2019-03-04', close: 101 }),
      dailyBar(id, { barDate: '2019-03-05', close: 102 }),
    ]);
    await ingest(svc, '/bars/intraday', [
      minuteBar(id, '2019-03-01T14:30:00Z', 10, { knownAt: '2019-03-01T14:31:00Z' }),
      minuteBar(id, '2019-03-01T14:31:00Z', 11, { knownAt: '2019-03-01T14:32:00Z' }),
    ]);
    await svc.sql`select compress_chunk(c, if_not_compressed => true) from show_chunks('daily_bars') c`;
    await svc.sql`select compress_chunk(c, if_not_compressed => true) from show_chunks('intraday_bars') c`;
    const [{ compressed }] = await svc.sql<{ compressed: number }[]>`
      select count(*)::int as compressed from timescaledb_information.chunks
      where hypertable_name in ('daily_bars', 'intraday_bars') and is_compressed and range_start <= '2019-03-01' and range_end > '2019-03-01'
    `;
    expect(compressed).toBe(2);

    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2019-03-04', close: 105 }, { knownAt: '2019-06-01T00:00:00.000Z' })]);
    await ingest(svc, '/bars/intraday', [minuteBar(id, '2019-03-01T14:31:00Z', 15, { knownAt: '2019-03-02T00:00:00Z' })]);
    const daily = (q: string) => svc.get(`/v1/instruments/${id}/prices?from=2019-03-01&to=2019-03-05${q}`, key);
    expect(closes((await daily('')).body)).toEqual([100, 105, 102]);
    expect(closes((await daily('&asOf=2019-05-01')).body)).toEqual([100, 101, 102]);
    expect(closes((await daily('&actionSetVersion=0')).body)).toEqual([100, 101, 102]);
    const unchanged = await svc.admin('POST', '/bars/daily', [dailyBar(id, { barDate: '2019-03-01', close: 100 })]);
    expect(unchanged.body.data).toMatchObject({ inserted: 0, updated: 0, unchanged: 1 });

    const intraday = (q: string) => svc.get(`/v1/instruments/${id}/intraday?from=2019-03-01&to=2019-03-01${q}`, key);
    expect(closes((await intraday('&interval=1min')).body)).toEqual([10, 15]);
    expect(closes((await intraday('&interval=1min&asOf=2019-03-01')).body)).toEqual([10, 11]);
    // The continuous aggregate, refreshed after the correction, and the minutes known before it, bucketed at read.
    expect((await intraday('&interval=1hour')).body.data).toMatchObject([{ openPrice: 10, highPrice: 15.5, closePrice: 15 }]);
    expect((await intraday('&interval=1hour&asOf=2019-03-01')).body.data).toMatchObject([{ openPrice: 10, highPrice: 11.5, closePrice: 11 }]);
  });
});
