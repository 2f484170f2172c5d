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
import { assertMarketInputs, priceOption } from './black-scholes.ts';
import { binaryExponent, ldexp } from './double-range.ts';
import type { LegValuation, OptionLeg, StrategyFigure, StrategyInput, StrategyResult } from './contract.ts';
import { evaluateScaled } from './strategy-scaled.ts';

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
