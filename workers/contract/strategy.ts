// Strategies and probabilities: the named structures, a strategy's valuation, its integration and the probability of a move.
// Types and constants only, as workers/contract.ts (which re-exports them).

import type { NumericRangeReason, OptionLeg } from './options.ts';

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

// Read and produced by strategy-types.ts.
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

export interface LegValuation extends OptionLeg {
  /** Closed-form BSM fair value per share; null when outside the double range (nullReasons says why). */
  fairValuePerShare: number | null;
  /** fairValuePerShare × quantity × multiplier (always >= 0); null as fairValuePerShare, or on overflow. */
  premium: number | null;
  /** +premium for a sell (received), −premium for a buy (paid). */
  cashFlow: number | null;
  /** Which of the three is null, and why; empty for ordinary inputs. */
  nullReasons: Partial<Record<'fairValuePerShare' | 'premium' | 'cashFlow', NumericRangeReason>>;
}

export interface RiskMetrics {
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

// Read and produced by lognormal-quadrature.ts.
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

// Read and produced by probability.ts.
export type Direction = 'long' | 'short';

export interface ProbabilityInput {
  spot: number;
  target: number;
  /** Years to expiry (ACT/365F: expiryDays / 365). */
  timeYears: number;
  rate: number;
  vol: number;
  /** Continuous dividend yield; default 0. */
  dividendYield?: number;
  /** long = at or above the target; short = at or below. */
  direction: Direction;
}

export interface ProbabilityResult {
  /** Risk-neutral P(S_T >= target) (long) or P(S_T <= target) (short). */
  probabilityInTheMoneyAtExpiry: number;
  /** max(driftlessTouchProbability, probabilityInTheMoneyAtExpiry). */
  probabilityOfTouchBeforeExpiry: number;
  /** The driftless reflection-principle figure before the floor. */
  driftlessTouchProbability: number;
  /** True when the at-expiry figure exceeded the driftless touch figure and was used instead. */
  touchFlooredToExpiry: boolean;
  /** True when the spot is already at or beyond the target in the given direction (touch = 1). */
  targetAlreadyReached: boolean;
  /** d2 used for the at-expiry probability. */
  d2: number;
  /**
   * The reported probabilities that are positive but below the smallest double
   * (≈4.9e-324), so that the number above reads 0: never a true 0, since σ√T > 0.
   */
  nullReasons: Partial<Record<'probabilityInTheMoneyAtExpiry' | 'probabilityOfTouchBeforeExpiry', NumericRangeReason>>;
}
