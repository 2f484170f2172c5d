import { randomUUID } from 'node:crypto';
import { sampleCorrelation, sampleStandardDeviation } from 'simple-statistics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeShippedRiskFreeRates } from '../../server/demo/risk-free-rates.ts';
import { derivedContractId } from '../../server/options/schema.ts';
import { createInstrument, dailyBar, ingest, minuteBar, weekdays } from './fixtures.ts';
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
  key = await svc.keyWith(['prices:read', 'technicals:read', 'correlations:read', 'options:read', 'events:read', 'sentiment:read']);
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

/** N(x) from the Taylor series of erf, to double precision for |x| < 3 (every d1 and d2 below). */
function normalCdf(x: number): number {
  const z = x / Math.SQRT2;
  if (Math.abs(z) >= 3) throw new RangeError(`normalCdf: ${x} is outside the series' range`);
  let term = z;
  let sum = z;
  for (let n = 1; Math.abs(term) > 1e-18 * Math.abs(sum); n++) {
    term *= (-z * z) / n;
    sum += term / (2 * n + 1);
  }
  return 0.5 * (1 + (2 / Math.sqrt(Math.PI)) * sum);
}

/** The Black–Scholes price without dividends (docs/api.md, option pricing). */
function blackScholes(right: 'call' | 'put', spot: number, strike: number, years: number, rate: number, vol: number): number {
  const d1 = (Math.log(spot / strike) + (rate + (vol * vol) / 2) * years) / (vol * Math.sqrt(years));
  const d2 = d1 - vol * Math.sqrt(years);
  const discounted = strike * Math.exp(-rate * years);
  return right === 'call' ? spot * normalCdf(d1) - discounted * normalCdf(d2) : discounted * normalCdf(-d2) - spot * normalCdf(-d1);
}

/** The volatility at which blackScholes gives `price`, by bisection (the price rises with the volatility). */
function impliedVolatility(right: 'call' | 'put', price: number, spot: number, strike: number, years: number, rate: number): number {
  let [low, high] = [1e-6, 5];
  for (let i = 0; i < 200; i++) {
    const mid = (low + high) / 2;
    if (blackScholes(right, spot, strike, years, rate, mid) < price) low = mid;
    else high = mid;
  }
  return (low + high) / 2;
}

describe("option quotes posted before their underlying's history", () => {
  // The quotes of 2012-03-30 (New York on daylight time since 03-11: the close is 20:00Z) come first, the underlying's
  // 31 sessions up to that day after them, each bar published at 22:00Z of its day, as the vendor file above.
  const DAY = '2012-03-30';
  const OBSERVED = `${DAY}T19:30:00Z`;
  // 30 calendar days after DAY: its ATM volatility is the snapshot's 30-day point as it is.
  const EXPIRY = '2012-04-29';
  const days = weekdays('2012-02-01', DAY).slice(-31);
  const closes = days.map((_, i) => (i === 30 ? 41.3 : 40 + Math.sin(i * 1.7)));
  const QUOTES = [
    { symbol: 'C2012C40', right: 'call', strike: 40, bid: 1.9, ask: 2.1 },
    { symbol: 'C2012P40', right: 'put', strike: 40, bid: 0.5, ask: 0.7 },
    { symbol: 'C2012C42', right: 'call', strike: 42, bid: 0.8, ask: 1.0 },
    { symbol: 'C2012P42', right: 'put', strike: 42, bid: 1.4, ask: 1.6 },
  ] as const;
  let c: InstrumentId;

  const bar = (i: number, close: number, asOf: string) =>
    dailyBar(c, { barDate: days[i], close, open: close, high: close * 1.01, low: close * 0.99 }, { asOf, source: 'vendor-file' });
  const snapshot = async () => (await get(`/v1/instruments/implied-volatility?instrumentIds=${c}&asOf=${DAY}&maxAgeDays=1`)).instruments;

  /** The snapshot's figures from the quotes' mids and `series` by the docs' definitions, with the implied volatilities solved here. */
  function expected(series: number[]) {
    const spot = series.at(-1) as number;
    // From the quote to 16:00 New York (20:00Z) on the expiry day, ACT/365F; the rate known in March 2012 is
    // February's TB3MS average, 0.09 % (server/demo/data/fred_tb3ms_monthly.csv), known from 2012-03-01.
    const years = (Date.parse(`${EXPIRY}T20:00:00Z`) - Date.parse(OBSERVED)) / 86_400_000 / 365;
    const vol = (right: 'call' | 'put', strike: number) => {
      const q = QUOTES.find((x) => x.right === right && x.strike === strike);
      if (!q) throw new Error(`no ${right} at ${strike}`);
      return impliedVolatility(right, (q.bid + q.ask) / 2, spot, strike, years, 0.0009);
    };
    // Linear in strike between 40 and 42, at the spot.
    const atSpot = (at40: number, at42: number) => at40 + ((spot - 40) / (42 - 40)) * (at42 - at40);
    const both = (strike: number) => (vol('call', strike) + vol('put', strike)) / 2;
    const returns = series.slice(1).map((x, i) => Math.log(x / series[i]));
    return {
      underlyingPrice: spot,
      atm: atSpot(both(40), both(42)),
      historical: sampleStandardDeviation(returns) * Math.sqrt(252),
      // ln(H / L) is ln(1.01 / 0.99) on every one of the 30 days.
      parkinson: (Math.log(1.01 / 0.99) / Math.sqrt(4 * Math.LN2)) * Math.sqrt(252),
      putCall: atSpot(vol('put', 40), vol('put', 42)) / atSpot(vol('call', 40), vol('call', 42)),
    };
  }

  function expectSnapshot(row: any, want: ReturnType<typeof expected>) {
    expect(row).toMatchObject({ instrumentId: c, asOfDate: DAY, underlyingPrice: want.underlyingPrice });
    const close = (value: number, to: number, what: string) => expect(Math.abs(value - to), `${what}: ${value} against ${to}`).toBeLessThan(1e-9);
    close(row.atmImpliedVolatility, want.atm, 'atmImpliedVolatility');
    close(row.volatilitySurface.impliedVolatility30d, want.atm, 'impliedVolatility30d');
    close(row.volatilitySurface.historicalVolatility30d, want.historical, 'historicalVolatility30d');
    close(row.volatilitySurface.parkinsonHistoricalVolatility30d, want.parkinson, 'parkinsonHistoricalVolatility30d');
    close(row.volatilitySurface.putCallIvRatio30d, want.putCall, 'putCallIvRatio30d');
  }

  it('when the quotes come first, then no snapshot is derived: no close of the underlying is known at the end of their day', async () => {
    c = (await createInstrument(svc, { exchange: 'XNYS', region: 'US' })).id;
    await ingest(
      svc,
      '/options/contracts',
      QUOTES.map((q) => ({ instrumentId: c, contractSymbol: q.symbol, expiry: EXPIRY, strike: q.strike, right: q.right, multiplier: 100 })),
    );
    const stored = await ingest(
      svc,
      '/options/quotes',
      QUOTES.map((q) => ({
        contractId: derivedContractId(c, q.symbol),
        observedAt: OBSERVED,
        bid: q.bid,
        ask: q.ask,
        lastPrice: null,
        volume: 10,
        openInterest: 100,
        source: 'vendor-file',
      })),
    );
    expect(stored.derived.ivSnapshots).toMatchObject({ rows: 0, skippedDays: 1 });
    expect(await snapshot()).toEqual([]);
  });

  it("when the underlying's history is posted after them with its own asOf, then the upload derives the day's snapshot from it", async () => {
    const stored = await ingest(
      svc,
      '/bars/daily',
      closes.map((close, i) => bar(i, close, published(days[i]))),
    );
    expect(stored.derived.ivSnapshots).toMatchObject({ rows: 1, inserted: 1, skippedDays: 0 });
    const [row] = await snapshot();
    expectSnapshot(row, expected(closes));
  });

  it('when a bar of its window is corrected as known by the end of the day, then the snapshot is derived again; a restatement known later changes nothing', async () => {
    // 2012-03-23's close corrected at 21:00Z on the snapshot's day, before that day ended.
    const corrected = closes.map((x, i) => (i === 25 ? 43.5 : x));
    const correction = await ingest(svc, '/bars/daily', [bar(25, 43.5, `${DAY}T21:00:00Z`)]);
    expect(correction.derived.ivSnapshots).toMatchObject({ rows: 1, updated: 1 });
    const [row] = await snapshot();
    expectSnapshot(row, expected(corrected));
    // The day's own close restated, published in January 2013: the snapshot reads the bars known at the end of its day.
    const restatement = await ingest(svc, '/bars/daily', [bar(30, 45, '2013-01-15T00:00:00Z')]);
    expect(restatement.derived.ivSnapshots).toMatchObject({ rows: 1, unchanged: 1 });
    expect(await snapshot()).toEqual([row]);
  });

  it('when bars come after the last quoted day, then no snapshot is derived again', async () => {
    const later = await ingest(svc, '/bars/daily', [dailyBar(c, { barDate: '2012-04-02', close: 41 }, { asOf: published('2012-04-02') })]);
    expect(later.derived.ivSnapshots).toBeUndefined();
  });
});

describe('sentiment scores posted before the closes they are measured on', () => {
  // The scores of 15 sessions come first; the underlying's 30 sessions (February and March 2012) after them, each bar
  // published at 22:00Z of its day. The leads read the closes as known now (docs/api.md, "Point in time"): a
  // history loaded today with past asOf values is in them, and so is a restatement once it is posted.
  const source = `vendor-sentiment-${randomUUID().slice(0, 8)}`;
  const days = weekdays('2012-02-01', '2012-03-13');
  const closes = days.map((_, i) => 30 + 2 * Math.sin(i * 0.9) + 0.1 * i);
  const SCORED = 15;
  const score = (i: number) => Math.round(100 * Math.sin(i * 2.3)) / 100;
  let s: InstrumentId;

  /** The curve the route must answer, lag 0 to 10: each score of session i with the simple return of session i + lag. */
  function curve(series: number[]) {
    const ret = (i: number) => series[i] / series[i - 1] - 1;
    return [...Array(11).keys()].map((lag) => {
      const xs: number[] = [];
      const ys: number[] = [];
      for (let i = 1; i <= SCORED; i++) {
        if (i + lag >= series.length) continue;
        xs.push(score(i));
        ys.push(ret(i + lag));
      }
      return { lagDays: lag, correlation: sampleCorrelation(xs, ys), sampleSize: xs.length };
    });
  }

  async function lead() {
    const { data } = await get(`/v1/sentiment/source-leads?source=${source}`);
    expect(data).toHaveLength(1);
    return data[0];
  }

  function expectCurve(read: any, want: ReturnType<typeof curve>) {
    expect(read).toMatchObject({ source, subjectClass: 'business', instruments: 1, firstAsOfDate: days[1], lastAsOfDate: days[SCORED] });
    expect(read.correlationByLag.map((x: { sampleSize: number }) => x.sampleSize)).toEqual(want.map((x) => x.sampleSize));
    read.correlationByLag.forEach((x: { correlation: number }, lag: number) =>
      expect(Math.abs(x.correlation - want[lag].correlation), `lag ${lag}`).toBeLessThan(1e-12),
    );
  }

  it('when the closes are posted after the scores with their own asOf, then the upload derives the lead from them', async () => {
    s = (await createInstrument(svc, { exchange: 'XNYS', region: 'US' })).id;
    const scores = await svc.admin(
      'POST',
      '/sentiment',
      [...Array(SCORED).keys()].map((k) => ({
        instrumentId: s,
        source,
        subjectClass: 'business',
        asOfDate: days[k + 1],
        score: score(k + 1),
        scale: [-1, 1],
        isHeadlineOnly: false,
      })),
    );
    expect(scores.status, JSON.stringify(scores.body)).toBe(200);
    // No close yet: no pair at any lag.
    expect((await lead()).correlationByLag.every((x: { sampleSize: number }) => x.sampleSize === 0)).toBe(true);

    const stored = await ingest(
      svc,
      '/bars/daily',
      days.map((barDate, i) => dailyBar(s, { barDate, close: closes[i] }, { asOf: published(barDate), source: 'vendor-file' })),
    );
    expect(stored.derived.sourceLeads).toMatchObject({ rows: 1, updated: 1 });
    expectCurve(await lead(), curve(closes));
  });

  it('when a close is restated with a later asOf, then the lead is measured on the restated close, and a read of the closes at the earlier instant is unchanged', async () => {
    const atFirst = await get(`/v1/instruments/${s}/prices?from=${days[0]}&to=${days.at(-1)}&asOf=2012-12-31`);
    const restated = closes.map((x, i) => (i === 6 ? 36 : x));
    const stored = await ingest(svc, '/bars/daily', [dailyBar(s, { barDate: days[6], close: 36 }, { asOf: '2013-01-15T00:00:00Z', source: 'vendor-file' })]);
    expect(stored.derived.sourceLeads).toMatchObject({ rows: 1, updated: 1 });
    expectCurve(await lead(), curve(restated));
    const again = await get(`/v1/instruments/${s}/prices?from=${days[0]}&to=${days.at(-1)}&asOf=2012-12-31`);
    expect(again.data).toEqual(atFirst.data);
    expect(again.data[6]).toMatchObject({ barDate: days[6], closePrice: closes[6], asOf: published(days[6]) });
  });
});
