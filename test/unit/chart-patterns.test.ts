// Chart patterns: each is detected on a constructed close series that has it
// (expected pivots, neckline, confirmation bar and measured-move target are
// worked out by hand from the waypoints) and NOT on a near miss.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CHART_PATTERNS_MIN_BARS, DOUBLE_PEAK_TOLERANCE, detectChartPatterns, findPivots } from '../../workers/chart-patterns.ts';
import { CHART_PATTERN_TYPES, type ChartPatternType, type ChartPattern } from '../../workers/contract.ts';

/** Piecewise-linear close series through [index, price] waypoints. */
function path(points: [number, number][]): Float64Array {
  const n = points[points.length - 1][0] + 1;
  const out = new Float64Array(n);
  for (let k = 0; k + 1 < points.length; k++) {
    const [i0, p0] = points[k];
    const [i1, p1] = points[k + 1];
    for (let i = i0; i <= i1; i++) out[i] = p0 + ((p1 - p0) * (i - i0)) / (i1 - i0);
  }
  return out;
}
const mirror = (a: Float64Array) => a.map((x) => 200 - x);
const find = (close: Float64Array, type: ChartPatternType): ChartPattern | undefined => detectChartPatterns(close).patterns.find((p) => p.type === type);
/** First index after `from` where pred holds, computed on the fixture independently of the module. */
const firstIdx = (a: Float64Array, from: number, pred: (v: number, i: number) => boolean) => {
  for (let i = from; i < a.length; i++) if (pred(a[i], i)) return i;
  return -1;
};

// The fixture each pattern type is detected on; near misses sit beside them in the tests.
// H1 (20, 100), trough (35, 92), H2 (50, 100.5), then down through the neckline.
const top = path([
  [0, 85],
  [20, 100],
  [35, 92],
  [50, 100.5],
  [60, 90],
  [66, 89],
]);
// LS (15, 100), T1 (28, 92), head (42, 108), T2 (56, 92.5), RS (70, 100.5), break down.
const hs = path([
  [0, 85],
  [15, 100],
  [28, 92],
  [42, 108],
  [56, 92.5],
  [70, 100.5],
  [82, 86],
  [88, 85],
]);
// flat resistance ~100, rising support 92 → 95 → 97.5, then an upside breakout
const asc = path([
  [0, 88],
  [12, 100],
  [24, 92],
  [36, 100],
  [48, 95],
  [60, 100.2],
  [72, 97.5],
  [80, 104],
  [86, 105],
]);
const desc = mirror(asc); // flat support ~100, falling resistance, downside breakout
// converging highs 110, 107, 104, 101 and lows 92, 95, 98 (the lines are in the triangle tests)
const symPts: [number, number][] = [
  [0, 100],
  [12, 110],
  [24, 92],
  [36, 107],
  [48, 95],
  [60, 104],
  [72, 98],
  [84, 101],
];
const symmetric = path([...symPts, [88, 100], [91, 100.2]]);

describe('pivots', () => {
  it('swing highs/lows need k = 5 bars on each side and alternate', () => {
    const c = path([
      [0, 10],
      [10, 20],
      [20, 12],
      [30, 18],
      [40, 11],
      [45, 13],
    ]);
    expect(findPivots(c)).toEqual([
      { index: 10, price: 20, kind: 'high' },
      { index: 20, price: 12, kind: 'low' },
      { index: 30, price: 18, kind: 'high' },
      { index: 40, price: 11, kind: 'low' }, // exactly 5 bars (41..45) after it
    ]);
    // one bar fewer at the end and bar 40 can no longer be confirmed as a pivot
    expect(findPivots(c.subarray(0, 45)).map((p) => p.index)).toEqual([10, 20, 30]);
  });

  it('merges consecutive same-kind pivots, keeping the more extreme', () => {
    // two highs (10: 20, 22: 21) separated by a dip too shallow to be a low pivot under k = 5
    const c = path([
      [0, 10],
      [10, 20],
      [13, 19],
      [16, 19.5],
      [22, 21],
      [32, 12],
      [38, 13],
    ]);
    const piv = findPivots(c);
    expect(piv.filter((p) => p.kind === 'high')).toEqual([{ index: 22, price: 21, kind: 'high' }]);
  });
});

describe('double top / double bottom', () => {
  it('double top: pivots, confirmation, measured-move target, confidence', () => {
    const p = find(top, 'double_top')!;
    expect(p).toBeDefined();
    expect(p.signal).toBe('bearish');
    expect(p.startIndex).toBe(20);
    expect(p.endIndex).toBe(firstIdx(top, 51, (v) => v < 92)); // 59
    expect(p.endIndex).toBe(59);
    expect(p.priceTarget).toBeCloseTo(92 - ((100 + 100.5) / 2 - 92), 10); // 83.75
    const diff = 0.5 / 100.5;
    expect(p.confidence).toBeCloseTo(0.4 + 0.3 * (1 - diff / DOUBLE_PEAK_TOLERANCE) + 0.3, 10);
  });

  it('double top near misses: peaks 6% apart; or a later close above the peaks', () => {
    expect(
      find(
        path([
          [0, 85],
          [20, 100],
          [35, 92],
          [50, 106],
          [60, 90],
          [66, 89],
        ]),
        'double_top',
      ),
    ).toBeUndefined();
    expect(
      find(
        path([
          [0, 85],
          [20, 100],
          [35, 92],
          [50, 100.5],
          [60, 95],
          [75, 110],
          [80, 109],
        ]),
        'double_top',
      ),
    ).toBeUndefined();
  });

  it('unconfirmed double top: lower confidence, endIndex at the second peak', () => {
    const c = path([
      [0, 85],
      [20, 100],
      [35, 92],
      [50, 100.5],
      [60, 95],
      [66, 95.5],
    ]);
    const p = find(c, 'double_top')!;
    expect(p.endIndex).toBe(50);
    expect(p.confidence).toBeLessThan(0.71);
  });

  it('double bottom (mirror image): bullish with the mirrored target', () => {
    const p = find(mirror(top), 'double_bottom')!;
    expect(p).toBeDefined();
    expect(p.signal).toBe('bullish');
    expect(p.priceTarget).toBeCloseTo(200 - 83.75, 10);
    expect(p.endIndex).toBe(59);
    expect(find(mirror(top), 'double_top')).toBeUndefined();
  });

  it('double bottom near miss: trough only 1% below the surrounding peak', () => {
    expect(
      find(
        path([
          [0, 115],
          [20, 100],
          [35, 101],
          [50, 100.2],
          [60, 110],
          [66, 111],
        ]),
        'double_bottom',
      ),
    ).toBeUndefined();
  });
});

describe('head and shoulders', () => {
  const neck = (i: number) => 92 + (0.5 * (i - 28)) / 28;

  it('head and shoulders: neckline through the troughs, target = neckline − height', () => {
    const p = find(hs, 'head_and_shoulders')!;
    expect(p).toBeDefined();
    expect(p.signal).toBe('bearish');
    expect(p.startIndex).toBe(15);
    const conf = firstIdx(hs, 71, (v, i) => v < neck(i));
    expect(p.endIndex).toBe(conf);
    const height = 108 - neck(42); // 15.75
    expect(p.priceTarget).toBeCloseTo(neck(conf) - height, 10);
    expect(p.confidence).toBeGreaterThan(0.9);
  });

  it('near miss: head only 0.3% above the higher shoulder', () => {
    const c = path([
      [0, 85],
      [15, 100],
      [28, 92],
      [42, 100.8],
      [56, 92.5],
      [70, 100.5],
      [82, 86],
      [88, 85],
    ]);
    expect(find(c, 'head_and_shoulders')).toBeUndefined();
    expect(find(mirror(c), 'inverse_head_and_shoulders')).toBeUndefined(); // and its mirror is no inverse H&S
  });

  it('near miss: shoulders 12% apart', () => {
    const c = path([
      [0, 85],
      [15, 100],
      [28, 92],
      [42, 120],
      [56, 92.5],
      [70, 112],
      [82, 86],
      [88, 85],
    ]);
    expect(find(c, 'head_and_shoulders')).toBeUndefined();
  });

  it('inverse head and shoulders (mirror image)', () => {
    const p = find(mirror(hs), 'inverse_head_and_shoulders')!;
    expect(p).toBeDefined();
    expect(p.signal).toBe('bullish');
    const conf = firstIdx(hs, 71, (v, i) => v < neck(i));
    expect(p.endIndex).toBe(conf);
    expect(p.priceTarget).toBeCloseTo(200 - (neck(conf) - (108 - neck(42))), 10);
    expect(find(mirror(hs), 'head_and_shoulders')).toBeUndefined();
    expect(find(hs, 'inverse_head_and_shoulders')).toBeUndefined();
  });
});

describe('triangles', () => {
  it('ascending triangle: bullish, target = resistance at breakout + first swing height', () => {
    const p = find(asc, 'ascending_triangle')!;
    expect(p).toBeDefined();
    expect(p.signal).toBe('bullish');
    expect(p.startIndex).toBe(12);
    // resistance: least-squares line through (12,100), (36,100), (60,100.2)
    const xs = [12, 36, 60];
    const ys = [100, 100, 100.2];
    const mx = 36;
    const my = ys.reduce((a, b) => a + b) / 3;
    const b = xs.reduce((s, x, k) => s + (x - mx) * (ys[k] - my), 0) / xs.reduce((s, x) => s + (x - mx) ** 2, 0);
    const line = (i: number) => my + b * (i - mx);
    const brk = firstIdx(asc, 73, (v, i) => v > line(i) * 1.015); // a close more than 1.5% above resistance
    expect(p.endIndex).toBe(brk);
    expect(p.priceTarget).toBeCloseTo(line(brk) + 8, 8);
    expect(p.confidence).toBeGreaterThan(0.9);
  });

  it('ascending near miss: resistance also rising (a rising wedge)', () => {
    const c = path([
      [0, 88],
      [12, 100],
      [24, 92],
      [36, 102],
      [48, 95],
      [60, 104],
      [72, 97.5],
      [80, 106],
      [86, 107],
    ]);
    expect(find(c, 'ascending_triangle')).toBeUndefined();
  });

  it('ascending triangle broken downward is invalidated', () => {
    const c = path([
      [0, 88],
      [12, 100],
      [24, 92],
      [36, 100],
      [48, 95],
      [60, 100.2],
      [72, 97.5],
      [80, 90],
      [86, 89],
    ]);
    expect(find(c, 'ascending_triangle')).toBeUndefined();
  });

  it('descending triangle: bearish', () => {
    const p = find(desc, 'descending_triangle')!;
    expect(p).toBeDefined();
    expect(p.signal).toBe('bearish');
    expect(p.priceTarget).toBeCloseTo(200 - find(asc, 'ascending_triangle')!.priceTarget!, 8);
    expect(find(asc, 'descending_triangle')).toBeUndefined();
  });

  it('descending near miss: support falling too', () => {
    const c = mirror(
      path([
        [0, 88],
        [12, 100],
        [24, 92],
        [36, 102],
        [48, 95],
        [60, 104],
        [72, 97.5],
        [80, 106],
        [86, 107],
      ]),
    );
    expect(find(c, 'descending_triangle')).toBeUndefined();
  });

  // converging exactly on two lines: resistance U(i) = 110 − 0.125·(i − 12)
  // through highs 110, 107, 104, 101 (bars 12, 36, 60, 84); support
  // L(i) = 92 + 0.125·(i − 24) through lows 92, 95, 98 (bars 24, 48, 72).
  const U = (i: number) => 110 - 0.125 * (i - 12);
  const L = (i: number) => 92 + 0.125 * (i - 24);

  it('symmetric triangle before a breakout: neutral, no target', () => {
    const p = find(symmetric, 'symmetric_triangle')!;
    expect(p).toBeDefined();
    expect(p.signal).toBe('neutral');
    expect(p.priceTarget).toBeNull();
    expect(p.endIndex).toBe(84); // the last pivot
    expect(p.startIndex).toBe(24); // the most recent 6-pivot run (24..84) wins over 12..72
  });

  it('symmetric triangle broken downward: bearish, target = support at breakout − height of the first swing', () => {
    const c = path([...symPts, [92, 90], [98, 89]]);
    const p = find(c, 'symmetric_triangle')!;
    expect(p.signal).toBe('bearish');
    const brk = firstIdx(c, 85, (v, i) => v < L(i) * 0.985);
    expect(p.endIndex).toBe(brk);
    // run 24..84 starts with the swing L24 (92) → H36 (107): height 15
    expect(p.priceTarget).toBeCloseTo(L(brk) - 15, 8);
    expect(U(84)).toBe(101);
  });

  it('symmetric near miss: an expanding (broadening) formation', () => {
    const c = path([
      [0, 100],
      [12, 104.5],
      [24, 97.5],
      [36, 107],
      [48, 95],
      [60, 110],
      [72, 92],
      [78, 100],
      [84, 100.5],
    ]);
    expect(find(c, 'symmetric_triangle')).toBeUndefined();
  });

  it('a V-shaped crash and rebound is not a triangle (lines may move at most 10%)', () => {
    const c = path([
      [0, 100],
      [12, 130],
      [24, 80],
      [36, 110],
      [48, 95],
      [54, 100],
    ]);
    const r = detectChartPatterns(c);
    expect(r.patterns.filter((p) => p.type.endsWith('triangle'))).toEqual([]);
  });
});

describe('detection result', () => {
  it('every type is exercised by a fixture above', () => {
    const fixtures: [ChartPatternType, Float64Array][] = [
      ['double_top', top],
      ['double_bottom', mirror(top)],
      ['head_and_shoulders', hs],
      ['inverse_head_and_shoulders', mirror(hs)],
      ['ascending_triangle', asc],
      ['descending_triangle', desc],
      ['symmetric_triangle', symmetric],
    ];
    expect(new Set(fixtures.map(([type]) => type))).toEqual(new Set(CHART_PATTERN_TYPES));
    for (const [type, close] of fixtures) expect(find(close, type), type).toBeDefined();
  });

  it('dominantPattern is the highest-confidence pattern; null when none', () => {
    const r = detectChartPatterns(hs);
    expect(r.dominantPattern).toEqual(r.patterns.reduce((a, b) => (b.confidence > a.confidence ? b : a)));
    const straight = path([
      [0, 100],
      [60, 130],
    ]);
    expect(detectChartPatterns(straight)).toMatchObject({ patterns: [], dominantPattern: null });
    expect(detectChartPatterns(new Float64Array(5))).toMatchObject({ patterns: [], dominantPattern: null });
  });

  it('the fewest closes each kind completes in: a triangle 26 (CHART_PATTERNS_MIN_BARS, so finding none means none from there), a head and shoulders 23, a double top 21; one close fewer and it cannot', () => {
    // Each swing point needs 5 closes on either side. Ascending triangle: highs 110 at 5 and 15, lows 100 at 10
    // and 104 at 20 (a 15-bar span), then up to 109 without a breakout.
    const triangle = path([
      [0, 100],
      [5, 110],
      [10, 100],
      [15, 110],
      [20, 104],
      [25, 109],
    ]);
    // Head and shoulders: the head (108, bar 11) is above both shoulders (100 at 5, 100.5 at 17), so it must be
    // more than 5 bars from each; the closes beside it stay below the shoulders.
    const hsCloses = [85, 88, 91, 94, 97, 100, 97, 94.5, 92, 95, 99, 108, 100, 96, 92.5, 95, 99, 100.5, 98, 96, 94, 93, 92.6];
    // Double top: peaks 100 at 5 and 100.5 at 15 (10 bars apart), trough 92 at 10.
    const double = path([
      [0, 85],
      [5, 100],
      [10, 92],
      [15, 100.5],
      [20, 95],
    ]);
    expect(CHART_PATTERNS_MIN_BARS).toBe(26);
    for (const [type, close, n] of [
      ['ascending_triangle', triangle, 26],
      ['head_and_shoulders', Float64Array.from(hsCloses), 23],
      ['double_top', double, 21],
    ] as const) {
      expect(close.length, type).toBe(n);
      expect(find(close, type), `${type} over ${n} closes`).toBeDefined();
      expect(find(close.slice(0, n - 1), type), `${type} over ${n - 1} closes`).toBeUndefined();
    }
  });

  it('real S&P 500 windows: well-formed patterns (signal matches type, target on the right side)', () => {
    const close = Float64Array.from(
      readFileSync(new URL('../../server/demo/data/sp500_daily_2000_2020.csv', import.meta.url), 'utf8')
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => Number(l.split(',')[4])),
    );
    const seen = new Set<string>();
    for (let end = 140; end <= close.length; end += 20) {
      const w = close.subarray(end - 140, end);
      const r = detectChartPatterns(w);
      for (const pat of r.patterns) {
        seen.add(pat.type);
        expect(pat.confidence).toBeGreaterThanOrEqual(0);
        expect(pat.confidence).toBeLessThanOrEqual(1);
        expect(pat.startIndex).toBeLessThan(pat.endIndex);
        expect(pat.endIndex).toBeLessThan(140);
        if (pat.signal === 'neutral') expect(pat.priceTarget).toBeNull();
        else expect(Number.isFinite(pat.priceTarget)).toBe(true);
        if (['double_top', 'head_and_shoulders', 'descending_triangle'].includes(pat.type)) expect(pat.signal).toBe('bearish');
        if (['double_bottom', 'inverse_head_and_shoulders', 'ascending_triangle'].includes(pat.type)) expect(pat.signal).toBe('bullish');
      }
      if (r.dominantPattern) expect(r.dominantPattern.confidence).toBe(Math.max(...r.patterns.map((x) => x.confidence)));
    }
    expect(new Set(seen)).toEqual(new Set(CHART_PATTERN_TYPES));
  });
});
