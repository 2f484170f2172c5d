/**
 * The expiry payoff and P&L of an option-only structure as piecewise-linear
 * functions of the terminal price S_T, and the set where such a function is
 * positive (with its zero crossings).
 *
 * Pure functions over numbers: no I/O, no imports from server/. Safe to run
 * inside piscina worker threads.
 */
import type { OptionLeg } from './contract.ts';

export interface PiecewiseLinear {
  /** Sorted distinct knots, starting at 0. */
  knots: number[];
  /** Values at the knots. */
  values: number[];
  /** Slope beyond the last knot. */
  tailSlope: number;
  /** Evaluate anywhere on [0, ∞). */
  at: (x: number) => number;
  /** |value| at or below this counts as zero. */
  tol: number;
}

function signedQty(leg: OptionLeg, multiplier: number): number {
  return (leg.action === 'buy' ? 1 : -1) * leg.quantity * multiplier;
}

/** Expiry payoff of the legs (no premium), whole position; with `abs`, the sum of the legs' absolute payoffs. */
export function payoffAtExpiry(legs: readonly OptionLeg[], multiplier: number, sT: number, abs = false): number {
  let v = 0;
  for (const leg of legs) {
    const intrinsic = leg.type === 'call' ? Math.max(sT - leg.strike, 0) : Math.max(leg.strike - sT, 0);
    const q = signedQty(leg, multiplier);
    v += (abs ? Math.abs(q) : q) * intrinsic;
  }
  return v;
}

export function pnlFunction(legs: readonly OptionLeg[], multiplier: number, payoffScale: number, constant: number): PiecewiseLinear {
  const strikes = [...new Set(legs.map((l) => l.strike))].sort((a, b) => a - b);
  const knots = [0, ...strikes.filter((k) => k > 0)];
  const at = (x: number) => payoffScale * payoffAtExpiry(legs, multiplier, x) + constant;
  let callNet = 0;
  let qtyAbs = 0;
  let magnitude = Math.abs(constant);
  for (const leg of legs) {
    const sq = signedQty(leg, multiplier);
    qtyAbs += Math.abs(sq);
    magnitude += Math.abs(sq) * leg.strike * Math.abs(payoffScale);
    if (leg.type === 'call') callNet += sq;
  }
  // Net call quantity is a sum of ± integers in practice; snap float noise.
  if (Math.abs(callNet) <= 1e-12 * qtyAbs) callNet = 0;
  return { knots, values: knots.map(at), tailSlope: payoffScale * callNet, at, tol: 1e-12 * magnitude };
}

/**
 * The set {x >= 0 : f(x) > 0} of a piecewise-linear f as disjoint intervals,
 * and f's zero crossings used to build it.
 */
export function positiveSet(f: PiecewiseLinear): { intervals: Array<[number, number]>; crossings: number[] } {
  const { knots, values, tailSlope, tol } = f;
  const pts = [...knots];
  const crossings: number[] = [];
  for (let i = 0; i + 1 < knots.length; i += 1) {
    const a = values[i];
    const b = values[i + 1];
    if ((a > tol && b < -tol) || (a < -tol && b > tol)) {
      const x = knots[i] + ((knots[i + 1] - knots[i]) * a) / (a - b);
      pts.push(x);
      crossings.push(x);
    }
  }
  const last = knots[knots.length - 1];
  const vLast = values[values.length - 1];
  if ((vLast > tol && tailSlope < 0) || (vLast < -tol && tailSlope > 0)) {
    const x = last - vLast / tailSlope;
    pts.push(x);
    crossings.push(x);
  }
  pts.sort((a, b) => a - b);
  const intervals: Array<[number, number]> = [];
  const push = (a: number, b: number) => {
    const prev = intervals[intervals.length - 1];
    if (prev && prev[1] === a) prev[1] = b;
    else intervals.push([a, b]);
  };
  for (let i = 0; i + 1 < pts.length; i += 1) {
    if (!(pts[i + 1] > pts[i])) continue;
    if (f.at(0.5 * (pts[i] + pts[i + 1])) > tol) push(pts[i], pts[i + 1]);
  }
  const end = pts[pts.length - 1];
  // Beyond the last point f is linear with no zero: its sign is the slope's, or the value's when flat.
  if (tailSlope > 0 || (tailSlope === 0 && f.at(end) > tol)) push(end, Infinity);
  return { intervals, crossings };
}
