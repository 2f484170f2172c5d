/**
 * Black–Scholes–Merton pricing of European options with a continuous dividend
 * yield: the input checks, d1 and d2, and `priceOption`, which takes the
 * textbook closed form (bsm-textbook.ts) where it is safe and evaluates in log
 * space over the whole double range otherwise. The normal distribution is in
 * normal-distribution.ts, the power-of-two arithmetic in double-range.ts.
 *
 * Pure functions over numbers: no I/O, no imports from server/. Safe to run
 * inside piscina worker threads.
 *
 * Conventions (also stated in the README):
 *  - Day count ACT/365F: timeYears = expiryDays / 365 (see `yearsFromDays`).
 *  - Rates, dividend yield and volatility are annual, continuously compounded
 *    decimals (0.05 = 5%).
 *  - Greeks are per one-share unit (no contract multiplier):
 *      delta  ∂V/∂S
 *      gamma  ∂²V/∂S²
 *      theta  change in value per CALENDAR DAY of time passing = −(∂V/∂T)/365
 *      vega   change per ONE PERCENTAGE POINT of volatility   = (∂V/∂σ)/100
 *      rho    change per ONE PERCENTAGE POINT of the rate      = (∂V/∂r)/100
 */
import { directFigures } from './bsm-textbook.ts';
import { DAYS_PER_YEAR, type OptionPricingInput, type OptionPriceResult, type OptionFigure, type Greeks } from './contract.ts';
import { binaryExponent, expTimesPow2, ldexp, signedSum, type Term } from './double-range.ts';
import { LN_SQRT_2PI, lnNormCdf, lnNormPdf, millsRatio, oneMinusYMills } from './normal-distribution.ts';

/** Calendar days to expiry → years (ACT/365F: days / 365). */
export function yearsFromDays(days: number): number {
  return days / DAYS_PER_YEAR;
}

function assertFinite(name: string, v: number): void {
  if (!Number.isFinite(v)) throw new RangeError(`${name} must be a finite number`);
}

/** Validates the shared inputs; throws RangeError (the HTTP layer validates first). */
export function assertMarketInputs(i: { spot: number; timeYears: number; rate: number; vol: number; dividendYield?: number }): void {
  assertFinite('spot', i.spot);
  assertFinite('timeYears', i.timeYears);
  assertFinite('rate', i.rate);
  assertFinite('vol', i.vol);
  assertFinite('dividendYield', i.dividendYield ?? 0);
  if (!(i.spot > 0)) throw new RangeError('spot must be > 0');
  if (!(i.timeYears > 0)) throw new RangeError('timeYears must be > 0');
  if (!(i.vol > 0)) throw new RangeError('vol must be > 0');
}

// ---------------------------------------------------------------------------
// Numerics over the whole double range.
//
// Ordinary inputs take the textbook formulas (`directFigures`, bsm-textbook.ts), when no
// factor is near the ends of the range and the price is not a cancellation.
// Otherwise: every BSM figure is homogeneous in (spot, strike): the price,
// vega, rho and theta of degree 1, delta of degree 0, gamma of degree −1. The inputs are
// scaled by an exact power of two 2^k so the scaled pair sits near 1, the
// figures are computed there as sign·e^L (L a sum of logarithms, so no
// product overflows or underflows on the way), and each is scaled back by
// 2^(degree·k) in one step (`expTimesPow2`, double-range.ts). A figure comes out ±Infinity only
// when its true magnitude is above the largest double, and 0 only when it is
// below the smallest: `nullReasons` says so.
// ---------------------------------------------------------------------------

const LN_100 = Math.log(100);
const LN_365 = Math.log(DAYS_PER_YEAR);

// 16-point Gauss–Legendre on [−1, 1] (nodes ±ξ, weights w), for the narrow
// integral in lnOtmBlack. Standard tabulated values (Abramowitz & Stegun 25.4).
const GL16_X = [
  0.0950125098376374401853193, 0.2816035507792589132304605, 0.4580167776572273863424194, 0.6178762444026437484466718, 0.7554044083550030338951012,
  0.8656312023878317438804679, 0.9445750230732325760779884, 0.9894009349916499325961542,
];
const GL16_W = [
  0.1894506104550684962853967, 0.1826034150449235888667637, 0.1691565193950025381893121, 0.149595988816576732081502, 0.1246289712555338720524763,
  0.0951585116824927848099251, 0.0622535239386478928628438, 0.0271524594117540948517806,
];

/**
 * ln of the normalised Black value of the out-of-the-money option,
 *   b(u, s) = e^{−u/2}·Φ(−u/s + s/2) − e^{u/2}·Φ(−u/s − s/2),  u = |ln(F/K)| ≥ 0, s = σ√T,
 * so that the option's time value is e^{−rT}·sqrt(F·K)·b. Both terms share the
 * factor φ(u/s)·e^{−s²/8}, which leaves a difference of Mills ratios:
 *   b = e^{−(a² + t²)/2}/sqrt(2π) · [R(a − t) − R(a + t)],  a = u/s, t = s/2.
 * The difference is taken directly when it loses at most two digits
 * (R(a + t) < 0.99·R(a − t)); otherwise, the interval being narrow, as the
 * integral of −R' = 1 − z·R(z) > 0 over [a − t, a + t] by 16-point
 * Gauss–Legendre, which has no cancellation at all. `lnS` is ln s, given
 * separately because s itself may underflow.
 */
function lnOtmBlack(u: number, s: number, lnS: number): number {
  let a = 0;
  if (u > 0) {
    // u/s directly (one rounding) unless s is so small that the quotient could overflow.
    const lnA = Math.log(u) - lnS;
    if (lnA > 354) return -Infinity; // a² > 1e307: e^{−a²/2} is below any double
    a = s > 1e-300 ? u / s : Math.exp(lnA);
  }
  const t = 0.5 * s;
  const lnPrefix = -LN_SQRT_2PI - 0.5 * (a * a + t * t);
  const rLo = millsRatio(a - t);
  const rHi = millsRatio(a + t);
  let lnD: number;
  if (rHi < 0.99 * rLo) {
    lnD = Math.log(rLo - rHi);
  } else {
    let mean = 0;
    for (let i = 0; i < 8; i++) mean += 0.5 * GL16_W[i] * (oneMinusYMills(a - t * GL16_X[i]) + oneMinusYMills(a + t * GL16_X[i]));
    lnD = Math.log(mean) + lnS; // ∫ = 2t·mean = s·mean
  }
  return lnPrefix + lnD;
}

/** ln(S/K) without the quotient's overflow or underflow. */
export function logRatio(a: number, b: number): number {
  const q = a / b;
  return q >= 2.2250738585072014e-308 && q < Infinity ? Math.log(q) : Math.log(a) - Math.log(b);
}

/**
 * d1 and d2 of Black–Scholes–Merton.
 *
 * Written as d1 = m/(σ√T) + σ√T/2 with m = ln(S/K) + (r − q)T, which never
 * forms σ²T/(σ√T) and stays exact when σ√T is tiny. ln(S/K) is taken as a
 * difference of logarithms when S/K would leave the double range. If σ√T
 * underflows to 0 (only for absurd inputs) the deterministic limit is
 * returned: ±∞ by the sign of m, or 0 when the forward equals the strike.
 */
export function bsmD1D2(
  spot: number,
  strike: number,
  timeYears: number,
  rate: number,
  vol: number,
  dividendYield = 0,
): { d1: number; d2: number; sigmaSqrtT: number; m: number } {
  const sigmaSqrtT = vol * Math.sqrt(timeYears);
  const m = logRatio(spot, strike) + (rate - dividendYield) * timeYears;
  if (!(sigmaSqrtT > 0)) {
    const lim = m > 0 ? Infinity : m < 0 ? -Infinity : 0;
    return { d1: lim, d2: lim, sigmaSqrtT, m };
  }
  const d1 = m / sigmaSqrtT + 0.5 * sigmaSqrtT;
  return { d1, d2: d1 - sigmaSqrtT, sigmaSqrtT, m };
}

/**
 * Black–Scholes–Merton price and Greeks of a European option on an asset with
 * continuous dividend yield q:
 *   call = S e^{−qT} N(d1) − K e^{−rT} N(d2)
 *   put  = K e^{−rT} N(−d2) − S e^{−qT} N(−d1)
 *
 * Evaluated over the whole double range (see "Numerics over the whole double
 * range" above): the textbook formulas where they are safe (`directFigures`);
 * otherwise the price as intrinsic value plus the out-of-the-money time
 * value (put–call parity), the intrinsic part as S e^{−qT}·(1 − e^{−m}) or
 * K e^{−rT}·(1 − e^{m}) (expm1, no cancellation near the money) and the time
 * value by `lnOtmBlack` (no cancellation between the two N terms, which is
 * where a direct evaluation loses every digit for a far-from-the-money option
 * or a tiny σ√T); the Greeks as sums of signed exponentials of logarithms.
 */
export function priceOption(input: OptionPricingInput): OptionPriceResult {
  const { spot: S, strike: K, timeYears: T, rate: r, vol: sigma, type } = input;
  const q = input.dividendYield ?? 0;
  assertMarketInputs(input);
  assertFinite('strike', K);
  if (!(K > 0)) throw new RangeError('strike must be > 0');
  if (type !== 'call' && type !== 'put') throw new RangeError("type must be 'call' or 'put'");

  // Scale (S, K) by 2^−k, centred on their geometric mean, the larger kept ≤ 2^1000;
  // not at all (k = 0) when both are within 2^±500, where nothing can leave the range.
  let k = 0;
  if (!(S > 3e-151 && S < 3e150 && K > 3e-151 && K < 3e150)) {
    const eS = binaryExponent(S);
    const eK = binaryExponent(K);
    k = Math.max(Math.round((eS + eK) / 2), Math.max(eS, eK) - 1000);
  }
  const s1 = ldexp(S, -k);
  const k1 = ldexp(K, -k);
  // ln of the scaled values; from the unscaled ones where the scaled one is subnormal or 0 (a ratio beyond 2^2000).
  const lnScaled = (v: number, v1: number) => (v1 >= 2.2250738585072014e-308 ? Math.log(v1) : Math.log(v) - k * Math.LN2);
  const lnS1 = lnScaled(S, s1);
  const lnK1 = lnScaled(K, k1);

  const { d1, d2, m, sigmaSqrtT } = bsmD1D2(S, K, T, r, sigma, q);
  if (k === 0) {
    const direct = directFigures(S, K, T, r, sigma, q, type, d1, d2, sigmaSqrtT);
    if (direct) return { ...direct, d1, d2, nullReasons: {} };
  }
  const lnT = Math.log(T);
  const lnSig = Math.log(sigma) + 0.5 * lnT; // ln σ√T, finite even where σ√T underflows
  const sig = sigma * Math.sqrt(T);
  const call = type === 'call';

  // Price: intrinsic (of the forward) + out-of-the-money time value.
  const lnTimeValue = 0.5 * (lnS1 + lnK1) - 0.5 * (r + q) * T + lnOtmBlack(Math.abs(m), sig, lnSig);
  let intrinsic = 0;
  if (call && m > 0) intrinsic = s1 * Math.exp(-q * T) * -Math.expm1(-m);
  if (!call && m < 0) intrinsic = k1 * Math.exp(-r * T) * -Math.expm1(m);
  const price = intrinsic > 0 ? ldexp(intrinsic + expTimesPow2(lnTimeValue, 0), k) : expTimesPow2(lnTimeValue, k);

  // Greeks, each a signed sum of e^L terms in the scaled problem, then 2^(degree·k).
  const lnPdf1 = lnNormPdf(d1);
  const lnN1 = lnNormCdf(call ? d1 : -d1); // ln N(±d1)
  const lnN2 = lnNormCdf(call ? d2 : -d2); // ln N(±d2)
  const sgn = call ? 1 : -1;
  const delta = sgn * expTimesPow2(-q * T + lnN1, 0);
  const gamma = expTimesPow2(-q * T + lnPdf1 - lnS1 - lnSig, -k);
  const vega = expTimesPow2(lnS1 - q * T + lnPdf1 + 0.5 * lnT - LN_100, k);
  const rho = sgn * expTimesPow2(lnK1 - r * T + lnT + lnN2 - LN_100, k);
  // thetaAnnual = −S e^{−qT} φ(d1) σ/(2√T) ∓ r K e^{−rT} N(±d2) ± q S e^{−qT} N(±d1); per day: /365.
  const terms: Term[] = [{ sign: -1, ln: lnS1 - q * T + lnPdf1 + Math.log(sigma) - Math.LN2 - 0.5 * lnT }];
  if (r !== 0) terms.push({ sign: -sgn * Math.sign(r), ln: Math.log(Math.abs(r)) + lnK1 - r * T + lnN2 });
  if (q !== 0) terms.push({ sign: sgn * Math.sign(q), ln: Math.log(Math.abs(q)) + lnS1 - q * T + lnN1 });
  const theta = signedSum(terms, k, -LN_365);

  const greeks: Greeks = { delta, gamma, theta: theta.value, vega, rho };
  const nullReasons: OptionPriceResult['nullReasons'] = {};
  const note = (name: OptionFigure, v: number, canBeZero = false) => {
    if (!Number.isFinite(v)) nullReasons[name] = 'overflow';
    else if (v === 0 && !canBeZero) nullReasons[name] = 'underflow';
  };
  note('price', price);
  note('delta', delta);
  note('gamma', gamma);
  note('vega', vega);
  note('rho', rho);
  if (theta.reason) nullReasons.theta = theta.reason;
  else note('theta', theta.value, true);
  return { price, greeks, d1, d2, nullReasons };
}
