/**
 * The textbook Black–Scholes–Merton evaluation of price and Greeks, for the
 * ordinary inputs where it is safe (see priceOption in black-scholes.ts).
 *
 * Pure functions over numbers: no I/O, no imports from server/. Safe to run
 * inside piscina worker threads.
 */
import { DAYS_PER_YEAR, type Greeks, type OptionType } from './contract.ts';
import { normCdf, normPdf } from './normal-distribution.ts';

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
export function directFigures(
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
