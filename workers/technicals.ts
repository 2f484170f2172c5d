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
 * the indicator is null, `reason` names why (contract.ts
 * TECHNICALS_NULL_REASONS) and `description` says it in words. No verdict is
 * given from fewer bars than it needs: no signal, trend or "none found".
 *
 * The parts: indicator-series.ts (the series), indicator-readings.ts and band-readings.ts (each
 * indicator's reading at the latest bar), the two pattern readings below,
 * and trend-consensus.ts (the vote over the readings).
 *
 * candlestick (see candlestick-patterns.ts): signal = `bullish`/`bearish`
 * when the strongest bullish (bearish) pattern's confidence is strictly
 * higher than the strongest opposite one, with that confidence; otherwise
 * `neutral`, with the confidence of the strongest neutral pattern (doji),
 * null (`conflicting_patterns`) when there is none. When no pattern
 * completes on the latest bar, signal and confidence are null: `no_pattern`
 * when the run of bars with open, high, low and close holds the 7 every
 * pattern needs (CANDLESTICK_SEARCH_MIN_BARS), else `insufficient_bars` or
 * `missing_fields`.
 *
 * chartPatterns: dominantPattern is null when no pattern is found:
 * `no_pattern` from 26 closes (CHART_PATTERNS_MIN_BARS), `insufficient_bars`
 * below.
 */
import { CANDLESTICK_SEARCH_MIN_BARS, detectCandlestickPatterns, type CandleBars } from './candlestick-patterns.ts';
import { CHART_PATTERNS_MIN_BARS, detectChartPatterns } from './chart-patterns.ts';
import { macdReading, movingAverageReadings, needMore, rsiReading, shortfall, stochasticReading } from './indicator-readings.ts';
import { atrReading, bollingerReading, ichimokuReading, vwapReading } from './band-readings.ts';
import { trendConsensus } from './trend-consensus.ts';
import type { CandlestickSignal, TechnicalsData, ChartPatternsResult, CandlestickResult, OhlcvBars } from './contract.ts';

/** Start of the longest trailing run in which every array is finite (and volume-like arrays >= 0). */
function trailingRunStart(n: number, arrays: ArrayLike<number>[], nonNegative: ArrayLike<number>[] = []): number {
  let i = n;
  while (i > 0) {
    const j = i - 1;
    let ok = true;
    for (const a of arrays)
      if (!Number.isFinite(a[j])) {
        ok = false;
        break;
      }
    if (ok)
      for (const a of nonNegative)
        if (!(a[j] >= 0)) {
          ok = false;
          break;
        }
    if (!ok) break;
    i = j;
  }
  return i;
}

function slice(a: Float64Array, start: number): Float64Array {
  return start === 0 ? a : a.subarray(start);
}

/** Candlestick patterns over the trailing run of bars with open, high, low and close (`total` bars supplied). */
function candlestickReading(bars: CandleBars, total: number): CandlestickResult {
  const n = bars.close.length;
  if (n < 1) {
    return {
      signal: null,
      confidence: null,
      patterns: [],
      reason: shortfall(n, total),
      description: "candlestick patterns need the latest bar's open, high, low and close, which are not available",
    };
  }
  const found = detectCandlestickPatterns(bars);
  if (found.length === 0) {
    if (n < CANDLESTICK_SEARCH_MIN_BARS) {
      return {
        signal: null,
        confidence: null,
        patterns: [],
        reason: shortfall(n, total),
        description: `no candlestick pattern completes on the latest bar, but ${needMore('ruling them all out', CANDLESTICK_SEARCH_MIN_BARS, n, 'open, high, low and close', total)}`,
      };
    }
    return { signal: null, confidence: null, patterns: [], reason: 'no_pattern', description: 'no candlestick pattern completes on the latest bar' };
  }
  let bull = 0;
  let bear = 0;
  let neutral = 0;
  for (const p of found) {
    if (p.signal === 'bullish') bull = Math.max(bull, p.confidence);
    else if (p.signal === 'bearish') bear = Math.max(bear, p.confidence);
    else neutral = Math.max(neutral, p.confidence);
  }
  let signal: CandlestickSignal;
  let confidence: number | null;
  if (bull > bear) {
    signal = 'bullish';
    confidence = bull;
  } else if (bear > bull) {
    signal = 'bearish';
    confidence = bear;
  } else {
    // A tie (both 0 means only neutral patterns): neutral, as sure as the strongest neutral pattern, if any.
    signal = 'neutral';
    confidence = neutral > 0 ? neutral : null;
  }
  const description = `${found.map((p) => `${p.name} (${p.confidence.toFixed(2)})`).join(', ')} on the latest bar: ${signal}`;
  return {
    signal,
    confidence,
    patterns: found.map((p) => ({ name: p.name, confidence: p.confidence })),
    reason: confidence === null ? 'conflicting_patterns' : null,
    description: confidence === null ? `${description}, bullish and bearish equally strong and no doji to measure it by` : description,
  };
}

function chartPatternsReading(close: Float64Array): ChartPatternsResult {
  const r = detectChartPatterns(close);
  const d = r.dominantPattern;
  return {
    patterns: r.patterns,
    dominantPattern: d ? { type: d.type, signal: d.signal, confidence: d.confidence, priceTarget: d.priceTarget, description: d.description } : null,
    reason: d ? null : close.length < CHART_PATTERNS_MIN_BARS ? 'insufficient_bars' : 'no_pattern',
    description: r.description,
  };
}

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

  const rsi = rsiReading(close);
  const macd = macdReading(close);
  const stochastic = stochasticReading(hH, hL, hC, total);
  const { ema, sma, wma } = movingAverageReadings(close);
  const ichimoku = ichimokuReading(hH, hL, hC, total);
  const bollingerBands = bollingerReading(close);
  const atr = atrReading(hH, hL, hC, total);
  const vwap = vwapReading(slice(bars.high, vStart), slice(bars.low, vStart), slice(bars.close, vStart), slice(bars.volume, vStart), total);
  const candlestick = candlestickReading(
    {
      open: slice(bars.open, ohlcStart),
      high: slice(bars.high, ohlcStart),
      low: slice(bars.low, ohlcStart),
      close: slice(bars.close, ohlcStart),
    },
    total,
  );
  // Full array: pattern indices refer to the bars supplied (NaN closes can never be pivots).
  const chartPatterns = chartPatternsReading(bars.close);
  const trend = trendConsensus({ ema, sma, wma, macd, ichimoku, rsi, vwap, chartPatterns, candlestick }, total);

  return { rsi, macd, stochastic, ema, sma, wma, ichimoku, bollingerBands, atr, vwap, candlestick, chartPatterns, trend, dataPoints: total };
}
