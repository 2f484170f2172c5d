// What crosses between the server and workers/: each task's input and
// result types, and the constants the server's schemas and answers name.
// Types and constants only: importing this loads no task code, so the request
// thread never loads the task modules or their libraries (jstat). The server
// imports nothing else from workers/ (eslint.config.js); workers/pool.ts
// loads the task modules themselves, on its threads or, for the closed forms,
// on the calling thread. The task modules import their input and result
// types from here, and this module imports nothing.

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
  volatilitySnapshot: Task<VolatilitySnapshotInput, VolatilitySnapshot>;
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

// Read and produced by vol-stats.ts.
/** One contract's solved implied volatility; null when it did not solve. */
export interface StrikeIv {
  strike: number;
  right: OptionType;
  impliedVolatility: number | null;
}

/** One point of a term structure: the ATM IV of one expiry. */
export interface AtmPoint {
  daysToExpiry: number;
  atmImpliedVolatility: number;
}

export interface ExpiryIvs {
  daysToExpiry: number;
  contracts: readonly StrikeIv[];
}

/** The figures of one instrument's snapshot, named as the bulk implied-volatility read names them. */
export interface VolatilitySnapshot {
  impliedVolatility30d: number | null;
  historicalVolatility30d: number | null;
  parkinsonHistoricalVolatility30d: number | null;
  putCallIvRatio30d: number | null;
  termStructure: AtmPoint[];
}

export interface VolatilitySnapshotInput {
  /** Underlying price the ATM strikes are measured against. */
  spot: number;
  expiries: readonly ExpiryIvs[];
  /** Daily bars ascending by date; a missing figure is null. */
  closes: ArrayLike<number | null>;
  highs: ArrayLike<number | null>;
  lows: ArrayLike<number | null>;
}

// Read and produced by black-scholes.ts.
export type OptionType = 'call' | 'put';

export interface OptionPricingInput {
  spot: number;
  strike: number;
  /** Time to expiry in years (use `yearsFromDays(expiryDays)`). */
  timeYears: number;
  /** Continuously compounded annual risk-free rate, decimal. */
  rate: number;
  /** Annual volatility, decimal (0.2 = 20%). */
  vol: number;
  /** Continuous annual dividend yield, decimal; default 0. */
  dividendYield?: number;
  type: OptionType;
}

export interface Greeks {
  /** ∂V/∂S per share. */
  delta: number;
  /** ∂²V/∂S² per share. */
  gamma: number;
  /** Value change per calendar day of time passing: −(∂V/∂T)/365. */
  theta: number;
  /** Value change per one percentage point of volatility: (∂V/∂σ)/100. */
  vega: number;
  /** Value change per one percentage point of the risk-free rate: (∂V/∂r)/100. */
  rho: number;
}

export type OptionFigure = 'price' | keyof Greeks;
export interface OptionPriceResult {
  /** Fair value per share (one underlying unit); Infinity on overflow, 0 on underflow (see nullReasons). */
  price: number;
  /** Each Greek; ±Infinity on overflow, 0 on underflow (see nullReasons). */
  greeks: Greeks;
  d1: number;
  d2: number;
  /** The figures that are not representable in double precision, and why. Empty for ordinary inputs. */
  nullReasons: Partial<Record<OptionFigure, NumericRangeReason>>;
}

// Read and produced by technicals.ts.
export interface OhlcvBars {
  open: Float64Array;
  high: Float64Array;
  low: Float64Array;
  close: Float64Array;
  volume: Float64Array;
}

export interface CandlestickResult {
  signal: CandlestickSignal | null;
  confidence: number | null;
  patterns: { name: string; confidence: number }[];
  reason: TechnicalsNullReason<'candlestick'> | null;
  description: string;
}

export interface ChartPatternsResult {
  patterns: ChartPattern[];
  dominantPattern: {
    type: ChartPatternType;
    signal: ChartPatternSignal;
    confidence: number;
    priceTarget: number | null;
    description: string;
  } | null;
  reason: TechnicalsNullReason<'chartPatterns'> | null;
  description: string;
}

export interface TechnicalsData {
  rsi: RsiResult;
  macd: MacdResult;
  stochastic: StochasticResult;
  ema: EmaResult;
  sma: SmaResult;
  wma: WmaResult;
  ichimoku: IchimokuResult;
  bollingerBands: BollingerResult;
  atr: AtrResult;
  vwap: VwapResult;
  candlestick: CandlestickResult;
  chartPatterns: ChartPatternsResult;
  trend: ConsensusTrend;
  /** Number of bars supplied. */
  dataPoints: number;
}

// Read and produced by trend-consensus.ts.
export type TrendDirection = (typeof TREND_DIRECTIONS)[number];

export interface ConsensusTrend {
  direction: TrendDirection | null;
  strength: number | null;
  confidence: number | null;
  reason: TechnicalsNullReason<'trend'> | null;
  description: string;
}

// Read and produced by chart-patterns.ts.
export interface ChartPattern {
  type: ChartPatternType;
  signal: ChartPatternSignal;
  confidence: number;
  startIndex: number;
  endIndex: number;
  /** Measured-move target; null for a symmetric triangle that has not broken out. */
  priceTarget: number | null;
  description: string;
}

// Read and produced by band-readings.ts.
export type IchimokuSignal = (typeof ICHIMOKU_SIGNALS)[number];

export type BollingerSignal = (typeof BOLLINGER_SIGNALS)[number];
export type AtrSignal = (typeof ATR_SIGNALS)[number];

export type VwapSignal = (typeof VWAP_SIGNALS)[number];
export interface IchimokuResult {
  tenkan: number | null;
  kijun: number | null;
  senkouSpanA: number | null;
  senkouSpanB: number | null;
  chikouSpan: number | null;
  signal: IchimokuSignal | null;
  reason: TechnicalsNullReason<'ichimoku'> | null;
  description: string;
}

export interface BollingerResult {
  upper: number | null;
  middle: number | null;
  lower: number | null;
  bandwidth: number | null;
  percentB: number | null;
  signal: BollingerSignal | null;
  reason: TechnicalsNullReason<'bollingerBands'> | null;
  description: string;
}

export interface AtrResult {
  value: number | null;
  signal: AtrSignal | null;
  period: number;
  reason: TechnicalsNullReason<'atr'> | null;
  description: string;
}

export interface VwapResult {
  value: number | null;
  signal: VwapSignal | null;
  reason: TechnicalsNullReason<'vwap'> | null;
  description: string;
}

// Read and produced by indicator-readings.ts.
export type RsiSignal = (typeof RSI_SIGNALS)[number];

export type MacdTrend = (typeof MACD_TRENDS)[number];
export type MacdCrossover = (typeof MACD_CROSSOVERS)[number];

export type StochasticSignal = (typeof STOCHASTIC_SIGNALS)[number];
export type MaTrend = (typeof MA_TRENDS)[number];

export type MaReason = TechnicalsNullReason<'movingAverages'>;
export interface RsiResult {
  value: number | null;
  signal: RsiSignal | null;
  period: number;
  reason: TechnicalsNullReason<'rsi'> | null;
  description: string;
}

export interface MacdResult {
  value: number | null;
  signal: number | null;
  histogram: number | null;
  trend: MacdTrend | null;
  crossover: MacdCrossover | null;
  reason: TechnicalsNullReason<'macd'> | null;
  description: string;
}

export interface StochasticResult {
  stochK: number | null;
  stochD: number | null;
  signal: StochasticSignal | null;
  reason: TechnicalsNullReason<'stochastic'> | null;
  description: string;
}

export interface EmaResult {
  ema12: number | null;
  ema20: number | null;
  ema50: number | null;
  ema200: number | null;
  trend: MaTrend | null;
  strength: number | null;
  reason: MaReason | null;
  description: string;
}

export interface SmaResult {
  sma20: number | null;
  sma50: number | null;
  sma200: number | null;
  trend: MaTrend | null;
  reason: MaReason | null;
  description: string;
}

export interface WmaResult {
  wma20: number | null;
  wma50: number | null;
  wma100: number | null;
  trend: MaTrend | null;
  reason: MaReason | null;
  description: string;
}

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

// Read and produced by double-range.ts.
/** Why a figure has no double: its magnitude is above the largest double (≈1.8e308) or, not being 0, below the smallest (≈4.9e-324). */
export type NumericRangeReason = 'overflow' | 'underflow';

// Read and produced by option-structures.ts.
export type LegAction = 'buy' | 'sell';

export interface OptionLeg {
  action: LegAction;
  type: OptionType;
  strike: number;
  /** Number of contracts, > 0. */
  quantity: number;
}

// Read and produced by source-leads.ts.
export type LeadSubjectClass = 'business' | 'market_commentary';

export interface SourceLeadsInput {
  /** The (source, subject class) pairs, by index; only the class matters here. */
  groups: { subjectClass: LeadSubjectClass }[];
  /** Per score series: its instrument (index into the bars) and its group. */
  seriesInstrument: Int32Array;
  seriesGroup: Int32Array;
  /** Series k holds scores seriesOffsets[k] .. seriesOffsets[k + 1] − 1. */
  seriesOffsets: Int32Array;
  /** Days since 1970-01-01, strictly ascending within a series. */
  scoreDays: Int32Array;
  scores: Float64Array;
  /** Instrument i's adjusted closes are barOffsets[i] .. barOffsets[i + 1] − 1, days strictly ascending. */
  barOffsets: Int32Array;
  barDays: Int32Array;
  closes: Float64Array;
}

export interface LagCorrelation {
  lagDays: number;
  correlation: number | null;
  sampleSize: number;
}

export interface SourceLead {
  bestLagDays: number | null;
  peakCorrelation: number | null;
  sampleSize: number | null;
  isPromotionEligible: boolean;
  correlationByLag: LagCorrelation[];
  /** Instruments with at least one score of the group. */
  instruments: number;
  /** The group's first and last score day (days since 1970-01-01); null for a group with no scores. */
  firstDay: number | null;
  lastDay: number | null;
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

// Read and produced by option-greeks.ts.
export interface ChainGreeksInput {
  /** Underlying price for each contract's quote; null when none is known. */
  spot: ArrayLike<number | null>;
  /** Continuously compounded annual risk-free rate for each contract's quote; null when none is in force. */
  rate: ArrayLike<number | null>;
  /** Continuous annual dividend yield, decimal. */
  dividendYield: number;
  strike: ArrayLike<number>;
  /** Years from the cut-off to expiry (ACT/365F, as the option-price route). */
  timeYears: ArrayLike<number>;
  right: ArrayLike<OptionType>;
  bid: ArrayLike<number | null>;
  ask: ArrayLike<number | null>;
}

export interface ComputedGreeks {
  greeksSource: 'computed';
  impliedVolatility: number;
  delta: number;
  gamma: number;
  theta: number;
  vega: number;
  rho: number;
}

export interface GreeksUnavailable {
  unavailable: { reason: 'not_supplied_and_not_computable'; missingInputs: GreeksMissingInput[]; detail: string };
}

export type ContractGreeks = ComputedGreeks | GreeksUnavailable;

// Read and produced by correlation.ts.
export interface DatedCloses {
  /** Days since 1970-01-01 (UTC), strictly ascending. */
  dates: Int32Array;
  close: Float64Array;
}

export interface CorrelationPair {
  /** Index into the input series (a < b). */
  a: number;
  b: number;
  /** null when either aligned return series is constant. */
  correlation: number | null;
}

export interface CorrelationInstrument {
  index: number;
  /** Log returns in the instrument's own series (usable closes − 1). */
  observations: number;
  usable: boolean;
  reason: null | 'insufficient_observations' | 'insufficient_overlap';
}

export interface CorrelationMatrixResult {
  method: CorrelationMethod;
  pairs: CorrelationPair[];
  instruments: CorrelationInstrument[];
  /** Indices of the instruments included in the pairs, input order. */
  usableIndices: number[];
  /** Aligned return rows the pairs were computed on (common dates − 1; 0 when fewer than two usable). */
  alignedObservations: number;
  /** First and last common date (days since epoch) of the usable set; null when none. */
  firstDate: number | null;
  lastDate: number | null;
}

// Read and produced by beta.ts.
export type BetaReason = (typeof BETA_REASONS)[number];

export interface BetaResult {
  beta: number | null;
  alpha: number | null;
  rSquared: number | null;
  /** Aligned log-return pairs used. */
  observations: number;
  /** Common dates with usable closes in both series. */
  alignedDates: number;
  reason: BetaReason | null;
}
