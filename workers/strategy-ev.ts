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
 *      E[payoff] is the closed form, leg by leg (the call or put formula with
 *      rate 0 and dividend yield −μ). Under the risk-neutral measure
 *      e^{−rT}·E[payoff] is exactly the closed-form BSM value of the structure,
 *      so a fairly priced structure has EV = 0 (an EV below 1e-12 of the
 *      amounts it is formed from is rounding, reported as exactly 0).
 *      riskMetrics are moments of this same X by quadrature, so they are
 *      consistent with the EV (e.g. omega = 1 when EV = 0).
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
import { assertMarketInputs, binaryExponent, ldexp, priceOption, type NumericRangeReason } from './black-scholes.ts';
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
  /** Closed-form BSM fair value per share; null when outside the double range (nullReasons says why). */
  fairValuePerShare: number | null;
  /** fairValuePerShare × quantity × multiplier (always >= 0); null as fairValuePerShare, or on overflow. */
  premium: number | null;
  /** +premium for a sell (received), −premium for a buy (paid). */
  cashFlow: number | null;
  /** Which of the three is null, and why; empty for ordinary inputs. */
  nullReasons: Partial<Record<'fairValuePerShare' | 'premium' | 'cashFlow', NumericRangeReason>>;
}

interface RiskMetrics {
  /** Standard deviation of the present-value P&L X; null only outside the double range. */
  standardDeviation: number | null;
  /** sqrt(E[min(X, 0)²]) (target 0); null only outside the double range. */
  downsideDeviation: number | null;
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
  netCreditDebit: number | null;
  /** E[payoff(S_T)] under the measure, undiscounted, whole position. */
  expectedPayoffAtExpiry: number | null;
  /** e^{−rT}·E[payoff(S_T)] + netCreditDebit. */
  trueExpectedValue: number | null;
  /** Expiry-P&L breakevens, ascending (null for one outside the double range). */
  breakevens: Array<number | null>;
  /** P(expiry P&L > 0) under the measure, closed form from the breakevens. */
  probabilityOfProfit: number;
  maxProfit: number | null;
  maxLoss: number | null;
  maxProfitUnbounded: boolean;
  maxLossUnbounded: boolean;
  /** probabilityOfProfit × maxProfit; null when maxProfit is unbounded. */
  naivePopTimesMaxProfit: number | null;
  riskMetrics: RiskMetrics;
  /**
   * The dollar (or price) figures that are null because their value is outside
   * the double range, keyed by path (`breakevens` for any of its entries); a
   * leg's own are in the leg. Empty for ordinary inputs.
   */
  nullReasons: Partial<Record<StrategyFigure, NumericRangeReason>>;
  assumptions: StrategyAssumptions;
}

export type StrategyFigure =
  | 'netCreditDebit'
  | 'expectedPayoffAtExpiry'
  | 'trueExpectedValue'
  | 'breakevens'
  | 'maxProfit'
  | 'maxLoss'
  | 'naivePopTimesMaxProfit'
  | 'riskMetrics.standardDeviation'
  | 'riskMetrics.downsideDeviation';

/** The same figures in the scaled problem, where every one is a finite double. */
interface ScaledResult {
  /** Each leg's fair value × quantity × multiplier, in input order. */
  legPremiums: number[];
  netCreditDebit: number;
  expectedPayoffAtExpiry: number;
  trueExpectedValue: number;
  breakevens: number[];
  probabilityOfProfit: number;
  maxProfit: number | null;
  maxLoss: number | null;
  maxProfitUnbounded: boolean;
  maxLossUnbounded: boolean;
  naivePopTimesMaxProfit: number | null;
  riskMetrics: { [K in keyof RiskMetrics]: K extends 'standardDeviation' | 'downsideDeviation' ? number : RiskMetrics[K] };
  integration: IntegrationInfo;
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

/** Expiry payoff of the legs (no premium), whole position; with `abs`, the sum of the legs' absolute payoffs. */
function payoffAtExpiry(legs: readonly OptionLeg[], multiplier: number, sT: number, abs = false): number {
  let v = 0;
  for (const leg of legs) {
    const intrinsic = leg.type === 'call' ? Math.max(sT - leg.strike, 0) : Math.max(leg.strike - sT, 0);
    const q = signedQty(leg, multiplier);
    v += (abs ? Math.abs(q) : q) * intrinsic;
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

/**
 * The exponent k of the power of two 2^k the problem is scaled by: spot/2^k in
 * [1, 2), unless a strike would then leave [2^−900, 2^900], when k centres the
 * range of spot and strikes instead.
 */
function scaleExponent(spot: number, strikes: readonly number[]): number {
  const k = binaryExponent(spot);
  const exps = [k, ...strikes.map(binaryExponent)];
  const lo = Math.min(...exps);
  const hi = Math.max(...exps);
  if (hi - k <= 900 && k - lo <= 900) return k;
  return Math.round((lo + hi) / 2);
}

/**
 * The EV and risk of the structure, over the whole double range.
 *
 * The problem is homogeneous in (spot, strikes): scaling both by c scales
 * every dollar and price figure (premiums, net credit, EV, expected payoff,
 * breakevens, max profit and loss, standard and downside deviation) by c and
 * leaves every probability and ratio unchanged. So it is solved with spot and
 * strikes divided by c = 2^k, which puts the spot in [1, 2) (an exact
 * division: the scaled problem is the caller's, only nearer 1), and each
 * dollar figure is multiplied back by 2^k. A figure that then leaves the
 * double range is null, its path in `nullReasons` with 'overflow' or
 * 'underflow'; a figure the scaled problem makes exactly 0 stays 0. Leg fair
 * values are the closed form at the caller's own inputs.
 */
export function evaluateStrategy(input: StrategyInput): StrategyResult {
  const { spot, timeYears: T, rate: r, vol } = input;
  const q = input.dividendYield ?? 0;
  const multiplier = input.contractMultiplier ?? 100;
  assertMarketInputs(input);
  assertLegs(input.legs);
  if (!Number.isFinite(multiplier) || !(multiplier > 0)) throw new RangeError('contractMultiplier must be > 0');
  const realWorld = input.drift !== undefined && input.drift !== null;
  if (realWorld && !Number.isFinite(input.drift)) throw new RangeError('drift must be a finite number');
  const legsIn = input.legs.map((l) => ({ action: l.action, type: l.type, strike: l.strike, quantity: l.quantity }));

  const nullReasons: StrategyResult['nullReasons'] = {};

  const k = scaleExponent(
    spot,
    legsIn.map((l) => l.strike),
  );
  const scaled = evaluateScaled({ ...input, spot: ldexp(spot, -k), legs: legsIn.map((l) => ({ ...l, strike: ldexp(l.strike, -k) })) });

  // Leg values in the caller's units: the fair value is the closed form at the
  // caller's inputs; the premium is fair value × quantity × multiplier, or,
  // where that product is not a double (the fair value alone underflows, or the
  // product overflows), the scaled problem's premium scaled back.
  let cashSum = 0;
  const legs: LegValuation[] = legsIn.map((leg, i) => {
    const priced = priceOption({ spot, strike: leg.strike, timeYears: T, rate: r, vol, dividendYield: q, type: leg.type });
    const why: LegValuation['nullReasons'] = {};
    const fair = priced.nullReasons.price ? null : priced.price;
    if (priced.nullReasons.price) why.fairValuePerShare = priced.nullReasons.price;
    let premium = fair === null ? NaN : fair * leg.quantity * multiplier;
    if (!(Number.isFinite(premium) && premium > 0)) {
      premium = ldexp(scaled.legPremiums[i], k);
      if (!Number.isFinite(premium)) why.premium = why.cashFlow = 'overflow';
      else if (premium === 0) why.premium = why.cashFlow = 'underflow';
    }
    if (why.premium) {
      cashSum = NaN;
      return { ...leg, fairValuePerShare: fair, premium: null, cashFlow: null, nullReasons: why };
    }
    const cashFlow = leg.action === 'sell' ? premium : -premium;
    cashSum += cashFlow;
    return { ...leg, fairValuePerShare: fair, premium, cashFlow, nullReasons: why };
  });

  /** A dollar or price figure of the scaled problem, back in the caller's units. */
  const money = (path: StrategyFigure, v: number | null): number | null => {
    if (v === null || v === 0) return v;
    const out = ldexp(v, k);
    if (!Number.isFinite(out)) nullReasons[path] = 'overflow';
    else if (out === 0) nullReasons[path] = 'underflow';
    else return out;
    return null;
  };
  // The sum of the legs' own cash flows when each is a double (the figure the
  // caller can add up), else the scaled sum scaled back.
  const netCreditDebit = Number.isFinite(cashSum) ? cashSum : money('netCreditDebit', scaled.netCreditDebit);
  const rm = scaled.riskMetrics;
  return {
    structure: input.structure,
    legs,
    netCreditDebit,
    expectedPayoffAtExpiry: money('expectedPayoffAtExpiry', scaled.expectedPayoffAtExpiry),
    trueExpectedValue: money('trueExpectedValue', scaled.trueExpectedValue),
    breakevens: scaled.breakevens.map((b) => money('breakevens', b)),
    probabilityOfProfit: scaled.probabilityOfProfit,
    maxProfit: money('maxProfit', scaled.maxProfit),
    maxLoss: money('maxLoss', scaled.maxLoss),
    maxProfitUnbounded: scaled.maxProfitUnbounded,
    maxLossUnbounded: scaled.maxLossUnbounded,
    naivePopTimesMaxProfit: money('naivePopTimesMaxProfit', scaled.naivePopTimesMaxProfit),
    riskMetrics: {
      ...rm,
      standardDeviation: money('riskMetrics.standardDeviation', rm.standardDeviation),
      downsideDeviation: money('riskMetrics.downsideDeviation', rm.downsideDeviation),
    },
    nullReasons,
    assumptions: {
      measure: realWorld ? 'real_world' : 'risk_neutral',
      driftUsed: realWorld ? (input.drift as number) : r - q,
      dividendYield: q,
      discountRate: r,
      contractMultiplier: multiplier,
      integration: scaled.integration,
    },
  };
}

/** The figures of a problem whose spot and strikes are near 1 (see evaluateStrategy), in its units. */
function evaluateScaled(input: StrategyInput): ScaledResult {
  const { spot, timeYears: T, rate: r, vol } = input;
  const q = input.dividendYield ?? 0;
  const multiplier = input.contractMultiplier ?? 100;
  const realWorld = input.drift !== undefined && input.drift !== null;
  const mu = realWorld ? (input.drift as number) : r - q;
  const legsIn = input.legs.map((l) => ({ action: l.action, type: l.type, strike: l.strike, quantity: l.quantity }));

  // Closed-form leg values and the entry credit/debit.
  let netCreditDebit = 0;
  const legPremiums = legsIn.map((leg) => {
    const fair = priceOption({ spot, strike: leg.strike, timeYears: T, rate: r, vol, dividendYield: q, type: leg.type }).price;
    const premium = fair * leg.quantity * multiplier;
    netCreditDebit += leg.action === 'sell' ? premium : -premium;
    return premium;
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
  const absPayoff = new Float64Array(n);
  let mass = 0;
  for (let j = 0; j < n; j += 1) {
    payoff[j] = payoffAtExpiry(legsIn, multiplier, grid.s[j]);
    absPayoff[j] = payoffAtExpiry(legsIn, multiplier, grid.s[j], true);
    mass += grid.w[j];
  }
  // E[payoff] in closed form, leg by leg: E[(S_T − K)^+] under drift μ is the
  // call formula with rate 0 and dividend yield −μ (put likewise), evaluated
  // over the whole double range by priceOption, so a far out-of-the-money leg
  // keeps its (tiny) expectation instead of the quadrature's truncated 0.
  let expectedPayoffAtExpiry = 0;
  let payoffScale = 0;
  for (const leg of legsIn) {
    const e = priceOption({ spot, strike: leg.strike, timeYears: T, rate: 0, vol, dividendYield: -mu, type: leg.type }).price * leg.quantity * multiplier;
    expectedPayoffAtExpiry += leg.action === 'buy' ? e : -e;
    payoffScale += e;
  }
  const cashScale = legPremiums.reduce((a, p) => a + p, 0);
  // EV below 1e-12 of what it is formed from (the legs' premiums and discounted
  // expectations) is rounding, and reported as exactly 0: under the
  // risk-neutral measure e^{−rT}·E[leg payoff] is the leg's premium, so a
  // fairly priced structure has EV 0, and noise is never turned into a ratio.
  const evRaw = discount * expectedPayoffAtExpiry + netCreditDebit;
  const trueExpectedValue = Math.abs(evRaw) <= 1e-12 * (cashScale + discount * payoffScale) ? 0 : evRaw;

  // The present-value P&L at each node; a value within rounding of 0 (1e-13 of
  // the amounts it is the sum of) is 0, so a riskless structure (a box) has no
  // deviation made of noise, while a small real loss (a tiny premium) stays.
  const x = new Float64Array(n);
  let m2 = 0;
  let down2 = 0;
  let upside = 0;
  let downside = 0;
  for (let j = 0; j < n; j += 1) {
    const raw = discount * payoff[j] + netCreditDebit;
    const v = Math.abs(raw) <= 1e-13 * (discount * absPayoff[j] + cashScale) ? 0 : raw;
    x[j] = v;
    // Second moments as (sqrt(w)·x)²: w·x² would lose the nodes where w
    // underflows, and x² alone can overflow (grid.sw).
    const d = grid.sw[j] * (v - trueExpectedValue);
    m2 += d * d;
    if (v < 0) {
      const dn = grid.sw[j] * v;
      down2 += dn * dn;
      downside -= grid.w[j] * v;
    } else {
      upside += grid.w[j] * v;
    }
  }
  const standardDeviation = Math.sqrt(m2 / mass);
  const downsideDeviation = Math.sqrt(down2 / mass);
  const capitalAtRisk = maxLoss !== null && maxLoss > 0 ? maxLoss : null;
  const minPv = pvPnl.tailSlope < 0 ? -Infinity : Math.min(...pvPnl.values);

  const riskMetrics: ScaledResult['riskMetrics'] = {
    standardDeviation,
    downsideDeviation,
    expectedReturn: capitalAtRisk === null ? null : trueExpectedValue / capitalAtRisk,
    sortinoRatio: downsideDeviation > 0 ? trueExpectedValue / downsideDeviation : null,
    omegaRatio: downside > 0 ? upside / downside : null,
    kellyFraction: capitalAtRisk === null ? null : kelly(x, grid.w, mass, capitalAtRisk, minPv, trueExpectedValue),
  };

  return {
    legPremiums,
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
    integration: grid.info,
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
