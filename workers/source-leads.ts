/**
 * Sentiment source leads (GET /v1/sentiment/source-leads). Pure.
 *
 * Definitions:
 * - Sessions are the days with a bar of the instrument, in order. A score
 *   dated t belongs to session s0, the last session on or before t (a score
 *   of a Saturday belongs to Friday's session). When s0 lies more than
 *   SESSION_LOOKBACK_DAYS calendar days before t, or there is none, the stored
 *   bars have a gap there and the score pairs with nothing.
 * - The return at lag L (0..MAX_LAG_DAYS) is the simple return of session
 *   s_L = s0 + L on adjusted closes: close(s_L) / close(s_{L−1}) − 1. Lag 0 is
 *   the move of the score's own session, which a reactive source follows;
 *   lag 1 the next session's move, which the score could have foretold. A
 *   simple return rather than a log return: at daily sizes the two rank and
 *   correlate alike, and the simple one is the move a holder sees. A close
 *   that is missing, not finite or not above 0 ends no return.
 * - Per source and subject class, pooled over every instrument: at each lag,
 *   the Pearson correlation of the scores with those returns over every
 *   (score, return) pair. Raw scores pool meaningfully because a source has
 *   one scale (Pearson is blind to one affine rescaling of all of them);
 *   returns are pooled as they are, so volatile names weigh more.
 * - A lag with fewer than MIN_PAIRS pairs, or a constant side, has no
 *   correlation (null). bestLagDays is the lag of the highest correlation,
 *   signed (a bullish score should precede a rise; a strongly negative one
 *   is not a lead), the shorter lag on a tie; peakCorrelation and sampleSize
 *   are that lag's. No lag with a correlation → all three null.
 * - isPromotionEligible (PROMOTION_RULE): a `business` source only (market
 *   commentary reacts to the price and is never a signal), a peak at lag 1
 *   or later (a lag-0 peak is the score's own session, which it may have
 *   watched), at least 60 pairs, a correlation of at least 0.1, and a
 *   one-sided p-value below 0.05 / 11: the peak is the largest of 11
 *   correlations searched, so each is tested at the Bonferroni share of the
 *   5% family-wise level. p comes from t = r·√(n−2)/√(1−r²) on Student's t
 *   with n − 2 degrees of freedom, which treats the pairs as independent;
 *   scores of many names on one day share that day's market move, so the
 *   real evidence is somewhat weaker than n suggests, and the 0.1 floor
 *   keeps a tiny correlation on a huge pool from passing on n alone.
 *
 * Cost: one pass over the scores. Each series (one instrument's scores of
 * one source and class, dates ascending) finds its first session by binary
 * search and then walks the bars forward with the scores, and each score adds
 * at most 11 pairs to 11 running co-moments of its group (Welford's update,
 * which keeps the digits a Σx² − n·x̄² form would lose on [0, 100] scores).
 */
import jstat from 'jstat';
import {
  LAGS,
  MIN_PAIRS,
  PROMOTION_RULE,
  SESSION_LOOKBACK_DAYS,
  type SourceLeadsInput,
  type LeadSubjectClass,
  type SourceLead,
  type LagCorrelation,
} from './contract.ts';

/** One running co-moment per (group, lag), laid out group-major. */
class CoMoments {
  readonly n: Float64Array;
  private readonly meanX: Float64Array;
  private readonly meanY: Float64Array;
  private readonly m2x: Float64Array;
  private readonly m2y: Float64Array;
  private readonly cxy: Float64Array;

  constructor(size: number) {
    this.n = new Float64Array(size);
    this.meanX = new Float64Array(size);
    this.meanY = new Float64Array(size);
    this.m2x = new Float64Array(size);
    this.m2y = new Float64Array(size);
    this.cxy = new Float64Array(size);
  }

  add(k: number, x: number, y: number): void {
    const n = ++this.n[k];
    const dx = x - this.meanX[k];
    this.meanX[k] += dx / n;
    const dy = y - this.meanY[k];
    this.meanY[k] += dy / n;
    const dyAfter = y - this.meanY[k];
    this.m2x[k] += dx * (x - this.meanX[k]);
    this.m2y[k] += dy * dyAfter;
    this.cxy[k] += dx * dyAfter;
  }

  /** Null with too few pairs, a constant side, or sums past the largest double (closes near 1e300 and 1e-300 make such returns). */
  correlation(k: number): number | null {
    const spread = Math.sqrt(this.m2x[k]) * Math.sqrt(this.m2y[k]);
    if (this.n[k] < MIN_PAIRS || !(spread > 0) || !Number.isFinite(spread) || !Number.isFinite(this.cxy[k])) return null;
    const r = this.cxy[k] / spread;
    return r > 1 ? 1 : r < -1 ? -1 : r;
  }
}

export function sourceLeads(input: SourceLeadsInput): SourceLead[] {
  const G = input.groups.length;
  const acc = new CoMoments(G * LAGS);
  const instruments = new Int32Array(G);
  const firstDay = new Float64Array(G).fill(Infinity);
  const lastDay = new Float64Array(G).fill(-Infinity);
  const { seriesOffsets, scoreDays, scores, barOffsets, barDays, closes } = input;

  for (let k = 0; k < input.seriesGroup.length; k++) {
    const g = input.seriesGroup[k];
    const from = seriesOffsets[k];
    const to = seriesOffsets[k + 1];
    if (to <= from) continue;
    instruments[g]++;
    for (let i = from + 1; i < to; i++) {
      if (!(scoreDays[i] > scoreDays[i - 1])) throw new RangeError(`series ${k}: score days must be strictly ascending (score ${i})`);
    }
    firstDay[g] = Math.min(firstDay[g], scoreDays[from]);
    lastDay[g] = Math.max(lastDay[g], scoreDays[to - 1]);
    const instrument = input.seriesInstrument[k];
    const barFrom = barOffsets[instrument];
    const barTo = barOffsets[instrument + 1];
    // s0: the last bar on or before the score's day (barFrom − 1 when none).
    let s0 = lastAtOrBefore(barDays, barFrom, barTo, scoreDays[from]);
    for (let i = from; i < to; i++) {
      const day = scoreDays[i];
      while (s0 + 1 < barTo && barDays[s0 + 1] <= day) s0++;
      if (s0 < barFrom || day - barDays[s0] > SESSION_LOOKBACK_DAYS) continue;
      const x = scores[i];
      const base = g * LAGS;
      for (let lag = 0; lag < LAGS; lag++) {
        const s = s0 + lag;
        if (s >= barTo) break;
        if (s - 1 < barFrom) continue;
        const before = closes[s - 1];
        const after = closes[s];
        if (!(before > 0) || !(after > 0) || !Number.isFinite(before) || !Number.isFinite(after)) continue;
        const r = after / before - 1;
        if (Number.isFinite(r)) acc.add(base + lag, x, r);
      }
    }
  }

  return input.groups.map((group, g) => {
    const correlationByLag: LagCorrelation[] = [];
    let peak: { lagDays: number; correlation: number; sampleSize: number } | null = null;
    for (let lag = 0; lag < LAGS; lag++) {
      const correlation = acc.correlation(g * LAGS + lag);
      const sampleSize = acc.n[g * LAGS + lag];
      correlationByLag.push({ lagDays: lag, correlation, sampleSize });
      if (correlation !== null && (peak === null || correlation > peak.correlation)) peak = { lagDays: lag, correlation, sampleSize };
    }
    return {
      bestLagDays: peak ? peak.lagDays : null,
      peakCorrelation: peak ? peak.correlation : null,
      sampleSize: peak ? peak.sampleSize : null,
      isPromotionEligible: peak ? isPromotionEligible(group.subjectClass, peak.lagDays, peak.correlation, peak.sampleSize) : false,
      correlationByLag,
      instruments: instruments[g],
      firstDay: instruments[g] ? firstDay[g] : null,
      lastDay: instruments[g] ? lastDay[g] : null,
    };
  });
}

/** The index of the last of days[from..to) on or before `day`, or from − 1. */
function lastAtOrBefore(days: Int32Array, from: number, to: number, day: number): number {
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (days[mid] <= day) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** P(T ≥ t) for t = r·√(n−2)/√(1−r²) on Student's t with n − 2 degrees of freedom: the one-sided p-value of a correlation r over n pairs (n ≥ 3). */
export function oneSidedPValue(r: number, n: number): number {
  if (r >= 1) return 0;
  if (r <= -1) return 1;
  const t = (r * Math.sqrt(n - 2)) / Math.sqrt(1 - r * r);
  // The lower tail at −t: 1 − cdf(t) would lose the small p-values to rounding.
  return jstat.jStat.studentt.cdf(-t, n - 2);
}

/** PROMOTION_RULE (see the module comment). */
export function isPromotionEligible(subjectClass: LeadSubjectClass, lagDays: number, r: number, n: number): boolean {
  const rule = PROMOTION_RULE;
  return (
    (rule.subjectClasses as readonly string[]).includes(subjectClass) &&
    lagDays >= rule.minLagDays &&
    n >= rule.minSampleSize &&
    r >= rule.minCorrelation &&
    oneSidedPValue(r, n) < rule.alpha / rule.lagsSearched
  );
}
