import { DAYS_PER_YEAR } from './contract.ts';
/**
 * Standard normal distribution and Black–Scholes–Merton pricing with a
 * continuous dividend yield.
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

/** Calendar days to expiry → years (ACT/365F: days / 365). */
export function yearsFromDays(days: number): number {
  return days / DAYS_PER_YEAR;
}

const INV_SQRT_2PI = 0.398942280401432677939946059934; // 1/sqrt(2π)
const SQRT_32 = 5.656854249492380195206754896838; // sqrt(32)

/**
 * exp(−x²/2) without the rounding error of forming x² for large |x|:
 * x is split into a 4-bit-fraction part xs (xs² is exact) and a remainder,
 * exp(−x²/2) = exp(−xs²/2)·exp(−(x−xs)(x+xs)/2). (Cody's device.)
 */
function expHalfSquareNeg(x: number): number {
  const xs = Math.trunc(x * 16) / 16;
  const del = (x - xs) * (x + xs);
  return Math.exp(-xs * xs * 0.5) * Math.exp(-del * 0.5);
}

/** Standard normal density φ(x). */
export function normPdf(x: number): number {
  if (Number.isNaN(x)) return NaN;
  if (!Number.isFinite(x)) return 0;
  return INV_SQRT_2PI * expHalfSquareNeg(x);
}

// W. J. Cody's rational Chebyshev approximations for the normal integral
// (Cody 1969, "Rational Chebyshev approximations for the error function",
// Math. Comp. 23; the ANORM form of ACM TOMS Algorithm 715, 1993). Maximum
// relative error of each approximation on its interval is below 1e-18, so in
// double precision the result is accurate to a few ulps in both tails.
// |x| <= 0.67448975: N(x) = 1/2 + x·A(x²)/B(x²)
const A = [2.2352520354606839287, 161.02823106855587881, 1067.6894854603709582, 18154.981253343561249, 0.065682337918207449113];
const B = [47.20258190468824187, 976.09855173777669322, 10260.932208618978205, 45507.789335026729956];
// 0.67448975 < |x| <= sqrt(32): tail = exp(−x²/2)·C(|x|)/D(|x|)
const C = [
  0.39894151208813466764, 8.8831497943883759412, 93.506656132177855979, 597.27027639480026226, 2494.5375852903726711, 6848.1904505362823326,
  11602.651437647350124, 9842.7148383839780218, 1.0765576773720192317e-8,
];
const D = [
  22.266688044328115691, 235.38790178262499861, 1519.377599407554805, 6485.558298266760755, 18615.571640885098091, 34900.952721145977266, 38912.003286093271411,
  19685.429676859990727,
];
// |x| > sqrt(32): tail = exp(−x²/2)/|x| · (1/sqrt(2π) − P(1/x²)/(x²·Q(1/x²)))
const P = [0.21589853405795699, 0.1274011611602473639, 0.022235277870649807, 0.001421619193227893466, 2.9112874951168792e-5, 0.02307344176494017303];
const Q = [1.28426009614491121, 0.468238212480865118, 0.0659881378689285515, 0.00378239633202758244, 7.29751555083966205e-5];

/**
 * Upper tail Φ(−|x|) = P(Z > |x|) for |x| > 0.67448975, accurate in relative
 * terms (no cancellation).
 */
function upperTailAbs(y: number): number {
  if (y <= SQRT_32) {
    let num = C[8] * y;
    let den = y;
    for (let i = 0; i < 7; i++) {
      num = (num + C[i]) * y;
      den = (den + D[i]) * y;
    }
    return (expHalfSquareNeg(y) * (num + C[7])) / (den + D[7]);
  }
  if (y >= 38.5) return 0; // below the smallest subnormal double
  const ysq = 1 / (y * y);
  let num = P[5] * ysq;
  let den = ysq;
  for (let i = 0; i < 4; i++) {
    num = (num + P[i]) * ysq;
    den = (den + Q[i]) * ysq;
  }
  const r = (ysq * (num + P[4])) / (den + Q[4]);
  return (expHalfSquareNeg(y) * (INV_SQRT_2PI - r)) / y;
}

/**
 * Standard normal cumulative distribution function Φ(x) = P(Z <= x).
 * Absolute error below 1e-16 everywhere; relative error a few ulps for x < 0
 * (so Φ(−x) is the accurate way to get an upper tail).
 */
export function normCdf(x: number): number {
  if (Number.isNaN(x)) return NaN;
  const y = Math.abs(x);
  if (y <= 0.67448975) {
    let num = 0;
    let den = 0;
    if (y > 1.1102230246251565e-16) {
      const xsq = x * x;
      num = A[4] * xsq;
      den = xsq;
      for (let i = 0; i < 3; i++) {
        num = (num + A[i]) * xsq;
        den = (den + B[i]) * xsq;
      }
    }
    return 0.5 + (x * (num + A[3])) / (den + B[3]);
  }
  const tail = upperTailAbs(y);
  return x > 0 ? 1 - tail : tail;
}

export type OptionType = 'call' | 'put';

export interface OptionPricingInput {
  spot: number;
  strike: number;
  /** Time to expiry in years (use `yearsFromDays(expiryDays)`). */
  timeYears: number;
  /** Continuously compounded annual risk-free rate, decimal. */
  rate: number;
  /** Annual volatility, decimal (0.2 = 20%). */
  vol: number;
  /** Continuous annual dividend yield, decimal; default 0. */
  dividendYield?: number;
  type: OptionType;
}

export interface Greeks {
  /** ∂V/∂S per share. */
  delta: number;
  /** ∂²V/∂S² per share. */
  gamma: number;
  /** Value change per calendar day of time passing: −(∂V/∂T)/365. */
  theta: number;
  /** Value change per one percentage point of volatility: (∂V/∂σ)/100. */
  vega: number;
  /** Value change per one percentage point of the risk-free rate: (∂V/∂r)/100. */
  rho: number;
}

export interface OptionPriceResult {
  /** Fair value per share (one underlying unit). */
  price: number;
  greeks: Greeks;
  d1: number;
  d2: number;
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

/**
 * d1 and d2 of Black–Scholes–Merton.
 *
 * Written as d1 = m/(σ√T) + σ√T/2 with m = ln(S/K) + (r − q)T, which never
 * forms σ²T/(σ√T) and stays exact when σ√T is tiny. If σ√T underflows to 0
 * (only for absurd inputs) the deterministic limit is returned: ±∞ by the sign
 * of m, or 0 when the forward equals the strike.
 */
export function bsmD1D2(
  spot: number,
  strike: number,
  timeYears: number,
  rate: number,
  vol: number,
  dividendYield = 0,
): { d1: number; d2: number; sigmaSqrtT: number } {
  const sigmaSqrtT = vol * Math.sqrt(timeYears);
  const m = Math.log(spot / strike) + (rate - dividendYield) * timeYears;
  if (!(sigmaSqrtT > 0)) {
    const lim = m > 0 ? Infinity : m < 0 ? -Infinity : 0;
    return { d1: lim, d2: lim, sigmaSqrtT };
  }
  const d1 = m / sigmaSqrtT + 0.5 * sigmaSqrtT;
  return { d1, d2: d1 - sigmaSqrtT, sigmaSqrtT };
}

/**
 * Black–Scholes–Merton price and Greeks of a European option on an asset with
 * continuous dividend yield q:
 *   call = S e^{−qT} N(d1) − K e^{−rT} N(d2)
 *   put  = K e^{−rT} N(−d2) − S e^{−qT} N(−d1)
 * Puts use N(−d) directly (not 1 − N(d)) so small values keep full relative
 * precision.
 */
export function priceOption(input: OptionPricingInput): OptionPriceResult {
  const { spot: S, strike: K, timeYears: T, rate: r, vol: sigma, type } = input;
  const q = input.dividendYield ?? 0;
  assertMarketInputs(input);
  assertFinite('strike', K);
  if (!(K > 0)) throw new RangeError('strike must be > 0');
  if (type !== 'call' && type !== 'put') throw new RangeError("type must be 'call' or 'put'");

  const { d1, d2, sigmaSqrtT } = bsmD1D2(S, K, T, r, sigma, q);
  const sqrtT = Math.sqrt(T);
  const dq = Math.exp(-q * T); // dividend discount factor
  const dr = Math.exp(-r * T); // risk-free discount factor
  const pdf1 = normPdf(d1);
  const sDq = S * dq;
  const kDr = K * dr;

  // Terms shared by both types. Where φ(d1) is 0, gamma is 0; testing it first
  // matters for a spot near the smallest double (1e-323), where S·σ√T
  // underflows to 0 and the quotient would be 0/0 = NaN.
  const gamma = sigmaSqrtT > 0 && pdf1 > 0 ? (dq * pdf1) / (S * sigmaSqrtT) : 0;
  const vegaAnnual = sDq * pdf1 * sqrtT; // ∂V/∂σ
  const thetaDecay = sigmaSqrtT > 0 ? -(sDq * pdf1 * sigma) / (2 * sqrtT) : 0; // −S e^{−qT} φ(d1) σ / (2√T)

  let price: number;
  let delta: number;
  let thetaAnnual: number; // ∂V/∂t = −∂V/∂T (per year of calendar time passing)
  let rhoAnnual: number; // ∂V/∂r
  if (type === 'call') {
    const n1 = normCdf(d1);
    const n2 = normCdf(d2);
    price = sDq * n1 - kDr * n2;
    delta = dq * n1;
    thetaAnnual = thetaDecay - r * kDr * n2 + q * sDq * n1;
    rhoAnnual = kDr * T * n2;
  } else {
    const m1 = normCdf(-d1);
    const m2 = normCdf(-d2);
    price = kDr * m2 - sDq * m1;
    delta = -dq * m1;
    thetaAnnual = thetaDecay + r * kDr * m2 - q * sDq * m1;
    rhoAnnual = -kDr * T * m2;
  }
  // Rounding can leave a result a few ulps below zero for options worth
  // (almost) nothing; a price is never negative.
  if (price < 0) price = 0;

  return {
    price,
    greeks: {
      delta,
      gamma,
      theta: thetaAnnual / DAYS_PER_YEAR,
      vega: vegaAnnual / 100,
      rho: rhoAnnual / 100,
    },
    d1,
    d2,
  };
}
