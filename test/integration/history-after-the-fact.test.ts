import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeShippedRiskFreeRates } from '../../server/demo/risk-free-rates.ts';
import { derivedContractId } from '../../server/options/schema.ts';
import { createInstrument, dailyBar, ingest, minuteBar } from './fixtures.ts';
import { Service, startService } from './harness.ts';
import type { InstrumentId } from '../../server/core/ids.ts';

// A vendor history loaded today, each row carrying the vendor's own asOf (its
// publication, an hour after the 16:00 New York close), reads as known from
// those instants through every read path of bars (docs/api.md, "Point in
// time"); a restatement posted as known later changes no read at an earlier
// instant. Every expected value comes from the rows posted here.

let svc: Service;
let key: string;
let a: InstrumentId;
let b: string;

// March 2012 is before the switch to daylight saving time (03-11): the close is 21:00Z, the vendor publishes at 22:00Z.
const A: Record<string, number> = {
  '2012-03-01': 40.0,
  '2012-03-02': 40.5,
  '2012-03-05': 41.0,
  '2012-03-06': 40.2,
  '2012-03-07': 39.8,
  '2012-03-08': 40.9,
  '2012-03-09': 41.3,
};
const B: Record<string, number> = {
  '2012-03-01': 100,
  '2012-03-02': 101,
  '2012-03-05': 101.5,
  '2012-03-06': 99.0,
  '2012-03-07': 98.7,
  '2012-03-08': 100.4,
  '2012-03-09': 101.2,
};
const published = (day: string) => `${day}T22:00:00.000Z`;
const vendorRows = (id: string, closes: Record<string, number>) =>
  Object.entries(closes).map(([barDate, close]) => dailyBar(id, { barDate, close }, { asOf: published(barDate), source: 'vendor-file' }));
// The vendor's minutes of 2012-03-05, each published 15 s after it ends.
const MINUTES: [string, number][] = [
  ['2012-03-05T14:30:00.000Z', 40.9],
  ['2012-03-05T14:31:00.000Z', 41.0],
  ['2012-03-05T14:32:00.000Z', 41.1],
  ['2012-03-05T14:33:00.000Z', 41.05],
];
const minutePublished = (ts: string) => new Date(Date.parse(ts) + 75_000).toISOString();

const CUTOFF = '2012-03-05T22:00:00Z';
const contract = (symbol: string) => derivedContractId(a, symbol);

beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['prices:read', 'technicals:read', 'correlations:read', 'options:read', 'events:read']);
  a = (await createInstrument(svc, { exchange: 'XNYS', region: 'US' })).id;
  b = (await createInstrument(svc, { exchange: 'XNYS', region: 'US' })).id;
  // The TB3MS history the Greeks take their rate from (February 2012's average is known from 2012-03-01).
  await storeShippedRiskFreeRates(svc.sql);
  await ingest(svc, '/bars/daily', [...vendorRows(a, A), ...vendorRows(b, B)]);
  await ingest(
    svc,
    '/bars/intraday',
    MINUTES.map(([ts, close]) => minuteBar(a, ts, close, { asOf: minutePublished(ts), source: 'vendor-file' })),
  );
  await ingest(svc, '/options/contracts', [
    { instrumentId: a, contractSymbol: 'A120420C40', expiry: '2012-04-20', strike: 40, right: 'call', multiplier: 100 },
    { instrumentId: a, contractSymbol: 'A120420P40', expiry: '2012-04-20', strike: 40, right: 'put', multiplier: 100 },
  ]);
  const quote = (symbol: string, observedAt: string, bid: number, ask: number) => ({
    contractId: contract(symbol),
    observedAt,
    bid,
    ask,
    lastPrice: null,
    volume: 10,
    openInterest: 100,
    source: 'vendor-file',
  });
  // The call is quoted before 03-05's close was published (22:00Z), the put after.
  await ingest(svc, '/options/quotes', [quote('A120420C40', '2012-03-05T21:30:00Z', 1.9, 2.1), quote('A120420P40', '2012-03-05T22:30:00Z', 1.4, 1.6)]);
  await ingest(svc, '/news', [
    {
      id: randomUUID(),
      instrumentId: a,
      eventClass: 'guidance',
      headline: 'A guides lower',
      source: 'vendor-wire',
      url: `https://news.example.test/${randomUUID()}`,
      publishedAt: '2012-03-06T15:00:00.000Z',
      isCompanyConfirmed: true,
    },
  ]);
});
afterAll(() => svc?.stop());

const get = async (path: string) => {
  const res = await svc.get(path, key);
  expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
  return res.body;
};
const datesAndCloses = (bars: { barDate: string; closePrice: number }[]) => bars.map((x) => [x.barDate, x.closePrice]);
/** A CSV answer's header and bar rows, without its #meta line (whose actionSetVersion a restatement moves on). */
const bars = (csv: string) => csv.split('\r\n').filter((l) => l && !l.startsWith('#'));
const logReturns = (closes: number[]) => closes.slice(1).map((c, i) => Math.log(c / closes[i]));

/** Every read of the history at the cut-off, as a map of read name to answer (what a restatement known later must not change). */
async function readsAtCutoff() {
  const range = 'from=2012-03-01&to=2012-03-09';
  const technicals = await get(`/v1/instruments/${a}/technicals?asOf=${CUTOFF}&lookbackDays=10`);
  // The read's time of day and the instrument's current version are not the figures.
  const { timestamp: _t, assumptions, ...figures } = technicals.data;
  const { actionSetVersion: _v, ...assumed } = assumptions;
  return {
    prices: (await get(`/v1/instruments/${a}/prices?${range}&asOf=${CUTOFF}`)).data,
    adjusted: (await get(`/v1/instruments/${a}/prices?${range}&asOf=${CUTOFF}&adjusted=true`)).data,
    csv: bars((await svc.get(`/v1/instruments/${a}/prices?${range}&asOf=${CUTOFF}&format=csv`, key)).body),
    bulk: (await get(`/v1/prices/bulk?instrumentIds=${a},${b}&${range}&asOf=${CUTOFF}`)).data,
    bulkCsv: bars((await svc.get(`/v1/prices/bulk?instrumentIds=${a},${b}&${range}&asOf=${CUTOFF}&format=csv`, key)).body),
    minutes: (await get(`/v1/instruments/${a}/intraday?from=2012-03-05&to=2012-03-05&interval=1min&asOf=2012-03-05T14:33:00Z`)).data,
    hour: (await get(`/v1/instruments/${a}/intraday?from=2012-03-05&to=2012-03-05&interval=1hour&asOf=2012-03-05T14:33:00Z`)).data,
    technicals: { ...figures, assumed },
    correlations: (await get(`/v1/correlations?instrumentIds=${a},${b}&lookbackDays=20&asOf=2012-03-07`)).data.pairs,
    beta: (await get(`/v1/instruments/${a}/beta?benchmarkId=${b}&lookbackDays=20&asOf=2012-03-07`)).data,
    chain: (await get(`/v1/instruments/${a}/options?asOf=2012-03-05T23:00:00Z`)).data,
    contract: (await get(`/v1/options/${contract('A120420C40')}?asOf=2012-03-05T23:00:00Z`)).data,
    iv: (await get(`/v1/instruments/implied-volatility?instrumentIds=${a}&asOf=2012-03-05&maxAgeDays=1`)).instruments,
  };
}

describe('a vendor history loaded today, read as of its own past', () => {
  let before: Awaited<ReturnType<typeof readsAtCutoff>>;

  it('daily, bulk and CSV reads give the bars published by the cut-off, each printed with its vendor asOf', async () => {
    before = await readsAtCutoff();
    const known = [
      ['2012-03-01', 40.0],
      ['2012-03-02', 40.5],
      ['2012-03-05', 41.0],
    ];
    expect(datesAndCloses(before.prices)).toEqual(known);
    expect(before.prices.map((x: { asOf: string }) => x.asOf)).toEqual(['2012-03-01', '2012-03-02', '2012-03-05'].map(published));
    expect(before.prices.every((x: { asOf: string }) => Date.parse(x.asOf) <= Date.parse(CUTOFF))).toBe(true);
    expect(datesAndCloses(before.adjusted)).toEqual(known);
    expect(datesAndCloses(before.bulk[a])).toEqual(known);
    expect(datesAndCloses(before.bulk[b])).toEqual([
      ['2012-03-01', 100],
      ['2012-03-02', 101],
      ['2012-03-05', 101.5],
    ]);
    expect(before.csv).toHaveLength(1 + 3);
    expect(before.bulkCsv).toHaveLength(1 + 6);
    // One millisecond before 03-05 was published, it is not there.
    const earlier = await get(`/v1/instruments/${a}/prices?from=2012-03-01&to=2012-03-09&asOf=2012-03-05T21:59:59.999Z`);
    expect(datesAndCloses(earlier.data)).toEqual(known.slice(0, 2));
  });

  it('intraday reads, minutes and rollups, give the minutes published by the cut-off', async () => {
    // 14:30 and 14:31 were published at 14:31:15 and 14:32:15; 14:32 only at 14:33:15.
    expect(before.minutes.map((m: { barTimestamp: string; closePrice: number }) => [m.barTimestamp, m.closePrice])).toEqual([
      ['2012-03-05T14:30:00.000Z', 40.9],
      ['2012-03-05T14:31:00.000Z', 41.0],
    ]);
    expect(before.hour).toMatchObject([
      { barTimestamp: '2012-03-05T14:00:00.000Z', openPrice: 40.9, highPrice: 41.5, lowPrice: 40.4, closePrice: 41.0, volume: 20 },
    ]);
  });

  it('technicals use the bars published by the cut-off, and a cut-off before any is not "no stored bars"', async () => {
    expect(before.technicals.assumed).toMatchObject({ barsUsed: 3, firstBarDate: '2012-03-01', lastBarDate: '2012-03-05' });
    const early = await svc.get(`/v1/instruments/${a}/technicals?asOf=2012-03-01T21:30:00Z&lookbackDays=5`, key);
    expect(early.status).toBe(404);
    expect(early.body.error.details.reason).toEqual(['not_yet_known']);
    expect(early.body.error.message).toContain('2012-03-01T22:00:00.000Z');
    const none = await svc.get(`/v1/instruments/${a}/technicals?asOf=2012-02-20&lookbackDays=5`, key);
    expect(none.status).toBe(404);
    expect(none.body.error.details.reason).toEqual(['no_stored_bars']);
  });

  it('correlations and beta use the closes published by the cut-off', async () => {
    const days = ['2012-03-01', '2012-03-02', '2012-03-05', '2012-03-06', '2012-03-07'];
    const x = logReturns(days.map((d) => B[d]));
    const y = logReturns(days.map((d) => A[d]));
    const mean = (v: number[]) => v.reduce((s, t) => s + t, 0) / v.length;
    const [mx, my] = [mean(x), mean(y)];
    const sxy = x.reduce((s, xi, i) => s + (xi - mx) * (y[i] - my), 0);
    const sxx = x.reduce((s, xi) => s + (xi - mx) ** 2, 0);
    const syy = y.reduce((s, yi) => s + (yi - my) ** 2, 0);
    expect(before.beta.observations).toBe(4);
    expect(Math.abs(before.beta.beta - sxy / sxx)).toBeLessThan(1e-12);
    expect(before.correlations).toHaveLength(1);
    expect(Math.abs(before.correlations[0].correlation - sxy / Math.sqrt(sxx * syy))).toBeLessThan(1e-12);
  });

  it('option Greeks take the latest close known at each quote, and the snapshot the close known at the end of its day', async () => {
    const item = (symbol: string) => before.chain.find((i: { contract: { contractSymbol: string } }) => i.contract.contractSymbol === symbol);
    // Quoted at 21:30Z, before 03-05's close was published: 03-02's close. Quoted at 22:30Z: 03-05's.
    expect(item('A120420C40').greeks).toMatchObject({ greeksSource: 'computed', model: { spotPrice: 40.5, spotAsOf: '2012-03-02' } });
    expect(item('A120420P40').greeks).toMatchObject({ greeksSource: 'computed', model: { spotPrice: 41.0, spotAsOf: '2012-03-05' } });
    expect(before.contract.greeks.model.spotPrice).toBe(40.5);
    expect(before.iv).toHaveLength(1);
    expect(before.iv[0]).toMatchObject({ asOfDate: '2012-03-05', underlyingPrice: 41.0 });
  });

  it('event reactions are measured on the loaded closes', async () => {
    const reactions = (await get(`/v1/instruments/${a}/event-reactions?from=2012-03-01&to=2012-03-09`)).data;
    expect(reactions).toHaveLength(1);
    expect(reactions[0]).toMatchObject({ eventDate: '2012-03-06', previousSessionDate: '2012-03-05', previousClose: 41.0, sessionClose: 40.2 });
    expect(Math.abs(reactions[0].reactionPct - 100 * (40.2 / 41.0 - 1))).toBeLessThan(1e-12);
  });

  it('a restatement known later changes no read at the earlier instant, and is read from its own asOf on', async () => {
    // 03-02's close and the 14:31 minute restated, both published in January 2013.
    await ingest(svc, '/bars/daily', [dailyBar(a, { barDate: '2012-03-02', close: 45 }, { asOf: '2013-01-15T00:00:00Z', source: 'vendor-file' })]);
    await ingest(svc, '/bars/intraday', [minuteBar(a, '2012-03-05T14:31:00Z', 44, { asOf: '2013-01-15T00:00:00Z', source: 'vendor-file' })]);
    const after = await readsAtCutoff();
    expect(after).toEqual(before);

    const latest = await get(`/v1/instruments/${a}/prices?from=2012-03-01&to=2012-03-09`);
    expect(latest.data[1]).toMatchObject({ barDate: '2012-03-02', closePrice: 45, asOf: '2013-01-15T00:00:00.000Z' });
    const atRestatement = await get(`/v1/instruments/${a}/prices?from=2012-03-01&to=2012-03-09&asOf=2013-01-15T00:00:00Z`);
    expect(atRestatement.data[1].closePrice).toBe(45);
    const minutes = await get(`/v1/instruments/${a}/intraday?from=2012-03-05&to=2012-03-05&interval=1min`);
    expect(minutes.data.map((m: { closePrice: number }) => m.closePrice)).toEqual([40.9, 44, 41.1, 41.05]);
  });
});
