/**
 * Technical-indicator snapshot (GET /v1/instruments/{id}/technicals), computed
 * in a worker thread from adjusted daily bars. Pure functions: no I/O.
 *
 * Input: ascending daily bars as parallel Float64Arrays. `close` is always
 * present; `open`, `high`, `low` and `volume` may hold NaN where the source
 * only has closes. An indicator that needs a field is computed only over the
 * longest trailing run of bars in which every field it needs is finite (and
 * volume >= 0); bars before a gap are not used, and nothing is ever filled in.
 * When that run is shorter than the indicator needs, every numeric field of
 * the indicator is null and `description` says why.
 *
 * Conventions (each follows the textbook definition, which is also TA-Lib's; the unit
 * tests check them against npm technicalindicators and independent re-implementations):
 * - SMA(N): arithmetic mean of the last N closes (recomputed per window).
 * - EMA(N): k = 2/(N+1), seeded with the SMA of the first N closes of the
 *   bars supplied (first value at bar N-1), then e = e_prev + k·(x − e_prev).
 *   EMA values therefore depend on where the window starts; the seed's
 *   influence decays as (1−k)^t.
 * - WMA(N): linear weights 1..N, the newest bar weighted N.
 * - RSI(14), Wilder: changes d_t = c_t − c_{t−1}; the first average gain/loss
 *   is the simple mean of the first 14 gains/losses (first value at bar 14),
 *   then avg = (avg_prev·13 + x)/14. RSI = 100·avgGain/(avgGain+avgLoss).
 *   No movement at all (both averages 0) gives null, not 50.
 * - MACD(12,26,9): MACD line = EMA12 − EMA26 (each seeded independently on
 *   the first bars supplied, as above, so the line starts at bar 25); signal
 *   = EMA9 of the MACD line seeded with the SMA of its first 9 values (first
 *   at bar 33); histogram = MACD − signal. Needs 34 bars.
 * - Stochastic(14,3): %K = 100·(c − LL14)/(HH14 − LL14) over high/low; %D =
 *   SMA3 of %K. A flat 14-bar range (HH = LL) makes %K undefined → null.
 * - Bollinger(20, 2): middle = SMA20; σ = POPULATION standard deviation of
 *   the last 20 closes (divide by N, as Bollinger and TA-Lib do); bands =
 *   middle ± 2σ; bandwidth = (upper − lower)/middle (a fraction, not
 *   percent); percentB = (close − lower)/(upper − lower), null when σ = 0.
 * - ATR(14), Wilder: TR_t = max(h−l, |h−c_{t−1}|, |l−c_{t−1}|) from bar 1
 *   (bar 0 has no previous close and is not used); first ATR = mean of
 *   TR_1..TR_14 (at bar 14), then ATR = (ATR_prev·13 + TR)/14. Needs 15 bars.
 * - VWAP over the window: Σ typical·volume / Σ volume over the bars supplied
 *   (typical = (h + l + c)/3). Null when total volume is 0 (e.g. an index
 *   whose source reports no volume).
 * - Ichimoku(9, 26, 52): tenkan = (HH9 + LL9)/2 and kijun = (HH26 + LL26)/2 at
 *   the latest bar. senkouSpanA / senkouSpanB are the cloud values AT THE
 *   LATEST BAR, i.e. the spans computed 26 bars earlier and displaced 26 bars
 *   forward: A = (tenkan + kijun)/2 at bar n−27, B = (HH52 + LL52)/2 at bar
 *   n−27. chikouSpan is the value of the lagging line that originates at the
 *   latest bar, i.e. the latest close (it is plotted 26 bars back and compared
 *   with the close 26 bars earlier). Needs 78 bars.
 *
 * Signals and thresholds (all exported as constants below):
 * - rsi.signal: `overbought` if RSI >= 70, `oversold` if RSI <= 30, else
 *   `neutral`.
 * - macd.trend: `bullish` if histogram > ε, `bearish` if histogram < −ε,
 *   else `neutral`, with ε = 1e-9·|close| (floating-point noise only).
 * - macd.crossover: the most recent sign change of the histogram between
 *   consecutive bars within the last 3 bars (transitions into bars n−3, n−2,
 *   n−1): from <= 0 to > 0 is `bullish_crossover`, from >= 0 to < 0 is
 *   `bearish_crossover`; none of them → `none`. Null with the other MACD
 *   fields, and null when fewer than 2 histogram values exist.
 * - stochastic.signal: on %K: `overbought` if >= 80, `oversold` if <= 20,
 *   else `neutral`.
 * - ema/sma/wma.trend: the ordered list [close, fastest MA, ..., slowest MA]
 *   (non-null MAs only) is scored over ALL pairs (i < j): +1 when the faster
 *   element is above the slower, −1 when below, 0 when equal; score = mean in
 *   [−1, 1] (a Kendall-style concordance). `bullish` if score >= 0.5,
 *   `bearish` if score <= −0.5, else `neutral`. Null when no MA is available.
 *   ema.strength = |score|, a number in [0, 1] (1 = perfectly stacked).
 * - ichimoku.signal: `bullish` if close > max(spanA, spanB) and tenkan >
 *   kijun; `bearish` if close < min(spanA, spanB) and tenkan < kijun; else
 *   `neutral`.
 * - bollingerBands.signal: `overbought` if percentB >= 1 (close at/above the
 *   upper band), `oversold` if percentB <= 0, else `neutral` (also when σ=0).
 * - atr.signal: by ATR/close: `high_volatility` if >= 0.03, `low_volatility`
 *   if <= 0.01, else `normal_volatility`.
 * - vwap.signal: `at` if |close − vwap|/vwap <= 0.001, else `above`/`below`.
 * - candlestick: see candlestick-patterns.ts; signal = `bullish`/`bearish`
 *   when the strongest bullish (bearish) pattern's confidence is strictly
 *   higher than the strongest opposite one, with that confidence; otherwise
 *   `neutral`, with confidence = strongest neutral pattern (doji), or 0 when
 *   no pattern completes on the latest bar.
 * - trend (consensus): votes v in {+1, 0, −1} with weights w:
 *   ema.trend, sma.trend, wma.trend, macd.trend, ichimoku.signal (w = 1
 *   each); RSI momentum (+1 if RSI >= 55, −1 if <= 45, else 0; w = 1);
 *   vwap.signal (w = 0.5); dominant chart pattern signal (w = its
 *   confidence); candlestick signal (w = 0.5·confidence). Null components do
 *   not vote. S = Σw·v / Σw. direction = `bullish` if S >= 0.2, `bearish` if
 *   S <= −0.2, else `neutral`; strength = |S| in [0, 1]; confidence =
 *   agreement · coverage, where agreement = weight of votes whose sign equals
 *   the direction (0 for neutral) / Σw, and coverage = Σw / maximum possible
 *   weight (8). With no votes at all every field is null.
 */
import { detectCandlestickPatterns, type CandlestickSignal } from './candlestick-patterns.ts';
import { detectChartPatterns, type ChartPattern, type ChartPatternSignal, type ChartPatternType } from './chart-patterns.ts';

// ---------------------------------------------------------------------------
// Periods and thresholds
// ---------------------------------------------------------------------------

export const RSI_PERIOD = 14;
export const RSI_OVERBOUGHT = 70;
export const RSI_OVERSOLD = 30;

export const MACD_FAST = 12;
export const MACD_SLOW = 26;
export const MACD_SIGNAL = 9;
/** A crossover counts as recent when the histogram changed sign into one of the last N bars. */
export const MACD_CROSSOVER_LOOKBACK = 3;
/** |histogram| <= this × |close| is "neutral" (floating-point noise only). */
export const MACD_NEUTRAL_EPSILON = 1e-9;

export const STOCH_K_PERIOD = 14;
export const STOCH_D_PERIOD = 3;
export const STOCH_OVERBOUGHT = 80;
export const STOCH_OVERSOLD = 20;

export const EMA_PERIODS = [12, 20, 50, 200] as const;
export const SMA_PERIODS = [20, 50, 200] as const;
export const WMA_PERIODS = [20, 50, 100] as const;
/** Moving-average stack score at or beyond ±this gives bullish / bearish. */
export const MA_TREND_THRESHOLD = 0.5;

export const ICHIMOKU_TENKAN = 9;
export const ICHIMOKU_KIJUN = 26;
export const ICHIMOKU_SENKOU_B = 52;
export const ICHIMOKU_DISPLACEMENT = 26;

export const BOLLINGER_PERIOD = 20;
export const BOLLINGER_STDDEV = 2;

export const ATR_PERIOD = 14;
/** ATR / close at or above this is high volatility. */
export const ATR_HIGH_VOLATILITY = 0.03;
/** ATR / close at or below this is low volatility. */
export const ATR_LOW_VOLATILITY = 0.01;

/** |close − vwap| / vwap at or below this is `at`. */
export const VWAP_AT_TOLERANCE = 0.001;

/** RSI at or above this votes bullish in the consensus trend. */
export const CONSENSUS_RSI_BULLISH = 55;
/** RSI at or below this votes bearish in the consensus trend. */
export const CONSENSUS_RSI_BEARISH = 45;
/** Weighted vote S at or beyond ±this sets the consensus direction. */
export const CONSENSUS_THRESHOLD = 0.2;
export const CONSENSUS_WEIGHTS = {
  ema: 1,
  sma: 1,
  wma: 1,
  macd: 1,
  ichimoku: 1,
  rsi: 1,
  vwap: 0.5,
  /** multiplied by the dominant chart pattern's confidence */
  chartPattern: 1,
  /** multiplied by the candlestick confidence */
  candlestick: 0.5,
} as const;
export const CONSENSUS_MAX_WEIGHT = Object.values(CONSENSUS_WEIGHTS).reduce((a, b) => a + b, 0);

/** Bars each indicator needs before it is non-null. */
export const MIN_BARS = {
  rsi: RSI_PERIOD + 1,
  macd: MACD_SLOW + MACD_SIGNAL - 1,
  stochastic: STOCH_K_PERIOD + STOCH_D_PERIOD - 1,
  bollingerBands: BOLLINGER_PERIOD,
  atr: ATR_PERIOD + 1,
  vwap: 1,
  ichimoku: ICHIMOKU_SENKOU_B + ICHIMOKU_DISPLACEMENT,
} as const;

// ---------------------------------------------------------------------------
// Enum value sets
// ---------------------------------------------------------------------------

export const RSI_SIGNALS = ['overbought', 'oversold', 'neutral'] as const;
export type RsiSignal = (typeof RSI_SIGNALS)[number];
export const MACD_TRENDS = ['bullish', 'bearish', 'neutral'] as const;
export type MacdTrend = (typeof MACD_TRENDS)[number];
export const MACD_CROSSOVERS = ['bullish_crossover', 'bearish_crossover', 'none'] as const;
export type MacdCrossover = (typeof MACD_CROSSOVERS)[number];
export const STOCHASTIC_SIGNALS = ['overbought', 'oversold', 'neutral'] as const;
export type StochasticSignal = (typeof STOCHASTIC_SIGNALS)[number];
export const MA_TRENDS = ['bullish', 'bearish', 'neutral'] as const;
export type MaTrend = (typeof MA_TRENDS)[number];
export const ICHIMOKU_SIGNALS = ['bullish', 'bearish', 'neutral'] as const;
export type IchimokuSignal = (typeof ICHIMOKU_SIGNALS)[number];
export const BOLLINGER_SIGNALS = ['overbought', 'oversold', 'neutral'] as const;
export type BollingerSignal = (typeof BOLLINGER_SIGNALS)[number];
export const ATR_SIGNALS = ['high_volatility', 'normal_volatility', 'low_volatility'] as const;
export type AtrSignal = (typeof ATR_SIGNALS)[number];
export const VWAP_SIGNALS = ['above', 'below', 'at'] as const;
export type VwapSignal = (typeof VWAP_SIGNALS)[number];
export const TREND_DIRECTIONS = ['bullish', 'bearish', 'neutral'] as const;
export type TrendDirection = (typeof TREND_DIRECTIONS)[number];

// ---------------------------------------------------------------------------
// Output types
// ---------------------------------------------------------------------------

export interface OhlcvBars {
  open: Float64Array;
  high: Float64Array;
  low: Float64Array;
  close: Float64Array;
  volume: Float64Array;
}

export interface RsiResult { value: number | null; signal: RsiSignal | null; period: number; description: string }
export interface MacdResult {
  value: number | null;
  signal: number | null;
  histogram: number | null;
  trend: MacdTrend | null;
  crossover: MacdCrossover | null;
  description: string;
}
export interface StochasticResult { stochK: number | null; stochD: number | null; signal: StochasticSignal | null; description: string }
export interface EmaResult {
  ema12: number | null;
  ema20: number | null;
  ema50: number | null;
  ema200: number | null;
  trend: MaTrend | null;
  strength: number | null;
  description: string;
}
export interface SmaResult { sma20: number | null; sma50: number | null; sma200: number | null; trend: MaTrend | null; description: string }
export interface WmaResult { wma20: number | null; wma50: number | null; wma100: number | null; trend: MaTrend | null; description: string }
export interface IchimokuResult {
  tenkan: number | null;
  kijun: number | null;
  senkouSpanA: number | null;
  senkouSpanB: number | null;
  chikouSpan: number | null;
  signal: IchimokuSignal | null;
  description: string;
}
export interface BollingerResult {
  upper: number | null;
  middle: number | null;
  lower: number | null;
  bandwidth: number | null;
  percentB: number | null;
  signal: BollingerSignal | null;
  description: string;
}
export interface AtrResult { value: number | null; signal: AtrSignal | null; period: number; description: string }
export interface VwapResult { value: number | null; signal: VwapSignal | null; description: string }
export interface CandlestickResult {
  signal: CandlestickSignal | null;
  confidence: number | null;
  patterns: { name: string; confidence: number }[];
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
  description: string;
}
export interface ConsensusTrend {
  direction: TrendDirection | null;
  strength: number | null;
  confidence: number | null;
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

// ---------------------------------------------------------------------------
// Series primitives. Each returns an array as long as its input, NaN where the
// indicator is not yet defined. Inputs must be finite over the range used.
// ---------------------------------------------------------------------------

/** Simple moving average; value at i is the mean of values[i−N+1..i]. */
export function smaSeries(values: ArrayLike<number>, period: number): Float64Array {
  const n = values.length;
  const out = new Float64Array(n).fill(NaN);
  for (let i = period - 1; i < n; i++) {
    let s = 0;
    for (let j = i - period + 1; j <= i; j++) s += values[j];
    out[i] = s / period;
  }
  return out;
}

/**
 * Exponential moving average, k = 2/(N+1), seeded with the SMA of the first N
 * finite values (NaN values before the first finite one are skipped, so the
 * function can run on a series that itself starts late, like the MACD line).
 */
export function emaSeries(values: ArrayLike<number>, period: number): Float64Array {
  const n = values.length;
  const out = new Float64Array(n).fill(NaN);
  let start = 0;
  while (start < n && !Number.isFinite(values[start])) start++;
  if (n - start < period) return out;
  const k = 2 / (period + 1);
  let s = 0;
  for (let j = start; j < start + period; j++) s += values[j];
  let e = s / period;
  out[start + period - 1] = e;
  for (let i = start + period; i < n; i++) {
    e = e + k * (values[i] - e);
    out[i] = e;
  }
  return out;
}

/** Linearly weighted moving average, weights 1..N with the newest weighted N. */
export function wmaSeries(values: ArrayLike<number>, period: number): Float64Array {
  const n = values.length;
  const out = new Float64Array(n).fill(NaN);
  const denom = (period * (period + 1)) / 2;
  for (let i = period - 1; i < n; i++) {
    let s = 0;
    for (let w = 1; w <= period; w++) s += w * values[i - period + w];
    out[i] = s / denom;
  }
  return out;
}

/** Wilder RSI; first value at index `period`. Null-equivalent (NaN) when there was no movement. */
export function rsiSeries(close: ArrayLike<number>, period = RSI_PERIOD): Float64Array {
  const n = close.length;
  const out = new Float64Array(n).fill(NaN);
  if (n <= period) return out;
  let gain = 0;
  let loss = 0;
  for (let i = 1; i <= period; i++) {
    const d = close[i] - close[i - 1];
    if (d > 0) gain += d;
    else loss -= d;
  }
  gain /= period;
  loss /= period;
  const rsi = (g: number, l: number) => (g + l === 0 ? NaN : (100 * g) / (g + l));
  out[period] = rsi(gain, loss);
  for (let i = period + 1; i < n; i++) {
    const d = close[i] - close[i - 1];
    gain = (gain * (period - 1) + (d > 0 ? d : 0)) / period;
    loss = (loss * (period - 1) + (d < 0 ? -d : 0)) / period;
    out[i] = rsi(gain, loss);
  }
  return out;
}

export interface MacdSeries { macd: Float64Array; signal: Float64Array; histogram: Float64Array }

/** MACD line, signal and histogram (EMA-based, see the module comment for seeding). */
export function macdSeries(close: ArrayLike<number>, fast = MACD_FAST, slow = MACD_SLOW, signalPeriod = MACD_SIGNAL): MacdSeries {
  const n = close.length;
  const f = emaSeries(close, fast);
  const s = emaSeries(close, slow);
  const macd = new Float64Array(n).fill(NaN);
  for (let i = 0; i < n; i++) if (Number.isFinite(f[i]) && Number.isFinite(s[i])) macd[i] = f[i] - s[i];
  const signal = emaSeries(macd, signalPeriod);
  const histogram = new Float64Array(n).fill(NaN);
  for (let i = 0; i < n; i++) if (Number.isFinite(signal[i])) histogram[i] = macd[i] - signal[i];
  return { macd, signal, histogram };
}

function highestLowest(high: ArrayLike<number>, low: ArrayLike<number>, end: number, period: number): [number, number] {
  let hh = -Infinity;
  let ll = Infinity;
  for (let j = end - period + 1; j <= end; j++) {
    if (high[j] > hh) hh = high[j];
    if (low[j] < ll) ll = low[j];
  }
  return [hh, ll];
}

/** Fast stochastic: %K over `kPeriod` bars, %D = SMA of %K over `dPeriod`. */
export function stochasticSeries(
  high: ArrayLike<number>,
  low: ArrayLike<number>,
  close: ArrayLike<number>,
  kPeriod = STOCH_K_PERIOD,
  dPeriod = STOCH_D_PERIOD,
): { k: Float64Array; d: Float64Array } {
  const n = close.length;
  const k = new Float64Array(n).fill(NaN);
  const d = new Float64Array(n).fill(NaN);
  for (let i = kPeriod - 1; i < n; i++) {
    const [hh, ll] = highestLowest(high, low, i, kPeriod);
    k[i] = hh > ll ? (100 * (close[i] - ll)) / (hh - ll) : NaN;
  }
  for (let i = kPeriod + dPeriod - 2; i < n; i++) {
    let s = 0;
    for (let j = i - dPeriod + 1; j <= i; j++) s += k[j];
    d[i] = s / dPeriod; // NaN propagates when any %K in the window is undefined
  }
  return { k, d };
}

/** Bollinger bands with the POPULATION standard deviation (divide by N). */
export function bollingerSeries(
  close: ArrayLike<number>,
  period = BOLLINGER_PERIOD,
  mult = BOLLINGER_STDDEV,
): { upper: Float64Array; middle: Float64Array; lower: Float64Array; stddev: Float64Array } {
  const n = close.length;
  const middle = smaSeries(close, period);
  const upper = new Float64Array(n).fill(NaN);
  const lower = new Float64Array(n).fill(NaN);
  const stddev = new Float64Array(n).fill(NaN);
  for (let i = period - 1; i < n; i++) {
    const m = middle[i];
    let ss = 0;
    for (let j = i - period + 1; j <= i; j++) ss += (close[j] - m) * (close[j] - m);
    const sd = Math.sqrt(ss / period);
    stddev[i] = sd;
    upper[i] = m + mult * sd;
    lower[i] = m - mult * sd;
  }
  return { upper, middle, lower, stddev };
}

/** True range; index 0 is NaN (no previous close). */
export function trueRangeSeries(high: ArrayLike<number>, low: ArrayLike<number>, close: ArrayLike<number>): Float64Array {
  const n = close.length;
  const tr = new Float64Array(n).fill(NaN);
  for (let i = 1; i < n; i++) {
    const pc = close[i - 1];
    tr[i] = Math.max(high[i] - low[i], Math.abs(high[i] - pc), Math.abs(low[i] - pc));
  }
  return tr;
}

/** Wilder ATR; first value at index `period` (mean of TR_1..TR_period). */
export function atrSeries(high: ArrayLike<number>, low: ArrayLike<number>, close: ArrayLike<number>, period = ATR_PERIOD): Float64Array {
  const n = close.length;
  const out = new Float64Array(n).fill(NaN);
  if (n <= period) return out;
  const tr = trueRangeSeries(high, low, close);
  let a = 0;
  for (let i = 1; i <= period; i++) a += tr[i];
  a /= period;
  out[period] = a;
  for (let i = period + 1; i < n; i++) {
    a = (a * (period - 1) + tr[i]) / period;
    out[i] = a;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Snapshot
// ---------------------------------------------------------------------------

const nn = (x: number): number | null => (Number.isFinite(x) ? x : null);
const fmt = (x: number): string => (Math.abs(x) >= 1000 ? x.toFixed(2) : x.toPrecision(6));

/** Start of the longest trailing run in which every array is finite (and volume-like arrays >= 0). */
function trailingRunStart(n: number, arrays: ArrayLike<number>[], nonNegative: ArrayLike<number>[] = []): number {
  let i = n;
  while (i > 0) {
    const j = i - 1;
    let ok = true;
    for (const a of arrays) if (!Number.isFinite(a[j])) { ok = false; break; }
    if (ok) for (const a of nonNegative) if (!(a[j] >= 0)) { ok = false; break; }
    if (!ok) break;
    i = j;
  }
  return i;
}

function slice(a: Float64Array, start: number): Float64Array {
  return start === 0 ? a : a.subarray(start);
}

function needMore(name: string, need: number, have: number, fields: string, total: number): string {
  const gap = have < total ? ` (${total - have} earlier bar(s) lack ${fields})` : '';
  return `${name} needs ${need} bars with ${fields}; only ${have} available${gap}`;
}

/** Mean of sign(faster − slower) over all pairs of the ordered stack. */
export function maStackScore(stack: number[]): number | null {
  if (stack.length < 2) return null;
  let s = 0;
  let m = 0;
  for (let i = 0; i < stack.length; i++) {
    for (let j = i + 1; j < stack.length; j++) {
      s += Math.sign(stack[i] - stack[j]);
      m++;
    }
  }
  return s / m;
}

function maTrend(score: number | null): MaTrend | null {
  if (score === null) return null;
  if (score >= MA_TREND_THRESHOLD) return 'bullish';
  if (score <= -MA_TREND_THRESHOLD) return 'bearish';
  return 'neutral';
}

function rsiSection(close: Float64Array): RsiResult {
  const n = close.length;
  if (n < MIN_BARS.rsi) {
    return { value: null, signal: null, period: RSI_PERIOD, description: needMore('RSI(14)', MIN_BARS.rsi, n, 'a close', n) };
  }
  const v = rsiSeries(close)[n - 1];
  if (!Number.isFinite(v)) {
    return { value: null, signal: null, period: RSI_PERIOD, description: 'RSI(14) is undefined: the closes did not move over the smoothing window' };
  }
  const signal: RsiSignal = v >= RSI_OVERBOUGHT ? 'overbought' : v <= RSI_OVERSOLD ? 'oversold' : 'neutral';
  const what = signal === 'overbought' ? `at or above ${RSI_OVERBOUGHT}: overbought` : signal === 'oversold' ? `at or below ${RSI_OVERSOLD}: oversold` : `between ${RSI_OVERSOLD} and ${RSI_OVERBOUGHT}: neutral`;
  return { value: v, signal, period: RSI_PERIOD, description: `Wilder RSI(14) = ${v.toFixed(2)}, ${what}` };
}

function macdSection(close: Float64Array): MacdResult {
  const n = close.length;
  const empty = { value: null, signal: null, histogram: null, trend: null, crossover: null };
  if (n < MIN_BARS.macd) {
    return { ...empty, description: needMore('MACD(12,26,9)', MIN_BARS.macd, n, 'a close', n) };
  }
  const { macd, signal, histogram } = macdSeries(close);
  const h = histogram[n - 1];
  const eps = MACD_NEUTRAL_EPSILON * Math.abs(close[n - 1]);
  const trend: MacdTrend = h > eps ? 'bullish' : h < -eps ? 'bearish' : 'neutral';
  let crossover: MacdCrossover | null = null;
  let crossAgo = -1;
  if (Number.isFinite(histogram[n - 2])) {
    crossover = 'none';
    for (let t = n - 1; t >= Math.max(1, n - MACD_CROSSOVER_LOOKBACK); t--) {
      const a = histogram[t - 1];
      const b = histogram[t];
      if (!Number.isFinite(a)) break;
      if (a <= 0 && b > 0) { crossover = 'bullish_crossover'; crossAgo = n - 1 - t; break; }
      if (a >= 0 && b < 0) { crossover = 'bearish_crossover'; crossAgo = n - 1 - t; break; }
    }
  }
  const crossText = crossover === 'none' || crossover === null
    ? `no signal-line crossover in the last ${MACD_CROSSOVER_LOOKBACK} bars`
    : `${crossover === 'bullish_crossover' ? 'bullish' : 'bearish'} crossover ${crossAgo === 0 ? 'on the latest bar' : `${crossAgo} bar(s) ago`}`;
  return {
    value: macd[n - 1],
    signal: signal[n - 1],
    histogram: h,
    trend,
    crossover,
    description: `MACD(12,26,9) line ${fmt(macd[n - 1])} ${h > 0 ? 'above' : h < 0 ? 'below' : 'at'} its signal ${fmt(signal[n - 1])} (histogram ${fmt(h)}): ${trend}; ${crossText}`,
  };
}

function stochasticSection(high: Float64Array, low: Float64Array, close: Float64Array, total: number): StochasticResult {
  const n = close.length;
  if (n < MIN_BARS.stochastic) {
    return { stochK: null, stochD: null, signal: null, description: needMore('Stochastic(14,3)', MIN_BARS.stochastic, n, 'high, low and close', total) };
  }
  const { k, d } = stochasticSeries(high, low, close);
  const K = k[n - 1];
  const D = d[n - 1];
  if (!Number.isFinite(K) || !Number.isFinite(D)) {
    return { stochK: nn(K), stochD: nn(D), signal: null, description: 'Stochastic(14,3) is undefined: the 14-bar high-low range was zero in at least one of the last 3 windows' };
  }
  const signal: StochasticSignal = K >= STOCH_OVERBOUGHT ? 'overbought' : K <= STOCH_OVERSOLD ? 'oversold' : 'neutral';
  return {
    stochK: K,
    stochD: D,
    signal,
    description: `Stochastic %K(14) = ${K.toFixed(2)}, %D(3) = ${D.toFixed(2)}: ${signal} (%K >= ${STOCH_OVERBOUGHT} overbought, <= ${STOCH_OVERSOLD} oversold)`,
  };
}

function maGroup(
  kind: 'EMA' | 'SMA' | 'WMA',
  close: Float64Array,
  periods: readonly number[],
  fn: (v: Float64Array, p: number) => Float64Array,
): { values: (number | null)[]; score: number | null; description: string } {
  const n = close.length;
  const values = periods.map((p) => (n >= p ? fn(close, p)[n - 1] : null));
  const avail: number[] = [close[n - 1]];
  values.forEach((v) => { if (v !== null) avail.push(v); });
  const score = n > 0 ? maStackScore(avail) : null;
  const missing = periods.filter((_, i) => values[i] === null);
  const parts: string[] = [];
  periods.forEach((p, i) => { if (values[i] !== null) parts.push(`${kind}${p} ${fmt(values[i] as number)}`); });
  let description: string;
  if (score === null) {
    description = `${kind}s need at least ${periods[0]} bars; only ${n} available`;
  } else {
    const trend = maTrend(score);
    description = `close ${fmt(close[n - 1])} vs ${parts.join(', ')}: stack score ${score.toFixed(2)} → ${trend}`;
  }
  if (missing.length > 0 && score !== null) {
    description += `; ${missing.map((p) => `${kind}${p}`).join(', ')} null (needs ${missing.join('/')} bars, ${n} available)`;
  }
  return { values, score, description };
}

function ichimokuSection(high: Float64Array, low: Float64Array, close: Float64Array, total: number): IchimokuResult {
  const n = close.length;
  const empty = { tenkan: null, kijun: null, senkouSpanA: null, senkouSpanB: null, chikouSpan: null, signal: null };
  if (n < MIN_BARS.ichimoku) {
    return { ...empty, description: needMore('Ichimoku(9,26,52)', MIN_BARS.ichimoku, n, 'high and low', total) };
  }
  const mid = (end: number, p: number) => {
    const [hh, ll] = highestLowest(high, low, end, p);
    return (hh + ll) / 2;
  };
  const last = n - 1;
  const tenkan = mid(last, ICHIMOKU_TENKAN);
  const kijun = mid(last, ICHIMOKU_KIJUN);
  const src = last - ICHIMOKU_DISPLACEMENT;
  const senkouSpanA = (mid(src, ICHIMOKU_TENKAN) + mid(src, ICHIMOKU_KIJUN)) / 2;
  const senkouSpanB = mid(src, ICHIMOKU_SENKOU_B);
  const c = close[last];
  const top = Math.max(senkouSpanA, senkouSpanB);
  const bottom = Math.min(senkouSpanA, senkouSpanB);
  const signal: IchimokuSignal = c > top && tenkan > kijun ? 'bullish' : c < bottom && tenkan < kijun ? 'bearish' : 'neutral';
  const where = c > top ? 'above' : c < bottom ? 'below' : 'inside';
  return {
    tenkan,
    kijun,
    senkouSpanA,
    senkouSpanB,
    chikouSpan: c,
    signal,
    description:
      `close ${fmt(c)} ${where} the cloud at the latest bar (spans ${fmt(senkouSpanA)} / ${fmt(senkouSpanB)}, computed 26 bars earlier), ` +
      `tenkan ${fmt(tenkan)} ${tenkan > kijun ? '>' : tenkan < kijun ? '<' : '='} kijun ${fmt(kijun)}: ${signal}; ` +
      `chikou = latest close, compared with the close 26 bars earlier (${fmt(close[last - ICHIMOKU_DISPLACEMENT])})`,
  };
}

function bollingerSection(close: Float64Array): BollingerResult {
  const n = close.length;
  if (n < MIN_BARS.bollingerBands) {
    return { upper: null, middle: null, lower: null, bandwidth: null, percentB: null, signal: null, description: needMore('Bollinger(20,2)', MIN_BARS.bollingerBands, n, 'a close', n) };
  }
  const { upper, middle, lower } = bollingerSeries(close);
  const u = upper[n - 1];
  const m = middle[n - 1];
  const l = lower[n - 1];
  const c = close[n - 1];
  const bandwidth = m !== 0 ? (u - l) / m : null;
  const percentB = u > l ? (c - l) / (u - l) : null;
  const signal: BollingerSignal = percentB === null ? 'neutral' : percentB >= 1 ? 'overbought' : percentB <= 0 ? 'oversold' : 'neutral';
  return {
    upper: u,
    middle: m,
    lower: l,
    bandwidth,
    percentB,
    signal,
    description:
      percentB === null
        ? 'Bollinger(20,2): the last 20 closes are identical (σ = 0), so %B is undefined'
        : `Bollinger(20, 2σ population): close ${fmt(c)} at %B ${percentB.toFixed(3)} (bands ${fmt(l)}–${fmt(u)}): ${signal}`,
  };
}

function atrSection(high: Float64Array, low: Float64Array, close: Float64Array, total: number): AtrResult {
  const n = close.length;
  if (n < MIN_BARS.atr) {
    return { value: null, signal: null, period: ATR_PERIOD, description: needMore('ATR(14)', MIN_BARS.atr, n, 'high, low and close', total) };
  }
  const v = atrSeries(high, low, close)[n - 1];
  const ratio = v / close[n - 1];
  const signal: AtrSignal = ratio >= ATR_HIGH_VOLATILITY ? 'high_volatility' : ratio <= ATR_LOW_VOLATILITY ? 'low_volatility' : 'normal_volatility';
  return {
    value: v,
    signal,
    period: ATR_PERIOD,
    description: `Wilder ATR(14) = ${fmt(v)} (${(ratio * 100).toFixed(2)}% of close): ${signal} (>= ${ATR_HIGH_VOLATILITY * 100}% high, <= ${ATR_LOW_VOLATILITY * 100}% low)`,
  };
}

function vwapSection(high: Float64Array, low: Float64Array, close: Float64Array, volume: Float64Array, total: number): VwapResult {
  const n = close.length;
  if (n < MIN_BARS.vwap) {
    return { value: null, signal: null, description: needMore('VWAP', 1, n, 'high, low, close and volume', total) };
  }
  let pv = 0;
  let v = 0;
  for (let i = 0; i < n; i++) {
    pv += ((high[i] + low[i] + close[i]) / 3) * volume[i];
    v += volume[i];
  }
  if (!(v > 0)) {
    return { value: null, signal: null, description: `VWAP is undefined: total volume over the ${n} bars is zero` };
  }
  const vwap = pv / v;
  const c = close[n - 1];
  const rel = (c - vwap) / vwap;
  const signal: VwapSignal = Math.abs(rel) <= VWAP_AT_TOLERANCE ? 'at' : rel > 0 ? 'above' : 'below';
  const gap = n < total ? ` (the ${total - n} earlier bar(s) lack high/low/volume)` : '';
  return {
    value: vwap,
    signal,
    description: `VWAP over the last ${n} daily bars${gap} = ${fmt(vwap)}; close ${fmt(c)} is ${signal} it (${(rel * 100).toFixed(2)}%, 'at' within ±${VWAP_AT_TOLERANCE * 100}%)`,
  };
}

function candlestickSection(bars: OhlcvBars, start: number, total: number): CandlestickResult {
  const n = total - start;
  if (n < 1) {
    return { signal: null, confidence: null, patterns: [], description: 'candlestick patterns need the latest bar\'s open, high, low and close, which are not available' };
  }
  const view = {
    open: slice(bars.open, start),
    high: slice(bars.high, start),
    low: slice(bars.low, start),
    close: slice(bars.close, start),
  };
  const found = detectCandlestickPatterns(view);
  let bull = 0;
  let bear = 0;
  let neutral = 0;
  for (const p of found) {
    if (p.signal === 'bullish') bull = Math.max(bull, p.confidence);
    else if (p.signal === 'bearish') bear = Math.max(bear, p.confidence);
    else neutral = Math.max(neutral, p.confidence);
  }
  let signal: CandlestickSignal;
  let confidence: number;
  if (bull > bear) { signal = 'bullish'; confidence = bull; }
  else if (bear > bull) { signal = 'bearish'; confidence = bear; }
  else { signal = 'neutral'; confidence = bull === 0 ? neutral : 0; }
  const description = found.length === 0
    ? 'no candlestick pattern completes on the latest bar'
    : `${found.map((p) => `${p.name} (${p.confidence.toFixed(2)})`).join(', ')} on the latest bar: ${signal}`;
  return { signal, confidence, patterns: found.map((p) => ({ name: p.name, confidence: p.confidence })), description };
}

function chartSection(close: Float64Array): ChartPatternsResult {
  const r = detectChartPatterns(close);
  const d = r.dominantPattern;
  return {
    patterns: r.patterns,
    dominantPattern: d ? { type: d.type, signal: d.signal, confidence: d.confidence, priceTarget: d.priceTarget, description: d.description } : null,
    description: r.description,
  };
}

interface Vote { name: string; v: number; w: number }

function consensus(votes: Vote[]): ConsensusTrend {
  const cast = votes.filter((x) => x.w > 0);
  const W = cast.reduce((a, x) => a + x.w, 0);
  if (W === 0) {
    return { direction: null, strength: null, confidence: null, description: 'no indicator had enough data to vote on the trend' };
  }
  const S = cast.reduce((a, x) => a + x.w * x.v, 0) / W;
  const direction: TrendDirection = S >= CONSENSUS_THRESHOLD ? 'bullish' : S <= -CONSENSUS_THRESHOLD ? 'bearish' : 'neutral';
  const dir = direction === 'bullish' ? 1 : direction === 'bearish' ? -1 : 0;
  const agree = cast.filter((x) => Math.sign(x.v) === dir).reduce((a, x) => a + x.w, 0) / W;
  const coverage = Math.min(1, W / CONSENSUS_MAX_WEIGHT);
  const label = (x: Vote) => `${x.name} ${x.v > 0 ? '+' : x.v < 0 ? '−' : '0'}`;
  return {
    direction,
    strength: Math.abs(S),
    confidence: agree * coverage,
    description: `weighted vote ${S.toFixed(3)} over ${cast.length} indicator(s) [${cast.map(label).join(', ')}]: ${direction}; agreement ${(agree * 100).toFixed(0)}%, coverage ${(coverage * 100).toFixed(0)}%`,
  };
}

const signVote = (s: string | null | undefined): number | null =>
  s === 'bullish' || s === 'above' ? 1 : s === 'bearish' || s === 'below' ? -1 : s == null ? null : 0;

/**
 * The technicals snapshot for the bars supplied (ascending by date).
 * Throws a TypeError when the arrays differ in length.
 */
export function computeTechnicals(bars: OhlcvBars): TechnicalsData {
  const total = bars.close.length;
  for (const k of ['open', 'high', 'low', 'volume'] as const) {
    if (bars[k].length !== total) throw new TypeError(`bars.${k} has ${bars[k].length} entries, close has ${total}`);
  }
  const cStart = trailingRunStart(total, [bars.close]);
  const close = slice(bars.close, cStart);
  const hlcStart = trailingRunStart(total, [bars.high, bars.low, bars.close]);
  const hH = slice(bars.high, hlcStart);
  const hL = slice(bars.low, hlcStart);
  const hC = slice(bars.close, hlcStart);
  const vStart = trailingRunStart(total, [bars.high, bars.low, bars.close, bars.volume], [bars.volume]);
  const ohlcStart = trailingRunStart(total, [bars.open, bars.high, bars.low, bars.close]);

  const rsi = rsiSection(close);
  const macd = macdSection(close);
  const stochastic = stochasticSection(hH, hL, hC, total);

  const e = maGroup('EMA', close, EMA_PERIODS, emaSeries);
  const ema: EmaResult = {
    ema12: e.values[0], ema20: e.values[1], ema50: e.values[2], ema200: e.values[3],
    trend: maTrend(e.score),
    strength: e.score === null ? null : Math.abs(e.score),
    description: e.description,
  };
  const s = maGroup('SMA', close, SMA_PERIODS, smaSeries);
  const sma: SmaResult = { sma20: s.values[0], sma50: s.values[1], sma200: s.values[2], trend: maTrend(s.score), description: s.description };
  const w = maGroup('WMA', close, WMA_PERIODS, wmaSeries);
  const wma: WmaResult = { wma20: w.values[0], wma50: w.values[1], wma100: w.values[2], trend: maTrend(w.score), description: w.description };

  const ichimoku = ichimokuSection(hH, hL, hC, total);
  const bollingerBands = bollingerSection(close);
  const atr = atrSection(hH, hL, hC, total);
  const vwap = vwapSection(slice(bars.high, vStart), slice(bars.low, vStart), slice(bars.close, vStart), slice(bars.volume, vStart), total);
  const candlestick = candlestickSection(bars, ohlcStart, total);
  // Full array: pattern indices refer to the bars supplied (NaN closes can never be pivots).
  const chartPatterns = chartSection(bars.close);

  const votes: Vote[] = [];
  const push = (name: string, v: number | null, w: number) => { if (v !== null) votes.push({ name, v, w }); };
  push('ema', signVote(ema.trend), CONSENSUS_WEIGHTS.ema);
  push('sma', signVote(sma.trend), CONSENSUS_WEIGHTS.sma);
  push('wma', signVote(wma.trend), CONSENSUS_WEIGHTS.wma);
  push('macd', signVote(macd.trend), CONSENSUS_WEIGHTS.macd);
  push('ichimoku', signVote(ichimoku.signal), CONSENSUS_WEIGHTS.ichimoku);
  if (rsi.value !== null) push('rsi', rsi.value >= CONSENSUS_RSI_BULLISH ? 1 : rsi.value <= CONSENSUS_RSI_BEARISH ? -1 : 0, CONSENSUS_WEIGHTS.rsi);
  push('vwap', signVote(vwap.signal), CONSENSUS_WEIGHTS.vwap);
  if (chartPatterns.dominantPattern) {
    push('chartPattern', signVote(chartPatterns.dominantPattern.signal), CONSENSUS_WEIGHTS.chartPattern * chartPatterns.dominantPattern.confidence);
  }
  if (candlestick.signal !== null && candlestick.confidence !== null && candlestick.confidence > 0) {
    push('candlestick', signVote(candlestick.signal), CONSENSUS_WEIGHTS.candlestick * candlestick.confidence);
  }
  const trend = consensus(votes);

  return { rsi, macd, stochastic, ema, sma, wma, ichimoku, bollingerBands, atr, vwap, candlestick, chartPatterns, trend, dataPoints: total };
}
