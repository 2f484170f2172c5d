import { describe, expect, it } from 'vitest';
import { mulberry32 as prng } from '../../server/demo/synthetic-intraday.ts';
import { dailyBarsJson } from '../../server/prices/daily-json.ts';
import { packDaily, type PackedBar } from '../support/packed-daily.ts';

// The daily JSON answers' bars, written from packed series, against
// JSON.stringify of the same bars: the bytes the spec's JSON of each bar is,
// keys in the spec's order, numbers as JavaScript writes them, absent values
// null, asOf cut to its millisecond.

const DAY_MS = 86_400_000;
const ID = '00000000-0000-4000-8000-000000000001';

const dateOf = (i: number) => new Date(Date.UTC(2015, 0, 1) + i * DAY_MS).toISOString().slice(0, 10);

const expectedJson = (bars: PackedBar[]) =>
  bars
    .map((b) =>
      JSON.stringify({
        barDate: b.date,
        openPrice: b.open,
        highPrice: b.high,
        lowPrice: b.low,
        closePrice: b.close,
        volume: b.volume,
        quoteCurrency: b.currency,
        quoteUnit: b.unit,
        stale: b.stale,
        asOf: new Date(b.asOfMs).toISOString(),
        source: b.source,
      }),
    )
    .join(',');

const bar = (i: number, values: Partial<PackedBar> = {}): PackedBar => ({
  date: dateOf(i),
  open: 10,
  high: 11,
  low: 9,
  close: 10.5,
  volume: 1000,
  currency: 'USD',
  unit: 'per share',
  stale: false,
  source: 'vendor',
  asOfMs: Date.UTC(2026, 0, 2, 21, 0, 0, 250),
  ...values,
});

/**
 * Doubles of every kind a series may hold: prices in cents, values rounded to
 * 13 and to 15 significant digits (as adjusted values are), doubles with 16
 * and 17, integers, and the edges of the range written as plain decimals.
 */
function numbers(): number[] {
  const random = prng(20261130);
  const magnitude = (from: number, to: number) => 10 ** (from + random() * (to - from));
  const out: number[] = [];
  for (let i = 0; i < 4000; i++) {
    out.push(Math.round(magnitude(-2, 7) * 100) / 100);
    out.push(Number(magnitude(-5, 16).toPrecision(13)));
    out.push(Number(magnitude(-5, 16).toPrecision(15)));
    out.push(magnitude(-6, 17));
    out.push(Math.round(magnitude(0, 12)));
  }
  out.push(
    ...[1e-4, 1.0000000000001e-4, 9.999999999999999e-5, 1e-5, 1.5e-7, 5e-324, 2.2250738585072014e-308],
    ...[1e14, 99999999999999.98, 999999999999999, 999999999999999.9, 1e15, 1.0000000000001e15, 123456789012345, 1234567890123456],
    ...[1e21, 1.7976931348623157e308, 0.1 + 0.2, 0.3, 1 / 3, 2 / 3, 100, 0.5, 0.05, 24.35, 1_000_000, 4_294_967_296],
    ...[-24.35, -1e-5, -0.1 + -0.2, -1234567.891],
  );
  return out;
}

describe('daily JSON from a packed series', () => {
  it('writes every number as JSON.stringify does', () => {
    const values = numbers();
    const bars: PackedBar[] = [];
    for (let i = 0; i + 5 <= values.length; i += 5) {
      const [open, high, low, close, volume] = values.slice(i, i + 5);
      bars.push(bar(bars.length, { open, high, low, close, volume }));
    }
    expect(bars.length).toBeGreaterThan(4000);
    expect(dailyBarsJson(ID, packDaily(bars)).toString()).toBe(expectedJson(bars));
  });

  it('writes zero, negative zero, absent and infinite values', () => {
    const bars = [bar(0, { open: 0, high: -0, low: null, volume: null }), bar(1, { open: null, high: Infinity, low: -Infinity, close: 1, volume: 0 })];
    const json = dailyBarsJson(ID, packDaily(bars)).toString();
    expect(json).toBe(expectedJson(bars));
    expect(json).toContain('"openPrice":0,"highPrice":0,"lowPrice":null');
    expect(json).toContain('"openPrice":null,"highPrice":null,"lowPrice":null,"closePrice":1,"volume":0');
  });

  it('writes texts as JSON strings, and the bars in date order whatever order they were packed in', () => {
    const texts = ['plain', 'with "quotes"', 'back\\slash', 'tab\tand\nnewline', 'control \u0001', 'Zürich €', 'emoji 📈', ''];
    const bars = Array.from({ length: 40 }, (_, i) =>
      bar(i, {
        currency: i < 20 ? 'USD' : 'CHF',
        unit: texts[i % texts.length],
        source: texts[(i * 3) % texts.length] || 'vendor',
        stale: i % 3 === 0,
        // Before 1970, before 2000 and after, some on the same instant as the bar before.
        asOfMs: Date.UTC(1960 + Math.floor(i / 2) * 3, 5, 30, 23, 59, 59, 999),
      }),
    );
    const reversed = [...bars.keys()].reverse();
    expect(dailyBarsJson(ID, packDaily(bars, reversed)).toString()).toBe(expectedJson(bars));
  });

  it('writes one bar, and a series whose texts are the same throughout', () => {
    expect(dailyBarsJson(ID, packDaily([bar(0)])).toString()).toBe(expectedJson([bar(0)]));
    const same = Array.from({ length: 300 }, (_, i) => bar(i, { close: 10 + i / 100 }));
    expect(dailyBarsJson(ID, packDaily(same)).toString()).toBe(expectedJson(same));
  });
});
