/**
 * The figures of the strategy EV for a problem whose spot and strikes are near
 * 1 (evaluateStrategy in strategy-ev.ts scales the caller's problem to this
 * one and each dollar figure back): leg premiums and the net credit,
 * breakevens and probability of profit, the expiry extremes, the closed-form
 * expected payoff and EV, and the moments of the present-value P&L by
 * quadrature, with the risk metrics formed from them.
 *
 * Pure functions over numbers: no I/O, no imports from server/. Safe to run
 * inside piscina worker threads.
 */
import { priceOption } from './black-scholes.ts';
import { payoffAtExpiry, pnlFunction, positiveSet } from './expiry-pnl.ts';
import { kelly } from './kelly-fraction.ts';
import { integrationGrid, lognormalIntervalProbability, terminalDistribution } from './lognormal-quadrature.ts';
import type { IntegrationInfo, RiskMetrics, StrategyInput, StrategyResult } from './contract.ts';

/** The same figures in the scaled problem, where every one is a finite double: no figure is null for its range. */
export type ScaledResult = Pick<
  StrategyResult,
  'probabilityOfProfit' | 'maxProfit' | 'maxLoss' | 'maxProfitUnbounded' | 'maxLossUnbounded' | 'naivePopTimesMaxProfit'
> & {
  /** Each leg's fair value × quantity × multiplier, in input order. */
  legPremiums: number[];
  netCreditDebit: number;
  expectedPayoffAtExpiry: number;
  trueExpectedValue: number;
  breakevens: number[];
  riskMetrics: { [K in keyof RiskMetrics]: K extends 'standardDeviation' | 'downsideDeviation' ? number : RiskMetrics[K] };
  integration: IntegrationInfo;
};

/** The figures of a problem whose spot and strikes are near 1 (see evaluateStrategy in strategy-ev.ts), in its units. */
export function evaluateScaled(input: StrategyInput): ScaledResult {
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
