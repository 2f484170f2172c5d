/**
 * The Kelly fraction of a structure, from the quadrature nodes of its
 * present-value P&L (strategy-scaled.ts).
 *
 * Pure functions over numbers: no I/O, no imports from server/. Safe to run
 * inside piscina worker threads.
 */

/**
 * Exact Kelly fraction: f* maximising G(f) = E[ln(1 + f·X/C)] over
 * 0 <= f < f_sup, where C = capital at risk (maxLoss) and f_sup = C/(−min X)
 * keeps wealth positive in the worst case (f_sup = 1 whenever the worst
 * present-value outcome equals −maxLoss, e.g. long options). G is concave, so
 * f* is the root of G'(f) = E[R/(1 + fR)], R = X/C, found by bisection to
 * 1e-13 relative; G'(0) = EV/C <= 0 gives f* = 0 (no bet), and a G' still
 * positive at f_sup (the worst case has probability 0) gives f* = f_sup.
 * Returns null when no present-value loss is possible (f* would be infinite).
 */
export function kelly(x: Float64Array, w: Float64Array, mass: number, capital: number, minPv: number, ev: number): number | null {
  if (!(minPv < 0)) return null;
  if (!(ev > 0)) return 0;
  const fSup = Number.isFinite(minPv) ? capital / -minPv : 1;
  const g = (f: number) => {
    let acc = 0;
    for (let j = 0; j < x.length; j += 1) {
      const rr = x[j] / capital;
      acc += (w[j] * rr) / (1 + f * rr);
    }
    return acc / mass;
  };
  if (!(g(0) > 0)) return 0;
  let lo = 0;
  let hi = fSup * (1 - 1e-12);
  if (g(hi) > 0) return hi;
  for (let it = 0; it < 200 && hi - lo > 1e-13 * fSup; it += 1) {
    const mid = 0.5 * (lo + hi);
    if (g(mid) > 0) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}
