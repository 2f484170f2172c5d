/**
 * Expectations over a lognormal terminal price by Gauss–Legendre quadrature,
 * for the strategy EV. Pure functions over numbers.
 *
 * 32 points per panel, panels at most 1 standard deviation wide in
 * z = (ln S_T − m)/(σ√T), split at the points the caller gives (every strike
 * and every zero of the present-value P&L) so each integrand is smooth
 * (analytic) on each panel; z truncated to [−12, 12 + 2σ√T], widened to 12
 * beyond the outermost split points (at most |z| = 40). For any
 * integrand bounded by (A + B·S_T)^p, p <= 2, the truncation error is at
 * most 2Φ(−12)·E[(A + B·S_T)^p] ≈ 3.6e-33 of that envelope (the upper limit
 * is shifted by 2σ√T so the S_T- and S_T²-weighted densities, which are
 * normal densities centred at σ√T and 2σ√T, are also cut 12 of their
 * standard deviations out).
 */
import { normCdf } from './normal-distribution.ts';
import type { IntegrationInfo } from './contract.ts';

/** P_n(x) and P_n'(x), the Legendre polynomial of degree n by its three-term recurrence. */
function legendre(n: number, x: number): { p: number; dp: number } {
  let p0 = 1;
  let p1 = x;
  for (let k = 2; k <= n; k += 1) {
    const p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
    p0 = p1;
    p1 = p2;
  }
  return { p: p1, dp: (n * (x * p1 - p0)) / (x * x - 1) };
}

/** Nodes and weights of the n-point Gauss–Legendre rule on [−1, 1] (Newton on P_n). */
export function gaussLegendre(n: number): { nodes: Float64Array; weights: Float64Array } {
  const nodes = new Float64Array(n);
  const weights = new Float64Array(n);
  const m = Math.floor((n + 1) / 2);
  for (let i = 0; i < m; i += 1) {
    let x = Math.cos((Math.PI * (i + 0.75)) / (n + 0.5));
    for (let iter = 0; iter < 100; iter += 1) {
      const { p, dp } = legendre(n, x);
      const dx = p / dp;
      x -= dx;
      if (Math.abs(dx) < 1e-16) break;
    }
    // The derivative at the converged node gives the weight.
    const { dp } = legendre(n, x);
    const w = 2 / ((1 - x * x) * dp * dp);
    nodes[i] = -x;
    nodes[n - 1 - i] = x;
    weights[i] = w;
    weights[n - 1 - i] = w;
  }
  return { nodes, weights };
}

const GL_POINTS = 32;
const GL = gaussLegendre(GL_POINTS);
const MAX_PANEL_WIDTH = 1; // in standard deviations of ln S_T
const TRUNCATION_Z = 12;
const WIDEST_Z = 40;
const PHI_MINUS_12 = 1.7764821120776e-33; // Φ(−12)
// Keep S_T finite in double precision with room for a payoff of up to 1e9
// shares (quantity × multiplier) times e^2 of discounting. The strategy EV
// works on spot and strikes scaled near 1 (strategy-ev.ts), where ln S_T stays
// below about 590 for every input the API accepts.
const MAX_LOG_S = 680;
const INV_SQRT_2PI = 0.398942280401432677939946059934;

/** Lognormal terminal distribution: ln S_T = m + s·Z. */
export interface Terminal {
  m: number;
  s: number;
}

export function terminalDistribution(spot: number, timeYears: number, mu: number, vol: number): Terminal {
  return { m: Math.log(spot) + (mu - 0.5 * vol * vol) * timeYears, s: vol * Math.sqrt(timeYears) };
}

/** P(a < S_T < b) for 0 <= a < b <= ∞, without cancellation in either tail. */
export function lognormalIntervalProbability(t: Terminal, a: number, b: number): number {
  const za = a <= 0 ? -Infinity : (Math.log(a) - t.m) / t.s;
  const zb = b === Infinity ? Infinity : (Math.log(b) - t.m) / t.s;
  if (!(zb > za)) return 0;
  return za >= 0 ? normCdf(-za) - normCdf(-zb) : normCdf(zb) - normCdf(za);
}

interface Grid {
  /** S_T at each node. */
  s: Float64Array;
  /** Quadrature weight × density at each node (sums to ≈ 1). */
  w: Float64Array;
  /**
   * sqrt(w), formed directly (not as Math.sqrt(w)): where w underflows (z above
   * about 38.6) sqrt(w) does not, so a second moment is summed as (sqrt(w)·x)²
   * without forming w·x² or x², either of which can leave the double range.
   */
  sw: Float64Array;
  info: IntegrationInfo;
}

/**
 * Quadrature grid for E[h(S_T)]: Gauss–Legendre on panels in z, split at the
 * given S-values (strikes, zero crossings) so h is smooth on each panel.
 */
export function integrationGrid(t: Terminal, splitPointsS: readonly number[]): Grid {
  // [−12, 12 + 2σ√T], widened to reach 12 below the lowest and 12 + 2σ√T above
  // the highest split point, so a payoff that only changes far in a tail (a
  // deep out-of-the-money leg) is integrated over its own region, not cut off;
  // never beyond |z| = 40 (+2σ√T), where the density e^{−z²/2} is below e^−800.
  const zs = splitPointsS.filter((x) => x > 0 && Number.isFinite(x)).map((x) => (Math.log(x) - t.m) / t.s);
  const lower = Math.max(-WIDEST_Z, Math.min(-TRUNCATION_Z, ...zs.map((z) => z - TRUNCATION_Z)));
  let upper = Math.min(WIDEST_Z, Math.max(TRUNCATION_Z, ...zs.map((z) => z + TRUNCATION_Z))) + 2 * t.s;
  let honoured = true;
  const zMaxFinite = (MAX_LOG_S - t.m) / t.s;
  if (upper > zMaxFinite) {
    upper = zMaxFinite;
    // The stated bound needs the range to reach 12 + 2σ√T; the widening beyond is a bonus.
    honoured = upper >= TRUNCATION_Z + 2 * t.s;
  }
  const cuts = [lower, upper];
  for (const x of splitPointsS) {
    if (!(x > 0) || !Number.isFinite(x)) continue;
    const z = (Math.log(x) - t.m) / t.s;
    if (z > lower && z < upper) cuts.push(z);
  }
  cuts.sort((a, b) => a - b);
  const panels: Array<[number, number]> = [];
  for (let i = 0; i + 1 < cuts.length; i += 1) {
    const a = cuts[i];
    const b = cuts[i + 1];
    if (!(b > a)) continue;
    const k = Math.max(1, Math.ceil((b - a) / MAX_PANEL_WIDTH));
    const h = (b - a) / k;
    for (let j = 0; j < k; j += 1) panels.push([a + j * h, j === k - 1 ? b : a + (j + 1) * h]);
  }
  const n = panels.length * GL_POINTS;
  const s = new Float64Array(n);
  const w = new Float64Array(n);
  const sw = new Float64Array(n);
  let idx = 0;
  for (const [a, b] of panels) {
    const half = 0.5 * (b - a);
    const mid = 0.5 * (a + b);
    for (let j = 0; j < GL_POINTS; j += 1) {
      const z = mid + half * GL.nodes[j];
      s[idx] = Math.exp(t.m + t.s * z);
      w[idx] = half * GL.weights[j] * INV_SQRT_2PI * Math.exp(-0.5 * z * z);
      sw[idx] = Math.sqrt(half * GL.weights[j] * INV_SQRT_2PI) * Math.exp(-0.25 * z * z);
      idx += 1;
    }
  }
  return {
    s,
    w,
    sw,
    info: {
      method: 'gauss-legendre',
      variable: 'z = (ln S_T - m) / (vol * sqrt(T))',
      pointsPerPanel: GL_POINTS,
      maxPanelWidth: MAX_PANEL_WIDTH,
      panels: panels.length,
      lowerLimitZ: lower,
      upperLimitZ: upper,
      splitAt: ['strikes', 'present_value_pnl_zero_crossings'],
      truncationRelativeErrorBound: 2 * PHI_MINUS_12,
      truncationBoundHonoured: honoured,
    },
  };
}
