import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoActionCoverage, demoCorporateActions, demoDailyBars, demoDailySources, demoInstruments } from '../../server/demo/catalog.ts';
import { corporateActionIngest, coverageCheckIngest } from '../../server/actions/ingest.ts';
import { batchesOf } from '../../server/ingest/body.ts';
import { ingestRows } from '../../server/ingest/service.ts';
import { instrumentIngest } from '../../server/instruments/ingest.ts';
import { adjustSeries, dayNumber, NOT_VENDOR_ADJUSTED } from '../../server/prices/adjustment.ts';
import { planAdjustments } from '../../server/prices/adjustment-plan.ts';
import { dailyBarIngest } from '../../server/prices/ingest.ts';
import { jsonNumber } from '../../server/prices/text-repository.ts';
import { startService, type Service } from './harness.ts';
import { createInstrument, dailyBar, ingest, weekdays } from './fixtures.ts';

// PostgreSQL writes the price reads' JSON (prices/text-repository.ts). These
// tests hold it to what JavaScript writes from the same numbers: each value
// through JSON.stringify, each adjusted value as adjustSeries multiplies it,
// each instant through toISOString; compared as text, digit for digit.

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
    adjustSeries(plans.get(id)!.factors, days, reflects, [open, high, low, close], volume);
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

describe('intraday bars as PostgreSQL writes them', () => {
  it('when minute bars of odd sizes are read at 1 minute and 1 hour, then every bar is the JavaScript text of the stored rows', async () => {
    const { id } = await createInstrument(svc, { assetClass: 'crypto' });
    const rand = prng(60);
    const start = Date.UTC(2024, 2, 4, 0, 0);
    const minutes = Array.from({ length: 600 }, (_, i) => {
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
      expect(rows.length).toBe(interval === '1min' ? 600 : 10);
      const latest = rows.reduce((a, r) => (r.as_of > a ? r.as_of : a), new Date(0));
      expect(JSON.parse(body).meta.asOf).toBe(latest.toISOString());
    }
  });
});
