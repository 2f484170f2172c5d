import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from './harness.ts';

// GET /v1/fx/{base}/{quote} and POST /admin/v1/fx against the real database.
// Each test owns its currency pair: codes QAA, QAB, ... are handed out in
// order, and USD/CHF is used on dates no other test writes.

let svc: Service;
let key: string;
beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['fx:read']);
});
afterAll(() => svc.stop());

let nextCode = 0;
/** A currency code no other test of this file uses. */
function code(): string {
  const n = nextCode++;
  return `Q${String.fromCharCode(65 + Math.floor(n / 26))}${String.fromCharCode(65 + (n % 26))}`;
}

interface RateRow {
  base: string;
  quote: string;
  rateDate: string;
  rate: number | string;
  source: string;
  asOf?: string | null;
}

/** An upload: rows as JSON, or a body already in `contentType`. */
const post = (body: unknown, contentType = 'application/json') => svc.admin('POST', '/fx', body, contentType);

async function store(rows: RateRow[]) {
  const res = await post(rows);
  if (res.status !== 200) throw new Error(`fx ingest failed: ${JSON.stringify(res.body)}`);
  return res.body.data;
}

const read = (base: string, quote: string, date: string, k = key) => svc.get(`/v1/fx/${base}/${quote}?date=${date}`, k);

const storedRows = async (base: string, quote: string) =>
  svc.sql<{ rate_date: string; rate: number }[]>`select rate_date, rate from fx_rates where base = ${base} and quote = ${quote} order by rate_date`;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Error details whose messages each start with the given rule: what a
 * message adds after it (what was received) is the validation layer's wording,
 * tested with it.
 */
const startingWith = (details: Record<string, string[]>) =>
  Object.fromEntries(
    Object.entries(details).map(([field, messages]) => [field, messages.map((m) => expect.stringMatching(new RegExp(`^${escapeRegExp(m)}`)))]),
  );

/** A read as known at `asOf`, percent-encoded as a client would send it. */
const readAsOf = (base: string, quote: string, date: string, asOf: string) =>
  svc.get(`/v1/fx/${base}/${quote}?date=${date}&asOf=${encodeURIComponent(asOf)}`, key);

/** Everything stored for the pair in this direction, the kept revisions included, in the order written. */
const everyRevision = async (base: string, quote: string) => ({
  stored: await svc.sql`select rate_date, rate, source, as_of from fx_rates where base = ${base} and quote = ${quote} order by rate_date`,
  kept: await svc.sql`select rate_date, rate, source, as_of from fx_rate_revisions where base = ${base} and quote = ${quote} order by replaced_seq`,
});

describe('GET /v1/fx/{base}/{quote}', () => {
  it('when a USD/CHF rate is stored for the date, then the read returns exactly the stored rate, and posting the read back changes nothing', async () => {
    // 17 significant digits: any rounding on the way in or out changes the double.
    const rate = 1.2345678901234567;
    const asOf = '1987-06-15T21:00:00.000Z';
    expect(await store([{ base: 'USD', quote: 'CHF', rateDate: '1987-06-15', rate, source: 'test-provider', asOf }])).toEqual({
      rows: 1,
      inserted: 1,
      updated: 0,
      unchanged: 0,
    });
    const res = await read('usd', 'chf', '1987-06-15');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ base: 'USD', quote: 'CHF', rateDate: '1987-06-15', rate, asOf, source: 'test-provider' });
    expect(Buffer.from(new Float64Array([res.body.data.rate]).buffer)).toEqual(Buffer.from(new Float64Array([rate]).buffer));
    // The pair's latest stored rate is of 1987 or 1988: far behind the business day before today (docs/api.md, "Freshness").
    expect(res.body.meta).toEqual({ asOf, source: 'test-provider', stale: true, staleReason: 'rate_behind', derivation: null });

    const again = await post([res.body.data]);
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual({ rows: 1, inserted: 0, updated: 0, unchanged: 1 });
  });

  it('when the date has no stored rate, then 404 not_found naming the nearest stored dates of the pair in either direction', async () => {
    await store([
      { base: 'USD', quote: 'CHF', rateDate: '1988-04-01', rate: 1.5, source: 'test-provider' },
      { base: 'CHF', quote: 'USD', rateDate: '1988-04-06', rate: 0.66, source: 'test-provider' },
      { base: 'USD', quote: 'CHF', rateDate: '1988-04-08', rate: 1.52, source: 'test-provider' },
    ]);
    const res = await read('USD', 'CHF', '1988-04-05');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
    expect(res.body.error.message).toMatch(/never interpolated or carried forward/);
    expect(res.body.error.details).toEqual({ date: ['nearest stored date before: 1988-04-01', 'nearest stored date after: 1988-04-06'] });

    const [a, b] = [code(), code()];
    const none = await read(a, b, '1988-04-05');
    expect(none.status).toBe(404);
    expect(none.body.error.details).toEqual({ date: [`no ${a}/${b} or ${b}/${a} rate is stored for any date`] });
  });

  it('when only the inverse pair is stored, then the rate is 1 / the stored rate and meta says it is derived; a stored pair wins over its inverse', async () => {
    const [a, b] = [code(), code()];
    const stored = 0.9137;
    const asOf = '2001-02-01T22:00:00.000Z';
    await store([{ base: a, quote: b, rateDate: '2001-02-01', rate: stored, source: 'inverse-test', asOf }]);
    const res = await read(b, a, '2001-02-01');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ base: b, quote: a, rateDate: '2001-02-01', rate: 1 / stored, asOf, source: 'inverse-test' });
    expect(res.body.meta).toEqual({
      asOf,
      source: 'inverse-test',
      stale: true,
      staleReason: 'rate_behind',
      derivation: { method: 'inverse', storedPair: `${a}/${b}`, storedRate: stored },
    });

    await store([{ base: b, quote: a, rateDate: '2001-02-01', rate: 1.1, source: 'direct-test', asOf }]);
    const direct = await read(b, a, '2001-02-01');
    expect(direct.body.data.rate).toBe(1.1);
    expect(direct.body.meta.derivation).toBeNull();
  });

  it('when the pair has a rate dated today, then every read of it is fresh, an old date included; a pair whose latest rate is of 2001 is stale (rate_behind)', async () => {
    const [a, b] = [code(), code()];
    // Dated the UTC day the test runs: on or after the business day before the day of any read that follows.
    const today = new Date().toISOString().slice(0, 10);
    await store([
      { base: a, quote: b, rateDate: '2001-02-05', rate: 1.25, source: 'fresh-test' },
      { base: a, quote: b, rateDate: today, rate: 1.5, source: 'fresh-test' },
    ]);
    for (const [x, y, date] of [
      [a, b, today],
      [a, b, '2001-02-05'],
      // The inverse read asks about the same pair.
      [b, a, '2001-02-05'],
    ]) {
      const res = await read(x, y, date);
      expect(res.status).toBe(200);
      expect(res.body.meta).toMatchObject({ stale: false, staleReason: null });
    }

    const [c, d] = [code(), code()];
    await store([{ base: c, quote: d, rateDate: '2001-02-05', rate: 1.25, source: 'stale-test' }]);
    for (const [x, y] of [
      [c, d],
      [d, c],
    ]) {
      const res = await read(x, y, '2001-02-05');
      expect(res.status).toBe(200);
      expect(res.body.meta).toMatchObject({ stale: true, staleReason: 'rate_behind' });
    }
  });

  it('when no rate links the two currencies directly, then 404: no cross rate through a third currency', async () => {
    const [a, b, c] = [code(), code(), code()];
    await store([
      { base: a, quote: b, rateDate: '2001-02-02', rate: 2, source: 'cross-test' },
      { base: b, quote: c, rateDate: '2001-02-02', rate: 3, source: 'cross-test' },
    ]);
    expect((await read(a, b, '2001-02-02')).status).toBe(200);
    expect((await read(a, c, '2001-02-02')).status).toBe(404);
  });

  it.each([
    ['/v1/fx/US/CHF?date=2000-01-03', { base: ['must be a 3-letter ISO 4217 currency code; received a path segment of 2 characters (not shown)'] }],
    ['/v1/fx/usd/chf?date=2000-13-01', { date: ['is not a calendar date; received "2000-13-01"'] }],
    ['/v1/fx/USD/CHF', { date: ['required (a date yyyy-mm-dd)'] }],
    ['/v1/fx/USD/CHF?date=2000-1-3', { date: ['must be a date yyyy-mm-dd; received "2000-1-3"'] }],
    ['/v1/fx/USD/CHF1?date=2000-01-03', { quote: ['must be a 3-letter ISO 4217 currency code; received a path segment of 4 characters (not shown)'] }],
    ['/v1/fx/U%C3%9CD/CHF?date=2000-01-03', { base: ['must be a 3-letter ISO 4217 currency code; received a path segment of 3 characters (not shown)'] }],
    ['/v1/fx/USD/usd?date=2000-01-03', { quote: ['must differ from base; received a path segment of 3 characters (not shown)'] }],
    ['/v1/fx/USD/CHF?date=2000-01-03&from=2000-01-01', { from: ['unknown parameter; accepted: date, asOf'] }],
    ['/v1/fx/USD/CHF?date=2000-01-03&asOf=2000-13-01', { asOf: ['is not a valid date or instant; received "2000-13-01"'] }],
    ['/v1/fx/USD/CHF?date=2000-01-03&asOf=2000-01-03T24:00:00Z', { asOf: ['is not a valid date or instant; received "2000-01-03T24:00:00Z"'] }],
    ['/v1/fx/USD/CHF?date=2000-01-03&asOf=yesterday', { asOf: ['must be yyyy-mm-dd or yyyy-mm-ddThh:mm:ss[.fff]Z; received "yesterday"'] }],
  ])('when %s is asked, then 400 invalid_request naming the field', async (path, details) => {
    const res = await svc.get(path, key);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.details).toEqual(startingWith(details));
  });

  it('when the key lacks fx:read, then 403 insufficient_scope', async () => {
    const other = await svc.keyWith(['prices:read', 'macro:read']);
    const res = await read('USD', 'CHF', '1987-06-15', other);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
  });
});

describe('POST /admin/v1/fx', () => {
  it('when a rate is re-posted with a new value, then it is a correction: the value and asOf change; the same value again is unchanged and keeps its asOf', async () => {
    const [a, b] = [code(), code()];
    const row = { base: a, quote: b, rateDate: '2000-06-01', source: 'correction-test' };
    await store([{ ...row, rate: 1.25, asOf: '2000-06-01T21:00:00.000Z' }]);
    expect(await store([{ ...row, rate: 1.2501, asOf: '2000-06-02T09:30:00.000Z' }])).toEqual({ rows: 1, inserted: 0, updated: 1, unchanged: 0 });
    let res = await read(a, b, '2000-06-01');
    expect(res.body.data).toMatchObject({ rate: 1.2501, asOf: '2000-06-02T09:30:00.000Z' });

    expect(await store([{ ...row, rate: 1.2501, asOf: '2000-06-05T00:00:00.000Z' }])).toEqual({ rows: 1, inserted: 0, updated: 0, unchanged: 1 });
    res = await read(a, b, '2000-06-01');
    expect(res.body.data).toMatchObject({ rate: 1.2501, asOf: '2000-06-02T09:30:00.000Z' });

    expect(await store([{ ...row, rate: 1.2501, source: 'another-provider', asOf: '2000-06-06T00:00:00.000Z' }])).toEqual({
      rows: 1,
      inserted: 0,
      updated: 1,
      unchanged: 0,
    });
    res = await read(a, b, '2000-06-01');
    expect(res.body.data).toMatchObject({ rate: 1.2501, source: 'another-provider', asOf: '2000-06-06T00:00:00.000Z' });
  });

  it('when one row of a batch is invalid, then 400 naming it and nothing of the batch is stored', async () => {
    const [a, b] = [code(), code()];
    const good = (rateDate: string) => ({ base: a, quote: b, rateDate, rate: 2, source: 'batch-test' });
    const cases: [unknown[], Record<string, string[]>][] = [
      [[good('2000-01-03'), good('2000-01-04'), { ...good('2000-01-05'), rate: -1 }], { 'rows[2].rate': ['must be greater than 0; received -1'] }],
      [[good('2000-01-03'), { ...good('2000-01-04'), rate: 0 }], { 'rows[1].rate': ['must be greater than 0; received 0'] }],
      [[good('2000-01-03'), { ...good('2000-01-04'), rate: 'NaN' }], { 'rows[1].rate': ['must be a number; received "NaN"'] }],
      [[good('2000-01-03'), { ...good('2000-01-04'), quote: a }], { 'rows[1].quote': [`must differ from base; received "${a}"`] }],
      [[{ ...good('2000-01-03'), base: 'US' }], { 'rows[0].base': ['must be a 3-letter ISO 4217 currency code; received "US"'] }],
      [[{ ...good('2000-01-03'), note: 'x' }], { 'rows[0].note': ['unknown field; accepted: base, quote, rateDate, rate, source, asOf'] }],
      [
        [good('2000-01-03'), good('2000-01-04'), good('2000-01-03')],
        { 'rows[2].rateDate': ['the same base, quote and rateDate appear in an earlier row of this batch'] },
      ],
      [
        [good('2000-01-03'), { ...good('2000-01-03'), base: a.toLowerCase() }],
        { 'rows[1].rateDate': ['the same base, quote and rateDate appear in an earlier row of this batch'] },
      ],
    ];
    for (const [rows, details] of cases) {
      const res = await post(rows);
      expect(res.status, JSON.stringify(rows)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.details).toEqual(startingWith(details));
    }
    expect(await storedRows(a, b)).toEqual([]);
  });

  it('when the body is CSV, then text numbers and codes are read like JSON, and an empty asOf cell means the time of receipt', async () => {
    const [a, b] = [code(), code()];
    const csv = [
      'base,quote,rateDate,rate,source,asOf',
      `${a.toLowerCase()},${b},2000-03-01,0.6180339887498949,csv-test,2000-03-01T22:00:00Z`,
      `${a},${b},2000-03-02,1e-3,csv-test,`,
    ].join('\n');
    const res = await post(csv, 'text/csv');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ rows: 2, inserted: 2, updated: 0, unchanged: 0 });
    const first = await read(a, b, '2000-03-01');
    expect(first.body.data).toEqual({
      base: a,
      quote: b,
      rateDate: '2000-03-01',
      rate: 0.6180339887498949,
      asOf: '2000-03-01T22:00:00.000Z',
      source: 'csv-test',
    });
    const second = await read(a, b, '2000-03-02');
    expect(second.body.data.rate).toBe(0.001);
    expect(Date.parse(second.body.data.asOf)).toBeGreaterThan(Date.parse('2020-01-01'));
  });

  it('when the body is NDJSON, then each line is a row', async () => {
    const [a, b] = [code(), code()];
    const ndjson = [
      { base: a, quote: b, rateDate: '2000-03-01', rate: 144.25, source: 'ndjson-test', asOf: '2000-03-01T22:00:00.000Z' },
      { base: b, quote: a, rateDate: '2000-03-02', rate: 0.0069, source: 'ndjson-test', asOf: '2000-03-02T22:00:00.000Z' },
    ]
      .map((r) => JSON.stringify(r))
      .join('\n');
    const res = await post(ndjson, 'application/x-ndjson');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ rows: 2, inserted: 2, updated: 0, unchanged: 0 });
    expect((await read(a, b, '2000-03-01')).body.data.rate).toBe(144.25);
    expect((await read(b, a, '2000-03-02')).body.data.rate).toBe(0.0069);
    expect((await read(a, b, '2000-03-02')).body.data.rate).toBe(1 / 0.0069);
  });
});

describe('FX rates as known at asOf', () => {
  it('when a rate known at t1 is corrected known at t2, then asOf between reads the first value, asOf from t2 the second, and asOf before t1 is 404 saying it was not yet known', async () => {
    const [a, b] = [code(), code()];
    const day = '2003-03-03';
    const first = { base: a, quote: b, rateDate: day, rate: 1.25, source: 'pit-first', asOf: '2003-03-03T21:00:00.000Z' };
    const second = { base: a, quote: b, rateDate: day, rate: 1.2625, source: 'pit-correction', asOf: '2003-03-05T09:30:00.000Z' };
    await store([first]);
    expect(await store([second])).toEqual({ rows: 1, inserted: 0, updated: 1, unchanged: 0 });

    for (const asOf of ['2003-03-04', '2003-03-03T21:00:00Z', '2003-03-05T09:29:59.999Z']) {
      const res = await readAsOf(a, b, day, asOf);
      expect(res.status, asOf).toBe(200);
      expect(res.body.data, asOf).toEqual(first);
      expect(res.body.meta, asOf).toMatchObject({ asOf: first.asOf, source: first.source, derivation: null });
    }
    for (const asOf of ['2003-03-05T09:30:00Z', '2003-03-05', '2024-01-01']) {
      const res = await readAsOf(a, b, day, asOf);
      expect(res.status, asOf).toBe(200);
      expect(res.body.data, asOf).toEqual(second);
      expect(res.body.meta.asOf, asOf).toBe(second.asOf);
    }
    expect((await read(a, b, day)).body.data).toEqual(second);

    const early = await readAsOf(a, b, day, '2003-03-03T20:59:59.999Z');
    expect(early.status).toBe(404);
    expect(early.body.error.code).toBe('not_found');
    expect(early.body.error.message).toBe(
      `no ${a}/${b} rate for ${day} was known at asOf 2003-03-03T20:59:59.999Z, in either direction: one is stored, first known at ${first.asOf}`,
    );
    expect(early.body.error.details).toEqual({
      asOf: [`a rate for ${day} is stored but was not yet known at 2003-03-03T20:59:59.999Z: it was first known at ${first.asOf}`],
    });
    // A date with nothing stored says so, in its own words and under its own key.
    const none = await readAsOf(a, b, '2003-03-10', '2003-03-04');
    expect(none.status).toBe(404);
    expect(none.body.error.details).toEqual({ date: ['nearest date with a rate known at asOf 2003-03-04 before: 2003-03-03'] });

    expect(await everyRevision(a, b)).toEqual({
      stored: [{ rate_date: day, rate: second.rate, source: second.source, as_of: new Date(second.asOf) }],
      kept: [{ rate_date: day, rate: first.rate, source: first.source, as_of: new Date(first.asOf) }],
    });
  });

  it('when only the inverse pair is stored, then a read at asOf inverts the revision known then; a direct rate known later wins only from its asOf', async () => {
    const [a, b] = [code(), code()];
    const day = '2003-03-03';
    const first = { base: a, quote: b, rateDate: day, rate: 1.25, source: 'pit-first', asOf: '2003-03-03T21:00:00.000Z' };
    const second = { base: a, quote: b, rateDate: day, rate: 1.2625, source: 'pit-correction', asOf: '2003-03-05T09:30:00.000Z' };
    const direct = { base: b, quote: a, rateDate: day, rate: 0.8, source: 'pit-direct', asOf: '2003-03-06T12:00:00.000Z' };
    await store([first]);
    await store([second]);
    await store([direct]);

    const cases: [string, typeof first][] = [
      ['2003-03-04', first],
      ['2003-03-05T12:00:00Z', second],
    ];
    for (const [asOf, from] of cases) {
      const res = await readAsOf(b, a, day, asOf);
      expect(res.status, asOf).toBe(200);
      expect(res.body.data, asOf).toEqual({ base: b, quote: a, rateDate: day, rate: 1 / from.rate, asOf: from.asOf, source: from.source });
      expect(res.body.meta, asOf).toMatchObject({
        asOf: from.asOf,
        source: from.source,
        derivation: { method: 'inverse', storedPair: `${a}/${b}`, storedRate: from.rate },
      });
    }
    const later = await readAsOf(b, a, day, '2003-03-06T12:00:00Z');
    expect(later.body.data).toEqual(direct);
    expect(later.body.meta.derivation).toBeNull();
    // The pair read the other way round is stored itself at every instant it is known.
    expect((await readAsOf(a, b, day, '2003-03-07')).body.data).toEqual(second);
  });

  it('when a later date of the pair was not yet known at asOf, then freshness is judged on the rates known then, and the 404 of a missing date names only dates known then', async () => {
    const [a, b] = [code(), code()];
    // 2003-03-03 is a Monday: at any instant of Wednesday 03-05 the weekday before is Tuesday 03-04 (docs/api.md, "Freshness").
    const monday = { base: a, quote: b, rateDate: '2003-03-03', rate: 1.5, source: 'pit-fresh', asOf: '2003-03-03T21:00:00.000Z' };
    const tuesday = { base: a, quote: b, rateDate: '2003-03-04', rate: 1.51, source: 'pit-fresh', asOf: '2003-03-05T12:00:00.000Z' };
    const friday = { base: a, quote: b, rateDate: '2003-03-07', rate: 1.53, source: 'pit-fresh', asOf: '2003-03-12T00:00:00.000Z' };
    await store([monday, tuesday, friday]);

    const before = await readAsOf(a, b, '2003-03-03', '2003-03-05T11:59:59.999Z');
    expect(before.body.meta).toMatchObject({ stale: true, staleReason: 'rate_behind' });
    const after = await readAsOf(a, b, '2003-03-03', '2003-03-05T12:00:00Z');
    expect(after.body.meta).toMatchObject({ stale: false, staleReason: null });

    // Thursday 03-06 has no rate: Tuesday's was known from 03-05 12:00, Friday's from 03-12.
    const gap = await readAsOf(a, b, '2003-03-06', '2003-03-08');
    expect(gap.status).toBe(404);
    expect(gap.body.error.details).toEqual({ date: ['nearest date with a rate known at asOf 2003-03-08 before: 2003-03-04'] });
    const stored = await read(a, b, '2003-03-06');
    expect(stored.body.error.details).toEqual({ date: ['nearest stored date before: 2003-03-04', 'nearest stored date after: 2003-03-07'] });
    const nothingYet = await readAsOf(a, b, '2003-03-06', '2003-03-02');
    expect(nothingYet.body.error.details).toEqual({ date: [`no ${a}/${b} or ${b}/${a} rate of any date was known at asOf 2003-03-02`] });
  });

  it('when a row has no asOf, then it is known from the instant its upload began: absent before, served from then, and a correction without asOf is known from its own upload', async () => {
    const [a, b] = [code(), code()];
    const row = { base: a, quote: b, rateDate: '2003-06-02', source: 'pit-received' };
    const beforeFirst = Date.now();
    await store([{ ...row, rate: 3.5 }]);
    const afterFirst = Date.now();
    const firstKnown = (await read(a, b, '2003-06-02')).body.data.asOf;
    expect(Date.parse(firstKnown)).toBeGreaterThanOrEqual(beforeFirst);
    expect(Date.parse(firstKnown)).toBeLessThanOrEqual(afterFirst);

    const notYet = await readAsOf(a, b, '2003-06-02', new Date(beforeFirst - 1).toISOString());
    expect(notYet.status).toBe(404);
    expect(notYet.body.error.details.asOf).toEqual([
      `a rate for 2003-06-02 is stored but was not yet known at ${new Date(beforeFirst - 1).toISOString()}: it was first known at ${firstKnown}`,
    ]);
    const known = await readAsOf(a, b, '2003-06-02', firstKnown);
    expect(known.body.data).toEqual({ ...row, rate: 3.5, asOf: firstKnown });

    // The second upload begins after the first has answered: its instant is later.
    await store([{ ...row, rate: 3.6 }]);
    const secondKnown = (await read(a, b, '2003-06-02')).body.data.asOf;
    expect(Date.parse(secondKnown)).toBeGreaterThanOrEqual(afterFirst);
    expect((await readAsOf(a, b, '2003-06-02', new Date(afterFirst).toISOString())).body.data.rate).toBe(3.5);
    expect((await readAsOf(a, b, '2003-06-02', secondKnown)).body.data).toEqual({ ...row, rate: 3.6, asOf: secondKnown });
  });

  it('when a rate is re-posted unchanged, then nothing changes, its knowledge time included, whatever asOf the re-post states', async () => {
    const [a, b] = [code(), code()];
    const row = { base: a, quote: b, rateDate: '2004-01-05', rate: 2, source: 'pit-unchanged' };
    await store([{ ...row, asOf: '2004-01-06T00:00:00.000Z' }]);
    const before = await everyRevision(a, b);
    for (const asOf of ['2004-01-05T22:00:00.000Z', '2004-01-07T00:00:00.000Z', undefined]) {
      expect(await store([{ ...row, asOf }]), String(asOf)).toEqual({ rows: 1, inserted: 0, updated: 0, unchanged: 1 });
    }
    expect(await everyRevision(a, b)).toEqual(before);
    expect((await readAsOf(a, b, '2004-01-05', '2004-01-06T00:00:00Z')).body.data).toEqual({ ...row, asOf: '2004-01-06T00:00:00.000Z' });
  });

  it('when a row would be known before the stored revision it replaces, before its day begins, or in the future, then 400 naming its asOf, and nothing of the batch is stored', async () => {
    const [a, b] = [code(), code()];
    const stored = { base: a, quote: b, rateDate: '2004-01-05', rate: 2, source: 'pit-refusal', asOf: '2004-01-06T00:00:00.000Z' };
    await store([stored]);
    const before = await everyRevision(a, b);
    const fresh = { base: a, quote: b, rateDate: '2004-01-08', rate: 2.2, source: 'pit-refusal', asOf: '2004-01-08T21:00:00.000Z' };
    // Two days ahead: a day that has not begun when the upload starts, even if the test runs across a midnight.
    const later = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
    const cases: [unknown[], string, RegExp][] = [
      // A correction known before the revision it replaces.
      [
        [fresh, { ...stored, rate: 2.1, asOf: '2004-01-05T22:00:00.000Z' }],
        'rows[1].asOf',
        /^2004-01-05T22:00:00\.000Z is before the stored revision's asOf 2004-01-06T00:00:00\.000Z/,
      ],
      // Known a millisecond before the rate's day begins.
      [
        [fresh, { ...fresh, rateDate: '2004-01-09', asOf: '2004-01-08T23:59:59.999Z' }],
        'rows[1].asOf',
        /^2004-01-08T23:59:59\.999Z is before 2004-01-09T00:00:00\.000Z, the start of rateDate 2004-01-09/,
      ],
      // Without asOf, known from the upload's start: before that day begins.
      [
        [fresh, { ...fresh, rateDate: later, asOf: undefined }],
        'rows[1].asOf',
        new RegExp(`^absent, so known from the upload's start, .*, which is before ${later}T00:00:00\\.000Z, the start of rateDate ${later}`),
      ],
      [[fresh, { ...fresh, rateDate: '2004-01-09', asOf: inAnHour }], 'rows[1].asOf', /^must not be in the future/],
    ];
    for (const [rows, field, message] of cases) {
      const res = await post(rows);
      expect(res.status, JSON.stringify(rows)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(Object.keys(res.body.error.details)).toEqual([field]);
      expect(res.body.error.details[field][0]).toMatch(message);
      expect(await everyRevision(a, b)).toEqual(before);
    }
    // The day's first instant is the earliest accepted, and a correction known at the stored revision's instant is accepted.
    expect(
      await store([
        { ...fresh, rateDate: '2004-01-09', asOf: '2004-01-09T00:00:00.000Z' },
        { ...stored, rate: 2.1 },
      ]),
    ).toEqual({
      rows: 2,
      inserted: 1,
      updated: 1,
      unchanged: 0,
    });
  });

  it('when asOf is anywhere from 0001-01-01 to 9999-12-31, then the read answers 200 or 404, never a 5xx', async () => {
    const [a, b] = [code(), code()];
    await store([
      { base: a, quote: b, rateDate: '0001-01-01', rate: 1.5, source: 'pit-edges', asOf: '0001-01-01T00:00:00.000Z' },
      { base: a, quote: b, rateDate: '2003-03-03', rate: 1.6, source: 'pit-edges', asOf: '2003-03-03T21:00:00.000Z' },
    ]);
    const expected: Record<string, number> = {};
    for (const asOf of ['0001-01-01', '0001-01-01T00:00:00Z', '0001-01-07', '1970-01-01T00:00:00.000Z', '9999-12-31', '9999-12-31T23:59:59.999Z']) {
      for (const date of ['0001-01-01', '2003-03-03', '9999-12-31']) {
        // Stored and known by asOf: 200; otherwise 404 (0001-01-01's rate is known from its first instant).
        expected[`${date} ${asOf}`] = date === '9999-12-31' || (date === '2003-03-03' && asOf < '2003') ? 404 : 200;
        for (const [x, y] of [
          [a, b],
          [b, a],
        ]) {
          const res = await readAsOf(x, y, date, asOf);
          expect(res.status, `${x}/${y} ${date} ${asOf}`).toBe(expected[`${date} ${asOf}`]);
          if (res.status === 404) expect(res.body.error.code).toBe('not_found');
        }
      }
    }
  });
});
