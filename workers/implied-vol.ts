/**
 * Implied volatility under Black–Scholes–Merton: the σ at which
 * `priceOption` (workers/black-scholes.ts, the one BSM) returns a given price.
 *
 * Pure functions over numbers: no I/O, no imports from server/.
 *
 * Method: Brent's method (Brent 1973, "Algorithms for Minimization without
 * Derivatives", ch. 4: inverse quadratic interpolation, secant, bisection) on
 * f(σ) = BSM(σ) − price. Chosen over Newton on vega because it keeps a sign
 * change bracketed at every step and terminates on the bracket's width, so it
 * converges for every price strictly between the no-arbitrage bounds,
 * including deep out-of-the-money prices where vega is nearly zero and a
 * Newton step overshoots by orders of magnitude.
 *  - Bracket: from a starting guess σ0 (Corrado and Miller's closed form,
 *    clamped to [0.01, 5]), f(σ0) decides the side, and the other end is
 *    found by halving or doubling σ0 until f changes sign (f increases with
 *    σ), within [1e-8, 1000]. A price with no root there is no_convergence.
 *  - Tolerance: the bracket is narrowed to 2·ε·σ + 1e-12 / 2 (ε = 2^−52), so
 *    the answer is within about 1e-12 of where the float64 BSM price crosses
 *    the given price. How far that is from the true σ is the price's own
 *    rounding error divided by vega (see the identifiability rule in
 *    test/unit/implied-vol.test.ts): over the tested grid of 5,200 points,
 *    the 4,417 identifiable ones come back within 1.9e-10, median 1.8e-15.
 *  - `iterations` counts every BSM evaluation, bracketing included: mean 9.4,
 *    at most 29 over that grid; mean 7.8, at most 22, for prices ≥ 0.01
 *    (spot 100). Prices far below that (down to 1e-300 on the grid) take the most.
 *
 * No-arbitrage bounds, checked first (the price must lie strictly between):
 *    call: max(0, S·e^(−qT) − K·e^(−rT)) < price < S·e^(−qT)
 *    put:  max(0, K·e^(−rT) − S·e^(−qT)) < price < K·e^(−rT)
 * A price at a bound corresponds to σ = 0 or σ = ∞, neither a volatility.
 */
import { priceOption } from './black-scholes.ts';
import type { OptionType } from './contract.ts';

export const IMPLIED_VOL_FAILURES = ['expired', 'non_positive_price', 'below_intrinsic', 'above_upper_bound', 'no_convergence'] as const;
export type ImpliedVolFailure = (typeof IMPLIED_VOL_FAILURES)[number];

export interface ImpliedVolInput {
  spot: number;
  strike: number;
  /** Years to expiry (ACT/365F, as priceOption). */
  timeYears: number;
  /** Continuously compounded annual risk-free rate, decimal. */
  rate: number;
  /** Continuous annual dividend yield, decimal. */
  dividendYield: number;
  right: OptionType;
  /** The option's price per share. */
  price: number;
  /** What the price is called in a failure's detail ("mid" for a quote's mid); default "price". */
  priceName?: string;
}

export type ImpliedVolResult = { ok: true; vol: number; iterations: number } | { ok: false; reason: ImpliedVolFailure; detail: string };

/** The volatilities searched: below 1e-8 or above 1000 (100,000 %) no figure is a usable volatility. */
export const SIGMA_RANGE = { lowest: 1e-8, highest: 1000 } as const;
const SIGMA_TOLERANCE = 1e-12;
const MAX_ITERATIONS = 200;
const EPS = Number.EPSILON;

/**
 * `a` and `b` printed with the fewest significant digits (6 to 17) that still
 * tell them apart, so a detail never reads "1.35 is below 1.35".
 */
export function formatApart(a: number, b: number): [string, string] {
  for (let p = 6; p < 17; p++) {
    const sa = a.toPrecision(p);
    const sb = b.toPrecision(p);
    if (sa !== sb) return [String(Number(sa)), String(Number(sb))];
  }
  return [String(a), String(b)];
}

function assertFinite(name: string, v: number): void {
  if (!Number.isFinite(v)) throw new RangeError(`${name} must be a finite number`);
}

/** Implied volatility of a European option; see the module comment for the method and the bounds. */
export function impliedVolatility(input: ImpliedVolInput): ImpliedVolResult {
  const { spot: S, strike: K, timeYears: T, rate: r, dividendYield: q, right, price } = input;
  for (const [name, v] of Object.entries({ spot: S, strike: K, timeYears: T, rate: r, dividendYield: q, price })) assertFinite(name, v);
  if (!(S > 0)) throw new RangeError('spot must be > 0');
  if (!(K > 0)) throw new RangeError('strike must be > 0');
  if (right !== 'call' && right !== 'put') throw new RangeError("right must be 'call' or 'put'");
  const name = input.priceName ?? 'price';

  if (T <= 0)
    return { ok: false, reason: 'expired', detail: `time to expiry ${T} years is not positive: an option at or past expiry has no implied volatility` };
  if (price <= 0)
    return { ok: false, reason: 'non_positive_price', detail: `${name} ${price} is not positive: no volatility gives an option a zero or negative value` };

  const sDq = S * Math.exp(-q * T);
  const kDr = K * Math.exp(-r * T);
  const upper = right === 'call' ? sDq : kDr;
  const intrinsic = Math.max(0, right === 'call' ? sDq - kDr : kDr - sDq);
  const upperFormula = right === 'call' ? 'S·e^(−qT)' : 'K·e^(−rT)';
  const intrinsicFormula = right === 'call' ? 'S·e^(−qT) − K·e^(−rT)' : 'K·e^(−rT) − S·e^(−qT)';
  if (price >= upper) {
    const [p, u] = formatApart(price, upper);
    return {
      ok: false,
      reason: 'above_upper_bound',
      detail: `${name} ${p} is at or above the ${right}'s upper bound ${u} (${upperFormula}): no volatility prices a ${right} that high; check the quote and the spot`,
    };
  }
  if (price <= intrinsic) {
    const [p, i] = formatApart(price, intrinsic);
    return {
      ok: false,
      reason: 'below_intrinsic',
      detail: `${name} ${p} is at or below the discounted intrinsic value ${i} (${intrinsicFormula}): no volatility prices a ${right} that low; check the quote and the spot`,
    };
  }

  let evaluations = 0;
  const f = (vol: number) => {
    evaluations++;
    return priceOption({ spot: S, strike: K, timeYears: T, rate: r, vol, dividendYield: q, type: right }).price - price;
  };
  const guess = initialGuess(sDq, kDr, T, right === 'call' ? price : price + sDq - kDr);
  let lo = guess;
  let hi = guess;
  let fLo = f(guess);
  let fHi = fLo;
  if (fLo > 0) {
    while (fLo > 0 && lo > SIGMA_RANGE.lowest) {
      hi = lo;
      fHi = fLo;
      fLo = f((lo = Math.max(lo / 2, SIGMA_RANGE.lowest)));
    }
  } else {
    while (fHi < 0 && hi < SIGMA_RANGE.highest) {
      lo = hi;
      fLo = fHi;
      fHi = f((hi = Math.min(hi * 2, SIGMA_RANGE.highest)));
    }
  }
  if (fLo > 0 || fHi < 0) {
    const side = fLo > 0 ? `below the BSM price at σ = ${lo}` : `above the BSM price at σ = ${hi}`;
    return {
      ok: false,
      reason: 'no_convergence',
      detail: `${name} ${price} is ${side}: no volatility in [${SIGMA_RANGE.lowest}, ${SIGMA_RANGE.highest}] reproduces it (the time value is too small or too close to the upper bound to resolve in double precision)`,
    };
  }
  const root = brent(f, lo, hi, fLo, fHi);
  if (root === null)
    return {
      ok: false,
      reason: 'no_convergence',
      detail: `Brent's method did not narrow the volatility bracket to ${SIGMA_TOLERANCE} within ${MAX_ITERATIONS} evaluations`,
    };
  return { ok: true, vol: root, iterations: evaluations };
}

/**
 * Corrado and Miller's closed-form approximation of the implied
 * volatility of a call worth `call`, with S·e^(−qT) and K·e^(−rT) in place
 * of S and K; clamped to [0.01, 5]. Only a starting point.
 * (C. J. Corrado, T. W. Miller, "A note on a simple, accurate formula to
 * compute implied standard deviations", J. Banking & Finance 20, 1996.)
 */
function initialGuess(sDq: number, kDr: number, T: number, call: number): number {
  const half = call - (sDq - kDr) / 2;
  const root = Math.sqrt(Math.max(0, half * half - ((sDq - kDr) * (sDq - kDr)) / Math.PI));
  const sigma = (Math.sqrt(2 * Math.PI) * (half + root)) / ((sDq + kDr) * Math.sqrt(T));
  return Math.min(5, Math.max(0.01, sigma));
}

/**
 * Brent's zero finder on [a, b] with f(a)·f(b) ≤ 0 (the form of Numerical
 * Recipes' zbrent). Returns null when MAX_ITERATIONS pass without the bracket
 * narrowing to the tolerance.
 */
function brent(f: (x: number) => number, a: number, b: number, fa: number, fb: number): number | null {
  if (fa === 0) return a;
  let c = b;
  let fc = fb;
  let d = b - a;
  let e = d;
  for (let iterations = 0; iterations <= MAX_ITERATIONS; iterations++) {
    if ((fb > 0 && fc > 0) || (fb < 0 && fc < 0)) {
      c = a;
      fc = fa;
      d = e = b - a;
    }
    if (Math.abs(fc) < Math.abs(fb)) {
      a = b;
      b = c;
      c = a;
      fa = fb;
      fb = fc;
      fc = fa;
    }
    const tol = 2 * EPS * Math.abs(b) + 0.5 * SIGMA_TOLERANCE;
    const xm = 0.5 * (c - b);
    if (Math.abs(xm) <= tol || fb === 0) return b;
    if (Math.abs(e) >= tol && Math.abs(fa) > Math.abs(fb)) {
      const s = fb / fa;
      let p: number;
      let q: number;
      if (a === c) {
        p = 2 * xm * s;
        q = 1 - s;
      } else {
        const qa = fa / fc;
        const rb = fb / fc;
        p = s * (2 * xm * qa * (qa - rb) - (b - a) * (rb - 1));
        q = (qa - 1) * (rb - 1) * (s - 1);
      }
      if (p > 0) q = -q;
      else p = -p;
      if (2 * p < Math.min(3 * xm * q - Math.abs(tol * q), Math.abs(e * q))) {
        e = d;
        d = p / q;
      } else {
        d = xm;
        e = d;
      }
    } else {
      d = xm;
      e = d;
    }
    a = b;
    fa = fb;
    b += Math.abs(d) > tol ? d : xm > 0 ? tol : -tol;
    fb = f(b);
  }
  return null;
}
