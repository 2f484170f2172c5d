/**
 * The per-indicator readings of the technicals snapshot: each indicator's
 * values at the latest of the bars supplied, a signal and a description.
 * When the bars are fewer than the indicator needs, every numeric field is
 * null and `description` says why. Series conventions are in
 * indicator-series.ts; band-readings.ts holds Ichimoku, Bollinger, ATR and VWAP.
 *
 * Signals and thresholds (the constants below):
 * - rsi.signal: `overbought` if RSI >= 70, `oversold` if RSI <= 30, else
 *   `neutral`.
 * - macd.trend: `bullish` if histogram > ε, `bearish` if histogram < −ε,
 *   else `neutral`, with ε = 1e-9·|close| (floating-point noise only).
 * - macd.crossover: the most recent sign change of the histogram between
 *   consecutive bars within the last 3 bars (transitions into bars n−3, n−2,
 *   n−1): from <= 0 to > 0 is `bullish_crossover`, from >= 0 to < 0 is
 *   `bearish_crossover`. `none` only when all 3 transitions exist (37 bars:
 *   the histogram starts at bar 34) and none is a sign change; with fewer, a
 *   sign change found among those that exist is reported, and otherwise the
 *   crossover is null: one that came before the histogram began cannot be
 *   ruled out.
 * - stochastic.signal: on %K: `overbought` if >= 80, `oversold` if <= 20,
 *   else `neutral`.
 * - ema/sma/wma.trend: the ordered list [close, fastest MA, ..., slowest MA]
 *   (non-null MAs only) is scored over ALL pairs (i < j): +1 when the faster
 *   element is above the slower, −1 when below, 0 when equal; score = mean in
 *   [−1, 1] (a Kendall-style concordance). `bullish` if score >= 0.5,
 *   `bearish` if score <= −0.5, else `neutral`. Null until the two fastest
 *   MAs exist (EMA 20 bars, SMA and WMA 50): the close against one average is
 *   a single pair, whose score is always −1, 0 or +1, so it would read as a
 *   perfectly stacked trend. ema.strength = |score|, a number in [0, 1]
 *   (1 = perfectly stacked).
 *
 * Each reading's `reason` (contract.ts TECHNICALS_NULL_REASONS) says why any
 * of its fields is null, and is null when none is.
 */
import {
  MACD_SIGNAL,
  MACD_SLOW,
  RSI_PERIOD,
  STOCH_D_PERIOD,
  STOCH_K_PERIOD,
  emaSeries,
  macdSeries,
  rsiSeries,
  smaSeries,
  stochasticSeries,
  wmaSeries,
} from './indicator-series.ts';
import {
  type WmaResult,
  type MaReason,
  type MaTrend,
  type SmaResult,
  type EmaResult,
  type StochasticResult,
  type StochasticSignal,
  type MacdResult,
  type MacdCrossover,
  type MacdTrend,
  type RsiResult,
  type RsiSignal,
} from './contract.ts';

export const RSI_OVERBOUGHT = 70;
export const RSI_OVERSOLD = 30;

/** A crossover counts as recent when the histogram changed sign into one of the last N bars. */
export const MACD_CROSSOVER_LOOKBACK = 3;
/** |histogram| <= this × |close| is "neutral" (floating-point noise only). */
const MACD_NEUTRAL_EPSILON = 1e-9;

const STOCH_OVERBOUGHT = 80;
const STOCH_OVERSOLD = 20;

const EMA_PERIODS = [12, 20, 50, 200] as const;
const SMA_PERIODS = [20, 50, 200] as const;
const WMA_PERIODS = [20, 50, 100] as const;
/** Moving-average stack score at or beyond ±this gives bullish / bearish. */
const MA_TREND_THRESHOLD = 0.5;

/** Bars each reading (or its verdict) needs before it is non-null. */
export const READING_MIN_BARS = {
  rsi: RSI_PERIOD + 1,
  macd: MACD_SLOW + MACD_SIGNAL - 1,
  /** `none` needs every transition of the lookback: 34 + 3 = 37. */
  macdNoCrossover: MACD_SLOW + MACD_SIGNAL - 1 + MACD_CROSSOVER_LOOKBACK,
  stochastic: STOCH_K_PERIOD + STOCH_D_PERIOD - 1,
  emaTrend: EMA_PERIODS[1],
  smaTrend: SMA_PERIODS[1],
  wmaTrend: WMA_PERIODS[1],
} as const;
const MIN_BARS = READING_MIN_BARS;
/** A finite number, else null (the readings never show NaN or ±Infinity). */
export const nn = (x: number): number | null => (Number.isFinite(x) ? x : null);
/** A figure as descriptions print it. */
export const fmt = (x: number): string => (Math.abs(x) >= 1000 ? x.toFixed(2) : x.toPrecision(6));

/**
 * Why a reading over the trailing run of `have` complete bars (of `total`
 * supplied) lacks bars: the run is the whole window, or a gap or a missing
 * field cut it short.
 */
export const shortfall = (have: number, total: number): 'insufficient_bars' | 'missing_fields' => (have < total ? 'missing_fields' : 'insufficient_bars');

/** The description of a reading that lacks bars. */
export function needMore(name: string, need: number, have: number, fields: string, total: number): string {
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

export function rsiReading(close: Float64Array): RsiResult {
  const n = close.length;
  if (n < MIN_BARS.rsi) {
    return {
      value: null,
      signal: null,
      period: RSI_PERIOD,
      reason: 'insufficient_bars',
      description: needMore('RSI(14)', MIN_BARS.rsi, n, 'a close', n),
    };
  }
  const v = rsiSeries(close)[n - 1];
  if (!Number.isFinite(v)) {
    return {
      value: null,
      signal: null,
      period: RSI_PERIOD,
      reason: 'no_price_movement',
      description: 'RSI(14) is undefined: the closes did not move over the smoothing window',
    };
  }
  const signal: RsiSignal = v >= RSI_OVERBOUGHT ? 'overbought' : v <= RSI_OVERSOLD ? 'oversold' : 'neutral';
  const what =
    signal === 'overbought'
      ? `at or above ${RSI_OVERBOUGHT}: overbought`
      : signal === 'oversold'
        ? `at or below ${RSI_OVERSOLD}: oversold`
        : `between ${RSI_OVERSOLD} and ${RSI_OVERBOUGHT}: neutral`;
  return { value: v, signal, period: RSI_PERIOD, reason: null, description: `Wilder RSI(14) = ${v.toFixed(2)}, ${what}` };
}

export function macdReading(close: Float64Array): MacdResult {
  const n = close.length;
  const empty = { value: null, signal: null, histogram: null, trend: null, crossover: null, reason: 'insufficient_bars' as const };
  if (n < MIN_BARS.macd) {
    return { ...empty, description: needMore('MACD(12,26,9)', MIN_BARS.macd, n, 'a close', n) };
  }
  const { macd, signal, histogram } = macdSeries(close);
  const h = histogram[n - 1];
  const eps = MACD_NEUTRAL_EPSILON * Math.abs(close[n - 1]);
  const trend: MacdTrend = h > eps ? 'bullish' : h < -eps ? 'bearish' : 'neutral';
  let crossover: MacdCrossover | null = null;
  let crossAgo = -1;
  // The histogram's first value is at bar MIN_BARS.macd − 1, so the first transition is into the bar after it.
  for (let t = n - 1; t >= Math.max(MIN_BARS.macd, n - MACD_CROSSOVER_LOOKBACK); t--) {
    const a = histogram[t - 1];
    const b = histogram[t];
    if (a <= 0 && b > 0) {
      crossover = 'bullish_crossover';
      crossAgo = n - 1 - t;
      break;
    }
    if (a >= 0 && b < 0) {
      crossover = 'bearish_crossover';
      crossAgo = n - 1 - t;
      break;
    }
  }
  if (crossover === null && n >= MIN_BARS.macdNoCrossover) crossover = 'none';
  const crossText =
    crossover === null
      ? `ruling out a signal-line crossover in the last ${MACD_CROSSOVER_LOOKBACK} bars needs ${MIN_BARS.macdNoCrossover} bars; only ${n} available`
      : crossover === 'none'
        ? `no signal-line crossover in the last ${MACD_CROSSOVER_LOOKBACK} bars`
        : `${crossover === 'bullish_crossover' ? 'bullish' : 'bearish'} crossover ${crossAgo === 0 ? 'on the latest bar' : `${crossAgo} bar(s) ago`}`;
  return {
    value: macd[n - 1],
    signal: signal[n - 1],
    histogram: h,
    trend,
    crossover,
    reason: crossover === null ? 'insufficient_bars' : null,
    description: `MACD(12,26,9) line ${fmt(macd[n - 1])} ${h > 0 ? 'above' : h < 0 ? 'below' : 'at'} its signal ${fmt(signal[n - 1])} (histogram ${fmt(h)}): ${trend}; ${crossText}`,
  };
}

export function stochasticReading(high: Float64Array, low: Float64Array, close: Float64Array, total: number): StochasticResult {
  const n = close.length;
  if (n < MIN_BARS.stochastic) {
    return {
      stochK: null,
      stochD: null,
      signal: null,
      reason: shortfall(n, total),
      description: needMore('Stochastic(14,3)', MIN_BARS.stochastic, n, 'high, low and close', total),
    };
  }
  const { k, d } = stochasticSeries(high, low, close);
  const K = k[n - 1];
  const D = d[n - 1];
  if (!Number.isFinite(K) || !Number.isFinite(D)) {
    return {
      stochK: nn(K),
      stochD: nn(D),
      signal: null,
      reason: 'no_price_movement',
      description: 'Stochastic(14,3) is undefined: the 14-bar high-low range was zero in at least one of the last 3 windows',
    };
  }
  const signal: StochasticSignal = K >= STOCH_OVERBOUGHT ? 'overbought' : K <= STOCH_OVERSOLD ? 'oversold' : 'neutral';
  return {
    stochK: K,
    stochD: D,
    signal,
    reason: null,
    description: `Stochastic %K(14) = ${K.toFixed(2)}, %D(3) = ${D.toFixed(2)}: ${signal} (%K >= ${STOCH_OVERBOUGHT} overbought, <= ${STOCH_OVERSOLD} oversold)`,
  };
}

function maGroup(
  kind: 'EMA' | 'SMA' | 'WMA',
  close: Float64Array,
  periods: readonly number[],
  fn: (v: Float64Array, p: number) => Float64Array,
): { values: (number | null)[]; score: number | null; reason: MaReason | null; description: string } {
  const n = close.length;
  const values = periods.map((p) => (n >= p ? fn(close, p)[n - 1] : null));
  const avail: number[] = [close[n - 1]];
  values.forEach((v) => {
    if (v !== null) avail.push(v);
  });
  // The close and at least the two fastest averages: see the module comment.
  const score = avail.length >= 3 ? maStackScore(avail) : null;
  const missing = periods.filter((_, i) => values[i] === null);
  const parts: string[] = [];
  periods.forEach((p, i) => {
    if (values[i] !== null) parts.push(`${kind}${p} ${fmt(values[i] as number)}`);
  });
  let description: string;
  if (parts.length === 0) {
    description = `${kind}s need at least ${periods[0]} bars; only ${n} available`;
  } else if (score === null) {
    description = `close ${fmt(close[n - 1])} vs ${parts.join(', ')}; a trend needs the close and two averages, ${periods[1]} bars; only ${n} available`;
  } else {
    description = `close ${fmt(close[n - 1])} vs ${parts.join(', ')}: stack score ${score.toFixed(2)} → ${maTrend(score)}`;
  }
  if (missing.length > 0 && parts.length > 0) {
    description += `; ${missing.map((p) => `${kind}${p}`).join(', ')} null (needs ${missing.join('/')} bars, ${n} available)`;
  }
  const reason: MaReason | null = missing.length > 0 || score === null ? 'insufficient_bars' : null;
  return { values, score, reason, description };
}

export function movingAverageReadings(close: Float64Array): { ema: EmaResult; sma: SmaResult; wma: WmaResult } {
  const e = maGroup('EMA', close, EMA_PERIODS, emaSeries);
  const ema: EmaResult = {
    ema12: e.values[0],
    ema20: e.values[1],
    ema50: e.values[2],
    ema200: e.values[3],
    trend: maTrend(e.score),
    strength: e.score === null ? null : Math.abs(e.score),
    reason: e.reason,
    description: e.description,
  };
  const s = maGroup('SMA', close, SMA_PERIODS, smaSeries);
  const sma: SmaResult = {
    sma20: s.values[0],
    sma50: s.values[1],
    sma200: s.values[2],
    trend: maTrend(s.score),
    reason: s.reason,
    description: s.description,
  };
  const w = maGroup('WMA', close, WMA_PERIODS, wmaSeries);
  const wma: WmaResult = {
    wma20: w.values[0],
    wma50: w.values[1],
    wma100: w.values[2],
    trend: maTrend(w.score),
    reason: w.reason,
    description: w.description,
  };
  return { ema, sma, wma };
}
