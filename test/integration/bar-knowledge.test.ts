import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Service, startService } from './harness.ts';
import { createInstrument, dailyBar, ingest, minuteBar } from './fixtures.ts';

// One knowledge time per bar revision (sql/022, docs/api.md "Point in time"):
// a bar row's asOf is the instant its revision became known, else the start
// of its upload, and a read with asOf=T gives each bar as known at T, printing
// as each bar's asOf the knowledge time of the revision it serves. The
// expected closes and instants are the ones the test posted, picked by hand
// for each instant.

let svc: Service;
let key: string;
beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['prices:read']);
});
afterAll(() => svc.stop());

const closes = (body: { data: { closePrice: number }[] }) => body.data.map((b) => b.closePrice);
const knownAts = (body: { data: { asOf: string }[] }) => body.data.map((b) => b.asOf);

describe('daily bars as known at asOf', () => {
  let id: string;
  const window = 'from=2023-03-01&to=2023-03-03';
  const read = (query: string) => svc.get(`/v1/instruments/${id}/prices?${window}${query}`, key);
  let latestKnown: string;

  beforeAll(async () => {
    ({ id } = await createInstrument(svc));
    // Each first revision known at the end of its day (the fixture's default).
    await ingest(svc, '/bars/daily', [
      dailyBar(id, { barDate: '2023-03-01', close: 100 }),
      dailyBar(id, { barDate: '2023-03-02', close: 101 }),
      dailyBar(id, { barDate: '2023-03-03', close: 102 }),
    ]);
    // 2023-03-02 corrected to 105, known from 2023-04-01T00:00Z (a back-filled correction) ...
    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2023-03-02', close: 105 }, { asOf: '2023-04-01T00:00:00.000Z' })]);
    // ... and again to 107, stating no asOf: known from the start of its upload.
    const { asOf: _stated, ...row } = dailyBar(id, { barDate: '2023-03-02', close: 107 });
    const before = Date.now();
    await ingest(svc, '/bars/daily', [row]);
    const after = await read('');
    latestKnown = after.body.data[1].asOf;
    expect(Date.parse(latestKnown)).toBeGreaterThanOrEqual(before - 1);
    expect(Date.parse(latestKnown)).toBeLessThanOrEqual(Date.now());
  });

  it('without asOf gives the latest revision of each bar, each printed with the instant it became known', async () => {
    const res = await read('');
    expect(res.status).toBe(200);
    expect(closes(res.body)).toEqual([100, 107, 102]);
    expect(knownAts(res.body)).toEqual(['2023-03-01T23:59:59.999Z', latestKnown, '2023-03-03T23:59:59.999Z']);
  });

  it('with asOf gives each bar as known at that instant, its asOf at most the cut-off', async () => {
    const at15 = await read('&asOf=2023-03-15');
    expect(closes(at15.body)).toEqual([100, 101, 102]);
    expect(knownAts(at15.body)).toEqual(['2023-03-01T23:59:59.999Z', '2023-03-02T23:59:59.999Z', '2023-03-03T23:59:59.999Z']);
    expect(closes((await read('&asOf=2023-03-31T23:59:59.999Z')).body)).toEqual([100, 101, 102]);
    // A revision counts from the instant it became known, inclusive.
    const atCorrection = await read('&asOf=2023-04-01T00:00:00Z');
    expect(closes(atCorrection.body)).toEqual([100, 105, 102]);
    expect(atCorrection.body.data[1].asOf).toBe('2023-04-01T00:00:00.000Z');
    expect(closes((await read('&asOf=2024-01-01')).body)).toEqual([100, 105, 102]);
  });

  it('leaves out a bar not yet known at asOf, and says why a window is empty', async () => {
    // A date means the end of that day: the bar of 03-02 is known then, the bar of 03-03 is not.
    expect(closes((await read('&asOf=2023-03-02')).body)).toEqual([100, 101]);
    const none = await read('&asOf=2023-03-01T12:00:00Z');
    expect(closes(none.body)).toEqual([]);
    expect(none.body.meta.emptyReason).toBe('not_yet_known');
    expect((await read('&asOf=2023-03-02')).body.meta.emptyReason).toBeNull();
    const elsewhere = await svc.get(`/v1/instruments/${id}/prices?from=2022-01-01&to=2022-01-31&asOf=2023-03-01`, key);
    expect(elsewhere.body.meta.emptyReason).toBe('no_stored_bars');
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
    expect(bulk.body.meta.emptyReasons).toEqual({});
    const bulkLater = await svc.get(`/v1/prices/bulk?instrumentIds=${id}&${window}&asOf=2024-01-01`, key);
    expect(bulkLater.body.data[id].map((b: { closePrice: number }) => b.closePrice)).toEqual([100, 105, 102]);
    const bulkBefore = await svc.get(`/v1/prices/bulk?instrumentIds=${id}&${window}&asOf=2023-02-01`, key);
    expect(bulkBefore.body.data[id]).toEqual([]);
    expect(bulkBefore.body.meta.emptyReasons).toEqual({ [id]: 'not_yet_known' });
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

  it('an unchanged re-post keeps the instant the values became known, whatever asOf it states', async () => {
    const res = await svc.admin('POST', '/bars/daily', [dailyBar(id, { barDate: '2023-03-01', close: 100 }, { asOf: '2023-03-20T00:00:00.000Z' })]);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ rows: 1, inserted: 0, updated: 0, unchanged: 1 });
    const at15 = await read('&asOf=2023-03-15');
    expect(closes(at15.body)).toEqual([100, 101, 102]);
    expect(at15.body.data[0].asOf).toBe('2023-03-01T23:59:59.999Z');
  });
});

describe("a dividend's prior close as known at asOf", () => {
  // A cash dividend of 1.01 going ex on 2023-06-05 multiplies the bars before
  // it by 1 − 1.01/C, C the close of the last bar before the ex-date
  // (docs/api.md, "Corporate actions"), rounded to 13 significant digits:
  // that bar, 2023-06-02, closed at 101 until a correction to 105 became
  // known on 2023-07-01. By hand: 1 − 1.01/101 = 0.99, so 100 → 99 and
  // 101 → 99.99; 1 − 1.01/105 = 0.990380952380952…, so 100 → 99.0380952381
  // and 105 → 103.99.
  let id: string;
  const window = 'from=2023-06-01&to=2023-06-05&adjusted=true';
  const single = async (asOf: string) => closes((await svc.get(`/v1/instruments/${id}/prices?${window}&asOf=${asOf}`, key)).body);
  const bulk = async (asOf: string) => {
    const res = await svc.get(`/v1/prices/bulk?instrumentIds=${id}&${window}&asOf=${asOf}`, key);
    expect(res.status).toBe(200);
    return res.body.data[id].map((b: { closePrice: number }) => b.closePrice);
  };

  beforeAll(async () => {
    ({ id } = await createInstrument(svc));
    await ingest(svc, '/bars/daily', [
      dailyBar(id, { barDate: '2023-06-01', close: 100 }),
      dailyBar(id, { barDate: '2023-06-02', close: 101 }),
      dailyBar(id, { barDate: '2023-06-05', close: 102 }),
    ]);
    await ingest(svc, '/corporate-actions', [
      {
        instrumentId: id,
        kind: 'cash_dividend',
        effectiveDate: '2023-06-05',
        knowledgeDate: '2023-05-01',
        knowledgeProvenance: 'announced',
        params: { amount: 1.01, currency: 'USD' },
        source: 'test-fixture',
      },
    ]);
    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2023-06-02', close: 105 }, { asOf: '2023-07-01T00:00:00.000Z' })]);
  });

  it('takes the close known then, on the single-instrument and the bulk read', async () => {
    for (const read of [single, bulk]) {
      expect(await read('2023-06-15')).toEqual([99, 99.99, 102]);
      expect(await read('2023-06-30T23:59:59.999Z')).toEqual([99, 99.99, 102]);
      expect(await read('2023-07-02')).toEqual([99.0380952381, 103.99, 102]);
    }
  });

  it('takes the latest close without asOf', async () => {
    const res = await svc.get(`/v1/instruments/${id}/prices?${window}`, key);
    expect(closes(res.body)).toEqual([99.0380952381, 103.99, 102]);
  });
});

describe('the knowledge time an upload states', () => {
  it('is refused in the future, before the bar can be known, or before the revision it would replace, and nothing is stored', async () => {
    const { id } = await createInstrument(svc);
    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2023-05-01', close: 50 }, { asOf: '2023-06-01T00:00:00.000Z' })]);

    const future = await svc.admin('POST', '/bars/daily', [dailyBar(id, { barDate: '2023-05-02', close: 51 }, { asOf: '2999-01-01T00:00:00.000Z' })]);
    expect(future.status).toBe(400);
    expect(Object.keys(future.body.error.details)).toEqual(['rows[0].asOf']);
    expect(future.body.error.details['rows[0].asOf'][0]).toContain('2999-01-01T00:00:00.000Z');
    expect(future.body.error.details['rows[0].asOf'][0]).toContain('in the future');

    // An instrument with no exchange or region known: nothing narrower than the bar's UTC day.
    const beforeBar = await svc.admin('POST', '/bars/daily', [dailyBar(id, { barDate: '2023-05-02', close: 51 }, { asOf: '2023-05-01T23:59:59.999Z' })]);
    expect(beforeBar.status).toBe(400);
    expect(Object.keys(beforeBar.body.error.details)).toEqual(['rows[0].asOf']);
    expect(beforeBar.body.error.details['rows[0].asOf'][0]).toContain("must not precede the start of the bar's UTC day, 2023-05-02T00:00:00.000Z");

    // A new bar on a later day and a correction stated known before the stored revision (2023-06-01), in one upload.
    const earlier = await svc.admin('POST', '/bars/daily', [
      dailyBar(id, { barDate: '2023-05-02', close: 51 }),
      dailyBar(id, { barDate: '2023-05-01', close: 55 }, { asOf: '2023-05-20T00:00:00.000Z' }),
    ]);
    expect(earlier.status).toBe(400);
    expect(earlier.body.error.details.asOf[0]).toContain('2023-05-20T00:00:00.000Z, before the stored revision');
    expect(earlier.body.error.details.asOf[0]).toContain('2023-06-01T00:00:00.000Z');

    const after = await svc.get(`/v1/instruments/${id}/prices?from=2023-05-01&to=2023-05-31`, key);
    expect(closes(after.body)).toEqual([50]);
    expect(after.body.meta.actionSetVersion).toBe(0);
  });

  it("refuses a daily bar stated known before its session closes on the instrument's market", async () => {
    const us = (await createInstrument(svc, { exchange: 'XNYS', region: 'US' })).id;
    const coin = (await createInstrument(svc, { assetClass: 'crypto' })).id;
    // 2023-03-10 is in EST: the New York close is 21:00Z; 2023-03-13 is in EDT: 20:00Z.
    const early = await svc.admin('POST', '/bars/daily', [
      dailyBar(us, { barDate: '2023-03-13', close: 10 }, { asOf: '2023-03-13T20:00:00.000Z' }),
      dailyBar(us, { barDate: '2023-03-10', close: 10 }, { asOf: '2023-03-10T20:59:59.999Z' }),
    ]);
    expect(early.status).toBe(400);
    expect(early.body.error.details).toEqual({
      'rows[1].asOf': [
        '2023-03-10T20:59:59.999Z is before 2023-03-10T21:00:00.000Z, the 16:00 America/New_York close of its session on a US exchange: no daily bar is known before then',
      ],
    });
    // Crypto trades around the clock: its day's close is the end of the UTC day (23:59:59.999, the instant a date asOf names).
    const coinEarly = await svc.admin('POST', '/bars/daily', [dailyBar(coin, { barDate: '2023-03-10', close: 10 }, { asOf: '2023-03-10T23:59:59.998Z' })]);
    expect(coinEarly.status).toBe(400);
    expect(coinEarly.body.error.details['rows[0].asOf'][0]).toContain('is before 2023-03-10T23:59:59.999Z, the end of its UTC day');
    await ingest(svc, '/bars/daily', [
      dailyBar(us, { barDate: '2023-03-10', close: 11 }, { asOf: '2023-03-10T21:00:00.000Z' }),
      dailyBar(us, { barDate: '2023-03-13', close: 12 }, { asOf: '2023-03-13T20:00:00.000Z' }),
      dailyBar(coin, { barDate: '2023-03-10', close: 13 }, { asOf: '2023-03-10T23:59:59.999Z' }),
    ]);
    // Nothing of the refused uploads was stored.
    expect(closes((await svc.get(`/v1/instruments/${us}/prices?from=2023-03-01&to=2023-03-31`, key)).body)).toEqual([11, 12]);

    // A bar whose session has not closed, stating no asOf, would be known from its upload: refused.
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const { asOf: _none, ...row } = dailyBar(us, { barDate: tomorrow, close: 10 });
    const unclosed = await svc.admin('POST', '/bars/daily', [row]);
    expect(unclosed.status).toBe(400);
    expect(unclosed.body.error.details['rows[0].asOf'][0]).toMatch(/^absent, so known from the upload's start, .*Z, which is before /);
  });

  it('takes knownAt as a synonym of asOf, refused when both are given and differ', async () => {
    const { id } = await createInstrument(svc);
    const differ = await svc.admin('POST', '/bars/daily', [
      dailyBar(id, { barDate: '2023-07-03', close: 20 }, { asOf: '2023-07-04T00:00:00Z', knownAt: '2023-07-05T00:00:00Z' }),
    ]);
    expect(differ.status).toBe(400);
    expect(Object.keys(differ.body.error.details)).toEqual(['rows[0].knownAt']);
    const { asOf: _none, ...alone } = dailyBar(id, { barDate: '2023-07-05', close: 22 });
    await ingest(svc, '/bars/daily', [
      // The same instant, spelled two ways.
      dailyBar(id, { barDate: '2023-07-03', close: 20 }, { asOf: '2023-07-04T00:00:00Z', knownAt: '2023-07-04T00:00:00.000Z' }),
      { ...alone, knownAt: '2023-07-06T00:00:00Z' },
    ]);
    const res = await svc.get(`/v1/instruments/${id}/prices?from=2023-07-01&to=2023-07-31`, key);
    expect(knownAts(res.body)).toEqual(['2023-07-04T00:00:00.000Z', '2023-07-06T00:00:00.000Z']);
  });
});

describe('intraday bars as known at asOf', () => {
  let id: string;
  const read = (query: string) => svc.get(`/v1/instruments/${id}/intraday?from=2023-03-01&to=2023-03-01${query}`, key);

  beforeAll(async () => {
    ({ id } = await createInstrument(svc));
    // Each minute known when it ends (the fixture's default).
    await ingest(svc, '/bars/intraday', [
      minuteBar(id, '2023-03-01T14:30:00Z', 10),
      minuteBar(id, '2023-03-01T14:31:00Z', 11),
      minuteBar(id, '2023-03-01T14:32:00Z', 12),
    ]);
    // The 14:31 minute corrected to 15, known the next day.
    await ingest(svc, '/bars/intraday', [minuteBar(id, '2023-03-01T14:31:00Z', 15, { asOf: '2023-03-02T00:00:00Z' })]);
  });

  it('gives each 1-minute bar as known at asOf, and the latest without it', async () => {
    const latest = await read('&interval=1min');
    expect(latest.status).toBe(200);
    expect(closes(latest.body)).toEqual([10, 15, 12]);
    expect(latest.body.meta).toMatchObject({ readFrom: 'stored_minute_bars', asOf: '2023-03-02T00:00:00.000Z', emptyReason: null });

    const before = await read('&interval=1min&asOf=2023-03-01');
    expect(closes(before.body)).toEqual([10, 11, 12]);
    expect(before.body.meta).toMatchObject({ asOf: '2023-03-01', readFrom: 'minute_bars_known_at_asof' });
    expect(closes((await read('&interval=1min&asOf=2023-03-02T00:00:00Z')).body)).toEqual([10, 15, 12]);
    // Mid-session: only the minutes that had ended.
    expect(closes((await read('&interval=1min&asOf=2023-03-01T14:31:30Z')).body)).toEqual([10]);
    const none = await read('&interval=1min&asOf=2023-03-01T14:30:30Z');
    expect(none.body.data).toEqual([]);
    expect(none.body.meta.emptyReason).toBe('not_yet_known');
    expect((await svc.get(`/v1/instruments/${id}/intraday?from=2023-02-01&to=2023-02-01&interval=1min`, key)).body.meta.emptyReason).toBe('no_stored_bars');
  });

  it('rolls the minutes known at asOf up at read, as the stored rollup holds the latest', async () => {
    const stored = await read('&interval=1hour');
    expect(stored.body.meta.readFrom).toBe('stored_rollup');
    // One bucket, 14:00: open of the first minute, high and low over the minutes, close of the last, volume summed.
    expect(stored.body.data).toMatchObject([
      { barTimestamp: '2023-03-01T14:00:00.000Z', openPrice: 10, highPrice: 15.5, lowPrice: 9.5, closePrice: 12, volume: 30 },
    ]);
    // The rollup is known from its latest minute's knowledge time.
    expect(stored.body.meta.asOf).toBe('2023-03-02T00:00:00.000Z');

    const before = await read('&interval=1hour&asOf=2023-03-01');
    expect(before.body.meta.readFrom).toBe('minute_bars_known_at_asof');
    expect(before.body.data).toMatchObject([
      { barTimestamp: '2023-03-01T14:00:00.000Z', openPrice: 10, highPrice: 12.5, lowPrice: 9.5, closePrice: 12, volume: 30 },
    ]);
    const after = await read('&interval=1hour&asOf=2023-03-02');
    expect(after.body.data).toEqual(stored.body.data);
  });

  it('refuses a bar stated known before its minute ends or before the revision it replaces', async () => {
    const res = await svc.admin('POST', '/bars/intraday', [minuteBar(id, '2023-03-01T14:32:00Z', 13, { asOf: '2023-03-01T14:33:00Z' })]);
    // Same instant as the stored revision: allowed, the later upload is the later revision.
    expect(res.status).toBe(200);
    const early = await svc.admin('POST', '/bars/intraday', [minuteBar(id, '2023-03-01T14:32:00Z', 14, { asOf: '2023-03-01T14:32:30Z' })]);
    expect(Object.keys(early.body.error.details)).toEqual(['rows[0].asOf']);
    expect(early.body.error.details['rows[0].asOf'][0]).toContain("must not precede the end of the bar's minute, 2023-03-01T14:33:00.000Z");
    // The 14:31 minute stands at 15, known 2023-03-02: a revision stated known before that is refused.
    const refused = await svc.admin('POST', '/bars/intraday', [minuteBar(id, '2023-03-01T14:31:00Z', 16, { asOf: '2023-03-01T15:00:00Z' })]);
    expect(refused.status).toBe(400);
    expect(refused.body.error.details.asOf[0]).toContain('barTimestamp 2023-03-01T14:31:00.000Z states asOf 2023-03-01T15:00:00.000Z');
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
    await ingest(svc, '/bars/intraday', [minuteBar(id, '2019-03-01T14:30:00Z', 10), minuteBar(id, '2019-03-01T14:31:00Z', 11)]);
    await svc.sql`select compress_chunk(c, if_not_compressed => true) from show_chunks('daily_bars') c`;
    await svc.sql`select compress_chunk(c, if_not_compressed => true) from show_chunks('intraday_bars') c`;
    const [{ compressed }] = await svc.sql<{ compressed: number }[]>`
      select count(*)::int as compressed from timescaledb_information.chunks
      where hypertable_name in ('daily_bars', 'intraday_bars') and is_compressed and range_start <= '2019-03-01' and range_end > '2019-03-01'
    `;
    expect(compressed).toBe(2);

    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2019-03-04', close: 105 }, { asOf: '2019-06-01T00:00:00.000Z' })]);
    await ingest(svc, '/bars/intraday', [minuteBar(id, '2019-03-01T14:31:00Z', 15, { asOf: '2019-03-02T00:00:00Z' })]);
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
