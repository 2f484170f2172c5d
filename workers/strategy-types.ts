/**
 * Input and result types of the expected value and risk profile of an
 * option-only structure (the conventions they follow are in strategy-ev.ts).
 */
import type { NumericRangeReason } from './double-range.ts';
import type { IntegrationInfo } from './lognormal-quadrature.ts';
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
