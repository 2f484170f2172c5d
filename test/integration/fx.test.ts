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
    ['/v1/fx/US/CHF?date=2000-01-03', { base: ['must be a 3-letter ISO 4217 currency code'] }],
    ['/v1/fx/usd/chf?date=2000-13-01', { date: ['is not a calendar date'] }],
    ['/v1/fx/USD/CHF', { date: ['required'] }],
    ['/v1/fx/USD/CHF?date=2000-1-3', { date: ['must be a date yyyy-mm-dd'] }],
    ['/v1/fx/USD/CHF1?date=2000-01-03', { quote: ['must be a 3-letter ISO 4217 currency code'] }],
    ['/v1/fx/U%C3%9CD/CHF?date=2000-01-03', { base: ['must be a 3-letter ISO 4217 currency code'] }],
    ['/v1/fx/USD/usd?date=2000-01-03', { quote: ['must differ from base'] }],
    ['/v1/fx/USD/CHF?date=2000-01-03&from=2000-01-01', { from: ['unknown parameter; accepted: date'] }],
  ])('when %s is asked, then 400 invalid_request naming the field', async (path, details) => {
    const res = await svc.get(path, key);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.details).toEqual(details);
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

  it('when a row has no asOf, then asOf is the time the service received it', async () => {
    const [a, b] = [code(), code()];
    const before = Date.now();
    await store([{ base: a, quote: b, rateDate: '2000-06-01', rate: 3.5, source: 'received-test' }]);
    const after = Date.now();
    const asOf = Date.parse((await read(a, b, '2000-06-01')).body.data.asOf);
    expect(asOf).toBeGreaterThanOrEqual(before - 1);
    expect(asOf).toBeLessThanOrEqual(after + 1);
  });

  it('when one row of a batch is invalid, then 400 naming it and nothing of the batch is stored', async () => {
    const [a, b] = [code(), code()];
    const good = (rateDate: string) => ({ base: a, quote: b, rateDate, rate: 2, source: 'batch-test' });
    const cases: [unknown[], Record<string, string[]>][] = [
      [[good('2000-01-03'), good('2000-01-04'), { ...good('2000-01-05'), rate: -1 }], { 'rows[2].rate': ['must be greater than 0'] }],
      [[good('2000-01-03'), { ...good('2000-01-04'), rate: 0 }], { 'rows[1].rate': ['must be greater than 0'] }],
      [[good('2000-01-03'), { ...good('2000-01-04'), rate: 'NaN' }], { 'rows[1].rate': ['must be a number'] }],
      [[good('2000-01-03'), { ...good('2000-01-04'), quote: a }], { 'rows[1].quote': ['must differ from base'] }],
      [[{ ...good('2000-01-03'), base: 'US' }], { 'rows[0].base': ['must be a 3-letter ISO 4217 currency code'] }],
      [[{ ...good('2000-01-03'), note: 'x' }], { 'rows[0]': ['Unrecognized key: "note"'] }],
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
      expect(res.body.error.details).toEqual(details);
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
