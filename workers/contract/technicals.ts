// Technicals: the candlestick and chart patterns, the indicator readings and their signals, and why a reading is null.
// Types and constants only, as workers/contract.ts (which re-exports them).

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
