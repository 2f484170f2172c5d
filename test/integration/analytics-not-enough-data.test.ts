import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstrument, dailyBar, ingest, weekdays } from './fixtures.ts';
import { Service, startService } from './harness.ts';

// docs/api.md, "When there is not enough data": every route that computes
// figures from stored data answers too little data with 200, each figure that
// cannot be computed null and its reason beside it, except where the
// specification fixes a status (technicals: an unknown instrument or a window
// with no bar is 404; correlations: fewer than two usable instruments is 400;
// beta: an unknown instrument is 404). A window whose stored bars were all
// published after the read's asOf says not_yet_known. Every expected value
// comes from the rows posted here and the documented rules.

let svc: Service;
let key: string;
beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['technicals:read', 'correlations:read', 'sentiment:read', 'events:read']);
});
afterAll(() => svc.stop());

// The first half of 2012, each bar known at the end of its day (dailyBar's default) unless published later.
const DAYS = weekdays('2012-01-02', '2012-06-29');
const PUBLISHED_LATER = '2013-01-15T00:00:00.000Z';
// asOf 2012-06-29 (the end of that day) with a 90-day lookback: the calendar days 2012-04-01..2012-06-29.
const WINDOW = 'lookbackDays=90&asOf=2012-06-29';
const IN_WINDOW = DAYS.filter((d) => d >= '2012-04-01');
// At the later publication, a lookback over all of 2012's first half.
const LATER_WINDOW = `lookbackDays=504&asOf=${PUBLISHED_LATER}`;

const wave = (phase: number) => DAYS.map((barDate, i) => ({ barDate, close: 100 + 10 * Math.sin(i / 5 + phase) + i / 10 }));

async function instrumentWith(bars: { barDate: string; close: number }[], extra: Record<string, unknown> = {}) {
  const { id } = await createInstrument(svc);
  if (bars.length) {
    await ingest(
      svc,
      '/bars/daily',
      bars.map((b) => dailyBar(id, b, extra)),
    );
  }
  return id;
}

let known: string; // every bar known at its day's end
let other: string; // the same days, another wave
let later: string; // the same days, every bar published on 2013-01-15
let two: string; // two bars in the window: one return
let none: string; // no bar stored at all
let flat: string; // a close that never moves
beforeAll(async () => {
  known = await instrumentWith(wave(0));
  other = await instrumentWith(wave(2));
  later = await instrumentWith(wave(4), { asOf: PUBLISHED_LATER });
  two = await instrumentWith([
    { barDate: '2012-06-28', close: 30 },
    { barDate: '2012-06-29', close: 31 },
  ]);
  none = await instrumentWith([]);
  flat = await instrumentWith(DAYS.map((barDate) => ({ barDate, close: 50 })));
});

describe('technicals', () => {
  it('when the window has two bars, then 200: the indicators that need more are null with reason insufficient_bars, and no trend is given', async () => {
    const res = await svc.get(`/v1/instruments/${two}/technicals?${WINDOW}`, key);
    expect(res.status).toBe(200);
    expect(res.body.data.assumptions).toMatchObject({ barsUsed: 2, firstBarDate: '2012-06-28', lastBarDate: '2012-06-29' });
    // RSI needs 15 bars, MACD 34, the two fastest averages 20, a trend 3 voting indicators.
    expect(res.body.data.rsi).toMatchObject({ value: null, signal: null, reason: 'insufficient_bars' });
    expect(res.body.data.macd).toMatchObject({ value: null, signal: null, histogram: null, trend: null, crossover: null, reason: 'insufficient_bars' });
    expect(res.body.data.ema).toMatchObject({ ema20: null, trend: null, strength: null, reason: 'insufficient_bars' });
    expect(res.body.data.trend).toMatchObject({ direction: null, strength: null, confidence: null, reason: 'insufficient_bars' });
  });

  it('when every bar of the window was published after asOf, then 404 not_found (the specification fixes it) with reason not_yet_known and when they became known', async () => {
    const res = await svc.get(`/v1/instruments/${later}/technicals?${WINDOW}`, key);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
    expect(res.body.error.details.reason).toEqual(['not_yet_known']);
    expect(res.body.error.message).toContain(`${IN_WINDOW.length} bars stored`);
    expect(res.body.error.message).toContain(PUBLISHED_LATER);
    // From their publication on, they are read.
    const after = await svc.get(`/v1/instruments/${later}/technicals?${LATER_WINDOW}`, key);
    expect(after.status).toBe(200);
    expect(after.body.data.assumptions).toMatchObject({ barsUsed: DAYS.length, firstBarDate: DAYS[0], lastBarDate: DAYS.at(-1) });
  });

  it('when nothing is stored in the window, then 404 with reason no_stored_bars; an unknown instrument is 404 not_found', async () => {
    const empty = await svc.get(`/v1/instruments/${none}/technicals?${WINDOW}`, key);
    expect(empty.status).toBe(404);
    expect(empty.body.error.details.reason).toEqual(['no_stored_bars']);
    const unknown = await svc.get(`/v1/instruments/${randomUUID()}/technicals?${WINDOW}`, key);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
  });
});

describe('correlations', () => {
  it('when instruments have too little data, then 200: each is unusable with its reason, its pairs null, and an unknown id is listed', async () => {
    const stranger = randomUUID();
    const ids = [known, other, later, two, none];
    const res = await svc.get(`/v1/correlations?instrumentIds=${[...ids, stranger].join(',')}&${WINDOW}`, key);
    expect(res.status).toBe(200);
    expect(res.body.data.unknownInstrumentIds).toEqual([stranger]);
    expect(res.body.data.instruments).toEqual([
      { instrumentId: known, observations: IN_WINDOW.length - 1, usable: true, reason: null },
      { instrumentId: other, observations: IN_WINDOW.length - 1, usable: true, reason: null },
      { instrumentId: later, observations: 0, usable: false, reason: 'not_yet_known' },
      { instrumentId: two, observations: 1, usable: false, reason: 'insufficient_observations' },
      { instrumentId: none, observations: 0, usable: false, reason: 'no_stored_bars' },
    ]);
    const pairs = res.body.data.pairs as { assetA: string; assetB: string; correlation: number | null; reason: string | null }[];
    expect(pairs).toHaveLength(10);
    for (const p of pairs) {
      if (p.assetA === known && p.assetB === other) {
        expect(typeof p.correlation).toBe('number');
        expect(p.reason).toBeNull();
      } else {
        expect(p).toMatchObject({ correlation: null, reason: 'unusable_instrument' });
      }
    }
  });

  it('when a return series is constant, then its pairs are null with reason constant_returns', async () => {
    const res = await svc.get(`/v1/correlations?instrumentIds=${known},${flat}&${WINDOW}`, key);
    expect(res.status).toBe(200);
    expect(res.body.data.pairs).toEqual([{ assetA: known, assetB: flat, correlation: null, reason: 'constant_returns' }]);
  });

  it('when fewer than two instruments are usable, then 400 invalid_request (the specification fixes it), details giving each count and reason', async () => {
    const stranger = randomUUID();
    const res = await svc.get(`/v1/correlations?instrumentIds=${known},${later},${none},${stranger}&${WINDOW}`, key);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.details[later]).toEqual(['0 return observations (not_yet_known)']);
    expect(res.body.error.details[none]).toEqual(['0 return observations (no_stored_bars)']);
    expect(res.body.error.details[stranger]).toEqual(['unknown instrument']);
    expect(res.body.error.details[known]).toBeUndefined();
  });

  it('when read from the later publication on, then the same instruments are usable', async () => {
    const res = await svc.get(`/v1/correlations?instrumentIds=${known},${later}&${LATER_WINDOW}`, key);
    expect(res.status).toBe(200);
    expect(res.body.data.instruments.map((i: { observations: number; reason: string | null }) => [i.observations, i.reason])).toEqual([
      [DAYS.length - 1, null],
      [DAYS.length - 1, null],
    ]);
  });
});

describe('beta', () => {
  const beta = (subject: string, benchmark: string, window = WINDOW) => svc.get(`/v1/instruments/${subject}/beta?benchmarkId=${benchmark}&${window}`, key);

  it('when fewer than 3 returns overlap, then 200 with beta, alpha and R² null, reason insufficient_overlap, about the pair', async () => {
    const res = await beta(known, two);
    expect(res.status).toBe(200);
    // The two share 2012-06-28 and 06-29: one aligned return.
    expect(res.body.data).toMatchObject({ beta: null, alpha: null, rSquared: null, observations: 1, reason: 'insufficient_overlap', reasonInstrumentId: null });
  });

  it('when the instrument’s or the benchmark’s bars were all published after asOf, then reason not_yet_known naming it; the instrument’s reason comes first', async () => {
    for (const [subject, benchmark, reason, about] of [
      [later, known, 'not_yet_known', later],
      [known, later, 'not_yet_known', later],
      [later, none, 'not_yet_known', later],
      [none, later, 'no_stored_bars', none],
      [known, none, 'no_stored_bars', none],
    ]) {
      const res = await beta(subject, benchmark);
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ beta: null, alpha: null, rSquared: null, observations: 0, reason, reasonInstrumentId: about });
    }
    const after = await beta(later, known, LATER_WINDOW);
    expect(after.body.data).toMatchObject({ observations: DAYS.length - 1, reason: null, reasonInstrumentId: null });
    expect(typeof after.body.data.beta).toBe('number');
  });

  it('when the benchmark never moves, then zero_benchmark_variance naming the benchmark; an unknown instrument is 404 (the specification fixes it)', async () => {
    const res = await beta(known, flat);
    expect(res.body.data).toMatchObject({ beta: null, alpha: null, rSquared: null, reason: 'zero_benchmark_variance', reasonInstrumentId: flat });
    const unknown = await beta(randomUUID(), known);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
  });
});

describe('source leads', () => {
  // Ten sessions with moving closes. A source scoring sessions 1..5 with one constant score pairs, at lag L, each
  // session s ≤ 9 − L with the return of s + L: 5 pairs up to lag 4, then 4, 3, 2, 1, 0, 0.
  const sessions = weekdays('2012-08-06', '2012-08-17');
  const sourceName = (stem: string) => `${stem}-${randomUUID().slice(0, 8)}`;
  const constant = sourceName('constant');
  const single = sourceName('single');
  const score = (instrumentId: string, source: string, asOfDate: string) => ({
    instrumentId,
    source,
    subjectClass: 'business',
    asOfDate,
    score: 0.5,
    scale: [-1, 1],
    isHeadlineOnly: false,
  });

  beforeAll(async () => {
    expect(sessions).toHaveLength(10);
    const id = await instrumentWith(sessions.map((barDate, i) => ({ barDate, close: 10 + i * i })));
    await ingest(svc, '/sentiment', [...sessions.slice(1, 6).map((d) => score(id, constant, d)), score(id, single, sessions[1])]);
  });

  const lead = async (source: string) => {
    const res = await svc.get(`/v1/sentiment/source-leads?source=${source}`, key);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    return res.body.data[0];
  };

  it('when the scores never vary, then each lag is null with no_variation where it has 3 pairs, insufficient_pairs below, and the lead says no_variation', async () => {
    const l = await lead(constant);
    const sizes = [5, 5, 5, 5, 5, 4, 3, 2, 1, 0, 0];
    expect(l.correlationByLag).toEqual(
      sizes.map((sampleSize, lagDays) => ({ lagDays, correlation: null, sampleSize, reason: sampleSize >= 3 ? 'no_variation' : 'insufficient_pairs' })),
    );
    expect(l).toMatchObject({ bestLagDays: null, peakCorrelation: null, sampleSize: null, reason: 'no_variation', isPromotionEligible: false });
  });

  it('when a source has one score, then every lag and the lead say insufficient_pairs', async () => {
    const l = await lead(single);
    // Session 1 pairs with the return of 1 + L while 1 + L ≤ 9.
    expect(l.correlationByLag.map((c: { sampleSize: number; reason: string }) => [c.sampleSize, c.reason])).toEqual(
      [...Array(11).keys()].map((lag) => [lag <= 8 ? 1 : 0, 'insufficient_pairs']),
    );
    expect(l).toMatchObject({ bestLagDays: null, peakCorrelation: null, sampleSize: null, reason: 'insufficient_pairs' });
  });
});

describe('event reactions', () => {
  it('when an item has no bar before its session, then it has no row (a missing observation is omitted); an unknown instrument is 404', async () => {
    const id = await instrumentWith([
      { barDate: '2012-03-01', close: 40 },
      { barDate: '2012-03-02', close: 41 },
    ]);
    const item = (publishedAt: string) => ({
      id: randomUUID(),
      instrumentId: id,
      eventClass: 'earnings_release',
      headline: `Test headline ${randomUUID().slice(0, 8)}`,
      source: 'test-fixture',
      url: `https://news.example.test/${randomUUID()}`,
      publishedAt,
      isCompanyConfirmed: true,
    });
    // 15:00Z is before the 16:00 New York close (21:00Z): the first falls on 03-01, which has no bar before it.
    const [first, second] = [item('2012-03-01T15:00:00Z'), item('2012-03-02T15:00:00Z')];
    await ingest(svc, '/news', [first, second]);
    const res = await svc.get(`/v1/instruments/${id}/event-reactions`, key);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    expect(res.body.data[0]).toMatchObject({
      eventId: second.id,
      eventDate: '2012-03-02',
      previousSessionDate: '2012-03-01',
      previousClose: 40,
      sessionClose: 41,
    });
    expect(Math.abs(res.body.data[0].reactionPct - 100 * (41 / 40 - 1))).toBeLessThan(1e-12);
    expect((await svc.get(`/v1/instruments/${randomUUID()}/event-reactions`, key)).status).toBe(404);
  });
});
