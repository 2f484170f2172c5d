/**
 * Expected value and risk profile of a single-expiry, option-only structure
 * under a lognormal terminal distribution.
 *
 * Pure functions over numbers: no I/O, no imports from server/. Safe to run
 * inside piscina worker threads. Stock legs and multiple expiries are refused
 * upstream (422 unsupported_structure); every leg here is a European call or
 * put on the same underlying with the same expiry.
 *
 * Conventions (also in the README):
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
 * Integration: Gauss–Legendre over ln S_T, split at every strike and at every
 *   zero of the present-value P&L (see lognormal-quadrature.ts).
 */
import { assertMarketInputs, priceOption } from './black-scholes.ts';
import { integrationGrid, lognormalIntervalProbability, terminalDistribution, type IntegrationInfo } from './lognormal-quadrature.ts';
import type { OptionLeg } from './option-structures.ts';

export interface StrategyInput {
  /** Structure name (see option-structures.ts); echoed, not enforced here. */
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

interface LegValuation extends OptionLeg {
  /** Closed-form BSM fair value per share. */
  fairValuePerShare: number;
  /** fairValuePerShare × quantity × multiplier (always >= 0). */
  premium: number;
  /** +premium for a sell (received), −premium for a buy (paid). */
  cashFlow: number;
}

interface RiskMetrics {
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
function payoffAtExpiry(legs: readonly OptionLeg[], multiplier: number, sT: number): number {
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
  const breakevens = profitSet.intervals.flatMap(([a, b]) => [a, b]).filter((x) => x > 0 && x !== Infinity);
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
