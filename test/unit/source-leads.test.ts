import { sampleCorrelation } from 'simple-statistics';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../server/demo/synthetic-intraday.ts';
import { isPromotionEligible, oneSidedPValue, sourceLeads } from '../../workers/source-leads.ts';
import { LAGS, type LeadSubjectClass, type SourceLead, type SourceLeadsInput } from '../../workers/contract.ts';
import { lagReason, leadReason } from '../../server/sentiment/schema.ts';

// The worker against a reference written from the definition alone: per score,
// its session found by scanning the dates, the return of the L-th session
// after it taken from the closes, and the pairs of each lag correlated by
// simple-statistics.

const DAY = 86_400_000;
const dayOf = (iso: string) => Date.parse(`${iso}T00:00:00Z`) / DAY;

interface Bars {
  days: number[];
  closes: number[];
}

interface Score {
  instrument: number;
  group: number;
  day: number;
  score: number;
}

/** Weekdays from `from`, `count` of them, as days since 1970-01-01. */
function weekdays(from: string, count: number): number[] {
  const out: number[] = [];
  for (let d = dayOf(from); out.length < count; d++) {
    const wd = new Date(d * DAY).getUTCDay();
    if (wd !== 0 && wd !== 6) out.push(d);
  }
  return out;
}

/** A random walk of closes, each a simple return drawn from the seeded PRNG. */
function walk(days: number[], seed: number): Bars {
  const rand = mulberry32(seed);
  const closes = [100];
  for (let i = 1; i < days.length; i++) closes.push(closes[i - 1] * (1 + (rand() - 0.5) * 0.04));
  return { days, closes };
}

function inputOf(groups: LeadSubjectClass[], bars: Bars[], scores: Score[]): SourceLeadsInput {
  const sorted = [...scores].sort((a, b) => a.instrument - b.instrument || a.group - b.group || a.day - b.day);
  const keys: string[] = [];
  const seriesInstrument: number[] = [];
  const seriesGroup: number[] = [];
  const seriesOffsets = [0];
  sorted.forEach((s, i) => {
    const key = `${s.instrument}/${s.group}`;
    if (keys.at(-1) !== key) {
      if (i) seriesOffsets.push(i);
      keys.push(key);
      seriesInstrument.push(s.instrument);
      seriesGroup.push(s.group);
    }
  });
  seriesOffsets.push(sorted.length);
  const barOffsets = [0];
  for (const b of bars) barOffsets.push(barOffsets.at(-1)! + b.days.length);
  return {
    groups: groups.map((subjectClass) => ({ subjectClass })),
    seriesInstrument: Int32Array.from(seriesInstrument),
    seriesGroup: Int32Array.from(seriesGroup),
    seriesOffsets: Int32Array.from(seriesOffsets),
    scoreDays: Int32Array.from(sorted.map((s) => s.day)),
    scores: Float64Array.from(sorted.map((s) => s.score)),
    barOffsets: Int32Array.from(barOffsets),
    barDays: Int32Array.from(bars.flatMap((b) => b.days)),
    closes: Float64Array.from(bars.flatMap((b) => b.closes)),
  };
}

/** The (score, return) pairs of one group at one lag, from the definition. */
function referencePairs(bars: Bars[], scores: Score[], group: number, lag: number): [number[], number[]] {
  const xs: number[] = [];
  const ys: number[] = [];
  for (const s of scores.filter((x) => x.group === group)) {
    const { days, closes } = bars[s.instrument];
    let s0 = -1;
    for (let k = 0; k < days.length; k++) if (days[k] <= s.day) s0 = k;
    if (s0 < 0 || s.day - days[s0] > 7) continue;
    const k = s0 + lag;
    if (k < 1 || k >= days.length) continue;
    xs.push(s.score);
    ys.push(closes[k] / closes[k - 1] - 1);
  }
  return [xs, ys];
}

const simpleReturn = (b: Bars, k: number) => b.closes[k] / b.closes[k - 1] - 1;

/** Three instruments over 300 sessions; group 0 leads by 3 sessions, group 1 is independent noise, group 2 is commentary on the same session. */
function constructed() {
  const rand = mulberry32(7);
  const bars = [0, 1, 2].map((i) => walk(weekdays('2010-01-04', 300), 100 + i));
  const scores: Score[] = [];
  bars.forEach((b, instrument) => {
    for (let t = 1; t + 3 < b.days.length; t++) {
      scores.push({ instrument, group: 0, day: b.days[t], score: simpleReturn(b, t + 3) * 20 + (rand() - 0.5) * 0.3 });
      scores.push({ instrument, group: 1, day: b.days[t], score: rand() * 100 });
      scores.push({ instrument, group: 2, day: b.days[t], score: simpleReturn(b, t) * 20 + (rand() - 0.5) * 0.3 });
    }
  });
  return { bars, scores };
}

describe('sourceLeads against the definition', () => {
  const { bars, scores } = constructed();
  const groups: LeadSubjectClass[] = ['business', 'business', 'market_commentary'];
  const leads = sourceLeads(inputOf(groups, bars, scores));

  it('when scores lead, lag and ignore the returns, then every lag of every group matches simple-statistics on the same pairs to 1e-12', () => {
    let compared = 0;
    for (const g of [0, 1, 2]) {
      expect(leads[g].correlationByLag.map((c) => c.lagDays)).toEqual([...Array(LAGS).keys()]);
      for (let lag = 0; lag < LAGS; lag++) {
        const [xs, ys] = referencePairs(bars, scores, g, lag);
        const got = leads[g].correlationByLag[lag];
        expect(got.sampleSize).toBe(xs.length);
        expect(Math.abs(got.correlation! - sampleCorrelation(xs, ys))).toBeLessThan(1e-12);
        compared++;
      }
    }
    expect(compared).toBe(33);
  });

  it('when a business score is built from the return 3 sessions later, then bestLagDays is 3 and it is eligible', () => {
    const lead = leads[0];
    expect(lead.bestLagDays).toBe(3);
    expect(lead.peakCorrelation).toBe(lead.correlationByLag[3].correlation);
    expect(lead.peakCorrelation).toBeGreaterThan(0.9);
    // 296 scores per instrument, each with a session 3 ahead.
    expect(lead.sampleSize).toBe(3 * 296);
    expect(lead.isPromotionEligible).toBe(true);
    expect([lead.instruments, lead.firstDay, lead.lastDay]).toEqual([3, bars[0].days[1], bars[0].days[296]]);
  });

  it('when a business score is independent of the returns, then it is not eligible', () => {
    expect(leads[1].bestLagDays).not.toBeNull();
    expect(Math.abs(leads[1].peakCorrelation!)).toBeLessThan(0.1);
    expect(leads[1].isPromotionEligible).toBe(false);
  });

  it('when commentary follows the same session, then it peaks at lag 0 and is not eligible', () => {
    expect(leads[2].bestLagDays).toBe(0);
    expect(leads[2].peakCorrelation).toBeGreaterThan(0.9);
    expect(leads[2].isPromotionEligible).toBe(false);
  });

  it('when market_commentary leads perfectly by 3 sessions, then it is still never eligible', () => {
    const lead = sourceLeads(
      inputOf(
        ['market_commentary'],
        bars,
        scores.filter((s) => s.group === 0).map((s) => ({ ...s, group: 0 })),
      ),
    )[0];
    expect(lead.bestLagDays).toBe(3);
    expect(lead.peakCorrelation).toBeGreaterThan(0.9);
    expect(lead.isPromotionEligible).toBe(false);
  });

  it('when a business source peaks at lag 0, then it is not eligible: its own session is no lead', () => {
    const lead = sourceLeads(
      inputOf(
        ['business'],
        bars,
        scores.filter((s) => s.group === 2).map((s) => ({ ...s, group: 0 })),
      ),
    )[0];
    expect(lead.bestLagDays).toBe(0);
    expect(lead.isPromotionEligible).toBe(false);
  });
});

describe('sessions and absent figures', () => {
  const days = weekdays('2020-01-06', 20); // Mon 2020-01-06 .. Fri 2020-01-31
  const bars: Bars[] = [{ days, closes: days.map((_, i) => 100 + i * i) }];

  it('when a score falls on a Saturday, then it belongs to Friday’s session: lag 0 is Friday’s return, lag 1 Monday’s', () => {
    // Scores on the three Saturdays, each with a different value so that the pairs differ.
    const saturdays = [dayOf('2020-01-11'), dayOf('2020-01-18'), dayOf('2020-01-25')];
    const scores = saturdays.map((day, i) => ({ instrument: 0, group: 0, day, score: i * i + i }));
    const [lead] = sourceLeads(inputOf(['business'], bars, scores));
    const friday = (sat: number) => days.indexOf(sat - 1);
    for (const lag of [0, 1]) {
      const xs = scores.map((s) => s.score);
      const ys = saturdays.map((sat) => simpleReturn(bars[0], friday(sat) + lag));
      expect(lead.correlationByLag[lag].sampleSize).toBe(3);
      expect(Math.abs(lead.correlationByLag[lag].correlation! - sampleCorrelation(xs, ys))).toBeLessThan(1e-12);
    }
    // The last Saturday's Friday (2020-01-24) is 5 sessions before the last bar: from lag 6 on only the two earlier Saturdays pair, too few.
    expect(lead.correlationByLag.map((c) => c.sampleSize)).toEqual([3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2]);
    expect(lead.correlationByLag.slice(6).every((c) => c.correlation === null)).toBe(true);
  });

  it('when a score lies more than 7 days after the last bar before it, or before the first bar, then it pairs with nothing', () => {
    const scores = [
      { instrument: 0, group: 0, day: days[0] - 1, score: 1 },
      { instrument: 0, group: 0, day: days.at(-1)! + 8, score: 2 },
    ];
    const [lead] = sourceLeads(inputOf(['business'], bars, scores));
    expect(lead.correlationByLag.every((c) => c.sampleSize === 0 && c.correlation === null)).toBe(true);
    expect([lead.bestLagDays, lead.peakCorrelation, lead.sampleSize, lead.isPromotionEligible]).toEqual([null, null, null, false]);
    expect([lead.instruments, lead.firstDay, lead.lastDay]).toEqual([1, days[0] - 1, days.at(-1)! + 8]);
  });

  it('when the scores of a lag are all equal, then that lag has no correlation rather than 0', () => {
    const scores = days.slice(0, 10).map((day) => ({ instrument: 0, group: 0, day, score: 0.5 }));
    const [lead] = sourceLeads(inputOf(['business'], bars, scores));
    expect(lead.correlationByLag.map((c) => c.correlation)).toEqual(Array(LAGS).fill(null));
    expect(lead.correlationByLag[0].sampleSize).toBe(9);
  });

  it('when an instrument has no bars, or a close is not usable, then its pairs are left out, never zero', () => {
    const broken: Bars = { days, closes: days.map((_, i) => (i === 5 ? Number.NaN : i === 6 ? 0 : 100 + i)) };
    const scores = days.map((day, i) => ({ instrument: 0, group: 0, day, score: i }));
    const withNoBars = [...scores, ...scores.map((s) => ({ ...s, instrument: 1 }))];
    const [lead] = sourceLeads(inputOf(['business'], [broken, { days: [], closes: [] }], withNoBars));
    // Lag 0: returns of sessions 1..19 except 5 (NaN close), 6 (close 0, before it NaN) and 7 (the close before it is 0).
    expect(lead.correlationByLag[0].sampleSize).toBe(16);
    expect(lead.instruments).toBe(2);
  });

  it('when closes of 1e300 and 10 alternate, then the returns overflow the sums and the correlation is null, not a number made of infinities', () => {
    const extreme: Bars = { days, closes: days.map((_, i) => (i % 2 ? 1e300 : 10)) };
    const scores = days.map((day, i) => ({ instrument: 0, group: 0, day, score: i % 3 }));
    const [lead] = sourceLeads(inputOf(['business'], [extreme], scores));
    expect(lead.correlationByLag[0]).toEqual({ lagDays: 0, correlation: null, sampleSize: 19 });
    expect(lead.bestLagDays).toBeNull();
  });

  it('when score days are not ascending within a series, then the task refuses the input', () => {
    const input = inputOf(['business'], bars, [
      { instrument: 0, group: 0, day: days[1], score: 1 },
      { instrument: 0, group: 0, day: days[2], score: 2 },
    ]);
    input.scoreDays.reverse();
    expect(() => sourceLeads(input)).toThrow(RangeError);
  });
});

describe('the promotion rule', () => {
  it('when the p-value is computed, then it matches the closed forms of Student’s t with 1 and 2 degrees of freedom', () => {
    // n − 2 = 1: P(T ≥ t) = 1/2 − atan(t)/π; n − 2 = 2: P(T ≥ t) = 1/2 − t/(2√(t² + 2)).
    // jStat's incomplete beta function is good to about 1e-8.
    for (const r of [-0.9, -0.3, 0, 0.2, 0.5, 0.95]) {
      const t1 = r / Math.sqrt(1 - r * r);
      expect(Math.abs(oneSidedPValue(r, 3) - (0.5 - Math.atan(t1) / Math.PI))).toBeLessThan(1e-7);
      const t2 = (r * Math.sqrt(2)) / Math.sqrt(1 - r * r);
      expect(Math.abs(oneSidedPValue(r, 4) - (0.5 - t2 / (2 * Math.sqrt(t2 * t2 + 2))))).toBeLessThan(1e-7);
    }
    expect(oneSidedPValue(1, 100)).toBe(0);
  });

  it('when each threshold is just met or just missed, then the verdict follows it', () => {
    // At n = 60 the one-sided critical t at 0.05/11 is 2.7 (tables: t(58) at 0.0045 ≈ 2.70), so r ≈ 0.334.
    expect(isPromotionEligible('business', 1, 0.36, 60)).toBe(true);
    expect(isPromotionEligible('business', 1, 0.31, 60)).toBe(false);
    expect(isPromotionEligible('business', 1, 0.9, 59)).toBe(false);
    // On a large sample a tiny correlation is significant but below the 0.1 floor.
    expect(oneSidedPValue(0.09, 100_000)).toBeLessThan(0.05 / 11);
    expect(isPromotionEligible('business', 1, 0.09, 100_000)).toBe(false);
    expect(isPromotionEligible('business', 1, 0.1, 100_000)).toBe(true);
    expect(isPromotionEligible('business', 0, 0.9, 1000)).toBe(false);
    expect(isPromotionEligible('market_commentary', 3, 0.9, 1000)).toBe(false);
  });
});

describe('cost', () => {
  it('when the bars span decades but the scores a month, then the pass reads only the bars around the scores', () => {
    // Linear by structure: each series finds its first session by binary
    // search and then walks forward with its scores. Not timed: a closes
    // array whose every value outside the scores' month is a trap (NaN would
    // drop the pair, a throw would fail) shows those values are never read.
    const days = weekdays('1990-01-01', 9000);
    const start = days.indexOf(dayOf('2010-03-01'));
    const reads = new Set<number>();
    const closes = new Proxy(
      Float64Array.from(days, (_, i) => 100 + (i % 7)),
      {
        get(target, key) {
          if (typeof key === 'string' && /^\d+$/.test(key)) reads.add(Number(key));
          // Not the proxy as receiver: a typed array's length and methods need the array itself.
          const value: unknown = Reflect.get(target, key);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      },
    );
    const input = inputOf(
      ['business'],
      [{ days, closes: [] }],
      days.slice(start, start + 20).map((day, i) => ({ instrument: 0, group: 0, day, score: i % 5 })),
    );
    input.closes = closes;
    const [lead]: SourceLead[] = sourceLeads(input);
    expect(lead.correlationByLag[0].sampleSize).toBe(20);
    expect(Math.min(...reads)).toBe(start - 1);
    expect(Math.max(...reads)).toBe(start + 19 + 10);
  });
});

describe('the reasons a read gives for null figures (lagReason, leadReason)', () => {
  // The route reads the reasons from the stored figures; here they must agree with why the worker left each one null.
  const days = weekdays('2020-01-06', 20);
  const bars: Bars[] = [{ days, closes: days.map((_, i) => 100 + i * i) }];
  const reasons = (lead: SourceLead) => lead.correlationByLag.map((c) => lagReason(c.correlation, c.sampleSize));

  it('when a lag has a correlation, then no reason; when none has, the lead says why', () => {
    const scores = days.map((day, i) => ({ instrument: 0, group: 0, day, score: (i * 7) % 5 }));
    const [lead] = sourceLeads(inputOf(['business'], bars, scores));
    expect(reasons(lead).slice(0, 10)).toEqual(Array(10).fill(null));
    expect(leadReason(lead.correlationByLag)).toBeNull();
  });

  it('when the scores are constant, then each lag with 3 pairs or more is no_variation and those below insufficient_pairs; the lead no_variation', () => {
    // Sessions 11..15 scored: at lag L, session s pairs while s + L ≤ 19, so 5, 5, 5, 5, 5, 4, 3, 2, 1, 0, 0 pairs.
    const scores = days.slice(11, 16).map((day) => ({ instrument: 0, group: 0, day, score: 0.5 }));
    const [lead] = sourceLeads(inputOf(['business'], bars, scores));
    expect(lead.correlationByLag.map((c) => c.sampleSize)).toEqual([5, 5, 5, 5, 5, 4, 3, 2, 1, 0, 0]);
    expect(reasons(lead)).toEqual([...Array(7).fill('no_variation'), ...Array(4).fill('insufficient_pairs')]);
    expect(leadReason(lead.correlationByLag)).toBe('no_variation');
  });

  it('when no lag has 3 pairs, then every lag and the lead are insufficient_pairs', () => {
    const scores = days.slice(0, 2).map((day, i) => ({ instrument: 0, group: 0, day, score: i }));
    const [lead] = sourceLeads(inputOf(['business'], bars, scores));
    expect(reasons(lead)).toEqual(Array(LAGS).fill('insufficient_pairs'));
    expect(leadReason(lead.correlationByLag)).toBe('insufficient_pairs');
  });

  it('when the returns overflow the sums, then no_variation, as documented for a spread beyond the range of a double', () => {
    const extreme: Bars = { days, closes: days.map((_, i) => (i % 2 ? 1e300 : 10)) };
    const scores = days.map((day, i) => ({ instrument: 0, group: 0, day, score: i % 3 }));
    const [lead] = sourceLeads(inputOf(['business'], [extreme], scores));
    expect(lagReason(lead.correlationByLag[0].correlation, lead.correlationByLag[0].sampleSize)).toBe('no_variation');
  });
});
