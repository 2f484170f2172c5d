import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { tableFromIPC, type Table } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from './harness.ts';
import { createInstrument, dailyBar, ingest, minuteBar, weekdays } from './fixtures.ts';

// The price reads as Apache Arrow IPC streams and Parquet files, read back by
// independent readers (apache-arrow's reader, DuckDB) and compared value by
// value with the JSON read of the same request: the same asOf and version,
// so the same bars.

const ARROW = 'application/vnd.apache.arrow.stream';
const PARQUET = 'application/vnd.apache.parquet';

let svc: Service;
let key: string;
let duck: DuckDBConnection;
let dir: string;
const ids: string[] = [];
let minuteId: string;
// Each instrument's one symbol (createInstrument's, from 1990 on): every row's symbol column.
const symbols = new Map<string, string>();
// Every weekday bar from 2019 to 2021, with a gap in volume and open, and a 3-for-2 split in 2020.
const days = weekdays('2019-01-01', '2021-12-31');
const close = (i: number, n: number) => Math.round((40 + n * 7 + 10 * Math.sin(i / 17) + i / 50) * 100) / 100;
const AS_OF = '2024-06-30T00:00:00Z';

beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['prices:read']);
  dir = await mkdtemp(path.join(os.tmpdir(), 'mds-columnar-'));
  duck = await (await DuckDBInstance.create(':memory:')).connect();
  for (let n = 0; n < 3; n++) {
    const { id, symbol } = await createInstrument(svc);
    ids.push(id);
    symbols.set(id, symbol);
    await ingest(
      svc,
      '/bars/daily',
      days.map((barDate, i) =>
        dailyBar(
          id,
          { barDate, close: close(i, n), open: i % 97 === 5 ? undefined : close(i, n) - 0.25, volume: i % 50 === 7 ? null : 1000 + i * 3 + n },
          // The third instrument's source changes part way: a text column that is not one value for the whole series.
          { ...(i % 97 === 5 ? { openPrice: null } : {}), ...(n === 2 && i >= 300 ? { source: 'second-vendor' } : {}) },
        ),
      ),
    );
  }
  await ingest(svc, '/corporate-actions', [
    {
      instrumentId: ids[0],
      kind: 'split',
      effectiveDate: '2020-06-15',
      knowledgeDate: '2020-05-01',
      knowledgeProvenance: 'announced',
      params: { ratio: 1.5 },
      source: 'test-fixture',
    },
  ]);
  ids.sort();
  const minute = await createInstrument(svc);
  minuteId = minute.id;
  symbols.set(minuteId, minute.symbol);
  const minutes = Array.from({ length: 390 * 2 }, (_, i) => {
    const day = i < 390 ? '2023-03-01' : '2023-03-02';
    const t = Date.parse(`${day}T14:30:00Z`) + (i % 390) * 60_000;
    return minuteBar(minuteId, new Date(t).toISOString(), 20 + (i % 37) / 8 + i / 1000, i % 101 === 3 ? { volume: null } : {});
  });
  await ingest(svc, '/bars/intraday', minutes);
}, 120_000);

afterAll(async () => {
  duck?.closeSync();
  await rm(dir, { recursive: true, force: true });
  await svc.stop();
});

/** Rows of an Arrow table as plain values: dates and instants as the JSON writes them. */
function arrowRows(table: Table): Record<string, unknown>[] {
  const fields = table.schema.fields;
  return table.toArray().map((row) =>
    Object.fromEntries(
      fields.map((f) => {
        const v = row[f.name] as unknown;
        if (f.name === 'barDate') return [f.name, new Date(v as number).toISOString().slice(0, 10)];
        if (f.name === 'asOf' || f.name === 'barTimestamp') return [f.name, new Date(Number(v)).toISOString()];
        return [f.name, v];
      }),
    ),
  );
}

/** Rows of a Parquet file as DuckDB reads them, dates and instants written as the JSON writes them. */
async function parquetRows(
  bytes: Buffer,
  instantColumn: 'asOf' | 'barTimestamp',
): Promise<{ rows: Record<string, unknown>[]; meta: string; types: Record<string, string> }> {
  const file = path.join(dir, `${randomUUID()}.parquet`);
  await writeFile(file, bytes);
  // asOf is a keyword of DuckDB's (ASOF joins), so the names are quoted.
  const dateSelect = instantColumn === 'asOf' ? `strftime("barDate", '%Y-%m-%d') as "barDate", ` : '';
  const rows = await duck.runAndReadAll(
    `select * replace (${dateSelect}strftime(timezone('UTC', "${instantColumn}"), '%Y-%m-%dT%H:%M:%S.%g') || 'Z' as "${instantColumn}") from read_parquet('${file}')`,
  );
  const meta = await duck.runAndReadAll(`select decode(value) as meta from parquet_kv_metadata('${file}') where decode(key) = 'meta'`);
  const types = await duck.runAndReadAll(`describe select * from read_parquet('${file}')`);
  return {
    rows: rows.getRowObjectsJS() as Record<string, unknown>[],
    meta: String(meta.getRowObjectsJS()[0]?.meta),
    types: Object.fromEntries(types.getRowObjectsJS().map((r) => [String(r.column_name), String(r.column_type)])),
  };
}

/** The bytes as sent, content coding and all (fetch would decode zstd, br and gzip). */
function rawGet(route: string, headers: Record<string, string>): Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(`${svc.runtime.publicUrl}${route}`, { headers: { authorization: `Bearer ${key}`, ...headers } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

/** The JSON read's bars as the columnar rows: each with its instrument's id and symbol. */
const withId = (instrumentId: string, bars: Record<string, unknown>[]) => bars.map((bar) => ({ instrumentId, symbol: symbols.get(instrumentId), ...bar }));

describe('daily prices as Arrow and Parquet', () => {
  it('when one instrument is read adjusted as Arrow, then every column has its type and every value and the meta are the JSON read’s', async () => {
    const id = ids.find((x) => x === ids[0]) as string;
    const query = `/v1/instruments/${id}/prices?from=2019-01-01&to=2021-12-31&adjusted=true&asOf=${AS_OF}`;
    const json = await svc.get(query, key);
    expect(json.status).toBe(200);
    expect(json.body.data.length).toBe(days.length);
    const res = await svc.getBytes(`${query}&format=arrow`, key);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(ARROW);
    const table = tableFromIPC(res.body);
    expect(table.schema.fields.map((f) => `${f.name}:${String(f.type)}:${f.nullable}`)).toEqual([
      'instrumentId:Dictionary<Int32, Utf8>:false',
      'symbol:Dictionary<Int32, Utf8>:true',
      'barDate:Date32<DAY>:false',
      'openPrice:Float64:true',
      'highPrice:Float64:true',
      'lowPrice:Float64:true',
      'closePrice:Float64:false',
      'volume:Float64:true',
      'quoteCurrency:Dictionary<Int32, Utf8>:false',
      'quoteUnit:Dictionary<Int32, Utf8>:false',
      'stale:Bool:false',
      'asOf:Timestamp<MILLISECOND, UTC>:false',
      'source:Dictionary<Int32, Utf8>:false',
    ]);
    expect(arrowRows(table)).toEqual(withId(id, json.body.data));
    expect(JSON.parse(table.schema.metadata.get('meta') as string)).toEqual(json.body.meta);
    // The posted data, unadjusted after the split: the last bar's close is the one posted.
    expect(table.getChild('closePrice')?.get(days.length - 1)).toBe(json.body.data.at(-1).closePrice);
    expect(table.getChild('volume')?.nullCount).toBe(days.filter((_, i) => i % 50 === 7).length);
  });

  it('when one instrument is read as Parquet by Accept, then DuckDB reads the JSON read’s values, its types, and the meta in the file metadata', async () => {
    const id = ids[1];
    const query = `/v1/instruments/${id}/prices?from=2019-01-01&to=2021-12-31&asOf=${AS_OF}`;
    const json = await svc.get(query, key);
    const res = await svc.getBytes(query, key, { accept: `${PARQUET}, application/json;q=0.5` });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(PARQUET);
    expect(res.body.subarray(0, 4).toString()).toBe('PAR1');
    const { rows, meta, types } = await parquetRows(res.body, 'asOf');
    expect(types).toEqual({
      instrumentId: 'VARCHAR',
      symbol: 'VARCHAR',
      barDate: 'DATE',
      openPrice: 'DOUBLE',
      highPrice: 'DOUBLE',
      lowPrice: 'DOUBLE',
      closePrice: 'DOUBLE',
      volume: 'DOUBLE',
      quoteCurrency: 'VARCHAR',
      quoteUnit: 'VARCHAR',
      stale: 'BOOLEAN',
      asOf: 'TIMESTAMP WITH TIME ZONE',
      source: 'VARCHAR',
    });
    expect(rows).toEqual(withId(id, json.body.data));
    expect(JSON.parse(meta)).toEqual(json.body.meta);
  });

  it('when the same columnar read is asked again, then its ETag matches, If-None-Match gets 304, and it differs from the JSON answer’s', async () => {
    const query = `/v1/instruments/${ids[2]}/prices?from=2020-01-01&to=2020-12-31&asOf=${AS_OF}`;
    const [json, arrow, again, parquet] = await Promise.all([
      svc.get(query, key),
      svc.getBytes(`${query}&format=arrow`, key),
      svc.getBytes(`${query}&format=arrow`, key),
      svc.getBytes(`${query}&format=parquet`, key),
    ]);
    const tag = arrow.headers.get('etag') as string;
    // Strong (asOf pinned) and the SHA-256 of the bytes, as the JSON answer's is.
    expect(tag).toBe(`"${createHash('sha256').update(arrow.body).digest('base64url').slice(0, 32)}"`);
    expect(parquet.headers.get('etag')).toBe(`"${createHash('sha256').update(parquet.body).digest('base64url').slice(0, 32)}"`);
    expect(again.headers.get('etag')).toBe(tag);
    expect(again.body.equals(arrow.body)).toBe(true);
    expect(new Set([json.headers.get('etag'), tag, parquet.headers.get('etag')]).size).toBe(3);
    const revalidated = await svc.getBytes(`${query}&format=arrow`, key, { 'if-none-match': tag });
    expect(revalidated.status).toBe(304);
    expect(revalidated.body.length).toBe(0);
    // Without asOf the meta states the time of reading: the tag is weak, leaves that out, and two reads match.
    const unpinned = `/v1/instruments/${ids[2]}/prices?from=2020-01-01&to=2020-12-31&format=parquet`;
    const first = await svc.getBytes(unpinned, key);
    expect(first.headers.get('etag')).toMatch(/^W\//);
    expect((await svc.getBytes(unpinned, key, { 'if-none-match': first.headers.get('etag') as string })).status).toBe(304);
  });

  it('when an Arrow answer is asked with Accept-Encoding zstd, then it comes zstd-coded and decodes to the identity bytes; Parquet, already zstd inside, is sent as it is', async () => {
    const query = `/v1/instruments/${ids[0]}/prices?from=2019-01-01&to=2021-12-31&asOf=${AS_OF}`;
    const plain = await svc.getBytes(`${query}&format=arrow`, key, { 'accept-encoding': 'identity' });
    const coded = await rawGet(`${query}&format=arrow`, { 'accept-encoding': 'zstd' });
    expect(coded.headers['content-encoding']).toBe('zstd');
    expect(zlib.zstdDecompressSync(coded.body).equals(plain.body)).toBe(true);
    expect(coded.body.length).toBeLessThan(plain.body.length / 2);
    const parquet = await rawGet(`${query}&format=parquet`, { 'accept-encoding': 'zstd, br, gzip' });
    expect(parquet.headers['content-encoding']).toBeUndefined();
    expect(parquet.body.subarray(0, 4).toString()).toBe('PAR1');
  });

  it('when format names no format, then the 400 lists the four', async () => {
    const res = await svc.get(`/v1/instruments/${ids[0]}/prices?from=2020-01-01&to=2020-01-31&format=feather`, key);
    expect(res.status).toBe(400);
    expect(res.body.error.details.format.join(' ')).toMatch(/json.*csv.*arrow.*parquet/);
  });
});

describe('bulk prices as Arrow and Parquet', () => {
  const unknown = randomUUID();
  const bulk = (extra = '') => `/v1/prices/bulk?instrumentIds=${[...ids, unknown].join(',')}&from=2019-01-01&to=2021-12-31&adjusted=true&asOf=${AS_OF}${extra}`;
  const expected = (data: Record<string, Record<string, unknown>[]>) =>
    Object.keys(data)
      .sort()
      .flatMap((id) => withId(id, data[id]));

  it('when three instruments and an unknown id are read as Arrow, then the rows are the JSON read’s in instrument then date order, and the meta is in the schema', async () => {
    const json = await svc.get(bulk(), key);
    expect(json.status).toBe(200);
    const res = await svc.getBytes(bulk('&format=arrow'), key);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(ARROW);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const table = tableFromIPC(res.body);
    const rows = arrowRows(table);
    expect(rows.length).toBe(3 * days.length);
    expect(rows).toEqual(expected(json.body.data));
    const meta = JSON.parse(table.schema.metadata.get('meta') as string);
    expect(meta).toEqual(json.body.meta);
    expect(meta).toMatchObject({ requested: 4, found: 3 });
    // The batches waited in a spool file that was unlinked as soon as it was opened: nothing is left in the temporary directory.
    expect((await readdir(os.tmpdir())).filter((name) => name.startsWith('mds-spool-'))).toEqual([]);
  });

  it('when they are read as Parquet, then DuckDB reads the same rows and the meta from the footer', async () => {
    const json = await svc.get(bulk(), key);
    const res = await svc.getBytes(bulk('&format=parquet'), key);
    expect(res.status).toBe(200);
    const { rows, meta } = await parquetRows(res.body, 'asOf');
    expect(rows).toEqual(expected(json.body.data));
    expect(JSON.parse(meta)).toEqual(json.body.meta);
  });

  it('when the same pinned bulk read is asked twice as Parquet and Arrow, then the bytes are identical', async () => {
    // One after another: an account has BULK_STREAMS_PER_ACCOUNT downloads at a time.
    for (const format of ['parquet', 'arrow']) {
      const first = await svc.getBytes(bulk(`&format=${format}`), key);
      const second = await svc.getBytes(bulk(`&format=${format}`), key);
      expect([first.status, second.status]).toEqual([200, 200]);
      expect(first.body.equals(second.body)).toBe(true);
    }
  });
});

describe('intraday bars as Arrow and Parquet', () => {
  it.each(['1min', '1hour'])('when %s bars are read as Arrow and Parquet, then both hold the JSON read’s bars with UTC timestamps', async (interval) => {
    const query = `/v1/instruments/${minuteId}/intraday?from=2023-03-01&to=2023-03-02&interval=${interval}`;
    const json = await svc.get(query, key);
    expect(json.status).toBe(200);
    expect(json.body.data.length).toBe(interval === '1min' ? 780 : 14);
    const arrow = await svc.getBytes(query, key, { accept: ARROW });
    const table = tableFromIPC(arrow.body);
    expect(table.schema.fields.map((f) => `${f.name}:${String(f.type)}`).slice(0, 3)).toEqual([
      'instrumentId:Dictionary<Int32, Utf8>',
      'symbol:Dictionary<Int32, Utf8>',
      'barTimestamp:Timestamp<MILLISECOND, UTC>',
    ]);
    expect(arrowRows(table)).toEqual(withId(minuteId, json.body.data));
    expect(JSON.parse(table.schema.metadata.get('meta') as string)).toEqual(json.body.meta);
    const parquet = await svc.getBytes(`${query}&format=parquet`, key);
    const { rows, types } = await parquetRows(parquet.body, 'barTimestamp');
    expect(types.barTimestamp).toBe('TIMESTAMP WITH TIME ZONE');
    expect(rows).toEqual(withId(minuteId, json.body.data));
  });

  it('when a round-the-clock series whose source changes is read as known at an instant, read in two halves, and rolled up, then Arrow and Parquet hold the JSON read’s bars', async () => {
    const coin = await createInstrument(svc, { assetClass: 'crypto' });
    symbols.set(coin.id, coin.symbol);
    // 2023-03-01 to 2023-03-02 minute by minute (2,880 bars, read in two halves), the vendor
    // changing on the second day; each bar known when its minute ends.
    const start = Date.parse('2023-03-01T00:00:00Z');
    await ingest(
      svc,
      '/bars/intraday',
      Array.from({ length: 2 * 1440 }, (_, i) =>
        minuteBar(coin.id, new Date(start + i * 60_000).toISOString(), 100 + (i % 53) / 16 + i / 997, {
          ...(i >= 1440 ? { source: 'second-vendor' } : {}),
          ...(i % 89 === 5 ? { volume: null } : {}),
        }),
      ),
    );
    const reads = [
      ['1min', ''],
      // Known at noon of the second day: the bars up to 11:59 only, from both vendors.
      ['1min', '&asOf=2023-03-02T12:00:00Z'],
      ['1hour', '&asOf=2023-03-02T12:00:00Z'],
      ['1hour', ''],
    ];
    for (const [interval, asOf] of reads) {
      const query = `/v1/instruments/${coin.id}/intraday?from=2023-03-01&to=2023-03-02&interval=${interval}${asOf}`;
      const json = await svc.get(query, key);
      expect(json.status).toBe(200);
      const bars = json.body.data as Record<string, unknown>[];
      expect(bars.length).toBe((interval === '1min' ? 1440 : 24) * (asOf ? 1.5 : 2));
      expect(new Set(bars.map((b) => b.source))).toEqual(new Set(['test-fixture', 'second-vendor']));
      const table = tableFromIPC((await svc.getBytes(query, key, { accept: ARROW })).body);
      expect(arrowRows(table)).toEqual(withId(coin.id, bars));
      expect(JSON.parse(table.schema.metadata.get('meta') as string)).toEqual(json.body.meta);
      const { rows } = await parquetRows((await svc.getBytes(`${query}&format=parquet`, key)).body, 'barTimestamp');
      expect(rows).toEqual(withId(coin.id, bars));
    }
  });
});
