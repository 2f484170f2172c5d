import { CANDLESTICK_PATTERNS, type CandlestickPatternName, type CandlestickSignal } from './contract.ts';
/**
 * Candlestick patterns completing on one bar (by default the latest). Pure.
 *
 * Candle anatomy for bar i: body = |C − O|, range = H − L, upper shadow =
 * H − max(O, C), lower shadow = min(O, C) − L; bullish when C > O, bearish
 * when C < O. A candle with range 0 matches nothing. A "long" candle has
 * body >= 0.5 × range. Every bar a pattern touches must have finite O/H/L/C.
 *
 * Prior trend (context): the relative change of the close over the 5 bars
 * before the pattern's first candle, m = C[s−1]/C[s−6] − 1. Up-trend when
 * m >= +1%, down-trend when m <= −1%, otherwise flat; unknown when fewer
 * than 6 bars precede the pattern. Trend score t = min(1, |m| / 5%) when the
 * trend is the one the pattern reverses (for doji: any trend), else 0.
 *
 * Confidence (in [0, 1]) = 0.5 + 0.3·q + 0.2·t, where q in [0, 1] is the
 * pattern's shape quality defined below.
 *
 * Rules (bar 1 is the oldest candle of the pattern, the last is bar i):
 * - doji (neutral): body <= 0.1·range. q = 1 − body/(0.1·range).
 * - hammer-shaped: lower shadow >= 2·body, upper shadow <= 0.15·range, body
 *   <= 0.35·range. q = clamp((lower/range − 0.5)/0.4).
 *   hammer (bullish) needs a prior down-trend; hanging_man (bearish) an
 *   up-trend. Neither is reported when the trend is flat or unknown.
 * - inverted-hammer-shaped: the mirror (upper shadow >= 2·body, lower shadow
 *   <= 0.15·range, body <= 0.35·range), q = clamp((upper/range − 0.5)/0.4).
 *   inverted_hammer (bullish) needs a prior down-trend; shooting_star
 *   (bearish) an up-trend.
 * - bullish_engulfing: bar 1 bearish, bar 2 bullish, O2 <= C1, C2 >= O1 and
 *   body2 > body1. bearish_engulfing: bar 1 bullish, bar 2 bearish, O2 >=
 *   C1, C2 <= O1, body2 > body1. q = clamp(body2/body1 − 1) (1 when the
 *   engulfing body is at least twice as large).
 * - piercing_line (bullish): bar 1 long bearish; bar 2 bullish, opens below
 *   C1 (O2 < C1; the classic rule asks for below the low, relaxed here
 *   because daily bars rarely gap), closes above the midpoint of bar 1's
 *   body and below O1. q = clamp((p − 0.5)/0.5), p = (C2 − C1)/(O1 − C1).
 * - dark_cloud_cover (bearish): the mirror: bar 1 long bullish; bar 2
 *   bearish, O2 > C1, closes below the midpoint of bar 1's body and above
 *   O1. q as for piercing with p = (C1 − C2)/(C1 − O1).
 * - bullish_harami: bar 1 long bearish; bar 2 bullish with its body inside
 *   bar 1's body (O2 >= C1, C2 <= O1) and body2 <= 0.5·body1.
 *   bearish_harami: bar 1 long bullish; bar 2 bearish inside (O2 <= C1,
 *   C2 >= O1), body2 <= 0.5·body1. q = 1 − body2/(0.5·body1).
 * - morning_star (bullish): bar 1 long bearish; bar 2 small (body2 <=
 *   0.3·body1) with its body at or below C1 (max(O2, C2) <= C1); bar 3
 *   bullish closing above the midpoint of bar 1's body. evening_star
 *   (bearish): the mirror (bar 2 body at or above C1, bar 3 bearish closing
 *   below bar 1's midpoint). q = clamp((p − 0.5)/0.5) with p the fraction of
 *   bar 1's body recovered by C3.
 * - three_white_soldiers (bullish): three bullish candles, each with body >=
 *   0.5·range and upper shadow <= 0.25·range, closes rising, each open
 *   within the previous candle's body (O_prev < O <= C_prev).
 *   three_black_crows (bearish): the mirror (bearish, lower shadow <=
 *   0.25·range, closes falling, C_prev <= O < O_prev). q = clamp((mean body
 *   ratio − 0.5)/0.4).
 */

const DOJI_MAX_BODY = 0.1;
const LONG_BODY_MIN = 0.5;
const HAMMER_MIN_SHADOW_TO_BODY = 2;
const HAMMER_MAX_OTHER_SHADOW = 0.15;
const HAMMER_MAX_BODY = 0.35;
const HARAMI_MAX_BODY_RATIO = 0.5;
const STAR_MAX_BODY_RATIO = 0.3;
const SOLDIERS_MIN_BODY = 0.5;
const SOLDIERS_MAX_SHADOW = 0.25;
const TREND_CONTEXT_BARS = 5;
/**
 * Bars needed to look for every pattern on the latest bar: the hammer family
 * reads the closes 6 and 1 bars before its candle, so 7. With fewer, a
 * pattern that completes is still found, but "none completes" cannot be said.
 */
export const CANDLESTICK_SEARCH_MIN_BARS = TREND_CONTEXT_BARS + 2;
const TREND_CONTEXT_MIN_MOVE = 0.01;
const TREND_CONTEXT_FULL_MOVE = 0.05;
const CONFIDENCE_BASE = 0.5;
const CONFIDENCE_SHAPE_WEIGHT = 0.3;
const CONFIDENCE_TREND_WEIGHT = 0.2;

export interface CandleBars {
  open: ArrayLike<number>;
  high: ArrayLike<number>;
  low: ArrayLike<number>;
  close: ArrayLike<number>;
}

interface CandlestickMatch {
  name: CandlestickPatternName;
  signal: CandlestickSignal;
  confidence: number;
  /** Index of the pattern's first candle. */
  startIndex: number;
  /** Index of the pattern's last candle (the bar it completes on). */
  endIndex: number;
}

const clamp01 = (x: number) => (x < 0 ? 0 : x > 1 ? 1 : x);

interface Candle {
  o: number;
  h: number;
  l: number;
  c: number;
  body: number;
  range: number;
  upper: number;
  lower: number;
  bull: boolean;
  bear: boolean;
}

function candle(b: CandleBars, i: number): Candle | null {
  if (i < 0 || i >= b.close.length) return null;
  const o = b.open[i];
  const h = b.high[i];
  const l = b.low[i];
  const c = b.close[i];
  if (!Number.isFinite(o) || !Number.isFinite(h) || !Number.isFinite(l) || !Number.isFinite(c)) return null;
  const range = h - l;
  if (!(range > 0)) return null;
  return { o, h, l, c, body: Math.abs(c - o), range, upper: h - Math.max(o, c), lower: Math.min(o, c) - l, bull: c > o, bear: c < o };
}

/** Prior trend before the candle at index s: +1 up, −1 down, 0 flat, null unknown; with magnitude. */
function priorTrend(b: CandleBars, s: number): { dir: -1 | 0 | 1; move: number } | null {
  const a = s - 1 - TREND_CONTEXT_BARS;
  if (a < 0) return null;
  const c0 = b.close[a];
  const c1 = b.close[s - 1];
  if (!Number.isFinite(c0) || !Number.isFinite(c1) || c0 <= 0) return null;
  const move = c1 / c0 - 1;
  return { dir: move >= TREND_CONTEXT_MIN_MOVE ? 1 : move <= -TREND_CONTEXT_MIN_MOVE ? -1 : 0, move };
}

function trendScore(b: CandleBars, s: number, reverses: -1 | 1 | 'any'): number {
  const t = priorTrend(b, s);
  if (!t || t.dir === 0) return 0;
  if (reverses !== 'any' && t.dir !== reverses) return 0;
  return clamp01(Math.abs(t.move) / TREND_CONTEXT_FULL_MOVE);
}

const conf = (q: number, t: number) => clamp01(CONFIDENCE_BASE + CONFIDENCE_SHAPE_WEIGHT * clamp01(q) + CONFIDENCE_TREND_WEIGHT * t);

/**
 * Patterns whose last candle is `endIndex` (default: the latest bar), in a
 * fixed order (single-, two-, then three-candle patterns).
 */
export function detectCandlestickPatterns(bars: CandleBars, endIndex: number = bars.close.length - 1): CandlestickMatch[] {
  const out: CandlestickMatch[] = [];
  const i = endIndex;
  const add = (name: CandlestickPatternName, start: number, q: number, t: number) =>
    out.push({ name, signal: CANDLESTICK_PATTERNS[name], confidence: conf(q, t), startIndex: start, endIndex: i });

  const c = candle(bars, i);
  if (!c) return out;

  // --- one candle ---------------------------------------------------------
  if (c.body <= DOJI_MAX_BODY * c.range) {
    add('doji', i, 1 - c.body / (DOJI_MAX_BODY * c.range), trendScore(bars, i, 'any'));
  }
  const trend = priorTrend(bars, i);
  if (c.lower >= HAMMER_MIN_SHADOW_TO_BODY * c.body && c.upper <= HAMMER_MAX_OTHER_SHADOW * c.range && c.body <= HAMMER_MAX_BODY * c.range && trend) {
    const q = (c.lower / c.range - 0.5) / 0.4;
    if (trend.dir === -1) add('hammer', i, q, trendScore(bars, i, -1));
    else if (trend.dir === 1) add('hanging_man', i, q, trendScore(bars, i, 1));
  }
  if (c.upper >= HAMMER_MIN_SHADOW_TO_BODY * c.body && c.lower <= HAMMER_MAX_OTHER_SHADOW * c.range && c.body <= HAMMER_MAX_BODY * c.range && trend) {
    const q = (c.upper / c.range - 0.5) / 0.4;
    if (trend.dir === -1) add('inverted_hammer', i, q, trendScore(bars, i, -1));
    else if (trend.dir === 1) add('shooting_star', i, q, trendScore(bars, i, 1));
  }

  // --- two candles --------------------------------------------------------
  const p = candle(bars, i - 1);
  if (p) {
    const s = i - 1;
    if (p.bear && c.bull && c.o <= p.c && c.c >= p.o && c.body > p.body) {
      add('bullish_engulfing', s, c.body / p.body - 1, trendScore(bars, s, -1));
    }
    if (p.bull && c.bear && c.o >= p.c && c.c <= p.o && c.body > p.body) {
      add('bearish_engulfing', s, c.body / p.body - 1, trendScore(bars, s, 1));
    }
    const pLong = p.body >= LONG_BODY_MIN * p.range;
    if (pLong && p.bear && c.bull && c.o < p.c && c.c > (p.o + p.c) / 2 && c.c < p.o) {
      const pen = (c.c - p.c) / (p.o - p.c);
      add('piercing_line', s, (pen - 0.5) / 0.5, trendScore(bars, s, -1));
    }
    if (pLong && p.bull && c.bear && c.o > p.c && c.c < (p.o + p.c) / 2 && c.c > p.o) {
      const pen = (p.c - c.c) / (p.c - p.o);
      add('dark_cloud_cover', s, (pen - 0.5) / 0.5, trendScore(bars, s, 1));
    }
    if (pLong && p.bear && c.bull && c.o >= p.c && c.c <= p.o && c.body <= HARAMI_MAX_BODY_RATIO * p.body) {
      add('bullish_harami', s, 1 - c.body / (HARAMI_MAX_BODY_RATIO * p.body), trendScore(bars, s, -1));
    }
    if (pLong && p.bull && c.bear && c.o <= p.c && c.c >= p.o && c.body <= HARAMI_MAX_BODY_RATIO * p.body) {
      add('bearish_harami', s, 1 - c.body / (HARAMI_MAX_BODY_RATIO * p.body), trendScore(bars, s, 1));
    }
  }

  // --- three candles ------------------------------------------------------
  const a = candle(bars, i - 2);
  if (a && p) {
    const s = i - 2;
    const aLong = a.body >= LONG_BODY_MIN * a.range;
    const small = p.body <= STAR_MAX_BODY_RATIO * a.body;
    if (aLong && a.bear && small && Math.max(p.o, p.c) <= a.c && c.bull && c.c > (a.o + a.c) / 2) {
      const rec = (c.c - a.c) / (a.o - a.c);
      add('morning_star', s, (rec - 0.5) / 0.5, trendScore(bars, s, -1));
    }
    if (aLong && a.bull && small && Math.min(p.o, p.c) >= a.c && c.bear && c.c < (a.o + a.c) / 2) {
      const rec = (a.c - c.c) / (a.c - a.o);
      add('evening_star', s, (rec - 0.5) / 0.5, trendScore(bars, s, 1));
    }
    const three = [a, p, c];
    const soldier = (x: Candle) => x.bull && x.body >= SOLDIERS_MIN_BODY * x.range && x.upper <= SOLDIERS_MAX_SHADOW * x.range;
    const crow = (x: Candle) => x.bear && x.body >= SOLDIERS_MIN_BODY * x.range && x.lower <= SOLDIERS_MAX_SHADOW * x.range;
    const meanBody = three.reduce((acc, x) => acc + x.body / x.range, 0) / 3;
    if (three.every(soldier) && p.c > a.c && c.c > p.c && p.o > a.o && p.o <= a.c && c.o > p.o && c.o <= p.c) {
      add('three_white_soldiers', s, (meanBody - 0.5) / 0.4, trendScore(bars, s, -1));
    }
    if (three.every(crow) && p.c < a.c && c.c < p.c && p.o < a.o && p.o >= a.c && c.o < p.o && c.o >= p.c) {
      add('three_black_crows', s, (meanBody - 0.5) / 0.4, trendScore(bars, s, 1));
    }
  }
  return out;
}
