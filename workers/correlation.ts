/**
 * Return correlations (GET /v1/correlations). Pure.
 *
 * Conventions:
 * - A close is usable when it is finite and > 0 (a log return needs both).
 *   Unusable closes are treated as missing dates, never as 0.
 * - Alignment happens BEFORE returns: closes are first restricted to the
 *   dates every included instrument has, then log returns r_t = ln(c_t /
 *   c_{t−1}) are taken between consecutive COMMON dates. A date one
 *   instrument lacks therefore merges two days into one return for all of
 *   them, so every return in a row spans the same interval.
 * - Per instrument, `observations` is the number of log returns its own
 *   series yields in the window (usable closes − 1, at least 0), before any
 *   alignment. `alignedObservations` is the number of aligned return rows
 *   (common dates − 1) the correlations are computed on.
 * - Minimum: CORRELATION_MIN_OBSERVATIONS = 3 returns (with 2 a Pearson
 *   correlation is always ±1). An instrument below it is reported with its
 *   count and reason `insufficient_observations` and excluded from the pairs
 *   (never zero-padded). If the remaining instruments share fewer than 3
 *   aligned returns, the instrument with the fewest observations (the later
 *   one on a tie) is excluded with reason `insufficient_overlap`, repeatedly,
 *   while at least two remain. Fewer than two usable instruments → the caller
 *   answers invalid_request.
 * - pearson: two-pass sample correlation Σ(dx·dy)/sqrt(Σdx²·Σdy²), clamped to
 *   [−1, 1]; null when either series has zero variance.
 * - spearman: Pearson correlation of the ranks, tied values getting the
 *   average of the ranks they span (midranks); null when either side is
 *   constant.
 */
import { centredMoments } from './centred-moments.ts';
import {
  CORRELATION_MIN_OBSERVATIONS,
  type CorrelationMethod,
  type DatedCloses,
  type CorrelationMatrixResult,
  type CorrelationInstrument,
  type CorrelationPair,
} from './contract.ts';

interface AlignedCloses {
  /** Dates present (with a usable close) in every series, ascending. */
  dates: Int32Array;
  /** closes[k][t] = close of series k on dates[t]. */
  closes: Float64Array[];
}

const usable = (c: number) => Number.isFinite(c) && c > 0;

function checkSeries(s: DatedCloses, k: number): void {
  if (s.dates.length !== s.close.length) throw new TypeError(`series ${k}: ${s.dates.length} dates but ${s.close.length} closes`);
  for (let i = 1; i < s.dates.length; i++) {
    if (!(s.dates[i] > s.dates[i - 1])) throw new RangeError(`series ${k}: dates must be strictly ascending (index ${i})`);
  }
}

/** Number of usable closes in a series. */
function usableCloseCount(s: DatedCloses): number {
  let m = 0;
  for (let i = 0; i < s.close.length; i++) if (usable(s.close[i])) m++;
  return m;
}

/**
 * Restrict every series to the dates all of them have with a usable close.
 * Throws when a series' dates are not strictly ascending or lengths differ.
 */
export function alignOnCommonDates(series: readonly DatedCloses[]): AlignedCloses {
  series.forEach(checkSeries);
  const K = series.length;
  if (K === 0) return { dates: new Int32Array(0), closes: [] };
  let lo = Infinity;
  let hi = -Infinity;
  for (const s of series) {
    if (s.dates.length === 0) continue;
    lo = Math.min(lo, s.dates[0]);
    hi = Math.max(hi, s.dates[s.dates.length - 1]);
  }
  if (!(hi >= lo)) return { dates: new Int32Array(0), closes: series.map(() => new Float64Array(0)) };
  // Per day of the span, how many series have a usable close on it (a series holds each date once).
  const counts = new Uint16Array(hi - lo + 1);
  for (const s of series) countUsableDays(s.dates, s.close, lo, counts);
  const dates = daysCountedBy(counts, K, lo);
  return { dates, closes: series.map((s) => closesOn(s.dates, s.close, dates)) };
}

function countUsableDays(dates: Int32Array, close: Float64Array, lo: number, counts: Uint16Array): void {
  for (let i = 0; i < dates.length; i++) if (usable(close[i])) counts[dates[i] - lo]++;
}

/** The days (lo + offset) whose count is `k`, ascending. */
function daysCountedBy(counts: Uint16Array, k: number, lo: number): Int32Array {
  let n = 0;
  for (let d = 0; d < counts.length; d++) if (counts[d] === k) n++;
  const out = new Int32Array(n);
  for (let d = 0, t = 0; d < counts.length; d++) if (counts[d] === k) out[t++] = lo + d;
  return out;
}

/** The closes of a series on `days`, each of which the series holds (both ascending). */
function closesOn(dates: Int32Array, close: Float64Array, days: Int32Array): Float64Array {
  const out = new Float64Array(days.length);
  for (let t = 0, i = 0; t < days.length; t++) {
    while (dates[i] < days[t]) i++;
    out[t] = close[i];
  }
  return out;
}

/** r_t = ln(c_t / c_{t−1}); length n − 1 (0 for n < 2). */
export function logReturns(close: ArrayLike<number>): Float64Array {
  const n = close.length;
  const out = new Float64Array(Math.max(0, n - 1));
  for (let i = 1; i < n; i++) out[i - 1] = Math.log(close[i] / close[i - 1]);
  return out;
}

/** Sample Pearson correlation; null for n < 2 or a constant series. */
export function pearson(x: ArrayLike<number>, y: ArrayLike<number>): number | null {
  const n = x.length;
  if (y.length !== n) throw new TypeError(`pearson: lengths differ (${n} vs ${y.length})`);
  if (n < 2) return null;
  const { sxx, sxy, syy } = centredMoments(x, y);
  if (sxx === 0 || syy === 0) return null;
  const r = sxy / Math.sqrt(sxx * syy);
  return r > 1 ? 1 : r < -1 ? -1 : r;
}

/** 1-based ranks; tied values get the average of the ranks they span. */
export function averageRanks(x: ArrayLike<number>): Float64Array {
  const n = x.length;
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => x[a] - x[b] || a - b);
  const ranks = new Float64Array(n);
  let i = 0;
  while (i < n) {
    let j = i;
    while (j + 1 < n && x[order[j + 1]] === x[order[i]]) j++;
    const r = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) ranks[order[k]] = r;
    i = j + 1;
  }
  return ranks;
}

/** Spearman rank correlation with average ranks for ties. */
export function spearman(x: ArrayLike<number>, y: ArrayLike<number>): number | null {
  if (y.length !== x.length) throw new TypeError(`spearman: lengths differ (${x.length} vs ${y.length})`);
  return pearson(averageRanks(x), averageRanks(y));
}

/**
 * Correlation matrix of aligned log returns (see the module comment). The
 * caller should answer invalid_request when `usableIndices.length < 2`.
 */
export function correlationMatrix(series: readonly DatedCloses[], method: CorrelationMethod = 'pearson'): CorrelationMatrixResult {
  series.forEach(checkSeries);
  const instruments: CorrelationInstrument[] = series.map((s, index) => {
    const observations = Math.max(0, usableCloseCount(s) - 1);
    const ok = observations >= CORRELATION_MIN_OBSERVATIONS;
    return { index, observations, usable: ok, reason: ok ? null : 'insufficient_observations' };
  });
  let included = instruments.filter((i) => i.usable).map((i) => i.index);
  let aligned = alignOnCommonDates(included.map((k) => series[k]));
  while (included.length >= 2 && aligned.dates.length - 1 < CORRELATION_MIN_OBSERVATIONS) {
    // exclude the instrument with the fewest observations (the later one on a tie)
    let drop = included[0];
    for (const k of included) if (instruments[k].observations <= instruments[drop].observations) drop = k;
    instruments[drop].usable = false;
    instruments[drop].reason = 'insufficient_overlap';
    included = included.filter((k) => k !== drop);
    aligned = alignOnCommonDates(included.map((k) => series[k]));
  }
  const pairs: CorrelationPair[] = [];
  if (included.length < 2) {
    return { method, pairs, instruments, usableIndices: included, alignedObservations: 0, firstDate: null, lastDate: null };
  }
  const returns = aligned.closes.map(logReturns);
  // Spearman = Pearson on midranks; rank each column once.
  const cols = method === 'spearman' ? returns.map(averageRanks) : returns;
  for (let i = 0; i < included.length; i++) {
    for (let j = i + 1; j < included.length; j++) {
      pairs.push({ a: included[i], b: included[j], correlation: pearson(cols[i], cols[j]) });
    }
  }
  return {
    method,
    pairs,
    instruments,
    usableIndices: included,
    alignedObservations: aligned.dates.length - 1,
    firstDate: aligned.dates[0],
    lastDate: aligned.dates[aligned.dates.length - 1],
  };
}
