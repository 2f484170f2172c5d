import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { linearRegression, rSquared, sampleCorrelation } from 'simple-statistics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseUrl, Service, startService } from './harness.ts';
import { createSql } from '../../server/db/sql.ts';
import { createInstrument, dailyBar, ingest, weekdays } from './fixtures.ts';
import { readAdjustedSeries } from '../../server/prices/daily-bars.ts';
import { selectPackedSeries } from '../../server/prices/daily-bars-repository.ts';

let svc: Service;
let key: string;
beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['analytics:read', 'technicals:read', 'correlations:read', 'prices:read']);
});
afterAll(() => svc.stop());

/** Real Dow 30 adjusted closes (r-cran-fbasics DowJones30), loaded as close-only bars into fresh instruments. */
function dowColumns(symbols: string[]) {
  const lines = readFileSync(new URL('../../server/demo/data/dowjones30_adjclose_1990_2001.csv', import.meta.url), 'utf8')
    .trim()
    .split('\n');
  const header = lines[0].split(',');
  const rows = lines.slice(2).map((l) => l.split(',')); // row 1 (1990-12-31) repeats 1991-01-02
  return symbols.map((s) => rows.map((r) => ({ barDate: r[0], close: Number(r[header.indexOf(s)]) })));
}

async function loadCloses(series: { barDate: string; close: number }[]) {
  const { id } = await createInstrument(svc);
  const closeOnly = { openPrice: null, highPrice: null, lowPrice: null, volume: null };
  await ingest(
    svc,
    '/bars/daily',
    series.map((b) => dailyBar(id, { barDate: b.barDate, close: b.close }, closeOnly)),
  );
  return id;
}

/**
 * readAdjustedSeries through a sequential scan, which returns the rows in storage order: for a series inserted newest
 * first, that is out of date order (asserted), so the read's own reordering is exercised. Not necessarily newest first
 * throughout: inserts fill space that earlier tests' updates freed, wherever the free-space map finds it.
 */
async function readBySequentialScan(id: string, window: { from: string; to: string; fields: 'close' }) {
  const session = createSql(databaseUrl(), { max: 1, name: 'test-seqscan', statementTimeoutMs: 60_000 });
  try {
    await session`set enable_indexscan = off`;
    await session`set enable_bitmapscan = off`;
    // A scan of a table over a quarter of shared_buffers may otherwise start
    // where another session's scan of it is, not at the first page.
    await session`set synchronize_seqscans = off`;
    const [row] = await selectPackedSeries(session, [id], window.from, window.to, 'close');
    const packed = Buffer.from(row.days as string, 'base64');
    const days = new DataView(packed.buffer, packed.byteOffset, packed.length);
    const inversions = Array.from({ length: packed.length / 4 - 1 }, (_, i) => days.getInt32(4 * i) > days.getInt32(4 * i + 4)).filter(Boolean).length;
    expect(inversions).toBeGreaterThan(0);
    return (await readAdjustedSeries(session, [id], window)).get(id)!;
  } finally {
    await session.end();
  }
}

function alignedLogReturns(a: { barDate: string; close: number }[], b: { barDate: string; close: number }[], from: string, to: string) {
  const inB = new Map(b.map((x) => [x.barDate, x.close]));
  const common = a.filter((x) => x.barDate >= from && x.barDate <= to && inB.has(x.barDate));
  const ra: number[] = [];
  const rb: number[] = [];
  for (let i = 1; i < common.length; i++) {
    ra.push(Math.log(common[i].close / common[i - 1].close));
    rb.push(Math.log(inB.get(common[i].barDate)! / inB.get(common[i - 1].barDate)!));
  }
  return { ra, rb };
}

describe('correlations and beta on the real Dow 30 series', () => {
  const symbols = ['IBM', 'KO', 'MSFT', 'GE'];
  let ids: string[];
  let closes: { barDate: string; close: number }[][];
  beforeAll(async () => {
    closes = dowColumns(symbols);
    ids = [];
    for (const c of closes) ids.push(await loadCloses(c));
  });

  it('when correlating with an asOf inside 1991–2000, then each pair matches a direct Pearson computation to 1e-12, lies in [−1, 1], and repeats identically', async () => {
    const url = `/v1/correlations?instrumentIds=${ids.join(',')}&lookbackDays=365&asOf=1999-06-30`;
    const res = await svc.get(url, key);
    expect(res.status).toBe(200);
    expect(res.body.data.assumptions).toMatchObject({
      method: 'pearson',
      lookbackDays: 365,
      returnType: 'log',
      windowStart: '1998-07-01',
      windowEnd: '1999-06-30',
    });
    expect(res.body.data.pairs).toHaveLength(6);
    // All four series share every date, so pairwise alignment equals the all-instrument alignment here.
    for (const pair of res.body.data.pairs) {
      const a = ids.indexOf(pair.assetA);
      const b = ids.indexOf(pair.assetB);
      expect(a).toBeLessThan(b);
      const { ra, rb } = alignedLogReturns(closes[a], closes[b], '1998-07-01', '1999-06-30');
      expect(ra.length).toBe(res.body.data.assumptions.alignedObservations);
      expect(Math.abs(pair.correlation - sampleCorrelation(ra, rb))).toBeLessThan(1e-12);
      expect(Math.abs(pair.correlation)).toBeLessThanOrEqual(1);
    }
    const again = await svc.get(url, key);
    expect(again.body.data).toEqual(res.body.data);
  });

  it('when bars were stored out of date order, then correlations, beta and technicals read them in date order: the same figures as the series stored in order', async () => {
    const reversed = await loadCloses([...closes[0]].reverse());
    // The packed read asks for no order. A sequential scan returns this series in storage order, newest first: the
    // reordering is then exercised, and the read equals the one of the series stored in order.
    const window = { from: '1998-07-01', to: '1999-06-30', fields: 'close' as const };
    const scanned = await readBySequentialScan(reversed, window);
    const stored = (await readAdjustedSeries(svc.sql, [ids[0]], window)).get(ids[0])!;
    expect(scanned.dates.length).toBeGreaterThan(200);
    expect(scanned.dates).toEqual(stored.dates);
    expect(scanned.close).toEqual(stored.close);
    // End to end, the routes give the same figures for both.
    const query = (a: string) => `/v1/correlations?instrumentIds=${a},${ids[1]},${ids[2]}&lookbackDays=365&asOf=1999-06-30`;
    const [inOrder, outOfOrder] = [await svc.get(query(ids[0]), key), await svc.get(query(reversed), key)];
    expect(outOfOrder.status).toBe(200);
    expect(outOfOrder.body.data.pairs.map((p: any) => p.correlation)).toEqual(inOrder.body.data.pairs.map((p: any) => p.correlation));
    const beta = (a: string) => svc.get(`/v1/instruments/${ids[2]}/beta?benchmarkId=${a}&lookbackDays=252&asOf=2000-06-30`, key);
    expect((await beta(reversed)).body.data.beta).toBe((await beta(ids[0])).body.data.beta);
    const technicals = async (a: string) => {
      const {
        timestamp: _timestamp,
        symbol: _symbol,
        ...figures
      } = (await svc.get(`/v1/instruments/${a}/technicals?lookbackDays=400&asOf=1999-06-30`, key)).body.data;
      return figures;
    };
    expect(await technicals(reversed)).toEqual(await technicals(ids[0]));
  });

  it('when spearman is asked for, then ties get average ranks and the figure matches Pearson of average ranks', async () => {
    const res = await svc.get(`/v1/correlations?instrumentIds=${ids[0]},${ids[1]}&method=spearman&lookbackDays=90&asOf=1995-03-31`, key);
    expect(res.status).toBe(200);
    const { ra, rb } = alignedLogReturns(closes[0], closes[1], '1995-01-01', '1995-03-31');
    const rank = (x: number[]) => {
      const order = x.map((v, i) => [v, i] as const).sort((p, q) => p[0] - q[0]);
      const r = new Array<number>(x.length);
      for (let i = 0; i < order.length;) {
        let j = i;
        while (j + 1 < order.length && order[j + 1][0] === order[i][0]) j++;
        for (let k = i; k <= j; k++) r[order[k][1]] = (i + j) / 2 + 1;
        i = j + 1;
      }
      return r;
    };
    expect(Math.abs(res.body.data.pairs[0].correlation - sampleCorrelation(rank(ra), rank(rb)))).toBeLessThan(1e-12);
  });

  it('when ids repeat, then they are collapsed in order; with one usable instrument, or 21 ids, then invalid_request', async () => {
    const res = await svc.get(`/v1/correlations?instrumentIds=${ids[1]},${ids[0]},${ids[1]}&asOf=1999-06-30`, key);
    expect(res.body.data.instruments.map((i: any) => i.instrumentId)).toEqual([ids[1], ids[0]]);
    const sparse = await createInstrument(svc);
    await ingest(svc, '/bars/daily', [dailyBar(sparse.id, { barDate: '1999-06-01', close: 10 }), dailyBar(sparse.id, { barDate: '1999-06-02', close: 11 })]);
    const mixed = await svc.get(`/v1/correlations?instrumentIds=${ids[0]},${ids[1]},${sparse.id}&asOf=1999-06-30`, key);
    expect(mixed.status).toBe(200);
    expect(mixed.body.data.instruments[2]).toEqual({ instrumentId: sparse.id, observations: 1, usable: false, reason: 'insufficient_observations' });
    expect(mixed.body.data.pairs.map((p: any) => [p.assetA, p.assetB, p.correlation === null, p.reason])).toEqual([
      [ids[0], ids[1], false, null],
      [ids[0], sparse.id, true, 'unusable_instrument'],
      [ids[1], sparse.id, true, 'unusable_instrument'],
    ]);
    const one = await svc.get(`/v1/correlations?instrumentIds=${ids[0]},${sparse.id}&asOf=1999-06-30`, key);
    expect(one.status).toBe(400);
    expect(one.body.error.code).toBe('invalid_request');
    expect(one.body.error.details[sparse.id]).toEqual(['1 return observations (insufficient_observations)']);
    expect((await svc.get(`/v1/correlations?instrumentIds=${Array.from({ length: 21 }, () => randomUUID()).join(',')}`, key)).status).toBe(400);
    expect((await svc.get(`/v1/correlations?instrumentIds=${ids[0]},${ids[0]}`, key)).status).toBe(400);
    // 21 ids with one repeated are 20 distinct: within the limit.
    const twentyDistinct = [ids[0], ids[1], ids[0], ...Array.from({ length: 18 }, () => randomUUID())];
    const within = await svc.get(`/v1/correlations?instrumentIds=${twentyDistinct.join(',')}&asOf=1999-06-30`, key);
    expect(within.status).toBe(200);
    expect(within.body.data.unknownInstrumentIds).toHaveLength(18);
    expect((await svc.get(`/v1/correlations?instrumentIds=${ids[0]},${ids[1]}&lookbackDays=19`, key)).status).toBe(400);
  });

  it('when regressing on a benchmark, then beta, alpha and R² match simple-statistics on the same aligned returns to 1e-12', async () => {
    const res = await svc.get(`/v1/instruments/${ids[2]}/beta?benchmarkId=${ids[0]}&lookbackDays=252&asOf=2000-06-30`, key);
    expect(res.status).toBe(200);
    const from = res.body.data.assumptions.windowStart;
    const { ra, rb } = alignedLogReturns(closes[2], closes[0], from, '2000-06-30');
    const points = rb.map((x, i) => [x, ra[i]]);
    const line = linearRegression(points);
    expect(res.body.data.observations).toBe(ra.length);
    expect(Math.abs(res.body.data.beta - line.m)).toBeLessThan(1e-12);
    expect(Math.abs(res.body.data.alpha - line.b)).toBeLessThan(1e-12);
    expect(Math.abs(res.body.data.rSquared - rSquared(points, (x) => line.b + line.m * x))).toBeLessThan(1e-12);
    expect(res.body.data.reason).toBeNull();
    expect(res.body.data.reasonInstrumentId).toBeNull();
  });

  it('when fewer than three returns overlap or the benchmark never moves, then beta, alpha and R² are null with the reason, never 1', async () => {
    const flat = await loadCloses(weekdays('2000-01-03', '2000-03-31').map((d) => ({ barDate: d, close: 50 })));
    const zero = await svc.get(`/v1/instruments/${ids[0]}/beta?benchmarkId=${flat}&lookbackDays=90&asOf=2000-03-31`, key);
    expect(zero.body.data).toMatchObject({ beta: null, alpha: null, rSquared: null, reason: 'zero_benchmark_variance' });
    // Neither has a bar in 2029's last 20 days: the instrument's reason comes first.
    const short = await svc.get(`/v1/instruments/${ids[0]}/beta?benchmarkId=${flat}&lookbackDays=20&asOf=2030-01-01`, key);
    expect(short.body.data).toMatchObject({ beta: null, alpha: null, rSquared: null, observations: 0, reason: 'no_stored_bars', reasonInstrumentId: ids[0] });
    expect((await svc.get(`/v1/instruments/${randomUUID()}/beta?benchmarkId=${ids[0]}`, key)).status).toBe(404);
    expect((await svc.get(`/v1/instruments/${ids[0]}/beta?benchmarkId=${randomUUID()}`, key)).status).toBe(400);
  });
});

describe('a known instrument with too little data in the window', () => {
  // Closes on every weekday of the first half of 2019, and one instrument whose only bars are in 2015: with asOf
  // 2019-06-28 and a 90-day lookback, it is known but has no bar in the window.
  const days = weekdays('2019-01-01', '2019-06-28');
  const wave = (phase: number) => days.map((barDate, i) => ({ barDate, close: 100 + 10 * Math.sin(i / 5 + phase) + i / 10 }));
  const outside = weekdays('2015-03-02', '2015-03-31').map((barDate, i) => ({ barDate, close: 20 + i }));
  const window = 'lookbackDays=90&asOf=2019-06-28';

  it('when technicals has no bar in the window, then 404 not_found; with two bars, then 200, each indicator that needs more is null and says how many it needs', async () => {
    const empty = await loadCloses(outside);
    const none = await svc.get(`/v1/instruments/${empty}/technicals?${window}`, key);
    expect(none.status).toBe(404);
    expect(none.body.error.code).toBe('not_found');
    const two = await loadCloses([...outside, { barDate: '2019-06-27', close: 30 }, { barDate: '2019-06-28', close: 31 }]);
    const res = await svc.get(`/v1/instruments/${two}/technicals?${window}`, key);
    expect(res.status).toBe(200);
    expect(res.body.data.assumptions).toMatchObject({ barsUsed: 2, firstBarDate: '2019-06-27', lastBarDate: '2019-06-28' });
    expect(res.body.data.rsi).toMatchObject({ value: null, signal: null });
    expect(res.body.data.rsi.description).toMatch(/needs 15 bars/);
    expect(res.body.data.macd).toMatchObject({ value: null, signal: null, histogram: null });
    expect(res.body.data.macd.description).toMatch(/needs 34 bars/);
    expect(res.body.data.sma).toMatchObject({ sma20: null, sma50: null, sma200: null });
  });

  it('when one of three correlated instruments has no bar in the window, then 200: its pairs are listed with a null correlation and the reason, its observations are 0, and the other pair is as if it were absent', async () => {
    const [a, b, empty] = [await loadCloses(wave(0)), await loadCloses(wave(2)), await loadCloses(outside)];
    const res = await svc.get(`/v1/correlations?instrumentIds=${a},${b},${empty}&${window}`, key);
    expect(res.status).toBe(200);
    expect(res.body.data.instruments[2]).toEqual({ instrumentId: empty, observations: 0, usable: false, reason: 'no_stored_bars' });
    const [ab, aEmpty, bEmpty] = res.body.data.pairs;
    expect(aEmpty).toEqual({ assetA: a, assetB: empty, correlation: null, reason: 'unusable_instrument' });
    expect(bEmpty).toEqual({ assetA: b, assetB: empty, correlation: null, reason: 'unusable_instrument' });
    expect(res.body.data.assumptions.nullCorrelation).toEqual(expect.stringContaining('unusable_instrument'));
    const alone = await svc.get(`/v1/correlations?instrumentIds=${a},${b}&${window}`, key);
    expect(ab).toEqual({ ...alone.body.data.pairs[0], reason: null });
    expect(typeof ab.correlation).toBe('number');
    expect(res.body.data.assumptions.alignedObservations).toBe(alone.body.data.assumptions.alignedObservations);
  });

  it('when fewer than two correlated instruments have data in the window, then 400 invalid_request naming each with its count (the spec fixes this case)', async () => {
    const [a, empty] = [await loadCloses(wave(0)), await loadCloses(outside)];
    const res = await svc.get(`/v1/correlations?instrumentIds=${a},${empty}&${window}`, key);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.details[empty]).toEqual(['0 return observations (no_stored_bars)']);
    expect(res.body.error.details[a]).toBeUndefined();
  });

  it('when the beta subject, or the benchmark, has no bar in the window, then 200 with beta, alpha and R² null, 0 observations and the reason naming it', async () => {
    const [withBars, empty] = [await loadCloses(wave(0)), await loadCloses(outside)];
    for (const [subject, benchmark] of [
      [empty, withBars],
      [withBars, empty],
    ]) {
      const res = await svc.get(`/v1/instruments/${subject}/beta?benchmarkId=${benchmark}&${window}`, key);
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({
        instrumentId: subject,
        benchmarkId: benchmark,
        beta: null,
        alpha: null,
        rSquared: null,
        observations: 0,
        reason: 'no_stored_bars',
        reasonInstrumentId: empty,
      });
      expect(res.body.data.assumptions).toMatchObject({ alignedObservations: 0, minimumObservations: 3 });
    }
  });
});

describe('the packed bar read', () => {
  it('when none, some or all bars are vendor-adjusted, then each keeps its own reflects-through date: actions it already reflects are not applied again, in any storage order', async () => {
    // Two 2-for-1 splits, on 2010-02-01 and 2010-03-01. A vendor-adjusted bar among the first 20 reflects actions
    // through 2010-02-15 (the first split), a later one through 2010-01-20 (neither), so a January bar given the
    // date of a bar from the other end of the window changes. Expected adjusted closes, by hand: each bar is divided
    // by 2 for every split after its date that its source does not already reflect (a raw bar reflects none).
    const days = weekdays('2010-01-04', '2010-03-31');
    const splitDates = ['2010-02-01', '2010-03-01'];
    const close = (i: number) => 100 + i;
    const reflectsOf = (i: number) => (i < 20 ? '2010-02-15' : '2010-01-20');
    const cases: Record<string, (i: number) => boolean> = { none: () => false, some: (i) => i % 3 === 0, all: () => true };
    const window = { from: '2010-01-01', to: '2010-03-31', fields: 'close' as const };
    for (const [name, isVendor] of Object.entries(cases)) {
      const expected = days.map((d, i) => close(i) / 2 ** splitDates.filter((s) => d < s && !(isVendor(i) && s <= reflectsOf(i))).length);
      const bars = (id: string) =>
        days.map((d, i) =>
          dailyBar(
            id,
            { barDate: d, close: close(i) },
            {
              openPrice: null,
              highPrice: null,
              lowPrice: null,
              volume: null,
              ...(isVendor(i) ? { priceBasis: 'vendor_adjusted', reflectsActionsThrough: reflectsOf(i) } : {}),
            },
          ),
        );
      const splits = (id: string) =>
        splitDates.map((effectiveDate) => ({
          instrumentId: id,
          kind: 'split',
          effectiveDate,
          knowledgeDate: '2020-01-01',
          knowledgeProvenance: 'announced',
          params: { ratio: 2 },
          source: 'test-fixture',
        }));
      const inOrder = (await createInstrument(svc)).id;
      const newestFirst = (await createInstrument(svc)).id;
      await ingest(svc, '/bars/daily', bars(inOrder));
      await ingest(svc, '/bars/daily', bars(newestFirst).reverse());
      for (const id of [inOrder, newestFirst]) await ingest(svc, '/corporate-actions', splits(id));
      const reads = [(await readAdjustedSeries(svc.sql, [inOrder], window)).get(inOrder)!, await readBySequentialScan(newestFirst, window)];
      for (const read of reads) {
        expect({ name, close: [...read.close] }).toEqual({ name, close: expected });
      }
    }
  });
});

describe('technicals', () => {
  it('when the window has bars, then assumptions echo them, indicators needing more bars are null, and asOf uses only bars on or before it', async () => {
    const days = weekdays('2021-01-04', '2021-03-31');
    const { id, symbol } = await createInstrument(svc);
    await ingest(
      svc,
      '/bars/daily',
      days.map((d, i) => dailyBar(id, { barDate: d, open: 100 + Math.sin(i), close: 100 + Math.sin(i + 0.5), volume: 1000 + i })),
    );
    const res = await svc.get(`/v1/instruments/${id}/technicals?lookbackDays=90&asOf=2021-03-31`, key);
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(d.assumptions).toMatchObject({
      lookbackDays: 90,
      barsUsed: days.filter((x) => x > '2020-12-31').length,
      asOf: '2021-03-31',
      windowEnd: '2021-03-31',
    });
    expect(d.symbol).toBe(symbol);
    expect(d.dataPoints).toBe(d.assumptions.barsUsed);
    expect(d.rsi.value).toEqual(expect.any(Number));
    expect(d.sma.sma20).toEqual(expect.any(Number));
    expect(d.sma.sma200).toBeNull();
    expect(d.ema.ema200).toBeNull();
    expect(typeof d.sma.description).toBe('string');
    const earlier = await svc.get(`/v1/instruments/${id}/technicals?lookbackDays=90&asOf=2021-02-15`, key);
    expect(earlier.body.data.assumptions.lastBarDate).toBe('2021-02-15');
    expect(earlier.body.data.assumptions.barsUsed).toBe(days.filter((x) => x > '2020-11-17' && x <= '2021-02-15').length);
  });

  it('when lookbackDays=1 holds one real S&P 500 bar, then no verdict: a null trend (insufficient_bars), the VWAP without a signal, no candlestick confidence; 2 bars give the VWAP its signal, a month of bars the trend', async () => {
    const rows = readFileSync(new URL('../../server/demo/data/sp500_daily_2000_2020.csv', import.meta.url), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split(','))
      .filter((r) => r[0] >= '2020-02-03' && r[0] <= '2020-04-17')
      .map(([barDate, open, high, low, close, , volume]) => ({ barDate, open: +open, high: +high, low: +low, close: +close, volume: +volume }));
    const { id } = await createInstrument(svc);
    await ingest(
      svc,
      '/bars/daily',
      rows.map((b) => dailyBar(id, b)),
    );
    const read = async (lookbackDays: number) => {
      const res = await svc.get(`/v1/instruments/${id}/technicals?lookbackDays=${lookbackDays}&asOf=2020-04-17`, key);
      expect(res.status).toBe(200);
      return res.body.data;
    };
    const typical = (b: (typeof rows)[number]) => (b.high + b.low + b.close) / 3;

    const last = rows.at(-1)!;
    expect(last.barDate).toBe('2020-04-17');
    const one = await read(1);
    expect(one.assumptions).toMatchObject({ barsUsed: 1, firstBarDate: '2020-04-17', lastBarDate: '2020-04-17' });
    expect(one.trend).toMatchObject({ direction: null, strength: null, confidence: null, reason: 'insufficient_bars' });
    expect(one.vwap.value).toBeCloseTo(typical(last), 6);
    expect(one.vwap).toMatchObject({ signal: null, reason: 'insufficient_bars' });
    // Its body (32.13) is above a tenth of its range (48.34): no doji, the only pattern one bar can show.
    expect(Math.abs(last.close - last.open)).toBeGreaterThan(0.1 * (last.high - last.low));
    expect(one.candlestick).toMatchObject({ signal: null, confidence: null, patterns: [], reason: 'insufficient_bars' });
    expect(one.chartPatterns).toMatchObject({ dominantPattern: null, reason: 'insufficient_bars' });
    for (const name of ['rsi', 'macd', 'stochastic', 'ema', 'sma', 'wma', 'ichimoku', 'bollingerBands', 'atr']) {
      expect(one[name].reason, name).toBe('insufficient_bars');
    }

    const pair = rows.slice(-2);
    const vwap = pair.reduce((a, b) => a + typical(b) * b.volume, 0) / pair.reduce((a, b) => a + b.volume, 0);
    const rel = (last.close - vwap) / vwap;
    const two = await read(2);
    expect(two.assumptions.barsUsed).toBe(2);
    expect(two.vwap.value).toBeCloseTo(vwap, 6);
    expect(two.vwap).toMatchObject({ signal: Math.abs(rel) <= 0.001 ? 'at' : rel > 0 ? 'above' : 'below', reason: null });
    expect(two.trend.reason).toBe('insufficient_bars');

    // (2020-03-03, 2020-04-17]: more than 20 bars, so VWAP, RSI and the EMA trend vote.
    const month = await read(45);
    expect(month.assumptions.barsUsed).toBe(rows.filter((b) => b.barDate > '2020-03-03').length);
    expect(month.assumptions.barsUsed).toBeGreaterThanOrEqual(20);
    expect(month.trend).toMatchObject({ direction: expect.any(String), strength: expect.any(Number), confidence: expect.any(Number), reason: null });
  });

  it('when the instrument is unknown or the window holds no bars, then 404; out-of-range lookbacks are 400', async () => {
    expect((await svc.get(`/v1/instruments/${randomUUID()}/technicals`, key)).status).toBe(404);
    const { id } = await createInstrument(svc);
    const empty = await svc.get(`/v1/instruments/${id}/technicals?asOf=2021-03-31`, key);
    expect(empty.status).toBe(404);
    expect(empty.body.error.code).toBe('not_found');
    for (const bad of ['0', '1001', '2.5', 'x']) {
      const res = await svc.get(`/v1/instruments/${id}/technicals?lookbackDays=${bad}`, key);
      expect(res.status).toBe(400);
      expect(Object.keys(res.body.error.details)).toEqual(['lookbackDays']);
    }
  });
});

describe('analytics POST operations', () => {
  it("when pricing Hull's example, then call 4.76 and put 0.81 with every input and the derived year fraction in assumptions", async () => {
    const base = { spot: 42, strike: 40, expiryDays: 182.5, rate: 0.1, vol: 0.2 };
    const call = await svc.post('/v1/analytics/option-price', key, { ...base, type: 'call' });
    const put = await svc.post('/v1/analytics/option-price', key, { ...base, type: 'put' });
    expect(call.status).toBe(200);
    expect(call.body.data.price.toFixed(2)).toBe('4.76');
    expect(put.body.data.price.toFixed(2)).toBe('0.81');
    expect(call.body.data.assumptions).toMatchObject({
      model: 'black-scholes',
      spot: 42,
      strike: 40,
      expiryDays: 182.5,
      timeToExpirationYears: 0.5,
      riskFreeRate: 0.1,
      volatility: 0.2,
      dividendYield: 0,
      optionType: 'call',
    });
    expect(Object.keys(call.body.data.greeks).sort()).toEqual(['delta', 'gamma', 'rho', 'theta', 'vega']);
  });

  it('when the target probability is asked, then touch is at least the at-expiry figure and the assumptions name both measures', async () => {
    const res = await svc.post('/v1/analytics/probability', key, { spot: 100, target: 110, expiryDays: 30, rate: 0.05, vol: 0.2, direction: 'long' });
    expect(res.status).toBe(200);
    expect(res.body.data.probabilityOfTouchBeforeExpiry).toBeGreaterThanOrEqual(res.body.data.probabilityInTheMoneyAtExpiry);
    expect(res.body.data.assumptions).toMatchObject({ model: 'lognormal-terminal', touchMeasure: 'driftless', direction: 'long' });
  });

  it('when a fairly priced iron condor is evaluated, then its risk-neutral EV is about 0 and its assumptions state the measure and contract size', async () => {
    const legs = [
      { action: 'buy', type: 'put', strike: 90, quantity: 2 },
      { action: 'sell', type: 'put', strike: 95, quantity: 2 },
      { action: 'sell', type: 'call', strike: 105, quantity: 2 },
      { action: 'buy', type: 'call', strike: 110, quantity: 2 },
    ];
    const res = await svc.post('/v1/analytics/strategy-ev', key, { structure: 'iron_condor', legs, spot: 100, expiryDays: 45, rate: 0.04, vol: 0.25 });
    expect(res.status).toBe(200);
    const premiums = res.body.data.legs.reduce((s: number, l: any) => s + Math.abs(l.premium), 0);
    expect(Math.abs(res.body.data.trueExpectedValue)).toBeLessThanOrEqual(1e-6 * premiums);
    expect(res.body.data).toMatchObject({ maxProfitUnbounded: false, maxLossUnbounded: false, structure: 'iron_condor' });
    expect(res.body.data.assumptions).toMatchObject({ model: 'lognormal-terminal-integration', measure: 'risk_neutral', contractMultiplier: 100 });
    const drifted = await svc.post('/v1/analytics/strategy-ev', key, {
      structure: 'long_call',
      legs: [{ action: 'buy', type: 'call', strike: 100, quantity: 1 }],
      spot: 100,
      expiryDays: 45,
      rate: 0.04,
      vol: 0.25,
      drift: 0.3,
    });
    expect(drifted.body.data.assumptions).toMatchObject({ measure: 'real_world', driftUsed: 0.3 });
    expect(drifted.body.data.trueExpectedValue).toBeGreaterThan(0);
    expect(drifted.body.data).toMatchObject({ maxProfit: null, maxProfitUnbounded: true });
  });

  // Issue 31, point 6: no invented numbers at the numeric edges. References by mpmath 1.3.0 (60 to 800 digits) on
  // the BSM closed forms and lognormal partial moments; the scripts are in test/unit/black-scholes.test.ts and
  // test/unit/strategy-ev.test.ts.
  it('when K·e^(−rT) overflows (spot = strike = 3e307, 10 years, rate −0.2), then the call is priced (1.0512436116264575e304) with every Greek, and the put, above the largest double, is null with reason overflow', async () => {
    const base = { spot: 3e307, strike: 3e307, expiryDays: 3650, rate: -0.2, vol: 0.2 };
    const call = await svc.post('/v1/analytics/option-price', key, { ...base, type: 'call' });
    expect(call.status).toBe(200);
    const near = (got: number, want: number) => expect(Math.abs(got / want - 1)).toBeLessThan(1e-12);
    near(call.body.data.price, 1.0512436116264575e304);
    near(call.body.data.greeks.theta, 1.2556839290267887e301);
    near(call.body.data.greeks.rho, 5.5885451752532897e303);
    near(call.body.data.greeks.vega, 6.593844009558801e303);
    expect(call.body.data.nullReasons).toEqual({});
    const put = await svc.post('/v1/analytics/option-price', key, { ...base, type: 'put' });
    expect(put.status).toBe(200);
    expect(put.body.data.price).toBeNull(); // mpmath: 1.9168219540403578e308
    expect(put.body.data.nullReasons).toEqual({ price: 'overflow' });
    near(put.body.data.greeks.rho, -2.2161579751616699e307);
    near(put.body.data.greeks.delta, -0.99778673707104008);
  });

  it('when an option is worth less than the smallest double, then its price and Greeks are null with reason underflow, not 0', async () => {
    // spot 100, strike 1000, 1 day, 10 % vol: d2 ≈ −440, every figure about e^(−97,000).
    const res = await svc.post('/v1/analytics/option-price', key, { spot: 100, strike: 1000, expiryDays: 1, rate: 0.05, vol: 0.1, type: 'call' });
    expect(res.status).toBe(200);
    expect(res.body.data.price).toBeNull();
    expect(res.body.data.greeks).toEqual({ delta: null, gamma: null, theta: null, vega: null, rho: null });
    expect(res.body.data.nullReasons).toEqual({
      price: 'underflow',
      'greeks.delta': 'underflow',
      'greeks.gamma': 'underflow',
      'greeks.theta': 'underflow',
      'greeks.vega': 'underflow',
      'greeks.rho': 'underflow',
    });
    const far = await svc.post('/v1/analytics/probability', key, { spot: 100, target: 1e6, expiryDays: 30, rate: 0.05, vol: 0.2, direction: 'long' });
    expect(far.status).toBe(200);
    expect(far.body.data).toMatchObject({ probabilityInTheMoneyAtExpiry: null, probabilityOfTouchBeforeExpiry: null });
    expect(far.body.data.nullReasons).toEqual({ probabilityInTheMoneyAtExpiry: 'underflow', probabilityOfTouchBeforeExpiry: 'underflow' });
  });

  it('when a long call is evaluated at spot = strike = 1e154, then its standard deviation is 3.6001692133093484e154 (mpmath) and every figure is the spot-100 answer scaled by 1e152', async () => {
    const body = (s: number) => ({
      structure: 'long_call',
      legs: [{ action: 'buy', type: 'call', strike: s, quantity: 1 }],
      spot: s,
      expiryDays: 30,
      rate: 0.05,
      vol: 0.2,
    });
    const big = await svc.post('/v1/analytics/strategy-ev', key, body(1e154));
    const small = await svc.post('/v1/analytics/strategy-ev', key, body(100));
    expect(big.status).toBe(200);
    const b = big.body.data;
    const s = small.body.data;
    expect(b.nullReasons).toEqual({});
    expect(Math.abs(b.riskMetrics.standardDeviation / 3.6001692133093484407e154 - 1)).toBeLessThan(1e-12);
    expect(Math.abs(b.riskMetrics.downsideDeviation / 1.832646371755493442e154 - 1)).toBeLessThan(1e-12);
    // EV is 0 for a fair price under the risk-neutral measure (the documented snap), so sortino is a true 0, at both scales.
    expect(b.riskMetrics.sortinoRatio).toBe(0);
    expect(s.riskMetrics.sortinoRatio).toBe(0);
    for (const k of ['standardDeviation', 'downsideDeviation'] as const)
      expect(Math.abs(b.riskMetrics[k] / (s.riskMetrics[k] * 1e152) - 1)).toBeLessThan(1e-12);
    for (const k of ['netCreditDebit', 'expectedPayoffAtExpiry', 'maxLoss'] as const) expect(Math.abs(b[k] / (s[k] * 1e152) - 1)).toBeLessThan(1e-12);
    expect(Math.abs(b.probabilityOfProfit - s.probabilityOfProfit)).toBeLessThan(1e-12);
  });

  it('when inputs are bad, then 400 invalid_request names each field; stock legs and several expiries are 422 unsupported_structure', async () => {
    const bad = await svc.post('/v1/analytics/option-price', key, { spot: 42, strike: 0, expiryDays: 0, rate: 0.1, vol: -0.2, type: 'call' });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.error.details).sort()).toEqual(['expiryDays', 'strike', 'vol']);
    const nan = await svc.post('/v1/analytics/probability', key, '{"spot":"NaN","target":1e400,"expiryDays":30,"rate":0.05,"vol":0.2,"direction":"up"}');
    expect(nan.status).toBe(400);
    expect(Object.keys(nan.body.error.details).sort()).toEqual(['direction', 'spot', 'target']);
    const noLegs = await svc.post('/v1/analytics/strategy-ev', key, { structure: 'custom', legs: [], spot: 100, expiryDays: 30, rate: 0.05, vol: 0.2 });
    expect(noLegs.status).toBe(400);
    expect(Object.keys(noLegs.body.error.details)).toEqual(['legs']);
    const stock = await svc.post('/v1/analytics/strategy-ev', key, {
      structure: 'custom',
      legs: [
        { action: 'buy', type: 'stock', quantity: 1 },
        { action: 'sell', type: 'call', strike: 105, quantity: 1 },
      ],
      spot: 100,
      expiryDays: 30,
      rate: 0.05,
      vol: 0.2,
    });
    expect(stock.status).toBe(422);
    expect(stock.body.error.code).toBe('unsupported_structure');
    const expiries = await svc.post('/v1/analytics/strategy-ev', key, {
      structure: 'custom',
      legs: [{ action: 'buy', type: 'call', strike: 100, quantity: 1, expiryDays: 60 }],
      spot: 100,
      expiryDays: 30,
      rate: 0.05,
      vol: 0.2,
    });
    expect(expiries.status).toBe(422);
    expect(Object.keys(expiries.body.error.details)).toEqual(['legs.0.expiryDays']);
    const malformed = await svc.post('/v1/analytics/strategy-ev', key, '{"structure":');
    expect(malformed.status).toBe(400);
    const text = await svc.post('/v1/analytics/option-price', key, 'spot=42', { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(text.body.error.code).toBe('unsupported_media_type');
  });
});

describe('worker pool saturation', () => {
  it('when more heavy requests arrive than the pool admits, then the excess gets 503 overloaded with Retry-After and none hangs', async () => {
    const small = await startService({ WORKER_THREADS: '1', WORKER_MAX_QUEUE: '1' });
    try {
      const k = await small.keyWith(['technicals:read']);
      const { id } = await createInstrument(small);
      const days = weekdays('2017-01-02', '2020-12-31');
      await ingest(
        small,
        '/bars/daily',
        days.map((d, i) => dailyBar(id, { barDate: d, open: 100 + Math.sin(i / 7) * 10, close: 100 + Math.sin(i / 5) * 10 })),
      );
      const started = Date.now();
      const replies = await Promise.all(Array.from({ length: 40 }, () => small.get(`/v1/instruments/${id}/technicals?lookbackDays=1000&asOf=2020-12-31`, k)));
      expect(Date.now() - started).toBeLessThan(25_000);
      const statuses = replies.map((r) => r.status);
      expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
      const shed = replies.filter((r) => r.status === 503);
      expect(shed.length).toBeGreaterThan(0);
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
      expect(shed[0].body.error.code).toBe('overloaded');
      expect(shed[0].headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      await small.stop();
    }
  });
});
