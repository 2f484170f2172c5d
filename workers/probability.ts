/**
 * Probability that the underlying finishes at / reaches a target price.
 *
 * Pure functions over numbers: no I/O, no imports from server/.
 *
 * Definitions (also stated in the README):
 *  - probabilityInTheMoneyAtExpiry: risk-neutral lognormal terminal probability
 *      long : P(S_T >= target) = N(d2)
 *      short: P(S_T <= target) = N(−d2)
 *    with d2 = (ln(S/K) + (r − q − σ²/2)T) / (σ√T), K = target.
 *  - probabilityOfTouchBeforeExpiry: driftless first-passage probability by the
 *    reflection principle for a driftless Brownian motion in log-price,
 *      min(1, 2·(1 − N(|ln(K/S)|/(σ√T)))),
 *    equal to 1 when the target is already reached (long: S >= K; short: S <= K).
 *    It does not depend on the rate or the dividend yield.
 *  - The reported touch probability is max(touch, atExpiry), because a path that
 *    finishes beyond the target must have touched it; `touchFlooredToExpiry`
 *    says whether that floor was active.
 */

import { assertMarketInputs, bsmD1D2, logRatio } from './black-scholes.ts';
import { normCdf } from './normal-distribution.ts';
import type { ProbabilityResult, ProbabilityInput } from './contract.ts';

export function probabilityOfTarget(input: ProbabilityInput): ProbabilityResult {
  const { spot: S, target: K, timeYears: T, rate: r, vol: sigma, direction } = input;
  const q = input.dividendYield ?? 0;
  assertMarketInputs(input);
  if (!Number.isFinite(K) || !(K > 0)) throw new RangeError('target must be a finite number > 0');
  if (direction !== 'long' && direction !== 'short') throw new RangeError("direction must be 'long' or 'short'");

  const { d2, sigmaSqrtT } = bsmD1D2(S, K, T, r, sigma, q);
  const atExpiry = direction === 'long' ? normCdf(d2) : normCdf(-d2);

  const targetAlreadyReached = direction === 'long' ? S >= K : S <= K;
  let touch: number;
  if (targetAlreadyReached) {
    touch = 1;
  } else {
    // 2·(1 − N(a)) computed as 2·N(−a): no cancellation for far targets.
    // ln(K/S) by logRatio: a difference of logarithms where K/S would leave
    // the double range (a far target), the log of the quotient elsewhere.
    const a = Math.abs(logRatio(K, S)) / sigmaSqrtT;
    touch = Math.min(1, 2 * normCdf(-a));
  }

  // Why the floor can bind: the at-expiry figure is risk-neutral and includes
  // the drift r − q − σ²/2 of ln S, while the touch figure is driftless. With a
  // large positive drift (e.g. low volatility, positive rate, target above the
  // spot) the drift alone carries the terminal distribution past the target,
  // and N(d2) exceeds the driftless 2·N(−a) (mirror image for `short` with
  // q > r). Since finishing beyond the target implies having touched it, any
  // consistent touch probability is >= the at-expiry one, so we report the
  // maximum and flag it.
  const touchFlooredToExpiry = touch < atExpiry;
  const reported = touchFlooredToExpiry ? atExpiry : touch;
  // N(x) > 0 for every x when σ > 0: a 0 here is a probability below the
  // smallest double (normCdf returns 0 beyond x ≈ −38.5), not an impossibility.
  const nullReasons: ProbabilityResult['nullReasons'] = {};
  if (atExpiry === 0) nullReasons.probabilityInTheMoneyAtExpiry = 'underflow';
  if (reported === 0) nullReasons.probabilityOfTouchBeforeExpiry = 'underflow';
  return {
    nullReasons,
    probabilityInTheMoneyAtExpiry: atExpiry,
    probabilityOfTouchBeforeExpiry: reported,
    driftlessTouchProbability: touch,
    touchFlooredToExpiry,
    targetAlreadyReached,
    d2,
  };
}
