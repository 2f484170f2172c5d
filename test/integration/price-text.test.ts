import { createHash } from 'node:crypto';
import http from 'node:http';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoActionCoverage, demoCorporateActions, demoDailyBars, demoDailySources, demoInstruments } from '../../server/demo/catalog.ts';
import { corporateActionIngest, coverageCheckIngest } from '../../server/actions/ingest.ts';
import { batchesOf } from '../../server/ingest/body.ts';
import { ingestRows } from '../../server/ingest/service.ts';
import { instrumentIngest } from '../../server/instruments/ingest.ts';
import { adjustSeries, NOT_VENDOR_ADJUSTED } from '../../server/price-history/adjustment.ts';
import { planAdjustments } from '../../server/price-history/adjustment-plan.ts';
import { dayNumber } from '../../server/core/day-numbers.ts';
import { dailyBarIngest } from '../../server/prices/ingest.ts';
import { adjusted, roundedValue, roundingScale } from '../../server/prices/adjusted-values-sql.ts';
import { jsonNumber } from '../../server/prices/bar-text-sql.ts';
import { roundSignificant as servedRounding } from '../../server/core/significant.ts';
import { adjustedValue } from '../../server/prices/adjusted-values.ts';
import { productsToRound } from '../support/rounding-cases.ts';
import { SPLIT_INTRADAY_BARS } from '../../server/prices/service.ts';
import { fillRollupDays, fillRollupText } from '../../server/prices/repository.ts';
import { startService, type Service } from './harness.ts';
import { createInstrument, dailyBar, ingest, uniqueSymbol, weekdays } from './fixtures.ts';

// PostgreSQL writes the price reads' JSON and CSV (prices/bar-text-sql.ts, prices/adjusted-values-sql.ts).
// These tests hold the JSON to what JavaScript writes from the same numbers:
// each value through JSON.stringify, each adjusted value as adjustSeries
// multiplies it, each instant through toISOString; compared as text, digit
// for digit. Then the CSV to the JSON, and gzip and br to the plain bytes.

let svc: Service;
let key: string;
beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['prices:read']);
});
afterAll(() => svc.stop());

// A deterministic generator, so a failure reproduces.
function prng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1_664_525 + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

/** A double from 64 random bits: every exponent, sign and mantissa. */
function randomDouble(rand: () => number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setUint32(0, Math.floor(rand() * 2 ** 32));
  view.setUint32(4, Math.floor(rand() * 2 ** 32));
  return view.getFloat64(0);
}

const next = (x: number, direction: 1 | -1) => {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  view.setBigUint64(0, view.getBigUint64(0) + BigInt(direction * (x < 0 ? -1 : 1)));
  return view.getFloat64(0);
};

describe('numbers as PostgreSQL writes them into responses', () => {
  it('when a service session runs a statement, then it writes float8 as the shortest exact text and compiles no plan (jit off, whatever the server default)', async () => {
    // Every pool is made by createSql (db/sql.ts); the server's own defaults are extra_float_digits 1 and jit on.
    const [session] = await svc.sql<{ jit: string; digits: string }[]>`select current_setting('jit') as jit, current_setting('extra_float_digits') as digits`;
    expect(session).toEqual({ jit: 'off', digits: '1' });
  });

  it('when doubles of every magnitude, the format boundaries and their neighbours are written, then the text is JSON.stringify of each', async () => {
    const rand = prng(16);
    const values: number[] = [0, -0, 1, -1, 0.1 + 0.2, 2.7270000000000003, 5e-324, -5e-324, Number.MAX_VALUE, -Number.MAX_VALUE, 2 ** 53, 2 ** 53 + 2];
    for (const boundary of [1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1, 1e14, 1e15, 1e16, 1e20, 1e21, 1e22, 2.2250738585072014e-308]) {
      for (const x of [boundary, next(boundary, 1), next(boundary, -1)]) values.push(x, -x);
    }
    for (let i = 0; i < 40_000; i++) values.push(randomDouble(rand));
    // Prices and volumes as sources quote them, times the factors an adjustment multiplies in.
    for (let i = 0; i < 20_000; i++) {
      const decimals = Math.floor(rand() * 7);
      const price = Math.round(rand() * 10 ** (2 + Math.floor(rand() * 6))) / 10 ** decimals;
      values.push(price, price * (1 - rand() * 0.05), price / [2, 3, 7, 10, 1.5][i % 5], Math.round(rand() * 1e9) * [1, 2, 1 / 3, 10, 0.1][i % 5]);
    }
    // Each double goes to PostgreSQL as its shortest text, which reads back as the same double ('-0' keeps its sign).
    const texts = values.map((x) => (Object.is(x, -0) ? '-0' : String(x)));
    const sql = svc.sql;
    const rows = await sql<{ json: string }[]>`
      select ${jsonNumber(sql, sql`v.x`)} as json
      from unnest(${texts}::float8[]) with ordinality as v (x, i)
      order by v.i
    `;
    const mismatches = values.map((x, i) => [texts[i], rows[i].json, JSON.stringify(x)]).filter(([, got, want]) => got !== want);
    expect(mismatches.slice(0, 10)).toEqual([]);
    expect(rows).toHaveLength(values.length);
    // Not vacuous: the values reach every way of writing a number.
    const written = rows.map((r) => r.json);
    expect(written.filter((t) => /e\+/.test(t)).length).toBeGreaterThan(1000);
    expect(written.filter((t) => /e-/.test(t)).length).toBeGreaterThan(1000);
    expect(written.filter((t) => /^-?\d{16,21}$/.test(t)).length).toBeGreaterThan(0);
    expect(written.filter((t) => /^-?0\.0000\d/.test(t)).length).toBeGreaterThan(0);
    expect(written).toContain('null'); // ±Infinity and NaN among the random bits
  });

  it('when IEEE products leave the double range, then the service writes what JavaScript computes (null beyond it, 0 below), never an error', async () => {
    const cases: [number, number][] = [
      [1e300, 1e10],
      [-1e300, 1e10],
      [1e-300, 1e-30],
      [1e-300, -1e-30],
      [1.7976931348623157e308, 1.0000000000000002],
      [5e-324, 0.5],
      [5e-324, 0.5000000000000001],
      [1e-160, 1e-160],
      [1e160, 1e160],
      [3, 1e-320],
    ];
    const sql = svc.sql;
    const rows = await sql<{ json: string }[]>`
      select ${jsonNumber(sql, sql`ieee_product(v.a, v.b)`)} as json
      from unnest(${cases.map(([a]) => String(a))}::float8[], ${cases.map(([, b]) => String(b))}::float8[]) with ordinality as v (a, b, i)
      order by v.i
    `;
    expect(rows.map((r) => r.json)).toEqual(cases.map(([a, b]) => JSON.stringify(a * b)));
  });

  // ieee_product catches the range error in a PL/pgSQL exception block, a
  // subtransaction, which no process of a parallel query may start: a
  // statement calling it must not be planned in parallel (sql/014).
  it('when the planner runs a read in parallel, then an out-of-range product is still computed, not an error', async () => {
    const rows = await svc.sql.begin(async (tx) => {
      await tx`set local force_parallel_mode = on`;
      await tx`set local parallel_setup_cost = 0`;
      await tx`set local parallel_tuple_cost = 0`;
      return tx<{ json: string }[]>`
        select ${jsonNumber(svc.sql, svc.sql`ieee_product(v.a, 1e10::float8)`)} as json
        from (select 1e299::float8 * g as a from generate_series(1, 3) g) v
      `;
    });
    expect(rows.map((r) => r.json)).toEqual(['null', 'null', 'null']);
  });
});

interface StoredBar {
  bar_date: string;
  open_price: number | null;
  high_price: number | null;
  low_price: number | null;
  close_price: number;
  volume: number | null;
  quote_currency: string;
  quote_unit: string;
  stale: boolean;
  as_of: Date;
  source: string;
  reflects_actions_through: string | null;
}

/** The bars of a daily read as JavaScript writes them: the stored rows, adjusted by adjustSeries with the read's plan, each field through JSON.stringify. */
async function expectedDailyJson(id: string, from: string, to: string, adjusted: boolean): Promise<string> {
  const sql = svc.sql;
  const rows = await sql<StoredBar[]>`
    select bar_date, open_price, high_price, low_price, close_price, volume, quote_currency, quote_unit, stale, as_of, source, reflects_actions_through
    from daily_bars
    where instrument_id = ${id} and bar_date between ${from}::date and ${to}::date
    order by bar_date
  `;
  const plans = await planAdjustments(sql, [id], { from, to, adjusted, includeBackfilled: false });
  const column = (f: (r: StoredBar) => number | null) => Float64Array.from(rows, (r) => f(r) ?? NaN);
  const [open, high, low, close, volume] = [
    column((r) => r.open_price),
    column((r) => r.high_price),
    column((r) => r.low_price),
    column((r) => r.close_price),
    column((r) => r.volume),
  ];
  if (adjusted) {
    const days = Int32Array.from(rows, (r) => dayNumber(r.bar_date));
    const reflects = Int32Array.from(rows, (r) => (r.reflects_actions_through === null ? NOT_VENDOR_ADJUSTED : dayNumber(r.reflects_actions_through)));
    const stored = [open, high, low, close, volume].map((c) => c.slice());
    adjustSeries(plans.get(id)!.factors, days, reflects, [open, high, low, close], volume);
    // A value its multiplier changed is rounded; one it left alone is as stored.
    [open, high, low, close, volume].forEach((c, k) => c.forEach((x, i) => (c[i] = Object.is(x, stored[k][i]) ? x : roundSignificant(x))));
  }
  const n = (x: number) => JSON.stringify(Number.isNaN(x) ? null : x);
  const bars = rows.map(
    (r, i) =>
      `{"barDate":"${r.bar_date}","openPrice":${n(open[i])},"highPrice":${n(high[i])},"lowPrice":${n(low[i])},"closePrice":${n(close[i])},` +
      `"volume":${n(volume[i])},"quoteCurrency":${JSON.stringify(r.quote_currency)},"quoteUnit":${JSON.stringify(r.quote_unit)},"stale":${r.stale},` +
      `"asOf":"${r.as_of.toISOString()}","source":${JSON.stringify(r.source)}}`,
  );
  return `[${bars.join(',')}]`;
}

/**
 * x rounded to 13 significant digits as docs/api.md states the rule: its
 * shortest decimal (toExponential without digits) cut to 13 digits, rounded
 * half away from zero, read back as a double.
 */
function roundSignificant(x: number): number {
  if (x === 0 || !Number.isFinite(x)) return x;
  const [mantissa, exponent] = Math.abs(x).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  if (digits.length <= 13) return x;
  const head = BigInt(digits.slice(0, 13)) + (digits[13] >= '5' ? 1n : 0n);
  return Math.sign(x) * Number(`${head}e${Number(exponent) - 12}`);
}

/** How many significant digits a number's text carries. */
const significantDigits = (text: string) =>
  text
    .replace(/^-|e.*$/g, '')
    .replace('.', '')
    .replace(/^0+|0+$/g, '').length;

/** The response text of a GET, unparsed. */
async function getText(path: string): Promise<string> {
  const res = await fetch(`${svc.runtime.publicUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
  expect(res.status).toBe(200);
  return res.text();
}

/** The text of `data` in an envelope `{"data":…,"meta":{…}}` (meta holds no `,"meta":`). */
const dataText = (body: string) => body.slice('{"data":'.length, body.lastIndexOf(',"meta":'));

describe('adjusted daily bars as PostgreSQL writes them', () => {
  it('when the demo set (raw and vendor-adjusted sources, its splits and dividends) is read raw and adjusted, single and in bulk, then every bar is the JavaScript text', async () => {
    const sql = svc.sql;
    const instruments = demoInstruments().map(({ currentSymbol: _current, ...i }) => i);
    const basis = new Map(demoDailySources().map((s) => [s.source, s]));
    await ingestRows(sql, instrumentIngest, batchesOf(instruments));
    await ingestRows(
      sql,
      dailyBarIngest,
      batchesOf(
        (function* () {
          for (const bar of demoDailyBars()) {
            const source = basis.get(bar.source)!;
            yield { ...bar, priceBasis: source.priceBasis, reflectsActionsThrough: source.reflectsActionsThrough };
          }
        })(),
      ),
    );
    await ingestRows(sql, corporateActionIngest, batchesOf(demoCorporateActions()));
    await ingestRows(sql, coverageCheckIngest, batchesOf(demoActionCoverage()));

    const ids = [...new Set(Array.from(demoDailyBars(), (b) => b.instrumentId))].sort();
    expect(ids.length).toBeGreaterThan(30);
    // The longest window a read takes (30 × 366 days) over the demo's 1990-2020.
    const [from, to] = ['1990-01-02', '2020-01-02'];
    let adjustedSeries = 0;
    for (const adjusted of [false, true]) {
      const bulk = JSON.parse(dataText(await getText(`/v1/prices/bulk?instrumentIds=${ids.join(',')}&from=${from}&to=${to}&adjusted=${adjusted}`)));
      for (const id of ids) {
        const expected = await expectedDailyJson(id, from, to, adjusted);
        const single = dataText(await getText(`/v1/instruments/${id}/prices?from=${from}&to=${to}&adjusted=${adjusted}`));
        expect(single, `instrument ${id}, adjusted=${adjusted}`).toBe(expected);
        expect(JSON.stringify(bulk[id])).toBe(expected);
        if (adjusted && expected !== (await expectedDailyJson(id, from, to, false))) adjustedSeries++;
      }
    }
    // Not vacuous: the demo's actions change some series.
    expect(adjustedSeries).toBeGreaterThanOrEqual(2);
  }, 120_000);

  it('when random prices of every scale meet splits and dividends, including products beyond the double range, then every bar is the JavaScript text', async () => {
    const rand = prng(1604);
    const days = weekdays('2021-01-04', '2021-12-31');
    for (let k = 0; k < 6; k++) {
      const { id } = await createInstrument(svc);
      const scale = [1e-7, 0.00042, 1, 250, 1e12, 1e290][k];
      let close = scale * (1 + rand());
      const bars = days.map((barDate) => {
        close *= 1 + (rand() - 0.5) * 0.06;
        // Quoted to 0-4 decimals beyond the scale's first digit, as sources quote prices.
        const decimals = Math.floor(rand() * 5) + Math.max(0, 1 - Math.floor(Math.log10(scale)));
        const round = (x: number) => (scale >= 1e-4 && scale < 1e12 ? Math.round(x * 10 ** decimals) / 10 ** decimals : x);
        const c = round(close);
        return dailyBar(id, {
          barDate,
          close: c,
          open: c,
          high: c * 1.01,
          low: c * 0.99,
          volume: rand() < 0.1 ? null : Math.round(rand() * 10 ** (3 + k * 3)),
        });
      });
      await ingest(svc, '/bars/daily', bars);
      const actions = Array.from({ length: 2 + k }, (_, i) => ({
        instrumentId: id,
        kind: i % 2 ? 'cash_dividend' : 'split',
        effectiveDate: days[Math.floor(rand() * (days.length - 1)) + 1],
        knowledgeDate: '2020-06-01',
        knowledgeProvenance: 'announced',
        // The last instrument's prices near 1e300 meet a 1-for-1e20 reverse split: beyond the double range.
        params: i % 2 ? { amount: close * 0.01, currency: 'USD' } : { ratio: k === 5 ? 1e-20 : [2, 3, 0.25, 7][i % 4] },
        source: 'test-fixture',
      }));
      await ingest(svc, '/corporate-actions', actions);
      for (const adjusted of [false, true]) {
        const text = dataText(await getText(`/v1/instruments/${id}/prices?from=2021-01-01&to=2021-12-31&adjusted=${adjusted}`));
        expect(text, `scale ${scale}, adjusted=${adjusted}`).toBe(await expectedDailyJson(id, '2021-01-01', '2021-12-31', adjusted));
        if (k === 5 && adjusted) expect(text).toContain('"closePrice":null');
      }
    }
  }, 60_000);
});

describe('adjusted values rounded to 13 significant digits', () => {
  it('when products land on, near and far from a half in the 14th digit, at every scale, then each is rounded as the documented rule says', async () => {
    const pairs = productsToRound(1313);
    const sql = svc.sql;
    const rows = await sql<{ json: string }[]>`
      select ${jsonNumber(sql, roundedValue(sql, sql`u.x`, sql`u.scale`))} as json
      from (
        select s.i, ${adjusted(sql, sql`s.v`, 'price')} as x, ${roundingScale(sql, sql`s.v`, 'price')} as scale
        from unnest(${pairs.map(([v]) => String(v))}::float8[], ${pairs.map(([, m]) => String(m))}::float8[]) with ordinality as s (v, price, i)
        offset 0
      ) u
      order by u.i
    `;
    const want = pairs.map(([v, m]) => JSON.stringify(m === 1 ? v : roundSignificant(v * m)));
    const mismatches = pairs.map((p, i) => [p, rows[i].json, want[i]]).filter(([, got, w]) => got !== w);
    expect(mismatches.slice(0, 10)).toEqual([]);
    // Not vacuous: most products needed rounding.
    expect(pairs.filter(([v, m]) => m !== 1 && roundSignificant(v * m) !== v * m).length).toBeGreaterThan(10_000);
    expect(rows.at(-1)!.json).toBe('0.909');
    // A multiplier of exactly 1 leaves the value as stored, whatever its digits.
    expect(rows.filter((r, i) => pairs[i][1] !== 1 && significantDigits(r.json) > 13)).toEqual([]);
    // The service's JavaScript roundings give the same text as the SQL: the
    // exact rule (event reactions print closes with it), and the SQL's twin
    // that adjusts the packed series of the JSON and columnar answers.
    for (const served of [(v: number, m: number) => (m === 1 ? v : servedRounding(v * m)), adjustedValue]) {
      expect(
        pairs
          .map((p, i) => [p, rows[i].json, JSON.stringify(served(...p))])
          .filter(([, got, js]) => got !== js)
          .slice(0, 10),
      ).toEqual([]);
    }
  });

  it('when a series is adjusted for a split and dividends, then its prices carry at most 13 significant digits and its daily returns are the unrounded ones to 1e-10', async () => {
    const { id } = await createInstrument(svc);
    const days = weekdays('2023-01-02', '2023-12-29');
    const rand = prng(77);
    let c = 2.727;
    const closes = days.map(() => (c = Math.round(c * (1 + (rand() - 0.5) * 0.08) * 1000) / 1000));
    // A stored value with representation noise is written back as stored by a raw read.
    closes[5] = 2.7270000000000003;
    await ingest(
      svc,
      '/bars/daily',
      days.map((barDate, i) => dailyBar(id, { barDate, close: closes[i], open: closes[i], high: closes[i], low: closes[i], volume: 1_000_003 + i })),
    );
    const actions = [
      { kind: 'split', at: 60, params: { ratio: 3 } },
      { kind: 'cash_dividend', at: 120, params: { amount: 0.037, currency: 'USD' } },
      { kind: 'cash_dividend', at: 200, params: { amount: 0.041, currency: 'USD' } },
      { kind: 'split', at: 230, params: { ratio: 7 } },
    ];
    await ingest(
      svc,
      '/corporate-actions',
      actions.map((a) => ({
        instrumentId: id,
        kind: a.kind,
        effectiveDate: days[a.at],
        knowledgeDate: '2022-06-01',
        knowledgeProvenance: 'announced',
        params: a.params,
        source: 'test-fixture',
      })),
    );
    // The unrounded adjustment, from the stored closes and the actions: each bar's
    // close times 1/ratio of every later split and 1 − amount / (the close before
    // the ex-date) of every later dividend.
    const multiplier = (i: number) =>
      actions.filter((a) => a.at > i).reduce((m, a) => m * (a.kind === 'split' ? 1 / a.params.ratio! : 1 - a.params.amount! / closes[a.at - 1]), 1);
    const unrounded = closes.map((x, i) => x * multiplier(i));
    const body = (await svc.get(`/v1/instruments/${id}/prices?from=2023-01-01&to=2023-12-31&adjusted=true`, key)).body;
    expect(body.meta.priceBasis.actionsApplied).toBe(4);
    const text = JSON.stringify(body.data);
    const served = body.data.map((b: { closePrice: number }) => b.closePrice);
    let largest = 0;
    for (let i = 1; i < days.length; i++) {
      const error = Math.abs(served[i] / served[i - 1] - unrounded[i] / unrounded[i - 1]);
      largest = Math.max(largest, error);
      expect(error, days[i]).toBeLessThanOrEqual(1e-10);
    }
    // No number of the answer carries more than 13 significant digits...
    const numbers = [...text.matchAll(/":(-?[\d.]+(?:e[-+]\d+)?)[,}]/g)].map((m) => m[1]);
    expect(numbers).toHaveLength(days.length * 5);
    expect(numbers.filter((t) => significantDigits(t) > 13)).toEqual([]);
    // ...while the unrounded ones do (not vacuous), and the rounding moved them.
    expect(unrounded.filter((x) => significantDigits(String(x)) > 13).length).toBeGreaterThan(50);
    expect(largest).toBeGreaterThan(0);
    // After the last action, and in a raw read, the values are as stored.
    expect(served.slice(230)).toEqual(closes.slice(230));
    const raw = await getText(`/v1/instruments/${id}/prices?from=2023-01-01&to=2023-12-31`);
    expect(raw).toContain(`"closePrice":2.7270000000000003,`);
    expect(JSON.parse(raw).data.map((b: { closePrice: number }) => b.closePrice)).toEqual(closes);
  });
});

describe('intraday bars as PostgreSQL writes them', () => {
  // 2,500 minutes in a 2-day window: the 1-minute read (2,880 bars long) is
  // read in two halves (SPLIT_INTRADAY_BARS), the 1-hour read (48) in one.
  it('when minute bars of odd sizes are read at 1 minute and 1 hour, then every bar is the JavaScript text of the stored rows', async () => {
    expect(2 * 1440).toBeGreaterThanOrEqual(SPLIT_INTRADAY_BARS);
    const { id, symbol } = await createInstrument(svc, { assetClass: 'crypto' });
    const rand = prng(60);
    const start = Date.UTC(2024, 2, 4, 0, 0);
    const minutes = Array.from({ length: 2500 }, (_, i) => {
      const c = [0.00001234, 1.5e-7, 27.15, 64_123.4567][i % 4] * (1 + rand() * 0.01);
      return {
        instrumentId: id,
        barTimestamp: new Date(start + i * 60_000).toISOString(),
        openPrice: c,
        highPrice: c * 1.001,
        lowPrice: c * 0.999,
        closePrice: c,
        volume: i % 7 === 0 ? null : Math.round(rand() * 1e16) / 100,
        quoteCurrency: 'USD',
        quoteUnit: 'USD per coin',
        source: i % 2 ? 'feed "a"' : 'feed\\b',
        asOf: new Date(start + i * 60_000 + 61_123).toISOString(),
      };
    });
    await ingest(svc, '/bars/intraday', minutes);
    const sql = svc.sql;
    for (const [interval, table] of [
      ['1min', 'intraday_bars'],
      ['1hour', 'intraday_bars_1hour'],
    ] as const) {
      const rows = await sql<
        {
          bar_ts: Date;
          open_price: number;
          high_price: number;
          low_price: number;
          close_price: number;
          volume: number | null;
          quote_currency: string;
          quote_unit: string;
          source: string;
          as_of: Date;
        }[]
      >`
        select bar_ts, open_price, high_price, low_price, close_price, volume, quote_currency, quote_unit, source, as_of
        from ${sql(table)}
        where instrument_id = ${id}
        order by bar_ts
      `;
      const expected = `[${rows
        .map(
          (r) =>
            `{"barTimestamp":"${r.bar_ts.toISOString()}","openPrice":${JSON.stringify(r.open_price)},"highPrice":${JSON.stringify(r.high_price)},` +
            `"lowPrice":${JSON.stringify(r.low_price)},"closePrice":${JSON.stringify(r.close_price)},"volume":${JSON.stringify(r.volume)},` +
            `"quoteCurrency":${JSON.stringify(r.quote_currency)},"quoteUnit":${JSON.stringify(r.quote_unit)},"source":${JSON.stringify(r.source)}}`,
        )
        .join(',')}]`;
      const body = await getText(`/v1/instruments/${id}/intraday?interval=${interval}&from=2024-03-04&to=2024-03-05`);
      expect(dataText(body)).toBe(expected);
      expect(rows.length).toBe(interval === '1min' ? 2500 : 42);
      const latest = rows.reduce((a, r) => (r.as_of > a ? r.as_of : a), new Date(0));
      expect(JSON.parse(body).meta.asOf).toBe(latest.toISOString());
      // CSV: the header, a row per bar with its instrument, symbol and timestamp in order, then #meta.
      const csv = parseCsv(await getText(`/v1/instruments/${id}/intraday?interval=${interval}&from=2024-03-04&to=2024-03-05&format=csv`));
      expect(csv.slice(1, -1).map((row) => row.slice(0, 3))).toEqual(rows.map((r) => [id, symbol, r.bar_ts.toISOString()]));
      expect(csv.at(-1)?.[0]).toBe('#meta');
    }
  });

  it('when rollup bars are stored without their text (rows from before sql/026), then reads write the same text, and filling it stores those bytes', async (ctx) => {
    // Full TimescaleDB keeps the rollups as continuous aggregates, which store no text.
    if (svc.runtime.migration!.tier === 'timescaledb') return ctx.skip();
    const { id, symbol } = await createInstrument(svc, { assetClass: 'crypto' });
    const start = Date.UTC(2024, 5, 3, 0, 0);
    // Three hours; text a CSV cell must quote or guard, and a number in exponent form.
    const minutes = Array.from({ length: 180 }, (_, i) => ({
      instrumentId: id,
      barTimestamp: new Date(start + i * 60_000).toISOString(),
      openPrice: i === 179 ? 1.5e-7 : 100 + i,
      highPrice: i === 179 ? 2e-7 : 101 + i,
      lowPrice: i === 179 ? 1e-7 : 99 + i,
      closePrice: i === 179 ? 1.5e-7 : 100.5 + i,
      volume: i === 30 ? null : 10,
      quoteCurrency: 'USD',
      quoteUnit: 'USD per coin',
      source: i < 60 ? '=feed, "x"' : 'feed#2',
      asOf: '2024-06-03T04:00:00.000Z',
    }));
    await ingest(svc, '/bars/intraday', minutes);
    // The hours as the spec's bars, from the posted minutes.
    const hours = [0, 1, 2].map((h) => {
      const m = minutes.slice(h * 60, h * 60 + 60);
      return {
        barTimestamp: new Date(start + h * 3_600_000).toISOString(),
        openPrice: m[0].openPrice,
        highPrice: Math.max(...m.map((b) => b.highPrice)),
        lowPrice: Math.min(...m.map((b) => b.lowPrice)),
        closePrice: m[59].closePrice,
        volume: m.some((b) => b.volume === null) ? null : m.reduce((a, b) => a + b.volume!, 0),
        quoteCurrency: 'USD',
        quoteUnit: 'USD per coin',
        source: m[59].source,
      };
    });
    const csvCell = (s: string) => (/^[-=+@\t\r]/.test(s) ? `"'${s.replaceAll('"', '""')}"` : /[",\r\n#]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s);
    // Stored without the symbol cell, which the read puts after the id.
    const storedCsv = hours.map(
      (b) => `${id},${b.barTimestamp},${b.openPrice},${b.highPrice},${b.lowPrice},${b.closePrice},${b.volume ?? ''},USD,USD per coin,${csvCell(b.source)}\r\n`,
    );
    const expectedCsv = storedCsv.map((row) => `${id},${symbol}${row.slice(id.length)}`);
    const path = `/v1/instruments/${id}/intraday?interval=1hour&from=2024-06-03&to=2024-06-03`;
    const read = async () => ({ json: dataText(await getText(path)), csv: await getText(`${path}&format=csv`) });
    const expected = `[${hours.map((b) => JSON.stringify(b)).join(',')}]`;
    const stored = await read();
    expect(stored.json).toBe(expected);
    for (const row of expectedCsv) expect(stored.csv).toContain(row);
    expect(stored.csv).toContain(`"'=feed, ""x"""`);

    await svc.sql`update intraday_bars_1hour set bar_json = null, bar_csv = null where instrument_id = ${id}`;
    expect(await read()).toEqual(stored);

    await fillRollupText(svc.sql);
    const rows = await svc.sql<{ bar_json: string; bar_csv: string }[]>`
      select bar_json, bar_csv from intraday_bars_1hour where instrument_id = ${id} order by bar_ts
    `;
    expect(rows.map((r) => r.bar_json)).toEqual(hours.map((b) => JSON.stringify(b)));
    expect(rows.map((r) => r.bar_csv)).toEqual(storedCsv);
    expect(await read()).toEqual(stored);
    // The days' JSON, written again from rows without their text (the migration's data step for sql/028), is the same.
    await svc.sql`update intraday_bars_1hour set bar_json = null where instrument_id = ${id}`;
    await fillRollupDays(svc.sql);
    expect(await read()).toEqual(stored);
  });

  it('when a later upload corrects one minute of a day and adds others, then JSON rollup reads over whole days hold the buckets of every stored minute, with their sources and latest asOf', async () => {
    const { id } = await createInstrument(svc, { assetClass: 'crypto' });
    const day1 = Date.UTC(2024, 8, 9);
    const day2 = day1 + 86_400_000;
    const minute = (t: number, price: number, source: string, asOf: number, volume: number | null = 3) => ({
      instrumentId: id,
      barTimestamp: new Date(t).toISOString(),
      openPrice: price,
      highPrice: price + 0.5,
      lowPrice: price - 0.25,
      closePrice: price + 0.125,
      volume,
      quoteCurrency: 'USD',
      quoteUnit: 'USD per coin',
      source,
      asOf: new Date(asOf).toISOString(),
    });
    type Minute = ReturnType<typeof minute>;
    // Day 1, 00:00-02:59 from feed a; day 2, 00:00-00:59 from feed b (one minute without volume).
    const first = [
      ...Array.from({ length: 180 }, (_, i) => minute(day1 + i * 60_000, 100 + i, 'feed a', day1 + i * 60_000 + 60_000)),
      ...Array.from({ length: 60 }, (_, i) => minute(day2 + i * 60_000, 200 + i, 'feed b', day2 + 3_600_000, i === 7 ? null : 3)),
    ];
    await ingest(svc, '/bars/intraday', first);
    // Day 1's 01:30 restated by feed c, known a week later; day 1 gains 23:00-23:29.
    const restated = minute(day1 + 90 * 60_000, 50, 'feed c', day2 + 7 * 86_400_000);
    const late = Array.from({ length: 30 }, (_, i) => minute(day1 + (23 * 60 + i) * 60_000, 300 + i, 'feed a', day1 + 86_400_000));
    await ingest(svc, '/bars/intraday', [restated, ...late]);
    const stored = [...first.filter((m) => m.barTimestamp !== restated.barTimestamp), restated, ...late].sort((a, b) =>
      a.barTimestamp.localeCompare(b.barTimestamp),
    );

    // The spec's buckets of the stored minutes: open first, high max, low min, close last, volume summed (null if any minute has none), quote and source of the last.
    const buckets = (minutes: Minute[], widthMs: number) => {
      const groups = new Map<number, Minute[]>();
      for (const m of minutes) {
        const start = Math.floor(Date.parse(m.barTimestamp) / widthMs) * widthMs;
        groups.set(start, [...(groups.get(start) ?? []), m]);
      }
      return [...groups].map(([start, ms]) => ({
        barTimestamp: new Date(start).toISOString(),
        openPrice: ms[0].openPrice,
        highPrice: Math.max(...ms.map((m) => m.highPrice)),
        lowPrice: Math.min(...ms.map((m) => m.lowPrice)),
        closePrice: ms.at(-1)!.closePrice,
        volume: ms.some((m) => m.volume === null) ? null : ms.reduce((a, m) => a + m.volume!, 0),
        quoteCurrency: ms.at(-1)!.quoteCurrency,
        quoteUnit: ms.at(-1)!.quoteUnit,
        source: ms.at(-1)!.source,
      }));
    };
    const day = (t: number) => new Date(t).toISOString().slice(0, 10);
    for (const [interval, widthMs] of [
      ['1hour', 3_600_000],
      ['5min', 300_000],
    ] as const) {
      for (const [from, to] of [
        [day1, day2],
        [day1, day1],
        [day2, day2],
      ]) {
        const inWindow = stored.filter((m) => Date.parse(m.barTimestamp) >= from && Date.parse(m.barTimestamp) < to + 86_400_000);
        const expected = buckets(inWindow, widthMs);
        const body = await getText(`/v1/instruments/${id}/intraday?interval=${interval}&from=${day(from)}&to=${day(to)}`);
        expect(dataText(body)).toBe(JSON.stringify(expected));
        const { meta } = JSON.parse(body);
        expect(meta.source).toBe([...new Set(expected.map((b) => b.source))].sort().join(', '));
        expect(meta.asOf).toBe(
          inWindow
            .map((m) => m.asOf)
            .sort()
            .at(-1),
        );
      }
    }
    // The 01:00 hour of day 1 ends with the restated minute's neighbours: its close is 01:59's, its low the restated 49.75.
    const hours = JSON.parse(await getText(`/v1/instruments/${id}/intraday?interval=1hour&from=${day(day1)}&to=${day(day1)}`)).data;
    expect(hours.map((b: { barTimestamp: string }) => b.barTimestamp.slice(11, 16))).toEqual(['00:00', '01:00', '02:00', '23:00']);
    expect(hours[1].lowPrice).toBe(49.75);
  });
});

/** RFC 4180 records: quoted cells may hold commas, doubled quotes, CR and LF; rows end with CRLF. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '"' && text[i + 1] === '"') {
      cell += '"';
      i++;
    } else if (c === '"') {
      quoted = !quoted;
    } else if (!quoted && c === ',') {
      row.push(cell);
      cell = '';
    } else if (!quoted && c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else {
      cell += c;
    }
  }
  expect(row.length === 0 && cell === '', 'the last record ends with CRLF').toBe(true);
  return rows;
}

/** A raw GET: the status, headers and undecoded body bytes. */
function rawGet(path: string, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(`${svc.runtime.publicUrl}${path}`, { headers: { authorization: `Bearer ${key}`, ...headers } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

const DAILY_COLUMNS = [
  'instrumentId',
  'symbol',
  'barDate',
  'openPrice',
  'highPrice',
  'lowPrice',
  'closePrice',
  'volume',
  'quoteCurrency',
  'quoteUnit',
  'stale',
  'asOf',
  'source',
];

const TEXT_COLUMNS = ['symbol', 'quoteCurrency', 'quoteUnit', 'source'];

/**
 * A JSON bar as its CSV row's cells: numbers as JSON writes them, null as an
 * empty cell, and text that a spreadsheet would take for a formula behind an
 * apostrophe.
 */
function asCells(columns: string[], id: string, symbol: string | null, bar: Record<string, unknown>): string[] {
  return columns.map((c) => {
    const value = c === 'symbol' ? symbol : bar[c];
    if (c === 'instrumentId') return id;
    if (value === null) return '';
    if (typeof value !== 'string') return JSON.stringify(value);
    return TEXT_COLUMNS.includes(c) && /^[-=+@\t\r]/.test(value) ? `'${value}` : value;
  });
}

describe('price reads in CSV', () => {
  let plain: string;
  let plainSymbol: string;
  let tricky: string;
  const trickySymbol = `=${uniqueSymbol('X')},"Q"`;
  const symbolOf = (id: string) => (id === plain ? plainSymbol : id === tricky ? trickySymbol : null);
  const days = weekdays('2022-01-03', '2022-03-31');
  const sources = ['=HYPERLINK("http://x","y")', '+1 feed', '-dash', '@at', 'comma, "quoted"', 'hash # mark', 'line\nbreak', 'plain'];

  beforeAll(async () => {
    ({ id: plain, symbol: plainSymbol } = await createInstrument(svc));
    // A symbol a spreadsheet would take for a formula, with a comma and a quote: its cell is guarded and quoted as any text cell.
    tricky = (await createInstrument(svc, { symbols: [{ symbol: trickySymbol, validFrom: '1990-01-01' }] })).id;
    await ingest(
      svc,
      '/bars/daily',
      days.flatMap((barDate, i) => [
        dailyBar(plain, { barDate, close: 100 + i / 7, volume: i % 5 ? 1000 + i : null }),
        dailyBar(tricky, { barDate, close: 10 + i / 3 }, { source: sources[i % sources.length], quoteUnit: 'USD, per "share"' }),
      ]),
    );
    // A dividend larger than the close before it: the factor is negative, so are the adjusted prices before it.
    await ingest(svc, '/corporate-actions', [
      {
        instrumentId: tricky,
        kind: 'cash_dividend',
        effectiveDate: days[40],
        knowledgeDate: '2021-12-01',
        knowledgeProvenance: 'announced',
        params: { amount: 50, currency: 'USD' },
        source: 'test-fixture',
      },
      {
        instrumentId: plain,
        kind: 'split',
        effectiveDate: days[30],
        knowledgeDate: '2021-12-01',
        knowledgeProvenance: 'announced',
        params: { ratio: 3 },
        source: 'test-fixture',
      },
    ]);
  });

  it('when format=csv or Accept: text/csv, then the daily bars come as RFC 4180 rows with the numbers of the JSON answer, and meta in the #meta row', async () => {
    const query = `from=2022-01-01&to=2022-03-31&adjusted=true&asOf=2022-06-01`;
    for (const id of [plain, tricky]) {
      const json = await svc.get(`/v1/instruments/${id}/prices?${query}`, key);
      const byParam = await svc.get(`/v1/instruments/${id}/prices?${query}&format=csv`, key);
      const byAccept = await svc.get(`/v1/instruments/${id}/prices?${query}`, key, { accept: 'text/csv' });
      expect(byParam.headers.get('content-type')).toBe('text/csv; charset=utf-8');
      expect(byParam.headers.get('vary')).toMatch(/Accept\b/);
      expect(byAccept.body).toBe(byParam.body);
      const rows = parseCsv(byParam.body);
      expect(rows[0]).toEqual(DAILY_COLUMNS);
      const bars = rows.slice(1, -1);
      expect(bars).toEqual(json.body.data.map((bar: Record<string, unknown>) => asCells(DAILY_COLUMNS, id, symbolOf(id), bar)));
      expect(bars).toHaveLength(days.length);
      const metaRow = rows.at(-1)!;
      expect(metaRow).toHaveLength(DAILY_COLUMNS.length);
      expect(metaRow[0]).toBe('#meta');
      expect(JSON.parse(metaRow[1])).toEqual(json.body.meta);
    }
  });

  it('when a text cell starts with =, +, - or @, then it is written behind an apostrophe, quoted; negative numbers and other cells are as they are', async () => {
    const text = (await svc.get(`/v1/instruments/${tricky}/prices?from=2022-01-01&to=2022-03-31&adjusted=true&format=csv`, key)).body as string;
    expect(text).toContain(`,"'=HYPERLINK(""http://x"",""y"")"\r\n`);
    expect(text).toContain(`,"'+1 feed"\r\n`);
    expect(text).toContain(`,"'-dash"\r\n`);
    expect(text).toContain(`,"'@at"\r\n`);
    expect(text).toContain(`,"comma, ""quoted"""\r\n`);
    expect(text).toContain(`,"hash # mark"\r\n`);
    expect(text).toContain(`,"line\nbreak"\r\n`);
    expect(text).toContain(`,plain\r\n`);
    expect(text).toContain(`,USD,"USD, per ""share""",false,`);
    // The symbol is a text cell like the others: guarded and quoted.
    expect(text.split('\r\n')[1].startsWith(`${tricky},"'${trickySymbol.replaceAll('"', '""')}",2022-01-03,`)).toBe(true);
    // Before the dividend the factor is 1 - 50/close, below zero: a number, not text, so not escaped.
    const first = parseCsv(text)[1];
    expect(first[1]).toBe(`'${trickySymbol}`);
    expect(Number(first[6])).toBeLessThan(0);
    expect(first[6]).toMatch(/^-\d/);
    expect(text.split('\r\n')[1]).toContain(`,${first[6]},`);
  });

  it('when the bulk read is asked for CSV, then its rows carry each instrument id and symbol and the numbers of its JSON; an instrument without bars has no rows', async () => {
    const empty = (await createInstrument(svc)).id;
    const ids = [plain, tricky, empty];
    const query = `instrumentIds=${ids.join(',')}&from=2022-01-01&to=2022-03-31&adjusted=true&asOf=2022-06-01`;
    const json = await svc.get(`/v1/prices/bulk?${query}`, key);
    const csv = await svc.get(`/v1/prices/bulk?${query}`, key, { accept: 'text/csv, application/json;q=0.5' });
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const rows = parseCsv(csv.body);
    expect(rows[0]).toEqual(DAILY_COLUMNS);
    const expected = [...ids].sort().flatMap((id) => json.body.data[id].map((bar: Record<string, unknown>) => asCells(DAILY_COLUMNS, id, symbolOf(id), bar)));
    expect(rows.slice(1, -1)).toEqual(expected);
    expect(expected).toHaveLength(2 * days.length);
    expect(JSON.parse(rows.at(-1)![1])).toEqual(json.body.meta);
  });

  it('when the window is shorter than a month or not (the statement groups by instrument or reads each alone), then the bulk JSON (written from the packed series) is the JavaScript text and the CSV its rows', async () => {
    // Windows on either side of 28 days (daily-text-repository.ts, SERIES_APART_DAYS), each over the split (days[30]) and the dividend (days[40]), with texts that vary by day.
    // A third instrument is quoted in EUR while all its bars say USD: one text throughout, but not the instrument's (packedSeries' expected texts).
    const { id: euro, symbol: euroSymbol } = await createInstrument(svc, { quoteCurrency: 'EUR' });
    await ingest(
      svc,
      '/bars/daily',
      days.map((barDate, i) => dailyBar(euro, { barDate, close: 50 + i / 9 })),
    );
    const ids = [plain, tricky, euro];
    const symbolOrEuro = (id: string) => (id === euro ? euroSymbol : symbolOf(id));
    const from = days[22];
    for (const length of [14, 27, 28, 45]) {
      const to = new Date(Date.parse(from) + (length - 1) * 86_400_000).toISOString().slice(0, 10);
      const query = `instrumentIds=${ids.join(',')}&from=${from}&to=${to}&adjusted=true&asOf=2022-06-01`;
      const expectedJson = new Map<string, string>();
      for (const id of ids) expectedJson.set(id, await expectedDailyJson(id, from, to, true));
      // Read seven times: from its sixth execution on a connection, PostgreSQL may run the prepared statement by its generic plan.
      let json!: Awaited<ReturnType<typeof svc.get>>;
      for (let read = 1; read <= 7; read++) {
        json = await svc.get(`/v1/prices/bulk?${query}`, key);
        expect(json.status).toBe(200);
        for (const id of ids) expect(JSON.stringify(json.body.data[id]), `${id}, ${length} days, read ${read}`).toBe(expectedJson.get(id));
      }
      const csv = await svc.get(`/v1/prices/bulk?${query}`, key, { accept: 'text/csv' });
      const expected = [...ids]
        .sort()
        .flatMap((id) => json.body.data[id].map((bar: Record<string, unknown>) => asCells(DAILY_COLUMNS, id, symbolOrEuro(id), bar)));
      expect(parseCsv(csv.body).slice(1, -1), `${length} days`).toEqual(expected);
      expect(expected.length).toBeGreaterThan(length / 2);
    }
  });

  it('when intraday bars are asked for CSV, then each row is a bar of the JSON answer, with its instrument id and symbol', async () => {
    const { id, symbol } = await createInstrument(svc, { assetClass: 'crypto' });
    await ingest(
      svc,
      '/bars/intraday',
      Array.from({ length: 90 }, (_, i) => ({
        instrumentId: id,
        barTimestamp: new Date(Date.UTC(2024, 0, 2, 10) + i * 60_000).toISOString(),
        openPrice: 1.5e-7 + i * 1e-9,
        highPrice: 2e-7 + i * 1e-9,
        lowPrice: 1e-7,
        closePrice: 1.5e-7 + i * 1e-9,
        volume: i % 4 ? 1e21 + i * 1e6 : null,
        quoteCurrency: 'USD',
        quoteUnit: 'USD per coin',
        source: 'feed',
        asOf: '2024-01-03T00:00:00Z',
      })),
    );
    for (const interval of ['1min', '1hour']) {
      const path = `/v1/instruments/${id}/intraday?interval=${interval}&from=2024-01-02&to=2024-01-02`;
      const json = await svc.get(path, key);
      const rows = parseCsv((await svc.get(`${path}&format=csv`, key)).body);
      const columns = [
        'instrumentId',
        'symbol',
        'barTimestamp',
        'openPrice',
        'highPrice',
        'lowPrice',
        'closePrice',
        'volume',
        'quoteCurrency',
        'quoteUnit',
        'source',
      ];
      expect(rows[0]).toEqual(columns);
      expect(rows.slice(1, -1)).toEqual(json.body.data.map((bar: Record<string, unknown>) => asCells(columns, id, symbol, bar)));
      expect(rows.length - 2).toBe(interval === '1min' ? 90 : 2);
      expect(JSON.parse(rows.at(-1)![1])).toEqual(json.body.meta);
    }
  });

  it('when format is neither json nor csv, then 400 names it; with neither format nor a CSV Accept, the answer is JSON', async () => {
    const bad = await svc.get(`/v1/instruments/${plain}/prices?from=2022-01-01&to=2022-01-31&format=xml`, key);
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.error.details)).toEqual(['format']);
    const html = await svc.get(`/v1/instruments/${plain}/prices?from=2022-01-01&to=2022-01-31`, key, { accept: 'text/html' });
    expect(html.headers.get('content-type')).toMatch(/^application\/json/);
    const json = await svc.get(`/v1/instruments/${plain}/prices?from=2022-01-01&to=2022-01-31&format=json`, key, { accept: 'text/csv' });
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
  });
});

describe('compression', () => {
  let ids: string[];
  beforeAll(async () => {
    ids = [];
    const days = weekdays('2019-01-01', '2021-12-31');
    for (let k = 0; k < 3; k++) {
      const { id } = await createInstrument(svc);
      ids.push(id);
      await ingest(
        svc,
        '/bars/daily',
        days.map((barDate, i) => dailyBar(id, { barDate, close: 50 + k + Math.sin(i) * 5 })),
      );
    }
  });

  /** JSON and CSV, a single read's (sent whole) and a bulk read's (streamed). */
  const singleAndStreamed = () => [
    `/v1/instruments/${ids[0]}/prices?from=2019-01-01&to=2021-12-31&asOf=2022-01-01`,
    `/v1/instruments/${ids[0]}/prices?from=2019-01-01&to=2021-12-31&asOf=2022-01-01&format=csv`,
    `/v1/prices/bulk?instrumentIds=${ids.join(',')}&from=2019-01-01&to=2021-12-31&asOf=2022-01-01`,
    `/v1/prices/bulk?instrumentIds=${ids.join(',')}&from=2019-01-01&to=2021-12-31&asOf=2022-01-01&format=csv`,
  ];

  it('when gzip or br is accepted, then JSON and CSV answers, single and streamed, decompress to exactly the uncompressed bytes', async () => {
    for (const path of singleAndStreamed()) {
      const identity = await rawGet(path, { 'accept-encoding': 'identity' });
      expect(identity.status).toBe(200);
      expect(identity.headers['content-encoding']).toBeUndefined();
      const gzip = await rawGet(path, { 'accept-encoding': 'gzip' });
      expect(gzip.headers['content-encoding']).toBe('gzip');
      expect(gzip.headers.vary).toMatch(/Accept-Encoding/);
      const br = await rawGet(path, { 'accept-encoding': 'gzip, deflate, br' });
      expect(br.headers['content-encoding']).toBe('br');
      expect(zlib.gunzipSync(gzip.body).equals(identity.body)).toBe(true);
      expect(zlib.brotliDecompressSync(br.body).equals(identity.body)).toBe(true);
      // Not vacuous: the bodies are large and really compressed.
      expect(identity.body.length).toBeGreaterThan(100_000);
      expect(gzip.body.length).toBeLessThan(identity.body.length / 3);
    }
  });

  it('when zstd is accepted, then JSON and CSV answers, single and streamed, come in zstd and decompress to exactly the uncompressed bytes', async () => {
    for (const path of singleAndStreamed()) {
      const identity = await rawGet(path, { 'accept-encoding': 'identity' });
      // What browsers send: every coding at the same q-value, so the service's order decides.
      for (const accepted of ['zstd', 'gzip, deflate, br, zstd']) {
        const zstd = await rawGet(path, { 'accept-encoding': accepted });
        expect(zstd.status).toBe(200);
        expect(zstd.headers['content-encoding']).toBe('zstd');
        expect(zstd.headers.vary).toMatch(/Accept-Encoding/);
        expect(zstd.headers['content-length']).toBeUndefined();
        expect(zlib.zstdDecompressSync(zstd.body).equals(identity.body)).toBe(true);
        expect(zstd.body.length).toBeLessThan(identity.body.length / 3);
      }
    }
  });

  it("when the client's q-values rank the codings, then they decide; at equal q-values zstd comes before br and br before gzip", async () => {
    const path = `/v1/prices/bulk?instrumentIds=${ids.join(',')}&from=2019-01-01&to=2021-12-31&asOf=2022-01-01`;
    const cases: [string, string | undefined][] = [
      ['zstd;q=0.5, gzip', 'gzip'],
      ['br;q=0.9, zstd;q=0.8', 'br'],
      ['gzip, zstd;q=0', 'gzip'],
      ['br, zstd', 'zstd'],
      ['gzip, br', 'br'],
      ['*', 'zstd'],
      ['zstd;q=0, br;q=0, gzip;q=0', undefined],
    ];
    for (const [accepted, coding] of cases) {
      const res = await rawGet(path, { 'accept-encoding': accepted });
      expect({ accepted, status: res.status, coding: res.headers['content-encoding'] }).toEqual({ accepted, status: 200, coding });
    }
  });

  it('when another JSON answer (not a price read) is asked for zstd, then it comes in zstd too', async () => {
    const identity = await rawGet('/v1/openapi.json', { 'accept-encoding': 'identity' });
    expect(identity.status).toBe(200);
    expect(identity.body.length).toBeGreaterThan(100_000);
    const zstd = await rawGet('/v1/openapi.json', { 'accept-encoding': 'zstd' });
    expect(zstd.headers['content-encoding']).toBe('zstd');
    expect(JSON.parse(zlib.zstdDecompressSync(zstd.body).toString())).toEqual(JSON.parse(identity.body.toString()));
  });

  it('when an answer is under 1 KiB, then it goes uncompressed whatever the client accepts', async () => {
    // A Saturday: no bars.
    const small = await rawGet(`/v1/instruments/${ids[0]}/prices?from=2019-01-05&to=2019-01-05`, { 'accept-encoding': 'gzip, br, zstd' });
    expect(small.status).toBe(200);
    expect(small.body.length).toBeLessThan(1024);
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(small.body.toString()).data).toEqual([]);
  });
});

describe('caching: ETag, If-None-Match and Cache-Control', () => {
  // The tag the service should give a body, computed here from the bytes received: a SHA-256, base64url, 32 characters.
  const tagOf = (body: Buffer | string) => `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"`;
  const days = weekdays('2023-03-01', '2023-04-28');
  let id: string;
  beforeAll(async () => {
    id = (await createInstrument(svc)).id;
    await ingest(
      svc,
      '/bars/daily',
      days.map((barDate, i) => dailyBar(id, { barDate, close: 40 + i / 3 })),
    );
    await ingest(svc, '/corporate-actions', [
      {
        instrumentId: id,
        kind: 'split',
        effectiveDate: days[20],
        knowledgeDate: '2023-01-10',
        knowledgeProvenance: 'announced',
        params: { ratio: 2 },
        source: 'test-fixture',
      },
    ]);
  });
  const pinned = () => `/v1/instruments/${id}/prices?from=2023-03-01&to=2023-04-28&adjusted=true&actionSetVersion=1&asOf=2023-06-01`;
  const raw = () => `/v1/instruments/${id}/prices?from=2023-03-01&to=2023-04-28&asOf=2023-06-01`;

  it('when a pinned past read is asked again with its ETag, then 304 with no body and the same headers, whatever the coding; the tag is strong and the SHA-256 of the bytes', async () => {
    // Pinned to a version, for a window ended before today and on the latest bar: immutable. Not pinned: revalidate.
    for (const [path, cacheControl] of [
      [pinned(), 'private, max-age=31536000, immutable'],
      [raw(), 'private, no-cache'],
      [`${pinned()}&format=csv`, 'private, max-age=31536000, immutable'],
    ] as const) {
      const first = await rawGet(path, { 'accept-encoding': 'identity' });
      expect(first.status).toBe(200);
      const etag = first.headers.etag!;
      expect(etag).toBe(tagOf(first.body));
      expect(first.headers['cache-control']).toBe(cacheControl);
      expect(first.headers.vary).toMatch(/Accept-Encoding/);
      // Checked against the OpenAPI document, which lists the 304 and requires it empty.
      const again = await svc.get(path, key, { 'if-none-match': etag });
      expect(again.status).toBe(304);
      expect(again.body).toBe('');
      expect(again.headers.get('etag')).toBe(etag);
      expect(again.headers.get('cache-control')).toBe(cacheControl);

      const gzip = await rawGet(path, { 'accept-encoding': 'gzip' });
      expect(gzip.headers['content-encoding']).toBe('gzip');
      expect(gzip.headers.etag).toBe(etag);
      const gzip304 = await rawGet(path, { 'accept-encoding': 'gzip, br', 'if-none-match': etag });
      expect(gzip304.status).toBe(304);
      expect(gzip304.body.length).toBe(0);
      expect(gzip304.headers['content-encoding']).toBeUndefined();
      expect(gzip304.headers.etag).toBe(etag);
      expect(gzip304.headers.vary).toMatch(/Accept-Encoding/);
    }
    const tags = await Promise.all([pinned(), raw(), `${pinned()}&format=csv`].map(async (p) => (await rawGet(p, {})).headers.etag));
    expect(new Set(tags).size).toBe(3);
  });

  it('when the meta carries the time of reading (no asOf), then the ETag is weak, leaves that time out, and still revalidates to 304', async () => {
    for (const path of [
      `/v1/instruments/${id}/prices?from=2023-03-01&to=2023-04-28&adjusted=true`,
      `/v1/instruments/${id}/prices?from=2023-03-01&to=2023-04-28`,
    ]) {
      const first = await rawGet(path, {});
      const meta = JSON.parse(first.body.toString()).meta;
      // The tag of the body with each mention of the time of reading taken out.
      expect(first.headers.etag).toBe(`W/${tagOf(first.body.toString().replaceAll(meta.asOf, ''))}`);
      const second = await rawGet(path, { 'if-none-match': first.headers.etag! });
      expect(second.status).toBe(304);
      expect(second.headers.etag).toBe(first.headers.etag);
    }
  });

  it('when bars, actions or minutes change, then every read they reach gets a new ETag and the old one a full 200; a read pinned to an earlier version keeps its tag', async () => {
    const unpinned = `/v1/instruments/${id}/prices?from=2023-03-01&to=2023-04-28&adjusted=true`;
    const before = Object.fromEntries(await Promise.all([pinned(), raw(), unpinned].map(async (p) => [p, (await rawGet(p, {})).headers.etag!])));

    // A new action: version 2. The unpinned read changes, and so does the raw one, whose meta reports the version; the read pinned to version 1 does not.
    await ingest(svc, '/corporate-actions', [
      {
        instrumentId: id,
        kind: 'split',
        effectiveDate: days[30],
        knowledgeDate: '2023-01-10',
        knowledgeProvenance: 'announced',
        params: { ratio: 3 },
        source: 'test-fixture',
      },
    ]);
    for (const path of [unpinned, raw()]) {
      const changed = await rawGet(path, { 'if-none-match': before[path] });
      expect(changed.status).toBe(200);
      expect(changed.headers.etag).not.toBe(before[path]);
      expect(JSON.parse(changed.body.toString()).meta.actionSetVersion).toBe(2);
    }
    expect((await svc.get(pinned(), key, { 'if-none-match': before[pinned()] })).status).toBe(304);

    // A corrected bar, posted again: version 3. The raw read changes; the read pinned to version 1 keeps its bytes, since a
    // version's bars are kept as they stood; a read pinned to version 3 divides the corrected close by 6 (both splits,
    // 2 and 3 for 1, come after it), to 13 significant digits.
    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: days[5], close: 99.5 })]);
    const rawAfter = await rawGet(raw(), { 'if-none-match': before[raw()] });
    expect(rawAfter.status).toBe(200);
    expect(rawAfter.headers.etag).toBe(tagOf(rawAfter.body));
    expect(JSON.parse(rawAfter.body.toString()).data[5].closePrice).toBe(99.5);
    expect(JSON.parse(rawAfter.body.toString()).meta.actionSetVersion).toBe(3);
    expect((await svc.get(pinned(), key, { 'if-none-match': before[pinned()] })).status).toBe(304);
    const version3 = await rawGet(pinned().replace('actionSetVersion=1', 'actionSetVersion=3'), {});
    expect(JSON.parse(version3.body.toString()).data[5].closePrice).toBe(16.58333333333);

    // Intraday: a minute more in the hour changes the hour's bar and the tag.
    const crypto = (await createInstrument(svc, { assetClass: 'crypto' })).id;
    const minute = (i: number, close: number) => ({
      instrumentId: crypto,
      barTimestamp: new Date(Date.UTC(2024, 0, 2, 10, i)).toISOString(),
      openPrice: close,
      highPrice: close + 1,
      lowPrice: close - 1,
      closePrice: close,
      volume: 10,
      quoteCurrency: 'USD',
      quoteUnit: 'USD per coin',
      source: 'feed',
      asOf: '2024-01-03T00:00:00Z',
    });
    await ingest(svc, '/bars/intraday', [minute(0, 100), minute(1, 101)]);
    const hour = `/v1/instruments/${crypto}/intraday?interval=1hour&from=2024-01-02&to=2024-01-02`;
    const first = await rawGet(hour, {});
    expect(first.headers.etag).toBe(tagOf(first.body));
    expect(first.headers['cache-control']).toBe('private, no-cache');
    expect((await rawGet(hour, { 'if-none-match': first.headers.etag! })).status).toBe(304);
    await ingest(svc, '/bars/intraday', [minute(2, 105)]);
    const second = await rawGet(hour, { 'if-none-match': first.headers.etag! });
    expect(second.status).toBe(200);
    expect(second.headers.etag).not.toBe(first.headers.etag);
    expect(JSON.parse(second.body.toString()).data[0].closePrice).toBe(105);
  });

  it('when If-None-Match names other tags, then 200; a list naming the tag, its W/ form (the weak comparison If-None-Match uses) or * gets 304', async () => {
    const etag = (await rawGet(raw(), {})).headers.etag!;
    const opaque = etag.slice(1, -1);
    for (const other of ['"x"', opaque, `"${opaque.slice(0, -1)}"`, `"${opaque}x"`, `W/"${opaque.slice(1)}"`, '"x", "y"']) {
      const res = await svc.get(raw(), key, { 'if-none-match': other });
      expect(res.status, other).toBe(200);
      expect(res.body.data).toHaveLength(days.length);
    }
    for (const naming of [`"x", ${etag}`, `W/${etag}`, '*', ` ${etag} `]) {
      expect((await svc.get(raw(), key, { 'if-none-match': naming })).status, naming).toBe(304);
    }
  });

  it('when the bulk read streams, then it carries no ETag, says no-store, and ignores If-None-Match', async () => {
    const path = `/v1/prices/bulk?instrumentIds=${id}&from=2023-03-01&to=2023-04-28&asOf=2023-06-01`;
    const res = await svc.get(path, key, { 'if-none-match': '*' });
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBeNull();
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body.data[id]).toHaveLength(days.length);
  });
});
