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
 * Cody's rational forms for |x| > 0.67448975, without the factor e^{−x²/2}:
 * the Mills ratio R(y) = Φ(−y)/φ(y), and for y > sqrt(32) also
 * g(y) = 1 − y·R(y) = sqrt(2π)·r, formed without cancellation.
 */
function millsRational(y: number): { mills: number; oneMinusYMills: number | null } {
  if (y <= SQRT_32) {
    let num = C[8] * y;
    let den = y;
    for (let i = 0; i < 7; i++) {
      num = (num + C[i]) * y;
      den = (den + D[i]) * y;
    }
    return { mills: (num + C[7]) / (den + D[7]) / INV_SQRT_2PI, oneMinusYMills: null };
  }
  const ysq = 1 / (y * y);
  let num = P[5] * ysq;
  let den = ysq;
  for (let i = 0; i < 4; i++) {
    num = (num + P[i]) * ysq;
    den = (den + Q[i]) * ysq;
  }
  const r = (ysq * (num + P[4])) / (den + Q[4]);
  return { mills: (INV_SQRT_2PI - r) / (y * INV_SQRT_2PI), oneMinusYMills: r / INV_SQRT_2PI };
}

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

/** Why a figure has no double: its magnitude is above the largest double (≈1.8e308) or, not being 0, below the smallest (≈4.9e-324). */
export type NumericRangeReason = 'overflow' | 'underflow';
export type OptionFigure = 'price' | keyof Greeks;

export interface OptionPriceResult {
  /** Fair value per share (one underlying unit); Infinity on overflow, 0 on underflow (see nullReasons). */
  price: number;
  /** Each Greek; ±Infinity on overflow, 0 on underflow (see nullReasons). */
  greeks: Greeks;
  d1: number;
  d2: number;
  /** The figures that are not representable in double precision, and why. Empty for ordinary inputs. */
  nullReasons: Partial<Record<OptionFigure, NumericRangeReason>>;
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
// Ordinary inputs take the textbook formulas (`directFigures`), when no
// factor is near the ends of the range and the price is not a cancellation.
// Otherwise: every BSM figure is homogeneous in (spot, strike): the price,
// vega, rho and theta of degree 1, delta of degree 0, gamma of degree −1. The inputs are
// scaled by an exact power of two 2^k so the scaled pair sits near 1, the
// figures are computed there as sign·e^L (L a sum of logarithms, so no
// product overflows or underflows on the way), and each is scaled back by
// 2^(degree·k) in one step (`expTimesPow2`). A figure comes out ±Infinity only
// when its true magnitude is above the largest double, and 0 only when it is
// below the smallest: `nullReasons` says so.
// ---------------------------------------------------------------------------

const LN_SQRT_2PI = 0.918938533204672741780329736406; // ln sqrt(2π)
// ln 2 in two parts (fdlibm): j·LN2_HI is exact for |j| < 2^20.
const LN2_HI = 6.9314718036912381649e-1;
const LN2_LO = 1.9082149292705877e-10;
const LN_100 = Math.log(100);
const LN_365 = Math.log(DAYS_PER_YEAR);

/** v·2^n, exact whenever the result is a normal double, without an intermediate overflow or underflow. */
export function ldexp(v: number, n: number): number {
  if (v === 0 || !Number.isFinite(v)) return v;
  let e = Math.round(n);
  if (e > 2200) return v * Infinity;
  if (e < -2200) return v * 0;
  while (e > 1023) {
    v *= 2 ** 1023;
    e -= 1023;
  }
  while (e < -1022) {
    v *= 2 ** -1022;
    e += 1022;
  }
  return v * 2 ** e;
}

/** The binary exponent of a positive finite double (subnormals included): v = m·2^e, 1 ≤ m < 2. */
export function binaryExponent(v: number): number {
  let e = Math.floor(Math.log2(v));
  // log2 can round across a power of two; settle it exactly.
  if (ldexp(v, -e) >= 2) e += 1;
  else if (ldexp(v, -e) < 1) e -= 1;
  return e;
}

/** e^L · 2^n: ±0 on underflow, Infinity on overflow, else accurate to the rounding of L. */
export function expTimesPow2(L: number, n: number): number {
  if (Number.isNaN(L)) return NaN;
  if (L === -Infinity) return 0;
  if (L === Infinity) return Infinity;
  if (n === 0 && L > -708 && L < 709) return Math.exp(L);
  const total = L + n * Math.LN2;
  if (total > 710) return Infinity;
  if (total < -746) return 0;
  const j = Math.round(L / Math.LN2);
  const rem = L - j * LN2_HI - j * LN2_LO;
  return ldexp(Math.exp(rem), j + n);
}

/** ln φ(x), with Cody's split of x² (exact for the truncated part). */
export function lnNormPdf(x: number): number {
  if (Number.isNaN(x)) return NaN;
  if (!Number.isFinite(x)) return -Infinity;
  const xs = Math.trunc(x * 16) / 16;
  return -LN_SQRT_2PI - 0.5 * xs * xs - 0.5 * (x - xs) * (x + xs);
}

/** Mills ratio R(y) = Φ(−y)/φ(y), accurate in relative terms for every y ≥ −8 (and finite beyond). */
export function millsRatio(y: number): number {
  if (y > 0.67448975) return millsRational(y).mills;
  return normCdf(-y) / normPdf(y);
}

/** g(y) = 1 − y·R(y) > 0, the slope −R'(y); without cancellation for y > sqrt(32). */
function oneMinusYMills(y: number): number {
  if (y > SQRT_32) return millsRational(y).oneMinusYMills as number;
  return 1 - y * millsRatio(y);
}

/** ln Φ(x), accurate in relative terms of Φ everywhere (−Infinity only at x = −Infinity or beyond ln of any double). */
export function lnNormCdf(x: number): number {
  if (Number.isNaN(x)) return NaN;
  if (x > 0) return Math.log1p(-normCdf(-x));
  if (x > -0.67448975) return Math.log(normCdf(x));
  if (x === -Infinity) return -Infinity;
  return lnNormPdf(x) + Math.log(millsRatio(-x));
}

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

interface Term {
  sign: number;
  ln: number;
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

// Smallest magnitude the direct evaluation accepts for a factor: far above the
// subnormals, so no product of two or three of them loses a bit.
const DIRECT_FLOOR = 1e-280;

/**
 * The textbook evaluation, taken when it is safe, null otherwise. It is the
 * ordinary case, and several times cheaper than the log-space evaluation (the
 * implied-volatility solver prices an option dozens of times). Safe means:
 * every factor and figure a normal double well inside the range; the price at
 * least 1/8 of the larger of its two terms (the difference loses at most 3
 * bits); and |d1|, |d2| ≤ 6 (the rounding of d, which N(d) magnifies by d,
 * stays small). Then it is accurate to a few 1e-14 relative, as the log-space
 * evaluation.
 */
function directFigures(
  S: number,
  K: number,
  T: number,
  r: number,
  sigma: number,
  q: number,
  type: OptionType,
  d1: number,
  d2: number,
  sigmaSqrtT: number,
): { price: number; greeks: Greeks } | null {
  const sqrtT = Math.sqrt(T);
  const dq = Math.exp(-q * T);
  const sDq = S * dq;
  const kDr = K * Math.exp(-r * T);
  const pdf1 = normPdf(d1);
  const call = type === 'call';
  const n1 = normCdf(call ? d1 : -d1); // N(±d1)
  const n2 = normCdf(call ? d2 : -d2); // N(±d2)
  for (const v of [sDq, kDr, pdf1, n1, n2, sigmaSqrtT, S * sigmaSqrtT]) if (!(v > DIRECT_FLOOR && v < 1e280)) return null;
  const t1 = sDq * n1;
  const t2 = kDr * n2;
  const price = call ? t1 - t2 : t2 - t1;
  if (!(price >= Math.max(t1, t2) / 8 && Math.abs(d1) <= 6 && Math.abs(d2) <= 6)) return null;
  const sgn = call ? 1 : -1;
  const thetaAnnual = -(sDq * pdf1 * sigma) / (2 * sqrtT) - sgn * r * t2 + sgn * q * t1;
  const greeks: Greeks = {
    delta: sgn * dq * n1,
    gamma: (dq * pdf1) / (S * sigmaSqrtT),
    theta: thetaAnnual / DAYS_PER_YEAR,
    vega: (sDq * pdf1 * sqrtT) / 100,
    rho: (sgn * t2 * T) / 100,
  };
  // Each figure well inside the range too (theta aside: it can be near 0 by itself).
  for (const v of [price, greeks.delta, greeks.gamma, greeks.vega, greeks.rho]) if (!(Math.abs(v) > DIRECT_FLOOR && Math.abs(v) < 1e280)) return null;
  if (!(Math.abs(thetaAnnual) < 1e280)) return null;
  return { price, greeks };
}

/**
 * Σ sign·e^{ln + shiftLn} · 2^k, formed relative to the largest term so no
 * term overflows or underflows on its own. An exact cancellation gives 0 (a
 * true zero up to rounding); when every term is below the smallest double the
 * reason is 'underflow'.
 */
function signedSum(terms: readonly Term[], k: number, shiftLn: number): { value: number; reason: NumericRangeReason | null } {
  const live = terms.filter((t) => t.ln > -Infinity && !Number.isNaN(t.ln));
  if (live.length === 0) return { value: 0, reason: 'underflow' };
  const top = Math.max(...live.map((t) => t.ln));
  // Each of the (at most 3) terms below e^−760: their sum is below the smallest double.
  if (top + shiftLn + k * Math.LN2 < -760) return { value: 0, reason: 'underflow' };
  let acc = 0;
  for (const t of live) acc += t.sign * Math.exp(t.ln - top);
  if (acc === 0) return { value: 0, reason: null };
  const value = Math.sign(acc) * expTimesPow2(top + Math.log(Math.abs(acc)) + shiftLn, k);
  if (!Number.isFinite(value)) return { value, reason: 'overflow' };
  if (value === 0) return { value, reason: 'underflow' };
  return { value, reason: null };
}
