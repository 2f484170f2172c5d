/**
 * Expected value and risk profile of a single-expiry, option-only structure
 * under a lognormal terminal distribution.
 *
 * Pure functions over numbers: no I/O, no imports from server/. Safe to run
 * inside piscina worker threads. Stock legs and multiple expiries are refused
 * upstream (422 unsupported_structure); every leg here is a European call or
 * put on the same underlying with the same expiry.
 *
 * ── Conventions (also in the README) ────────────────────────────────────────
 * Quantities and money
 *   - `quantity` is a number of contracts (> 0; the sign comes from `action`);
 *     one contract is `contractMultiplier` shares (default 100). All dollar
 *     figures are for the whole position: per-share value × quantity × multiplier.
 *   - Each leg is priced at its closed-form Black–Scholes–Merton fair value
 *     (r, q, σ), whatever the measure used for the expectation.
 *   - netCreditDebit = Σ (sell ? +fair : −fair) × quantity × multiplier:
 *     positive = net credit received today, negative = net debit paid today.
 *
 * Terminal distribution ("measure")
 *   - ln S_T ~ Normal(ln S + (μ − σ²/2)T, σ²T), so E[S_T] = S·e^{μT}.
 *   - risk_neutral (default): μ = r − q.
 *   - real_world (when `drift` is given): μ = drift, the expected
 *     continuously-compounded growth rate of the PRICE (i.e. already net of the
 *     dividend yield, the same footing as r − q).
 *
 * Two P&L views, both per whole position:
 *   1. Expiry P&L (the broker payoff diagram): payoff(S_T) + netCreditDebit,
 *      the premium counted at face value, without interest. Used for
 *      `breakevens`, `probabilityOfProfit`, `maxProfit`, `maxLoss` and
 *      `naivePopTimesMaxProfit`, so those match the textbook/broker numbers
 *      (long call breakeven = K + premium, iron condor max profit = the credit,
 *      max loss = wing width − credit).
 *   2. Present-value P&L: X = e^{−rT}·payoff(S_T) + netCreditDebit, the expiry
 *      payoff discounted at the risk-free rate to today, when the premium is
 *      paid. trueExpectedValue = E[X] = e^{−rT}·E[payoff(S_T)] + netCreditDebit.
 *      Under the risk-neutral measure e^{−rT}·E[payoff] is exactly the
 *      closed-form BSM value of the structure, so a fairly priced structure
 *      has EV = 0 (quadrature error ~1e-15 relative; amounts below 1e-12 of
 *      the position's notional scale are reported as exactly 0). riskMetrics are
 *      moments of this same X, so they are consistent with the EV (e.g. omega
 *      = 1 when EV = 0).
 *
 * maxLoss sign: reported as a POSITIVE number of dollars that can be lost
 *   (maxLoss = −min expiry P&L). It is <= 0 only for a structure that cannot
 *   lose at expiry. maxProfit = max expiry P&L. Either is null when unbounded
 *   (only the S_T → ∞ side can be unbounded: net long calls → unbounded
 *   profit, net short calls → unbounded loss).
 *
 * Integration: see `integrationGrid` below. Gauss–Legendre, 32 points per
 *   panel, panels at most 1 standard deviation wide in z = (ln S_T − m)/(σ√T),
 *   split at every strike and at every zero of the present-value P&L so each
 *   integrand is smooth (analytic) on each panel; z truncated to
 *   [−12, 12 + 2σ√T]. For any integrand bounded by (A + B·S_T)^p, p <= 2,
 *   the truncation error is at most 2Φ(−12)·E[(A + B·S_T)^p] ≈ 3.6e-33 of that
 *   envelope (the upper limit is shifted by 2σ√T so the S_T- and
 *   S_T²-weighted densities, which are normal densities centred at σ√T and
 *   2σ√T, are also cut 12 of their standard deviations out).
 */

import { assertMarketInputs, normCdf, priceOption, type OptionType } from './black-scholes.ts';

export type LegAction = 'buy' | 'sell';

export interface OptionLeg {
  action: LegAction;
  type: OptionType;
  strike: number;
  /** Number of contracts, > 0. */
  quantity: number;
}

export interface StrategyInput {
  /** Structure name (see STRUCTURES); echoed, not enforced here. */
  structure: string;
  legs: readonly OptionLeg[];
  spot: number;
  /** Years to expiry (ACT/365F: expiryDays / 365). */
  timeYears: number;
  rate: number;
  vol: number;
  /** Continuous dividend yield; default 0. */
  dividendYield?: number;
  /** Real-world annual drift μ of the price; when given the measure is real_world. */
  drift?: number | null;
  /** Shares per contract; default 100. */
  contractMultiplier?: number;
}

export interface LegValuation extends OptionLeg {
  /** Closed-form BSM fair value per share. */
  fairValuePerShare: number;
  /** fairValuePerShare × quantity × multiplier (always >= 0). */
  premium: number;
  /** +premium for a sell (received), −premium for a buy (paid). */
  cashFlow: number;
}

export interface RiskMetrics {
  /** Standard deviation of the present-value P&L X. */
  standardDeviation: number;
  /** sqrt(E[min(X, 0)²]) (target 0). */
  downsideDeviation: number;
  /** trueExpectedValue / capitalAtRisk, capitalAtRisk = maxLoss; null when maxLoss is unbounded or <= 0. */
  expectedReturn: number | null;
  /** trueExpectedValue / downsideDeviation; null when downsideDeviation = 0. */
  sortinoRatio: number | null;
  /** E[max(X, 0)] / E[max(−X, 0)]; null when the denominator is 0. */
  omegaRatio: number | null;
  /**
   * Exact log-utility (Kelly) optimum f* = argmax_{f >= 0} E[ln(1 + f·X/C)],
   * C = maxLoss: the fraction of bankroll to commit as capital at risk.
   * 0 when EV <= 0; null when C is null (unbounded or no possible loss).
   */
  kellyFraction: number | null;
}

export interface IntegrationInfo {
  method: 'gauss-legendre';
  variable: 'z = (ln S_T - m) / (vol * sqrt(T))';
  pointsPerPanel: number;
  maxPanelWidth: number;
  panels: number;
  lowerLimitZ: number;
  upperLimitZ: number;
  splitAt: ['strikes', 'present_value_pnl_zero_crossings'];
  /** Bound on the truncation error relative to E[(A + B·S_T)^p], p <= 2. */
  truncationRelativeErrorBound: number;
  /** False only when the upper limit had to be lowered to avoid overflow (absurd σ√T). */
  truncationBoundHonoured: boolean;
}

export interface StrategyAssumptions {
  measure: 'risk_neutral' | 'real_world';
  /** μ used for the terminal distribution (r − q when risk-neutral). */
  driftUsed: number;
  dividendYield: number;
  /** Rate used to discount the expiry payoff to today (the risk-free rate). */
  discountRate: number;
  contractMultiplier: number;
  integration: IntegrationInfo;
}

export interface StrategyResult {
  structure: string;
  legs: LegValuation[];
  netCreditDebit: number;
  /** E[payoff(S_T)] under the measure, undiscounted, whole position. */
  expectedPayoffAtExpiry: number;
  /** e^{−rT}·E[payoff(S_T)] + netCreditDebit. */
  trueExpectedValue: number;
  /** Expiry-P&L breakevens, ascending. */
  breakevens: number[];
  /** P(expiry P&L > 0) under the measure, closed form from the breakevens. */
  probabilityOfProfit: number;
  maxProfit: number | null;
  maxLoss: number | null;
  maxProfitUnbounded: boolean;
  maxLossUnbounded: boolean;
  /** probabilityOfProfit × maxProfit; null when maxProfit is unbounded. */
  naivePopTimesMaxProfit: number | null;
  riskMetrics: RiskMetrics;
  assumptions: StrategyAssumptions;
}

// ── Gauss–Legendre nodes ─────────────────────────────────────────────────────

/** Nodes and weights of the n-point Gauss–Legendre rule on [−1, 1] (Newton on P_n). */
export function gaussLegendre(n: number): { nodes: Float64Array; weights: Float64Array } {
  const nodes = new Float64Array(n);
  const weights = new Float64Array(n);
  const m = Math.floor((n + 1) / 2);
  for (let i = 0; i < m; i += 1) {
    let x = Math.cos((Math.PI * (i + 0.75)) / (n + 0.5));
    let dp = 0;
    for (let iter = 0; iter < 100; iter += 1) {
      let p0 = 1;
      let p1 = x;
      for (let k = 2; k <= n; k += 1) {
        const p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      dp = (n * (x * p1 - p0)) / (x * x - 1);
      const dx = p1 / dp;
      x -= dx;
      if (Math.abs(dx) < 1e-16) break;
    }
    // Recompute the derivative at the converged node for the weight.
    let p0 = 1;
    let p1 = x;
    for (let k = 2; k <= n; k += 1) {
      const p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
      p0 = p1;
      p1 = p2;
    }
    dp = (n * (x * p1 - p0)) / (x * x - 1);
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
const PHI_MINUS_12 = 1.7764821120776e-33; // Φ(−12)
const MAX_LOG_S = 700; // keep S_T (and P&L²) finite in double precision
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

export interface Grid {
  /** S_T at each node. */
  s: Float64Array;
  /** Quadrature weight × density at each node (sums to ≈ 1). */
  w: Float64Array;
  info: IntegrationInfo;
}

/**
 * Quadrature grid for E[h(S_T)]: Gauss–Legendre on panels in z, split at the
 * given S-values (strikes, zero crossings) so h is smooth on each panel.
 */
export function integrationGrid(t: Terminal, splitPointsS: readonly number[]): Grid {
  const lower = -TRUNCATION_Z;
  let upper = TRUNCATION_Z + 2 * t.s;
  let honoured = true;
  const zMaxFinite = (MAX_LOG_S - t.m) / t.s;
  if (upper > zMaxFinite) {
    upper = zMaxFinite;
    honoured = false;
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
  let idx = 0;
  for (const [a, b] of panels) {
    const half = 0.5 * (b - a);
    const mid = 0.5 * (a + b);
    for (let j = 0; j < GL_POINTS; j += 1) {
      const z = mid + half * GL.nodes[j];
      s[idx] = Math.exp(t.m + t.s * z);
      w[idx] = half * GL.weights[j] * INV_SQRT_2PI * Math.exp(-0.5 * z * z);
      idx += 1;
    }
  }
  return {
    s,
    w,
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

// ── Piecewise-linear P&L ─────────────────────────────────────────────────────

interface PiecewiseLinear {
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

/** Expiry payoff of the legs (no premium), whole position. */
export function payoffAtExpiry(legs: readonly OptionLeg[], multiplier: number, sT: number): number {
  let v = 0;
  for (const leg of legs) {
    const intrinsic = leg.type === 'call' ? Math.max(sT - leg.strike, 0) : Math.max(leg.strike - sT, 0);
    v += signedQty(leg, multiplier) * intrinsic;
  }
  return v;
}

function pnlFunction(legs: readonly OptionLeg[], multiplier: number, payoffScale: number, constant: number): PiecewiseLinear {
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
function positiveSet(f: PiecewiseLinear): { intervals: Array<[number, number]>; crossings: number[] } {
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

// ── Evaluation ───────────────────────────────────────────────────────────────

function assertLegs(legs: readonly OptionLeg[]): void {
  if (!Array.isArray(legs) || legs.length === 0) throw new RangeError('at least one leg is required');
  for (const leg of legs) {
    if (leg.action !== 'buy' && leg.action !== 'sell') throw new RangeError("leg action must be 'buy' or 'sell'");
    if (leg.type !== 'call' && leg.type !== 'put') throw new RangeError("leg type must be 'call' or 'put'");
    if (!Number.isFinite(leg.strike) || !(leg.strike > 0)) throw new RangeError('leg strike must be a finite number > 0');
    if (!Number.isFinite(leg.quantity) || !(leg.quantity > 0)) throw new RangeError('leg quantity must be a finite number > 0');
  }
}

export function evaluateStrategy(input: StrategyInput): StrategyResult {
  const { spot, timeYears: T, rate: r, vol } = input;
  const q = input.dividendYield ?? 0;
  const multiplier = input.contractMultiplier ?? 100;
  assertMarketInputs(input);
  assertLegs(input.legs);
  if (!Number.isFinite(multiplier) || !(multiplier > 0)) throw new RangeError('contractMultiplier must be > 0');
  const realWorld = input.drift !== undefined && input.drift !== null;
  if (realWorld && !Number.isFinite(input.drift)) throw new RangeError('drift must be a finite number');
  const mu = realWorld ? (input.drift as number) : r - q;
  const legsIn = input.legs.map((l) => ({ action: l.action, type: l.type, strike: l.strike, quantity: l.quantity }));

  // Closed-form leg values and the entry credit/debit.
  let netCreditDebit = 0;
  const legs: LegValuation[] = legsIn.map((leg) => {
    const fair = priceOption({ spot, strike: leg.strike, timeYears: T, rate: r, vol, dividendYield: q, type: leg.type }).price;
    const premium = fair * leg.quantity * multiplier;
    const cashFlow = leg.action === 'sell' ? premium : -premium;
    netCreditDebit += cashFlow;
    return { ...leg, fairValuePerShare: fair, premium, cashFlow };
  });

  const discount = Math.exp(-r * T);
  const expiryPnl = pnlFunction(legsIn, multiplier, 1, netCreditDebit);
  const pvPnl = pnlFunction(legsIn, multiplier, discount, netCreditDebit);
  const terminal = terminalDistribution(spot, T, mu, vol);

  // Breakevens and probability of profit (expiry P&L), closed form.
  const profitSet = positiveSet(expiryPnl);
  const breakevens = profitSet.intervals
    .flatMap(([a, b]) => [a, b])
    .filter((x) => x > 0 && x !== Infinity);
  let probabilityOfProfit = 0;
  for (const [a, b] of profitSet.intervals) probabilityOfProfit += lognormalIntervalProbability(terminal, a, b);
  probabilityOfProfit = Math.min(1, Math.max(0, probabilityOfProfit));

  // Extremes of the expiry P&L (piecewise linear: knots + tail slope).
  const maxProfitUnbounded = expiryPnl.tailSlope > 0;
  const maxLossUnbounded = expiryPnl.tailSlope < 0;
  const maxProfit = maxProfitUnbounded ? null : Math.max(...expiryPnl.values);
  const maxLoss = maxLossUnbounded ? null : 0 - Math.min(...expiryPnl.values);
  const naivePopTimesMaxProfit = maxProfit === null ? null : probabilityOfProfit * maxProfit;

  // Quadrature of the present-value P&L distribution.
  const pvCrossings = positiveSet(pvPnl).crossings;
  const strikes = legsIn.map((l) => l.strike);
  const grid = integrationGrid(terminal, [...strikes, ...pvCrossings]);
  const n = grid.s.length;
  const payoff = new Float64Array(n);
  let mass = 0;
  let sumPayoff = 0;
  for (let j = 0; j < n; j += 1) {
    payoff[j] = payoffAtExpiry(legsIn, multiplier, grid.s[j]);
    mass += grid.w[j];
    sumPayoff += grid.w[j] * payoff[j];
  }
  const expectedPayoffAtExpiry = sumPayoff / mass;
  // Dollar amounts below the rounding floor of these sums (1e-12 of the
  // position's notional scale, pvPnl.tol) are reported as exactly 0, so a fair
  // structure under the risk-neutral measure shows EV = 0 rather than ±1e-14,
  // and noise is never turned into a ratio.
  const zeroTol = pvPnl.tol;
  const snap = (v: number) => (Math.abs(v) <= zeroTol ? 0 : v);
  const trueExpectedValue = snap(discount * expectedPayoffAtExpiry + netCreditDebit);

  const x = new Float64Array(n);
  let m2 = 0;
  let down2 = 0;
  let upside = 0;
  let downside = 0;
  for (let j = 0; j < n; j += 1) {
    const v = snap(discount * payoff[j] + netCreditDebit);
    x[j] = v;
    const d = v - trueExpectedValue;
    m2 += grid.w[j] * d * d;
    if (v < 0) {
      down2 += grid.w[j] * v * v;
      downside -= grid.w[j] * v;
    } else {
      upside += grid.w[j] * v;
    }
  }
  const standardDeviation = Math.sqrt(m2 / mass);
  const downsideDeviation = Math.sqrt(down2 / mass);
  const capitalAtRisk = maxLoss !== null && maxLoss > 0 ? maxLoss : null;
  const minPv = pvPnl.tailSlope < 0 ? -Infinity : Math.min(...pvPnl.values);

  const riskMetrics: RiskMetrics = {
    standardDeviation,
    downsideDeviation,
    expectedReturn: capitalAtRisk === null ? null : trueExpectedValue / capitalAtRisk,
    sortinoRatio: downsideDeviation > 0 ? trueExpectedValue / downsideDeviation : null,
    omegaRatio: downside > 0 ? upside / downside : null,
    kellyFraction: capitalAtRisk === null ? null : kelly(x, grid.w, mass, capitalAtRisk, minPv, trueExpectedValue),
  };

  return {
    structure: input.structure,
    legs,
    netCreditDebit,
    expectedPayoffAtExpiry,
    trueExpectedValue,
    breakevens,
    probabilityOfProfit,
    maxProfit,
    maxLoss,
    maxProfitUnbounded,
    maxLossUnbounded,
    naivePopTimesMaxProfit,
    riskMetrics,
    assumptions: {
      measure: realWorld ? 'real_world' : 'risk_neutral',
      driftUsed: mu,
      dividendYield: q,
      discountRate: r,
      contractMultiplier: multiplier,
      integration: grid.info,
    },
  };
}

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
function kelly(x: Float64Array, w: Float64Array, mass: number, capital: number, minPv: number, ev: number): number | null {
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

// ── Structure table ──────────────────────────────────────────────────────────

export const STRUCTURE_NAMES = [
  'long_call',
  'long_put',
  'short_call',
  'short_put',
  'bull_call_spread',
  'bear_put_spread',
  'bull_put_spread',
  'bear_call_spread',
  'long_straddle',
  'short_straddle',
  'long_strangle',
  'short_strangle',
  'iron_condor',
  'iron_butterfly',
  'butterfly',
  'custom',
] as const;

export type StructureName = (typeof STRUCTURE_NAMES)[number];

export function isStructureName(name: string): name is StructureName {
  return (STRUCTURE_NAMES as readonly string[]).includes(name);
}

export interface StructureSpec {
  name: StructureName;
  /** Human-readable shape, e.g. "buy put K1, sell put K2, sell call K3, buy call K4; K1 < K2 < K3 < K4; equal quantities". */
  shape: string;
  /** Problems with the legs for this structure; empty when they match. `custom` accepts any option legs. */
  check: (legs: readonly OptionLeg[]) => string[];
}

interface Slot {
  action: LegAction;
  type: OptionType;
  /** Strike label, e.g. 'K1'; equal labels must have equal strikes. */
  k: string;
  /** Quantity as a multiple of the first slot's quantity. */
  ratio: number;
}

const eqTol = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

function describeLeg(l: { action: string; type: string; strike: number; quantity: number }): string {
  return `${l.action} ${l.quantity} ${l.type} ${l.strike}`;
}

/** Merges legs with the same action, type and strike (quantities add). */
function aggregate(legs: readonly OptionLeg[]): OptionLeg[] {
  const out: OptionLeg[] = [];
  for (const leg of legs) {
    const same = out.find((o) => o.action === leg.action && o.type === leg.type && eqTol(o.strike, leg.strike));
    if (same) same.quantity += leg.quantity;
    else out.push({ action: leg.action, type: leg.type, strike: leg.strike, quantity: leg.quantity });
  }
  return out;
}

/**
 * Matches legs against slots (listed in ascending strike order). Slots that
 * share action and type take the matching legs in ascending strike order.
 * `order` lists strike labels that must be strictly increasing.
 */
function matchShape(name: string, shape: string, slots: Slot[], order: string[], extra?: (k: Record<string, number>) => string[]) {
  return (rawLegs: readonly OptionLeg[]): string[] => {
    const legs = aggregate(rawLegs);
    const problems: string[] = [];
    const wanted = slots.map((s) => `${s.action} ${s.type}`);
    if (legs.length !== slots.length) {
      problems.push(
        `${name} needs ${slots.length} distinct leg${slots.length > 1 ? 's' : ''} (${shape}); got ${legs.length}: ${legs.map(describeLeg).join(', ') || 'none'}`,
      );
      return problems;
    }
    const assigned: OptionLeg[] = new Array(slots.length);
    const groups = new Map<string, number[]>();
    slots.forEach((s, i) => {
      const key = `${s.action} ${s.type}`;
      groups.set(key, [...(groups.get(key) ?? []), i]);
    });
    for (const [key, idxs] of groups) {
      const cands = legs.filter((l) => `${l.action} ${l.type}` === key).sort((a, b) => a.strike - b.strike);
      if (cands.length !== idxs.length) {
        problems.push(`${name} needs ${idxs.length} × "${key}" leg${idxs.length > 1 ? 's' : ''}; got ${cands.length}`);
        continue;
      }
      idxs.forEach((slotIdx, j) => (assigned[slotIdx] = cands[j]));
    }
    if (problems.length) {
      const extraLegs = legs.filter((l) => !wanted.includes(`${l.action} ${l.type}`));
      if (extraLegs.length) problems.push(`${name} has no place for: ${extraLegs.map(describeLeg).join(', ')}`);
      problems.push(`expected shape: ${shape}`);
      return problems;
    }
    const k: Record<string, number> = {};
    slots.forEach((s, i) => {
      const strike = assigned[i].strike;
      if (s.k in k) {
        if (!eqTol(k[s.k], strike)) problems.push(`${name}: the ${s.action} ${s.type} and the other ${s.k} leg must share one strike; got ${k[s.k]} and ${strike}`);
      } else k[s.k] = strike;
    });
    for (let i = 0; i + 1 < order.length; i += 1) {
      const a = order[i];
      const b = order[i + 1];
      if (a in k && b in k && !(k[a] < k[b])) problems.push(`${name}: strikes must satisfy ${order.join(' < ')}; got ${a} = ${k[a]}, ${b} = ${k[b]}`);
    }
    const base = assigned[0].quantity;
    slots.forEach((s, i) => {
      const want = s.ratio * base;
      if (!eqTol(assigned[i].quantity, want)) {
        problems.push(`${name}: the ${s.action} ${s.type} ${assigned[i].strike} quantity must be ${s.ratio === 1 ? 'equal to the others' : `${s.ratio} × the wing quantity`} (${want}); got ${assigned[i].quantity}`);
      }
    });
    if (!problems.length && extra) problems.push(...extra(k));
    return problems;
  };
}

function single(name: StructureName, action: LegAction, type: OptionType): StructureSpec {
  const shape = `${action} ${type}`;
  return { name, shape, check: matchShape(name, shape, [{ action, type, k: 'K', ratio: 1 }], []) };
}

function spec(name: StructureName, shape: string, slots: Slot[], order: string[], extra?: (k: Record<string, number>) => string[]): StructureSpec {
  return { name, shape, check: matchShape(name, shape, slots, order, extra) };
}

const butterflyShape = 'buy 1 K1, sell 2 K2, buy 1 K3, all calls or all puts; K1 < K2 < K3; K2 − K1 = K3 − K2';
function butterflyCheck(legs: readonly OptionLeg[]): string[] {
  const types = new Set(legs.map((l) => l.type));
  if (types.size !== 1) return [`butterfly legs must be all calls or all puts; got ${legs.map(describeLeg).join(', ')}`, `expected shape: ${butterflyShape}`];
  const type = legs[0].type;
  return matchShape(
    'butterfly',
    butterflyShape,
    [
      { action: 'buy', type, k: 'K1', ratio: 1 },
      { action: 'sell', type, k: 'K2', ratio: 2 },
      { action: 'buy', type, k: 'K3', ratio: 1 },
    ],
    ['K1', 'K2', 'K3'],
    (k) => (eqTol(k.K2 - k.K1, k.K3 - k.K2) ? [] : [`butterfly wings must be equally spaced (K2 − K1 = K3 − K2); got ${k.K2 - k.K1} and ${k.K3 - k.K2} — use custom for a broken-wing butterfly`]),
  )(legs);
}

/**
 * The 16 structure names of CONTRACT §3 with a leg-shape checker each.
 * Leg order does not matter; legs with the same action, type and strike are
 * merged first. Quantities must be in the stated ratios (equal unless stated).
 * Only the conventional orientation is accepted for the multi-leg names
 * (iron_condor and iron_butterfly are the short/credit versions, butterfly the
 * long/debit version); anything else is `custom`.
 */
export const STRUCTURES: Readonly<Record<StructureName, StructureSpec>> = {
  long_call: single('long_call', 'buy', 'call'),
  long_put: single('long_put', 'buy', 'put'),
  short_call: single('short_call', 'sell', 'call'),
  short_put: single('short_put', 'sell', 'put'),
  bull_call_spread: spec('bull_call_spread', 'buy call K1, sell call K2; K1 < K2; equal quantities', [
    { action: 'buy', type: 'call', k: 'K1', ratio: 1 },
    { action: 'sell', type: 'call', k: 'K2', ratio: 1 },
  ], ['K1', 'K2']),
  bear_put_spread: spec('bear_put_spread', 'sell put K1, buy put K2; K1 < K2; equal quantities', [
    { action: 'sell', type: 'put', k: 'K1', ratio: 1 },
    { action: 'buy', type: 'put', k: 'K2', ratio: 1 },
  ], ['K1', 'K2']),
  bull_put_spread: spec('bull_put_spread', 'buy put K1, sell put K2; K1 < K2; equal quantities', [
    { action: 'buy', type: 'put', k: 'K1', ratio: 1 },
    { action: 'sell', type: 'put', k: 'K2', ratio: 1 },
  ], ['K1', 'K2']),
  bear_call_spread: spec('bear_call_spread', 'sell call K1, buy call K2; K1 < K2; equal quantities', [
    { action: 'sell', type: 'call', k: 'K1', ratio: 1 },
    { action: 'buy', type: 'call', k: 'K2', ratio: 1 },
  ], ['K1', 'K2']),
  long_straddle: spec('long_straddle', 'buy put K, buy call K (same strike); equal quantities', [
    { action: 'buy', type: 'put', k: 'K', ratio: 1 },
    { action: 'buy', type: 'call', k: 'K', ratio: 1 },
  ], []),
  short_straddle: spec('short_straddle', 'sell put K, sell call K (same strike); equal quantities', [
    { action: 'sell', type: 'put', k: 'K', ratio: 1 },
    { action: 'sell', type: 'call', k: 'K', ratio: 1 },
  ], []),
  long_strangle: spec('long_strangle', 'buy put K1, buy call K2; K1 < K2; equal quantities', [
    { action: 'buy', type: 'put', k: 'K1', ratio: 1 },
    { action: 'buy', type: 'call', k: 'K2', ratio: 1 },
  ], ['K1', 'K2']),
  short_strangle: spec('short_strangle', 'sell put K1, sell call K2; K1 < K2; equal quantities', [
    { action: 'sell', type: 'put', k: 'K1', ratio: 1 },
    { action: 'sell', type: 'call', k: 'K2', ratio: 1 },
  ], ['K1', 'K2']),
  iron_condor: spec('iron_condor', 'buy put K1, sell put K2, sell call K3, buy call K4; K1 < K2 < K3 < K4; equal quantities', [
    { action: 'buy', type: 'put', k: 'K1', ratio: 1 },
    { action: 'sell', type: 'put', k: 'K2', ratio: 1 },
    { action: 'sell', type: 'call', k: 'K3', ratio: 1 },
    { action: 'buy', type: 'call', k: 'K4', ratio: 1 },
  ], ['K1', 'K2', 'K3', 'K4']),
  iron_butterfly: spec('iron_butterfly', 'buy put K1, sell put K2, sell call K2, buy call K3; K1 < K2 < K3; equal quantities', [
    { action: 'buy', type: 'put', k: 'K1', ratio: 1 },
    { action: 'sell', type: 'put', k: 'K2', ratio: 1 },
    { action: 'sell', type: 'call', k: 'K2', ratio: 1 },
    { action: 'buy', type: 'call', k: 'K3', ratio: 1 },
  ], ['K1', 'K2', 'K3']),
  butterfly: { name: 'butterfly', shape: butterflyShape, check: butterflyCheck },
  custom: { name: 'custom', shape: 'any number of call/put legs on one expiry', check: () => [] },
};

/** Problems for a structure name and its legs; an unknown name is itself a problem. */
export function checkStructure(name: string, legs: readonly OptionLeg[]): string[] {
  if (!isStructureName(name)) return [`unknown structure "${name}"; expected one of ${STRUCTURE_NAMES.join(', ')}`];
  return STRUCTURES[name].check(legs);
}
