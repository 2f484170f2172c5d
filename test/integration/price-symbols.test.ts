import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from './harness.ts';
import { createInstrument, dailyBar, ingest, minuteBar, uniqueSymbol, weekdays } from './fixtures.ts';

// Tickers beside ids (issue 42, item 1): the CSV, Arrow and Parquet price
// answers carry each bar's symbol, and the bulk JSON answer each series'
// symbols in meta.symbols. Every expected symbol is worked out here from the
// posted symbol periods by the rule docs/api.md states ("Point in time",
// Symbols): on day D, the period with validFrom <= D and validTo null or >= D;
// otherwise the most recently started period with validFrom <= D; otherwise
// none.

interface Period {
  symbol: string;
  validFrom: string | null;
  validTo: string | null;
}

function symbolOn(periods: Period[], day: string): string | null {
  const started = periods.filter((p) => (p.validFrom ?? '') <= day).sort((a, b) => (b.validFrom ?? '').localeCompare(a.validFrom ?? ''));
  const covering = started.filter((p) => p.validTo === null || p.validTo >= day);
  return (covering[0] ?? started[0])?.symbol ?? null;
}

const DAY_MS = 86_400_000;
const dayAfter = (day: string) => new Date(Date.parse(`${day}T00:00:00Z`) + DAY_MS).toISOString().slice(0, 10);

/** The symbol of every day from `from` to `to`, as runs of days under one symbol. */
function runsOf(periods: Period[], from: string, to: string) {
  const runs: { symbol: string | null; from: string; to: string }[] = [];
  for (let day = from; day <= to; day = dayAfter(day)) {
    const symbol = symbolOn(periods, day);
    const last = runs.at(-1);
    if (last && last.symbol === symbol) last.to = day;
    else runs.push({ symbol, from: day, to: day });
  }
  return runs;
}

/** A CSV answer as the service writes it (RFC 4180, CRLF): its header, its bar rows and its meta (the #meta row's JSON). */
function csvAnswer(text: string): { header: string[]; rows: string[][]; meta: Record<string, unknown> } {
  const records: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '"' && text[i + 1] === '"') {
      cell += '"';
      i++;
    } else if (c === '"') quoted = !quoted;
    else if (!quoted && c === ',') {
      row.push(cell);
      cell = '';
    } else if (!quoted && c === '\r' && text[i + 1] === '\n') {
      records.push([...row, cell]);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  const [header, ...rest] = records;
  const meta = rest.pop()!;
  expect(meta[0]).toBe('#meta');
  return { header, rows: rest, meta: JSON.parse(meta[1]) as Record<string, unknown> };
}

const ARROW = 'application/vnd.apache.arrow.stream';
const WINDOW = 'from=2021-03-01&to=2021-03-31';

let svc: Service;
let key: string;
let duck: DuckDBConnection;
let dir: string;

// renamed: one symbol to 2021-03-14, another from 2021-03-15. late: no symbol before 2021-03-10.
// gap: a period ending 2021-03-05 and the next starting 2021-03-22 (the days between keep the ended one).
const periods: Record<'renamed' | 'late' | 'gap', Period[]> = {
  renamed: [
    { symbol: uniqueSymbol('OLD'), validFrom: '2015-01-01', validTo: '2021-03-14' },
    { symbol: uniqueSymbol('NEW'), validFrom: '2021-03-15', validTo: null },
  ],
  late: [{ symbol: uniqueSymbol('LATE'), validFrom: '2021-03-10', validTo: null }],
  gap: [
    { symbol: uniqueSymbol('GONE'), validFrom: '2019-01-01', validTo: '2021-03-05' },
    { symbol: uniqueSymbol('BACK'), validFrom: '2021-03-22', validTo: null },
  ],
};
const ids = {} as Record<keyof typeof periods, string>;
const periodsOf = (id: string) => periods[(Object.keys(ids) as (keyof typeof periods)[]).find((name) => ids[name] === id)!];
const days = weekdays('2021-03-01', '2021-03-31');

beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['prices:read']);
  dir = await mkdtemp(path.join(os.tmpdir(), 'mds-symbols-'));
  duck = await (await DuckDBInstance.create(':memory:')).connect();
  for (const name of Object.keys(periods) as (keyof typeof periods)[]) {
    ({ id: ids[name] } = await createInstrument(svc, { symbols: periods[name] }));
    await ingest(
      svc,
      '/bars/daily',
      days.map((barDate, i) => dailyBar(ids[name], { barDate, close: 10 + i })),
    );
  }
}, 60_000);

afterAll(async () => {
  duck?.closeSync();
  await rm(dir, { recursive: true, force: true });
  await svc.stop();
});

/** A Parquet body as a file DuckDB reads. */
async function parquetFile(bytes: Buffer): Promise<string> {
  const file = path.join(dir, `${randomUUID()}.parquet`);
  await writeFile(file, bytes);
  return file;
}

/** What DuckDB reads of a Parquet file: `query` with `$file` for it. */
async function duckRows(file: string, query: string): Promise<Record<string, unknown>[]> {
  return (await duck.runAndReadAll(query.replaceAll('$file', `'${file}'`))).getRowObjectsJS() as Record<string, unknown>[];
}

describe('daily prices: the symbol as of each bar’s date', () => {
  it('when one instrument renamed mid-window is read as CSV, then each row carries the symbol of its date, right after instrumentId', async () => {
    const res = await svc.get(`/v1/instruments/${ids.renamed}/prices?${WINDOW}&adjusted=true&format=csv`, key);
    expect(res.status).toBe(200);
    const { header, rows } = csvAnswer(res.body);
    expect(header.slice(0, 3)).toEqual(['instrumentId', 'symbol', 'barDate']);
    expect(rows.map((r) => [r[0], r[1], r[2]])).toEqual(days.map((d) => [ids.renamed, symbolOn(periods.renamed, d), d]));
    // Both symbols occur: the window holds the rename.
    expect(new Set(rows.map((r) => r[1])).size).toBe(2);
  });

  it('when the bulk read is CSV, then every row has its date’s symbol; before an instrument’s first symbol the cell is empty; between two periods the ended one holds', async () => {
    const all = Object.values(ids);
    const res = await svc.get(`/v1/prices/bulk?instrumentIds=${all.join(',')}&${WINDOW}&format=csv`, key);
    expect(res.status).toBe(200);
    const { header, rows } = csvAnswer(res.body);
    expect(header.slice(0, 3)).toEqual(['instrumentId', 'symbol', 'barDate']);
    const expected = [...all].sort().flatMap((id) => days.map((d) => [id, symbolOn(periodsOf(id), d) ?? '', d]));
    expect(rows.map((r) => [r[0], r[1], r[2]])).toEqual(expected);
    expect(rows.filter((r) => r[0] === ids.late && r[1] === '').map((r) => r[2])).toEqual(days.filter((d) => d < '2021-03-10'));
    expect(rows.filter((r) => r[0] === ids.gap && r[2] === '2021-03-15')[0][1]).toBe(periods.gap[0].symbol);
  });

  it('when the bulk read is JSON, then meta.symbols gives each series’ symbols over the window as runs, the bars keep the spec’s fields, and an instrument without bars has none', async () => {
    const { id: empty } = await createInstrument(svc);
    const res = await svc.get(`/v1/prices/bulk?instrumentIds=${[...Object.values(ids), empty].join(',')}&${WINDOW}`, key);
    expect(res.status).toBe(200);
    expect(res.body.meta.symbols).toEqual(Object.fromEntries(Object.values(ids).map((id) => [id, runsOf(periodsOf(id), '2021-03-01', '2021-03-31')])));
    expect(res.body.meta.symbols[ids.late][0]).toEqual({ symbol: null, from: '2021-03-01', to: '2021-03-09' });
    expect(empty in res.body.meta.symbols).toBe(false);
    expect(Object.keys(res.body.data[ids.renamed][0])).toEqual([
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
    ]);
    // The CSV answer's #meta row is the same meta.
    const csv = await svc.get(`/v1/prices/bulk?instrumentIds=${[...Object.values(ids), empty].join(',')}&${WINDOW}&format=csv`, key);
    expect(csvAnswer(csv.body).meta.symbols).toEqual(res.body.meta.symbols);
  });

  it('when the single-instrument JSON read is made, then its bars and meta carry no symbol (the spec’s bar)', async () => {
    const res = await svc.get(`/v1/instruments/${ids.renamed}/prices?${WINDOW}`, key);
    expect(res.status).toBe(200);
    expect(res.body.data[0].symbol).toBeUndefined();
    expect(res.body.meta.symbols).toBeUndefined();
  });

  it('when single and bulk reads are Arrow, then a dictionary-encoded, nullable symbol column follows instrumentId with each bar’s symbol', async () => {
    const single = await svc.getBytes(`/v1/instruments/${ids.renamed}/prices?${WINDOW}&format=arrow`, key);
    const table = tableFromIPC(single.body);
    expect(table.schema.fields.slice(0, 3).map((f) => `${f.name}:${String(f.type)}:${f.nullable}`)).toEqual([
      'instrumentId:Dictionary<Int32, Utf8>:false',
      'symbol:Dictionary<Int32, Utf8>:true',
      'barDate:Date32<DAY>:false',
    ]);
    expect(table.getChild('symbol')!.toArray()).toEqual(days.map((d) => symbolOn(periods.renamed, d)));

    const all = Object.values(ids);
    const bulk = tableFromIPC((await svc.getBytes(`/v1/prices/bulk?instrumentIds=${all.join(',')}&${WINDOW}`, key, { accept: ARROW })).body);
    const rows = bulk.toArray().map((r) => [r.instrumentId, r.symbol, new Date(Number(r.barDate)).toISOString().slice(0, 10)]);
    expect(rows).toEqual([...all].sort().flatMap((id) => days.map((d) => [id, symbolOn(periodsOf(id), d), d])));
    expect(bulk.getChild('symbol')!.nullCount).toBe(days.filter((d) => d < '2021-03-10').length);
  });

  it('when single and bulk reads are Parquet, then DuckDB reads each bar’s symbol, null where none, from a dictionary-encoded column', async () => {
    const single = await parquetFile((await svc.getBytes(`/v1/instruments/${ids.late}/prices?${WINDOW}&format=parquet`, key)).body);
    expect(await duckRows(single, `select symbol, strftime("barDate", '%Y-%m-%d') as day from read_parquet($file)`)).toEqual(
      days.map((d) => ({ symbol: symbolOn(periods.late, d), day: d })),
    );
    const column = `from parquet_metadata($file) m join parquet_schema($file) s on s.name = m.path_in_schema where m.path_in_schema = 'symbol'`;
    expect(await duckRows(single, `select m.encodings, s.repetition_type, s.type ${column}`)).toEqual([
      { encodings: expect.stringContaining('RLE_DICTIONARY'), repetition_type: 'OPTIONAL', type: 'BYTE_ARRAY' },
    ]);

    const all = Object.values(ids);
    const bulk = await parquetFile((await svc.getBytes(`/v1/prices/bulk?instrumentIds=${all.join(',')}&${WINDOW}&format=parquet`, key)).body);
    const rows = await duckRows(bulk, `select "instrumentId" as id, symbol, strftime("barDate", '%Y-%m-%d') as day from read_parquet($file)`);
    expect(rows).toEqual([...all].sort().flatMap((id) => days.map((d) => ({ id, symbol: symbolOn(periodsOf(id), d), day: d }))));
  });
});

describe('intraday bars: the symbol as of each bar’s UTC day', () => {
  // Renamed from 2024-01-03 (UTC): the bars from 22:00 on the 2nd to 02:00 on the 3rd carry both symbols.
  const first = uniqueSymbol('MIN');
  const second = uniqueSymbol('NXT');
  let id: string;
  const start = Date.parse('2024-01-02T22:00:00Z');
  const minutes = Array.from({ length: 240 }, (_, i) => new Date(start + i * 60_000).toISOString());
  const symbolAt = (instant: string, after = second) => (instant < '2024-01-03T00:00:00.000Z' ? first : after);
  const hours = ['2024-01-02T22:00:00.000Z', '2024-01-02T23:00:00.000Z', '2024-01-03T00:00:00.000Z', '2024-01-03T01:00:00.000Z'];
  const query = (interval: string, extra = '') => `/v1/instruments/${id}/intraday?from=2024-01-02&to=2024-01-03&interval=${interval}${extra}`;

  beforeAll(async () => {
    ({ id } = await createInstrument(svc, {
      assetClass: 'crypto',
      symbols: [
        { symbol: first, validFrom: '2020-01-01', validTo: '2024-01-02' },
        { symbol: second, validFrom: '2024-01-03', validTo: null },
      ],
    }));
    await ingest(
      svc,
      '/bars/intraday',
      minutes.map((t, i) => minuteBar(id, t, 100 + i / 10)),
    );
  });

  it('when 1-minute bars (a window long enough to be read in two halves) and 1-hour bars (their stored text, and written at read with asOf) are CSV, then each row carries its UTC day’s symbol', async () => {
    const oneMinute = csvAnswer((await svc.get(query('1min', '&format=csv'), key)).body);
    expect(oneMinute.header.slice(0, 3)).toEqual(['instrumentId', 'symbol', 'barTimestamp']);
    expect(oneMinute.rows.map((r) => [r[0], r[1], r[2]])).toEqual(minutes.map((t) => [id, symbolAt(t), t]));
    for (const extra of ['', '&asOf=2024-06-01']) {
      const oneHour = csvAnswer((await svc.get(query('1hour', `${extra}&format=csv`), key)).body);
      expect(oneHour.rows.map((r) => [r[0], r[1], r[2]])).toEqual(hours.map((t) => [id, symbolAt(t), t]));
    }
  });

  it('when 1-minute and 1-hour bars are Arrow and Parquet, then the symbol column holds each bar’s symbol', async () => {
    for (const [interval, times] of [
      ['1min', minutes],
      ['1hour', hours],
    ] as const) {
      const table = tableFromIPC((await svc.getBytes(query(interval), key, { accept: ARROW })).body);
      expect(table.schema.fields[1].name).toBe('symbol');
      expect(table.toArray().map((r) => [r.symbol, new Date(Number(r.barTimestamp)).toISOString()])).toEqual(times.map((t) => [symbolAt(t), t]));
      const parquet = await parquetFile((await svc.getBytes(query(interval, '&format=parquet'), key)).body);
      const rows = await duckRows(
        parquet,
        `select symbol, strftime(timezone('UTC', "barTimestamp"), '%Y-%m-%dT%H:%M:%S.%g') || 'Z' as t from read_parquet($file)`,
      );
      expect(rows).toEqual(times.map((t) => ({ symbol: symbolAt(t), t })));
    }
  });

  it('when the symbol history is posted again after the bars, then the stored 1-hour text is read with the new symbol, without posting the bars again', async () => {
    const renamed = uniqueSymbol('REN');
    await ingest(svc, '/instruments', [
      {
        id,
        assetClass: 'crypto',
        displayName: `Test Company ${renamed}`,
        quoteCurrency: 'USD',
        quoteUnit: 'USD per share',
        isActive: true,
        brokerCodes: {},
        symbols: [
          { symbol: first, validFrom: '2020-01-01', validTo: '2024-01-02' },
          { symbol: renamed, validFrom: '2024-01-03', validTo: null },
        ],
      },
    ]);
    const oneHour = csvAnswer((await svc.get(query('1hour', '&format=csv'), key)).body);
    expect(oneHour.rows.map((r) => [r[1], r[2]])).toEqual(hours.map((t) => [symbolAt(t, renamed), t]));
  });
});
