/**
 * Beta against a benchmark. Pure.
 *
 * Conventions:
 * - Both close series are first aligned on the dates they share with a
 *   usable close (finite, > 0); log returns are then taken between
 *   consecutive common dates (same rule as correlations).
 * - OLS of subject returns y on benchmark returns x with an intercept:
 *   beta = Σ(dx·dy)/Σdx², alpha = ȳ − beta·x̄ (per period, i.e. a daily log
 *   return for daily bars; not annualised), rSquared = 1 − SSres/SStot
 *   (equal to the squared Pearson correlation).
 * - observations = number of aligned return pairs; alignedDates = common
 *   dates (observations + 1, or 0).
 * - Fewer than BETA_MIN_OBSERVATIONS = 3 return pairs → beta, alpha and
 *   rSquared null, reason `insufficient_overlap`. Benchmark returns with
 *   zero variance (Σdx² = 0 exactly) → all null, reason
 *   `zero_benchmark_variance`. A beta of 1 is never substituted.
 * - A subject with zero return variance (and a varying benchmark) has a
 *   well-defined beta = 0 and alpha = its mean return, but R² = 0/0 is
 *   undefined: rSquared is null and reason `zero_subject_variance`.
 * - `reason` is null exactly when all three figures are numbers.
 */
import { centredMoments } from './centred-moments.ts';
import { alignOnCommonDates, logReturns } from './correlation.ts';
import { BETA_MIN_OBSERVATIONS, type BetaResult, type BetaReason, type DatedCloses } from './contract.ts';

interface OlsResult {
  beta: number | null;
  alpha: number | null;
  rSquared: number | null;
  observations: number;
  reason: BetaReason | null;
}

/** OLS y = alpha + beta·x on already aligned returns. */
export function olsBeta(y: ArrayLike<number>, x: ArrayLike<number>): OlsResult {
  const n = x.length;
  if (y.length !== n) throw new TypeError(`olsBeta: lengths differ (${y.length} vs ${n})`);
  if (n < BETA_MIN_OBSERVATIONS) return { beta: null, alpha: null, rSquared: null, observations: n, reason: 'insufficient_overlap' };
  const { meanX: mx, meanY: my, sxx, sxy, syy } = centredMoments(x, y);
  if (sxx === 0) return { beta: null, alpha: null, rSquared: null, observations: n, reason: 'zero_benchmark_variance' };
  const beta = sxy / sxx;
  const alpha = my - beta * mx;
  if (syy === 0) return { beta, alpha, rSquared: null, observations: n, reason: 'zero_subject_variance' };
  let ssRes = 0;
  for (let i = 0; i < n; i++) {
    const e = y[i] - (alpha + beta * x[i]);
    ssRes += e * e;
  }
  const r2 = 1 - ssRes / syy;
  return { beta, alpha, rSquared: r2 < 0 ? 0 : r2 > 1 ? 1 : r2, observations: n, reason: null };
}

/** Beta of `subject` on `benchmark` (closes aligned on common dates, then log returns). */
export function computeBeta(subject: DatedCloses, benchmark: DatedCloses): BetaResult {
  const aligned = alignOnCommonDates([subject, benchmark]);
  const y = logReturns(aligned.closes[0]);
  const x = logReturns(aligned.closes[1]);
  const r = olsBeta(y, x);
  return { ...r, alignedDates: aligned.dates.length };
}
