import type { ChartPatternSignal, ChartPatternType, ChartPattern } from './contract.ts';
/**
 * Chart patterns from swing highs and lows of the CLOSING prices. Pure.
 *
 * Pivots: bar i is a swing high when close[i] is strictly greater than each
 * of the k = 5 closes before it and greater than or equal to each of the k
 * closes after it (so the first bar of a flat top is the pivot); a swing low
 * is the mirror. Bars within k of either end cannot be pivots. Consecutive
 * pivots of the same kind are merged, keeping the more extreme one (the
 * earlier on a tie), so highs and lows alternate.
 *
 * Patterns (all tolerances relative to price; indices are bar indices into
 * the series supplied):
 * - double_top (bearish): pivots H1, L, H2 with |H1 − H2| <= 3% of the
 *   higher peak, the trough at least 3% below the lower peak, and H2 at
 *   least 10 bars after H1. Invalidated (not reported) if a later close
 *   exceeds the higher peak. Neckline = L; confirmed when a later close is
 *   below it. Target = L − (mean(H1, H2) − L). double_bottom (bullish) is
 *   the mirror (target = H + (H − mean(L1, L2))).
 *   confidence = 0.4 + 0.3·(1 − |H1 − H2|/(3%·peak)) + 0.3·confirmed.
 * - head_and_shoulders (bearish): pivots LS, T1, Head, T2, RS with the head
 *   at least 2% above the higher shoulder, shoulders within 5% of each other,
 *   the troughs below both neighbouring peaks and within 5% of each other.
 *   Neckline = the line through T1 and T2. Invalidated if a later close
 *   exceeds the head. Confirmed when a close after RS falls below the
 *   neckline projected to that bar. Height = Head − neckline at the head's
 *   bar; target = neckline at endIndex − height. inverse_head_and_shoulders
 *   (bullish) is the mirror. confidence = 0.4 + 0.15·(1 − shoulder diff/5%)
 *   + 0.15·(1 − trough diff/5%) + 0.3·confirmed.
 * - Triangles: a run of 4 to 6 consecutive pivots (at least 2 highs and 2
 *   lows) spanning at least 15 bars. A least-squares line is fitted through
 *   the highs and one through the lows; every pivot must lie within 1.5% of
 *   its line. A line is flat when its change across the span is within
 *   ±1.5% of the mean pivot price, rising/falling beyond that; neither line
 *   may move more than 10% (a consolidation, not a crash and rebound). The
 *   lines must not have crossed by the last pivot.
 *   ascending_triangle (bullish): flat upper, rising lower;
 *   descending_triangle (bearish): falling upper, flat lower;
 *   symmetric_triangle: falling upper and rising lower.
 *   Height = the first swing |pivot 1 − pivot 2| (the widest part, the
 *   "back" of the triangle). Breakout = the first close after the last pivot
 *   more than 1.5% above the upper line (up) or below the lower line (down),
 *   lines projected forward. An ascending (descending) triangle broken the
 *   wrong way is invalidated. A symmetric triangle takes the breakout's
 *   direction (bullish/bearish) and is `neutral` with a null target before
 *   one. Target = upper line at the breakout bar (or the last pivot) +
 *   height for bullish, lower line − height for bearish. confidence = 0.4 +
 *   0.2·(1 − max residual/1.5%) + 0.1·min(1, (pivots − 4)/2) + 0.3·broke
 *   out in the pattern's direction.
 * endIndex is the confirming/breakout bar when there is one, else the last
 * pivot. For each type only the most recent occurrence is reported: largest
 * endIndex, then the latest last pivot, then the highest confidence. Patterns are sorted by confidence
 * (descending), then endIndex (descending); dominantPattern is the first.
 */

const PIVOT_WINDOW = 5;
export const DOUBLE_PEAK_TOLERANCE = 0.03;
const DOUBLE_MIN_DEPTH = 0.03;
const DOUBLE_MIN_SEPARATION = 10;
const HS_MIN_HEAD_PROMINENCE = 0.02;
const HS_SHOULDER_TOLERANCE = 0.05;
const HS_NECKLINE_TOLERANCE = 0.05;
const TRIANGLE_MIN_PIVOTS = 4;
const TRIANGLE_MAX_PIVOTS = 6;
const TRIANGLE_MIN_BARS = 15;
const TRIANGLE_FIT_TOLERANCE = 0.015;
const TRIANGLE_FLAT_TOLERANCE = 0.015;
/** A breakout is a close beyond a triangle line by more than this (relative), the same as the fit tolerance. */
const TRIANGLE_BREAKOUT_MARGIN = TRIANGLE_FIT_TOLERANCE;
/** A triangle is a consolidation: neither line may move more than this (relative) across the span. */
const TRIANGLE_MAX_DRIFT = 0.1;
/**
 * Closes needed before every type can complete, so that finding none means
 * none: a triangle spans 15 bars between swing points, each of which needs 5
 * closes on either side, so 5 + 15 + 5 + 1 = 26 (a double top needs 21; a
 * head and shoulders 23, its head being above both shoulders and so more
 * than 5 bars from each). With fewer, a pattern found is still reported.
 */
export const CHART_PATTERNS_MIN_BARS = PIVOT_WINDOW + Math.max(TRIANGLE_MIN_BARS, DOUBLE_MIN_SEPARATION, 2 * (PIVOT_WINDOW + 1)) + PIVOT_WINDOW + 1;

interface Pivot {
  index: number;
  price: number;
  kind: 'high' | 'low';
}

interface ChartPatternsDetection {
  patterns: ChartPattern[];
  dominantPattern: ChartPattern | null;
  pivots: Pivot[];
  description: string;
}

const clamp01 = (x: number) => (x < 0 ? 0 : x > 1 ? 1 : x);
const f2 = (x: number) => x.toFixed(2);

/** Alternating swing highs and lows (see the module comment). */
export function findPivots(values: ArrayLike<number>, window: number = PIVOT_WINDOW): Pivot[] {
  const n = values.length;
  const raw: Pivot[] = [];
  for (let i = window; i < n - window; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) continue;
    let isHigh = true;
    let isLow = true;
    for (let j = i - window; j < i && (isHigh || isLow); j++) {
      if (!(v > values[j])) isHigh = false;
      if (!(v < values[j])) isLow = false;
    }
    for (let j = i + 1; j <= i + window && (isHigh || isLow); j++) {
      if (!(v >= values[j])) isHigh = false;
      if (!(v <= values[j])) isLow = false;
    }
    if (isHigh) raw.push({ index: i, price: v, kind: 'high' });
    else if (isLow) raw.push({ index: i, price: v, kind: 'low' });
  }
  const out: Pivot[] = [];
  for (const p of raw) {
    const last = out[out.length - 1];
    if (last && last.kind === p.kind) {
      const better = p.kind === 'high' ? p.price > last.price : p.price < last.price;
      if (better) out[out.length - 1] = p;
    } else {
      out.push(p);
    }
  }
  return out;
}

function firstAfter(values: ArrayLike<number>, from: number, pred: (v: number, i: number) => boolean): number {
  for (let i = from; i < values.length; i++) if (pred(values[i], i)) return i;
  return -1;
}

/** A detected pattern plus the index of its last pivot (a tie-breaker between overlapping runs). */
interface Candidate {
  p: ChartPattern;
  lastPivot: number;
}

function doubles(close: ArrayLike<number>, piv: Pivot[]): Candidate[] {
  const out: Candidate[] = [];
  for (let j = 0; j + 2 < piv.length; j++) {
    const [a, m, b] = [piv[j], piv[j + 1], piv[j + 2]];
    if (b.index - a.index < DOUBLE_MIN_SEPARATION) continue;
    const top = a.kind === 'high';
    const extreme = top ? Math.max(a.price, b.price) : Math.min(a.price, b.price);
    const inner = top ? Math.min(a.price, b.price) : Math.max(a.price, b.price);
    const diff = Math.abs(a.price - b.price) / Math.abs(extreme);
    if (diff > DOUBLE_PEAK_TOLERANCE) continue;
    const depth = top ? (inner - m.price) / inner : (m.price - inner) / inner;
    if (depth < DOUBLE_MIN_DEPTH) continue;
    const invalid = firstAfter(close, b.index + 1, (v) => (top ? v > extreme : v < extreme));
    if (invalid >= 0) continue;
    const conf = firstAfter(close, b.index + 1, (v) => (top ? v < m.price : v > m.price));
    const mean = (a.price + b.price) / 2;
    const target = top ? m.price - (mean - m.price) : m.price + (m.price - mean);
    const type: ChartPatternType = top ? 'double_top' : 'double_bottom';
    const word = top ? 'top' : 'bottom';
    out.push({
      lastPivot: b.index,
      p: {
        type,
        signal: top ? 'bearish' : 'bullish',
        confidence: clamp01(0.4 + 0.3 * (1 - diff / DOUBLE_PEAK_TOLERANCE) + 0.3 * (conf >= 0 ? 1 : 0)),
        startIndex: a.index,
        endIndex: conf >= 0 ? conf : b.index,
        priceTarget: target,
        description:
          `double ${word}: ${top ? 'peaks' : 'troughs'} ${f2(a.price)} (bar ${a.index}) and ${f2(b.price)} (bar ${b.index}), neckline ${f2(m.price)}; ` +
          (conf >= 0 ? `confirmed by the close at bar ${conf}` : 'not yet confirmed') +
          `; measured-move target ${f2(target)}`,
      },
    });
  }
  return out;
}

function headAndShoulders(close: ArrayLike<number>, piv: Pivot[]): Candidate[] {
  const out: Candidate[] = [];
  for (let j = 0; j + 4 < piv.length; j++) {
    const [ls, t1, hd, t2, rs] = piv.slice(j, j + 5);
    const top = ls.kind === 'high';
    const sgn = top ? 1 : -1; // work in "top" orientation: sgn·price
    const LS = sgn * ls.price,
      T1 = sgn * t1.price,
      HD = sgn * hd.price,
      T2 = sgn * t2.price,
      RS = sgn * rs.price;
    const outerShoulder = Math.max(LS, RS);
    if ((HD - outerShoulder) / Math.abs(hd.price) < HS_MIN_HEAD_PROMINENCE) continue;
    const shoulderDiff = Math.abs(ls.price - rs.price) / Math.max(Math.abs(ls.price), Math.abs(rs.price));
    if (shoulderDiff > HS_SHOULDER_TOLERANCE) continue;
    if (!(T1 < Math.min(LS, HD) && T2 < Math.min(HD, RS))) continue;
    const troughDiff = Math.abs(t1.price - t2.price) / Math.max(Math.abs(t1.price), Math.abs(t2.price));
    if (troughDiff > HS_NECKLINE_TOLERANCE) continue;
    const neck = (i: number) => t1.price + ((t2.price - t1.price) * (i - t1.index)) / (t2.index - t1.index);
    const invalid = firstAfter(close, rs.index + 1, (v) => sgn * v > HD);
    if (invalid >= 0) continue;
    const conf = firstAfter(close, rs.index + 1, (v, i) => sgn * v < sgn * neck(i));
    const end = conf >= 0 ? conf : rs.index;
    const height = hd.price - neck(hd.index); // signed: positive for a top
    const target = neck(end) - height;
    const type: ChartPatternType = top ? 'head_and_shoulders' : 'inverse_head_and_shoulders';
    out.push({
      lastPivot: rs.index,
      p: {
        type,
        signal: top ? 'bearish' : 'bullish',
        confidence: clamp01(
          0.4 + 0.15 * (1 - shoulderDiff / HS_SHOULDER_TOLERANCE) + 0.15 * (1 - troughDiff / HS_NECKLINE_TOLERANCE) + 0.3 * (conf >= 0 ? 1 : 0),
        ),
        startIndex: ls.index,
        endIndex: end,
        priceTarget: target,
        description:
          `${top ? '' : 'inverse '}head and shoulders: shoulders ${f2(ls.price)} (bar ${ls.index}) / ${f2(rs.price)} (bar ${rs.index}), head ${f2(hd.price)} (bar ${hd.index}), ` +
          `neckline ${f2(t1.price)}→${f2(t2.price)}; ` +
          (conf >= 0 ? `confirmed by the close at bar ${conf}` : 'not yet confirmed') +
          `; measured-move target ${f2(target)}`,
      },
    });
  }
  return out;
}

function fitLine(pts: Pivot[]): { a: number; b: number } {
  // y = a + b·x, least squares (exact line for two points)
  const n = pts.length;
  let mx = 0,
    my = 0;
  for (const p of pts) {
    mx += p.index;
    my += p.price;
  }
  mx /= n;
  my /= n;
  let sxy = 0,
    sxx = 0;
  for (const p of pts) {
    sxy += (p.index - mx) * (p.price - my);
    sxx += (p.index - mx) ** 2;
  }
  const b = sxx > 0 ? sxy / sxx : 0;
  return { a: my - b * mx, b };
}

function triangles(close: ArrayLike<number>, piv: Pivot[]): Candidate[] {
  const out: Candidate[] = [];
  for (let w = TRIANGLE_MIN_PIVOTS; w <= TRIANGLE_MAX_PIVOTS; w++) {
    for (let j = 0; j + w <= piv.length; j++) {
      const run = piv.slice(j, j + w);
      const highs = run.filter((p) => p.kind === 'high');
      const lows = run.filter((p) => p.kind === 'low');
      if (highs.length < 2 || lows.length < 2) continue;
      const first = run[0].index;
      const last = run[w - 1].index;
      if (last - first < TRIANGLE_MIN_BARS) continue;
      const up = fitLine(highs);
      const lo = fitLine(lows);
      const U = (i: number) => up.a + up.b * i;
      const L = (i: number) => lo.a + lo.b * i;
      let maxRes = 0;
      for (const p of highs) maxRes = Math.max(maxRes, Math.abs(p.price - U(p.index)) / Math.abs(U(p.index)));
      for (const p of lows) maxRes = Math.max(maxRes, Math.abs(p.price - L(p.index)) / Math.abs(L(p.index)));
      if (maxRes > TRIANGLE_FIT_TOLERANCE) continue;
      if (!(U(last) > L(last)) || !(U(first) > L(first))) continue;
      const meanPrice = run.reduce((s, p) => s + Math.abs(p.price), 0) / w;
      const du = (U(last) - U(first)) / meanPrice;
      const dl = (L(last) - L(first)) / meanPrice;
      if (Math.abs(du) > TRIANGLE_MAX_DRIFT || Math.abs(dl) > TRIANGLE_MAX_DRIFT) continue;
      const flat = (d: number) => Math.abs(d) <= TRIANGLE_FLAT_TOLERANCE;
      let type: ChartPatternType;
      if (flat(du) && dl > TRIANGLE_FLAT_TOLERANCE) type = 'ascending_triangle';
      else if (flat(dl) && du < -TRIANGLE_FLAT_TOLERANCE) type = 'descending_triangle';
      else if (du < -TRIANGLE_FLAT_TOLERANCE && dl > TRIANGLE_FLAT_TOLERANCE) type = 'symmetric_triangle';
      else continue;
      const height = Math.abs(run[0].price - run[1].price);
      const above = (v: number, i: number) => v > U(i) * (1 + TRIANGLE_BREAKOUT_MARGIN);
      const below = (v: number, i: number) => v < L(i) * (1 - TRIANGLE_BREAKOUT_MARGIN);
      const brk = firstAfter(close, last + 1, (v, i) => above(v, i) || below(v, i));
      const brkDir = brk < 0 ? 0 : above(close[brk], brk) ? 1 : -1;
      let signal: ChartPatternSignal;
      if (type === 'ascending_triangle') {
        if (brkDir === -1) continue;
        signal = 'bullish';
      } else if (type === 'descending_triangle') {
        if (brkDir === 1) continue;
        signal = 'bearish';
      } else signal = brkDir === 1 ? 'bullish' : brkDir === -1 ? 'bearish' : 'neutral';
      const at = brk >= 0 ? brk : last;
      const priceTarget = signal === 'bullish' ? U(at) + height : signal === 'bearish' ? L(at) - height : null;
      const confidence = clamp01(0.4 + 0.2 * (1 - maxRes / TRIANGLE_FIT_TOLERANCE) + 0.1 * Math.min(1, (w - 4) / 2) + 0.3 * (brkDir !== 0 ? 1 : 0));
      out.push({
        lastPivot: last,
        p: {
          type,
          signal,
          confidence,
          startIndex: first,
          endIndex: brk >= 0 ? brk : last,
          priceTarget,
          description:
            `${type.replace(/_/g, ' ')} over bars ${first}–${last} (${w} pivots): resistance ${f2(U(first))}→${f2(U(last))}, support ${f2(L(first))}→${f2(L(last))}; ` +
            (brk >= 0 ? `broke ${brkDir > 0 ? 'up' : 'down'} at bar ${brk}` : 'no breakout yet') +
            (priceTarget === null ? '; no target until a breakout' : `; measured-move target ${f2(priceTarget)}`),
        },
      });
    }
  }
  return out;
}

/** Detect chart patterns in a close series (ascending by date). */
export function detectChartPatterns(close: ArrayLike<number>): ChartPatternsDetection {
  const n = close.length;
  const minBars = 2 * PIVOT_WINDOW + 3;
  if (n < minBars) {
    return {
      patterns: [],
      dominantPattern: null,
      pivots: [],
      description: `chart patterns need at least ${minBars} bars to find swing points, and ${CHART_PATTERNS_MIN_BARS} to rule out every type; ${n} available`,
    };
  }
  const pivots = findPivots(close);
  const all = [...doubles(close, pivots), ...headAndShoulders(close, pivots), ...triangles(close, pivots)];
  const better = (c: Candidate, cur: Candidate) =>
    c.p.endIndex !== cur.p.endIndex
      ? c.p.endIndex > cur.p.endIndex
      : c.lastPivot !== cur.lastPivot
        ? c.lastPivot > cur.lastPivot
        : c.p.confidence > cur.p.confidence;
  const byType = new Map<ChartPatternType, Candidate>();
  for (const c of all) {
    const cur = byType.get(c.p.type);
    if (!cur || better(c, cur)) byType.set(c.p.type, c);
  }
  const patterns = [...byType.values()].map((c) => c.p).sort((a, b) => b.confidence - a.confidence || b.endIndex - a.endIndex);
  const dominantPattern = patterns[0] ?? null;
  return {
    patterns,
    dominantPattern,
    pivots,
    description:
      dominantPattern === null
        ? `no chart pattern among ${pivots.length} swing points over ${n} closes` +
          (n < CHART_PATTERNS_MIN_BARS ? `; ruling out every type needs ${CHART_PATTERNS_MIN_BARS} closes` : '')
        : `${patterns.length} pattern(s) among ${pivots.length} swing points over ${n} closes; dominant: ${dominantPattern.type} (${dominantPattern.confidence.toFixed(2)})`,
  };
}
