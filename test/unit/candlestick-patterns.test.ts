// Candlestick patterns: each is detected on a hand-built fixture that has it
// and NOT on a near-miss fixture that breaks one of its documented rules.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CANDLESTICK_SEARCH_MIN_BARS, detectCandlestickPatterns, type CandleBars } from '../../workers/candlestick-patterns.ts';
import { CANDLESTICK_PATTERNS, type CandlestickPatternName } from '../../workers/contract.ts';

type Ohlc = [open: number, high: number, low: number, close: number];

/**
 * Eight context candles ending near 100, then the pattern's candles.
 * down: closes 116 → 102 falling 2 a bar (5-bar move about −10%, a full-strength trend);
 * up: 84 → 98 rising; flat: alternating 100 / 100.05.
 */
interface Bars extends CandleBars {
  open: Float64Array;
  high: Float64Array;
  low: Float64Array;
  close: Float64Array;
}

function fixture(trend: 'down' | 'up' | 'flat', pattern: Ohlc[]): Bars {
  const ctx: Ohlc[] = [];
  for (let k = 0; k < 8; k++) {
    const c = trend === 'down' ? 116 - 2 * k : trend === 'up' ? 84 + 2 * k : k % 2 ? 100.05 : 100;
    const o = trend === 'down' ? c + 2 : trend === 'up' ? c - 2 : k % 2 ? 100 : 100.05;
    ctx.push([o, Math.max(o, c) + 0.2, Math.min(o, c) - 0.2, c]);
  }
  const all = [...ctx, ...pattern];
  return {
    open: Float64Array.from(all.map((x) => x[0])),
    high: Float64Array.from(all.map((x) => x[1])),
    low: Float64Array.from(all.map((x) => x[2])),
    close: Float64Array.from(all.map((x) => x[3])),
  };
}

const names = (b: CandleBars) => detectCandlestickPatterns(b).map((p) => p.name);

interface Case {
  name: CandlestickPatternName;
  has: CandleBars;
  lacks: CandleBars;
  why: string;
}

const cases: Case[] = [
  {
    name: 'doji',
    has: fixture('flat', [[100, 101, 99, 100.02]]),
    lacks: fixture('flat', [[100, 101, 99, 100.5]]),
    why: 'body 0.5 is 25% of the range (> 10%)',
  },
  {
    name: 'hammer',
    has: fixture('down', [[99.8, 100.3, 98, 100.2]]),
    lacks: fixture('down', [[99.8, 100.3, 99.3, 100.2]]),
    why: 'lower shadow 0.5 is not twice the 0.4 body',
  },
  {
    name: 'hanging_man',
    has: fixture('up', [[99.8, 100.3, 98, 100.2]]),
    lacks: fixture('flat', [[99.8, 100.3, 98, 100.2]]),
    why: 'same candle without a prior up-trend',
  },
  {
    name: 'inverted_hammer',
    has: fixture('down', [[100, 102.2, 99.9, 100.4]]),
    lacks: fixture('down', [[100, 102.2, 99.2, 100.4]]),
    why: 'lower shadow 0.8 exceeds 15% of the range',
  },
  {
    name: 'shooting_star',
    has: fixture('up', [[100, 102.2, 99.9, 100.4]]),
    lacks: fixture('down', [[100, 102.2, 99.9, 100.4]]),
    why: 'after a down-trend the same shape is an inverted hammer',
  },
  {
    name: 'bullish_engulfing',
    has: fixture('down', [
      [101, 101.2, 99.8, 100],
      [99.8, 101.6, 99.7, 101.5],
    ]),
    lacks: fixture('down', [
      [101, 101.2, 99.8, 100],
      [99.8, 101.0, 99.7, 100.8],
    ]),
    why: 'second body does not reach the first open',
  },
  {
    name: 'bearish_engulfing',
    has: fixture('up', [
      [100, 101.2, 99.8, 101],
      [101.2, 101.3, 99.4, 99.5],
    ]),
    lacks: fixture('up', [
      [100, 101.2, 99.8, 101],
      [100.9, 101, 99.4, 99.5],
    ]),
    why: 'second open 100.9 is below the first close 101',
  },
  {
    name: 'piercing_line',
    has: fixture('down', [
      [102, 102.2, 99.8, 100],
      [99.5, 101.5, 99.4, 101.4],
    ]),
    lacks: fixture('down', [
      [102, 102.2, 99.8, 100],
      [99.5, 100.8, 99.4, 100.7],
    ]),
    why: 'second close 100.7 is below the midpoint 101 of the first body',
  },
  {
    name: 'dark_cloud_cover',
    has: fixture('up', [
      [100, 102.2, 99.8, 102],
      [102.5, 102.6, 100.5, 100.6],
    ]),
    lacks: fixture('up', [
      [100, 102.2, 99.8, 102],
      [102.5, 102.6, 101.3, 101.4],
    ]),
    why: 'second close 101.4 is above the midpoint 101',
  },
  {
    name: 'bullish_harami',
    has: fixture('down', [
      [102, 102.2, 98.8, 99],
      [100, 101, 99.8, 100.8],
    ]),
    lacks: fixture('down', [
      [102, 102.2, 98.8, 99],
      [100, 102.6, 99.8, 102.5],
    ]),
    why: 'second body extends above the first body',
  },
  {
    name: 'bearish_harami',
    has: fixture('up', [
      [99, 102.2, 98.8, 102],
      [101, 101.2, 99.9, 100.2],
    ]),
    lacks: fixture('up', [
      [99, 102.2, 98.8, 102],
      [101, 101.2, 98.4, 98.5],
    ]),
    why: 'second body extends below the first body',
  },
  {
    name: 'morning_star',
    has: fixture('down', [
      [103, 103.2, 99.8, 100],
      [99.6, 100, 99.3, 99.8],
      [100, 102.3, 99.9, 102.2],
    ]),
    lacks: fixture('down', [
      [103, 103.2, 99.8, 100],
      [99.6, 100, 99.3, 99.8],
      [100, 101.1, 99.9, 101],
    ]),
    why: 'third close 101 does not pass the midpoint 101.5 of the first body',
  },
  {
    name: 'evening_star',
    has: fixture('up', [
      [100, 103.2, 99.8, 103],
      [103.2, 103.7, 103, 103.4],
      [103, 103.1, 100.7, 100.8],
    ]),
    lacks: fixture('up', [
      [100, 103.2, 99.8, 103],
      [102.6, 103.7, 102.5, 102.8],
      [103, 103.1, 100.7, 100.8],
    ]),
    why: 'the star body (102.6–102.8) sits inside the first body, not at or above its close',
  },
  {
    name: 'three_white_soldiers',
    has: fixture('down', [
      [100, 101.6, 99.9, 101.5],
      [101, 102.7, 100.9, 102.6],
      [102.2, 103.9, 102.1, 103.8],
    ]),
    lacks: fixture('down', [
      [100, 101.6, 99.9, 101.5],
      [101, 102.7, 100.9, 102.6],
      [103, 104.6, 102.9, 104.5],
    ]),
    why: 'third candle opens above the second close (outside its body)',
  },
  {
    name: 'three_black_crows',
    has: fixture('up', [
      [100, 100.1, 98.4, 98.5],
      [99, 99.1, 97.4, 97.5],
      [97.8, 97.9, 96.1, 96.2],
    ]),
    lacks: fixture('up', [
      [100, 100.1, 98.4, 98.5],
      [99, 99.1, 97.4, 97.5],
      [97.8, 97.9, 96.1, 97.0],
    ]),
    why: 'third candle body 0.8 is under half its 1.8 range',
  },
];

describe('each pattern: detected on its fixture, not on a near miss', () => {
  it('covers every pattern the module defines', () => {
    expect(new Set(cases.map((c) => c.name))).toEqual(new Set(Object.keys(CANDLESTICK_PATTERNS)));
  });
  for (const c of cases) {
    it(`${c.name}`, () => {
      const found = detectCandlestickPatterns(c.has);
      const hit = found.find((p) => p.name === c.name);
      expect(hit, `${c.name} not found; found ${found.map((p) => p.name).join(',')}`).toBeDefined();
      expect(hit!.signal).toBe(CANDLESTICK_PATTERNS[c.name]);
      expect(hit!.endIndex).toBe(c.has.close.length - 1);
      expect(hit!.confidence).toBeGreaterThanOrEqual(0.5);
      expect(hit!.confidence).toBeLessThanOrEqual(1);
      expect(names(c.lacks), c.why).not.toContain(c.name);
    });
  }
});

describe('documented confidence rule: 0.5 + 0.3·shape + 0.2·trend', () => {
  it('hammer after a full-strength down-trend', () => {
    // lower shadow 1.8 of range 2.3 → q = (1.8/2.3 − 0.5)/0.4; 5-bar move 102/112 − 1 ≈ −8.9% → t = 1
    const hit = detectCandlestickPatterns(cases.find((c) => c.name === 'hammer')!.has).find((p) => p.name === 'hammer')!;
    const q = (1.8 / 2.3 - 0.5) / 0.4;
    expect(hit.confidence).toBeCloseTo(0.5 + 0.3 * q + 0.2, 10);
  });

  it('a perfect doji with no trend scores 0.8', () => {
    const hit = detectCandlestickPatterns(fixture('flat', [[100, 101, 99, 100]])).find((p) => p.name === 'doji')!;
    expect(hit.confidence).toBeCloseTo(0.8, 12);
  });

  it('piercing line: q from the penetration into the first body', () => {
    // p = (101.4 − 100)/(102 − 100) = 0.7 → q = 0.4; down-trend full → t = 1
    const hit = detectCandlestickPatterns(cases.find((c) => c.name === 'piercing_line')!.has).find((p) => p.name === 'piercing_line')!;
    expect(hit.confidence).toBeCloseTo(0.5 + 0.3 * 0.4 + 0.2, 10);
    expect(hit.startIndex).toBe(8);
  });

  it('a reversal pattern without the trend it reverses gets no trend bonus', () => {
    const bars = fixture('up', [
      [101, 101.2, 99.8, 100],
      [99.8, 101.6, 99.7, 101.5],
    ]);
    const hit = detectCandlestickPatterns(bars).find((p) => p.name === 'bullish_engulfing')!;
    // q = clamp(1.7/1 − 1) = 0.7, t = 0
    expect(hit.confidence).toBeCloseTo(0.5 + 0.3 * 0.7, 10);
  });
});

describe('robustness', () => {
  it('an ordinary candle in a flat market matches nothing', () => {
    expect(names(fixture('flat', [[100, 101.3, 99.7, 101]]))).toEqual([]);
  });

  it('missing open/high/low means no pattern, not a guessed one', () => {
    const b = fixture('down', [[99.8, 100.3, 98, 100.2]]);
    (b.open as Float64Array)[8] = NaN;
    expect(names(b)).toEqual([]);
  });

  it('too little context: hammer/hanging man need 6 bars before the candle, so saying none completes needs 7 (CANDLESTICK_SEARCH_MIN_BARS)', () => {
    expect(CANDLESTICK_SEARCH_MIN_BARS).toBe(6 + 1);
    // The fixture has 8 context bars; keeping the last `context` of them before the candle.
    const withContext = (b: Bars, context: number): CandleBars => {
      const from = b.close.length - 1 - context;
      return { open: b.open.slice(from), high: b.high.slice(from), low: b.low.slice(from), close: b.close.slice(from) };
    };
    for (const [trend, name] of [
      ['down', 'hammer'],
      ['up', 'hanging_man'],
    ] as const) {
      const b = fixture(trend, [[99.8, 100.3, 98, 100.2]]);
      expect(names(withContext(b, 6)), `${name} with 6 bars before it`).toContain(name);
      expect(names(withContext(b, 5)), `${name} with 5 bars before it`).not.toContain(name);
    }
  });

  it('real S&P 500 bars: every detection is well formed', () => {
    const rows = readFileSync(new URL('../../server/demo/data/sp500_daily_2000_2020.csv', import.meta.url), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split(',').map(Number));
    const b: CandleBars = {
      open: Float64Array.from(rows.map((r) => r[1])),
      high: Float64Array.from(rows.map((r) => r[2])),
      low: Float64Array.from(rows.map((r) => r[3])),
      close: Float64Array.from(rows.map((r) => r[4])),
    };
    const seen = new Set<string>();
    for (let i = 0; i < b.close.length; i++) {
      for (const p of detectCandlestickPatterns(b, i)) {
        seen.add(p.name);
        expect(p.confidence).toBeGreaterThanOrEqual(0);
        expect(p.confidence).toBeLessThanOrEqual(1);
        expect(p.endIndex).toBe(i);
        expect(p.startIndex).toBeLessThanOrEqual(i);
        expect(p.startIndex).toBeGreaterThanOrEqual(i - 2);
      }
    }
    // twenty years of daily bars contain every one of these patterns at least once
    expect([...seen].sort()).toEqual(Object.keys(CANDLESTICK_PATTERNS).sort());
  });
});
