/**
 * The standard normal distribution: density φ, distribution function Φ, their
 * logarithms and the Mills ratio, each accurate in relative terms in the tails.
 *
 * Pure functions over numbers: no I/O, no imports from server/. Safe to run
 * inside piscina worker threads.
 */

const INV_SQRT_2PI = 0.398942280401432677939946059934; // 1/sqrt(2π)
const SQRT_32 = 5.656854249492380195206754896838; // sqrt(32)
export const LN_SQRT_2PI = 0.918938533204672741780329736406; // ln sqrt(2π)

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
 * Cody's C/D form for 0.67448975 < y <= sqrt(32), Φ(−y) = e^{−y²/2}·C(y)/D(y),
 * returned as (factor·C(y))/D(y): the factor multiplies the numerator before
 * the division, which rounds differently from factor·(C(y)/D(y)); factor 1
 * gives C(y)/D(y) exactly.
 */
function middleRational(y: number, factor: number): number {
  let num = C[8] * y;
  let den = y;
  for (let i = 0; i < 7; i++) {
    num = (num + C[i]) * y;
    den = (den + D[i]) * y;
  }
  return (factor * (num + C[7])) / (den + D[7]);
}

/** Cody's P/Q term for y > sqrt(32): r = P(1/y²)/(y²·Q(1/y²)), so Φ(−y) = e^{−y²/2}/y · (1/sqrt(2π) − r). */
function asymptoticR(y: number): number {
  const ysq = 1 / (y * y);
  let num = P[5] * ysq;
  let den = ysq;
  for (let i = 0; i < 4; i++) {
    num = (num + P[i]) * ysq;
    den = (den + Q[i]) * ysq;
  }
  return (ysq * (num + P[4])) / (den + Q[4]);
}

/**
 * Cody's rational forms for |x| > 0.67448975, without the factor e^{−x²/2}:
 * the Mills ratio R(y) = Φ(−y)/φ(y), and for y > sqrt(32) also
 * g(y) = 1 − y·R(y) = sqrt(2π)·r, formed without cancellation.
 */
function millsRational(y: number): { mills: number; oneMinusYMills: number | null } {
  if (y <= SQRT_32) return { mills: middleRational(y, 1) / INV_SQRT_2PI, oneMinusYMills: null };
  const r = asymptoticR(y);
  return { mills: (INV_SQRT_2PI - r) / (y * INV_SQRT_2PI), oneMinusYMills: r / INV_SQRT_2PI };
}

/**
 * Upper tail Φ(−|x|) = P(Z > |x|) for |x| > 0.67448975, accurate in relative
 * terms (no cancellation).
 */
function upperTailAbs(y: number): number {
  if (y <= SQRT_32) return middleRational(y, expHalfSquareNeg(y));
  if (y >= 38.5) return 0; // below the smallest subnormal double
  const r = asymptoticR(y);
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
export function oneMinusYMills(y: number): number {
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
