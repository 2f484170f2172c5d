// What crosses between the server and workers/: each task's input and
// result types, and the constants the server's schemas and answers name.
// Types and constants only: importing this loads no task code, so the request
// thread never loads the task modules or their libraries (jstat). The server
// imports nothing else from workers/ (eslint.config.js); workers/pool.ts
// loads the task modules themselves, on its threads or, for the closed forms,
// on the calling thread.
import type { BetaResult } from './beta.ts';
import type { Greeks, OptionPriceResult, OptionPricingInput, OptionType } from './black-scholes.ts';
import type { CorrelationInstrument, CorrelationMatrixResult, DatedCloses } from './correlation.ts';
import type { NumericRangeReason } from './double-range.ts';
import type { ChainGreeksInput, ContractGreeks } from './option-greeks.ts';
import type { OptionLeg } from './option-structures.ts';
import type { ProbabilityInput, ProbabilityResult } from './probability.ts';
import type { SourceLead, SourceLeadsInput } from './source-leads.ts';
import type { StrategyAssumptions, StrategyFigure, StrategyInput, StrategyResult } from './strategy-types.ts';
import type { OhlcvBars, TechnicalsData } from './technicals.ts';
import type { StrikeIv, volatilitySnapshot, VolatilitySnapshotInput } from './vol-stats.ts';

// The types the server names, defined by the task modules that produce them.
export type {
  BetaResult,
  ChainGreeksInput,
  ContractGreeks,
  CorrelationInstrument,
  CorrelationMatrixResult,
  DatedCloses,
  Greeks,
  NumericRangeReason,
  OptionLeg,
  OptionPriceResult,
  OptionPricingInput,
  OptionType,
  SourceLead,
  SourceLeadsInput,
  StrategyAssumptions,
  StrategyFigure,
  StrategyResult,
  StrikeIv,
  TechnicalsData,
};

interface Task<Input, Result> {
  input: Input;
  result: Result;
}

/** The tasks the pool runs on its threads (WorkerPool.run): heavy numerics over typed arrays. */
export interface Tasks {
  strategyEv: Task<StrategyInput, StrategyResult>;
  technicals: Task<OhlcvBars, TechnicalsData>;
  correlations: Task<{ series: DatedCloses[]; method: CorrelationMethod }, CorrelationMatrixResult>;
  beta: Task<{ subject: DatedCloses; benchmark: DatedCloses }, BetaResult>;
  chainGreeks: Task<ChainGreeksInput, ContractGreeks[]>;
  sourceLeads: Task<SourceLeadsInput, SourceLead[]>;
  volatilitySnapshot: Task<VolatilitySnapshotInput, ReturnType<typeof volatilitySnapshot>>;
}

/**
 * Closed forms of a few microseconds, computed on the calling thread
 * (closedForm in workers/pool.ts): a hop to a thread would cost more than
 * the work.
 */
export interface ClosedForms {
  optionPrice: Task<OptionPricingInput, OptionPriceResult>;
  probability: Task<ProbabilityInput, ProbabilityResult>;
  /** What keeps `legs` from being the named structure: nothing when they are. */
  structureProblems: Task<{ structure: string; legs: readonly OptionLeg[] }, string[]>;
}

export type TaskName = keyof Tasks;
export type ClosedFormName = keyof ClosedForms;

/** Calendar days per year under ACT/365F. */
export const DAYS_PER_YEAR = 365;
/** Name of the day-count convention used to turn expiry days into years. */
export const DAY_COUNT_CONVENTION = 'ACT/365F' as const;

/** Daily bars the historical volatility of an implied-volatility snapshot reads. */
export const VOLATILITY_WINDOW_DAYS = 30;

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

export const CORRELATION_MIN_OBSERVATIONS = 3;
export const CORRELATION_METHODS = ['pearson', 'spearman'] as const;
export type CorrelationMethod = (typeof CORRELATION_METHODS)[number];

export const BETA_MIN_OBSERVATIONS = 3;
export const BETA_REASONS = ['insufficient_overlap', 'zero_benchmark_variance', 'zero_subject_variance'] as const;

export const GREEKS_MISSING_INPUTS = ['spotPrice', 'riskFreeRate', 'bid', 'ask', 'quote', 'timeToExpiry', 'impliedVolatility'] as const;
export type GreeksMissingInput = (typeof GREEKS_MISSING_INPUTS)[number];

export const MAX_LAG_DAYS = 10;
export const LAGS = MAX_LAG_DAYS + 1;
/** With two pairs a Pearson correlation is always ±1. */
export const MIN_PAIRS = 3;
/** The longest run of calendar days without a session that still reads as a market closure (the 2001-09-11 closure: 6). */
export const SESSION_LOOKBACK_DAYS = 7;

export const PROMOTION_RULE = {
  minSampleSize: 60,
  minCorrelation: 0.1,
  alpha: 0.05,
  lagsSearched: LAGS,
  minLagDays: 1,
  subjectClasses: ['business'],
} as const;

export type CandlestickSignal = 'bullish' | 'bearish' | 'neutral';

export const CANDLESTICK_PATTERNS = {
  doji: 'neutral',
  hammer: 'bullish',
  inverted_hammer: 'bullish',
  hanging_man: 'bearish',
  shooting_star: 'bearish',
  bullish_engulfing: 'bullish',
  bearish_engulfing: 'bearish',
  piercing_line: 'bullish',
  dark_cloud_cover: 'bearish',
  bullish_harami: 'bullish',
  bearish_harami: 'bearish',
  morning_star: 'bullish',
  evening_star: 'bearish',
  three_white_soldiers: 'bullish',
  three_black_crows: 'bearish',
} as const satisfies Record<string, CandlestickSignal>;

export type CandlestickPatternName = keyof typeof CANDLESTICK_PATTERNS;

export const CHART_PATTERN_TYPES = [
  'double_top',
  'double_bottom',
  'head_and_shoulders',
  'inverse_head_and_shoulders',
  'ascending_triangle',
  'descending_triangle',
  'symmetric_triangle',
] as const;
export type ChartPatternType = (typeof CHART_PATTERN_TYPES)[number];
export type ChartPatternSignal = 'bullish' | 'bearish' | 'neutral';

export const TREND_DIRECTIONS = ['bullish', 'bearish', 'neutral'] as const;

// The readings the technicals answer names.
export const RSI_SIGNALS = ['overbought', 'oversold', 'neutral'] as const;
export const MACD_TRENDS = ['bullish', 'bearish', 'neutral'] as const;
export const MACD_CROSSOVERS = ['bullish_crossover', 'bearish_crossover', 'none'] as const;
export const STOCHASTIC_SIGNALS = ['overbought', 'oversold', 'neutral'] as const;
export const MA_TRENDS = ['bullish', 'bearish', 'neutral'] as const;
export const ICHIMOKU_SIGNALS = ['bullish', 'bearish', 'neutral'] as const;
export const BOLLINGER_SIGNALS = ['overbought', 'oversold', 'neutral'] as const;
export const ATR_SIGNALS = ['high_volatility', 'normal_volatility', 'low_volatility'] as const;
export const VWAP_SIGNALS = ['above', 'below', 'at'] as const;

/**
 * Why a field of a technicals reading is null, by reading: the reading's
 * `reason`, null exactly when every field of the reading is a number.
 * - insufficient_bars: every bar in the window carries the fields the reading
 *   needs, but there are fewer bars than it needs;
 * - missing_fields: the trailing run of bars carrying every field it needs
 *   (open, high, low, volume) is shorter than it needs; a longer window does
 *   not help, since bars before a gap are never used;
 * - no_price_movement: defined only when prices move (RSI, %K, %B);
 * - zero_volume: the window's volume sums to 0 (VWAP);
 * - no_pattern: the bars suffice to look for every pattern and none completes;
 * - conflicting_patterns: bullish and bearish candlestick patterns of equal
 *   confidence and no doji: the signal is neutral, with no confidence to give;
 * - too_few_votes: fewer indicators voted than a consensus needs, although
 *   the window has the bars for enough of them.
 */
export const TECHNICALS_NULL_REASONS = {
  rsi: ['insufficient_bars', 'no_price_movement'],
  macd: ['insufficient_bars'],
  stochastic: ['insufficient_bars', 'missing_fields', 'no_price_movement'],
  movingAverages: ['insufficient_bars'],
  ichimoku: ['insufficient_bars', 'missing_fields'],
  bollingerBands: ['insufficient_bars', 'no_price_movement'],
  atr: ['insufficient_bars', 'missing_fields'],
  vwap: ['insufficient_bars', 'missing_fields', 'zero_volume'],
  candlestick: ['insufficient_bars', 'missing_fields', 'no_pattern', 'conflicting_patterns'],
  chartPatterns: ['insufficient_bars', 'no_pattern'],
  trend: ['insufficient_bars', 'too_few_votes'],
} as const;
export type TechnicalsNullReason<K extends keyof typeof TECHNICALS_NULL_REASONS> = (typeof TECHNICALS_NULL_REASONS)[K][number];
