// bulk-read: GET /v1/prices/bulk for 500 instruments, end to end over HTTP,
// against postgres.js alone fetching the same rows; then the server's memory
// while it streams the full 10-year span to one slow reader, and to ten at once
// (BENCH_BULK_MEMORY=off leaves the memory part out, as npm run bench:check does).
//
// The service runs as a child process (its RSS is measured from
// /proc/<pid>/status), loaded through the admin API like any client would.
import { tableFromIPC } from 'apache-arrow';
import http from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { BROTLI_OPTIONS, ZSTD_OPTIONS } from '../server/http/compression.ts';
import { benchUuid, DAILY_BARS_COLUMNS, dailyBarsCsv, equity, weekdays } from './lib/data.ts';
import { benchSql } from './lib/database.ts';
import { envInt, log, sleep } from './lib/harness.ts';
import { decodedBody, getBody, type BodyRead } from './lib/http.ts';
import { procStatus, resetPeakRss, sampleRss } from './lib/proc.ts';
import { resultHeader, type ScenarioContext, type ScenarioResult } from './lib/results.ts';
import { startService } from './lib/service.ts';
import { countParquetRows, parquetRewrittenSizes, type ParquetSize } from './lib/parquet.ts';
import { BATCH_ROWS } from '../server/prices/bar-columns.ts';
import { MB, ratioSpread, round, roundOrder, summarise, timeRuns, type RatioSpread } from './lib/stats.ts';

const SERIES_TO = '2020-12-31';
const WINDOW = { from: '2020-01-01', to: '2020-12-31' };
const AS_OF = '2021-01-01T00:00:00.000Z';
const TARGET_RATIO = 1.2;
// Issue 41: a columnar body should beat the driver's text rows, and Parquet should be at most half of gzip CSV.
const TARGET_ARROW_RATIO = 0.8;
const TARGET_PARQUET_BYTES = 0.5;
const TARGET_GROWTH_MB = 50;
const SLOW_READERS = 10;
const TARGET_GROWTH_MB_READERS = 100;

export async function run(ctx: ScenarioContext): Promise<ScenarioResult> {
  const instruments = envInt('BENCH_BULK_INSTRUMENTS', 500);
  // Years of history loaded, ending with the 2020 window that is read.
  const years = envInt('BENCH_BULK_YEARS', 10);
  // Each round reads once uncompressed, with gzip, br and zstd, and by postgres.js.
  // One round's ratio ranges from about 1.0× to 2.0× on an idle machine; the
  // median of 21 gave 1.31× and 1.30× in two runs of the same code.
  const rounds = envInt('BENCH_BULK_ROUNDS', 21);
  const measureMemory = process.env.BENCH_BULK_MEMORY !== 'off';
  const compressedEncodings = process.env.BENCH_BULK_COMPRESSED === 'off' ? [] : (['gzip', 'br', 'zstd'] as const);
  const columnarFormats = process.env.BENCH_BULK_COLUMNAR === 'off' ? [] : (['arrow', 'parquet'] as const);
  const batchSize = envInt('BENCH_BULK_LOAD_BATCH', 50);
  const serverIssues: string[] = [];
  const notes: string[] = [
    'the service is a child process; HTTP timings are from request start to the last body byte (node:http, chunks kept as they arrive, gzip, br and zstd decompressed as they arrive), the body then joined, decoded, parsed and checked outside the timing',
    'the baseline is postgres.js in the bench process running the same select (all rows into memory, no adjustment, no JSON)',
    "each ratio is the median of the rounds' ratios (each round reads uncompressed, gzip, br, zstd and postgres.js back to back, the order rotated); spreads holds each one's range and interquartile range",
    "httpBulkColumnar reads the same window as an Arrow IPC stream and a Parquet file, uncompressed, in the same rounds; the Arrow rows are counted by apache-arrow and the Parquet rows by DuckDB, outside the timing; parquetBytesOverGzipCsvBytes divides the Parquet body by the CSV body of the same rows coded with gzip at the service's level",
    "measured.parquetBytes: the gzip CSV's bytes; the Parquet body's, and its column chunks' alone (the rest is its footer, which carries the read's meta); and the same for the body's rows written again by DuckDB's Parquet writer (same columns, types and row groups, no key-value metadata) with zstd at level 3 and 22, and at 22 with Parquet format 2's encodings",
    "measured.parquetBytes.realBars: the same two bodies for genuine prices, the demo set's daily bars (server/demo/data: an index and stocks from Yahoo Finance, closes of the Dow Jones 30 from r-cran-fbasics), loaded by a service's first start (DEMO_DATA=auto) into a database of their own and read in one bulk read over every date they cover, unadjusted: every instrument with daily bars (most have closes only), and those whose every bar has open, high, low, close and volume; duckDbOverGzipCsv is the same rows written again by DuckDB as above",
    "codings compresses the window's JSON and CSV bodies in the bench process with the service's own settings (server/http/compression.ts), each CODING_REPS times: bytes, the ratio to the body, and CPU milliseconds (user + system) per MB of body",
    'each instrument carries a 2:1 split and a 0.50 USD cash dividend inside the 2020 window, so adjusted=true applies both',
  ];
  const fullSpan = { from: `${2021 - years}-01-01`, to: SERIES_TO };
  const dates = weekdays(fullSpan.from, SERIES_TO);
  const ids = Array.from({ length: instruments }, (_, i) => benchUuid(`bulk-${i}`));
  const sortedIds = [...ids].sort();
  const expectedFull = instruments * dates.length;

  const database = await ctx.db.createDatabase(`${ctx.runId}_bulk`);
  // Room for the ten simultaneous downloads of (d), each from its own account.
  const service = await startService(database.url, { env: { BULK_STREAMS_MAX: String(SLOW_READERS) } });
  const sql = benchSql(database.url);
  try {
    const status = await service.admin.status();

    // ---- data set
    log(`bulk-read: ${instruments} instruments × ${dates.length} weekdays = ${expectedFull} daily bars`);
    const created = await service.admin.ok(
      'POST',
      '/instruments',
      ids.map((id, i) => equity(`Bench Equity ${i}`, `BN${String(i).padStart(4, '0')}`, id)),
    );
    if (JSON.stringify(created.data.ids) !== JSON.stringify(ids)) throw new Error('instrument ids came back different from those sent');
    const loadStarted = performance.now();
    const loadMode = process.env.BENCH_BULK_LOAD === 'copy' ? 'copy' : 'api';
    if (loadMode === 'api') {
      // Batches of 50 instruments (130k rows), two in flight so one batch's
      // database apply overlaps the next one's parsing.
      const batches: string[][] = [];
      for (let i = 0; i < ids.length; i += batchSize) batches.push(ids.slice(i, i + batchSize));
      let loaded = 0;
      const upload = async (batch: string[]) => {
        const res = await service.admin.postStream('/bars/daily', 'text/csv', dailyBarsCsv(batch, dates, AS_OF));
        if (res.status !== 200 || res.body.data.inserted !== batch.length * dates.length) {
          throw new Error(`daily bar load answered ${res.status}: ${res.text.slice(0, 500)}`);
        }
        loaded += batch.length;
        if (loaded % 100 === 0 || loaded === ids.length)
          log(`bulk-read: ${loaded} of ${ids.length} instruments loaded through the admin API (last batch ${(res.ms / 1000).toFixed(1)}s)`);
      };
      let next = 0;
      await Promise.all(
        [0, 1].map(async () => {
          while (next < batches.length) await upload(batches[next++]);
        }),
      );
    } else {
      // Development shortcut: the same rows straight into daily_bars with COPY.
      notes.push('BENCH_BULK_LOAD=copy: daily bars were loaded with COPY into daily_bars, not through the admin API');
      const writable = await sql`copy daily_bars (${sql(DAILY_BARS_COLUMNS)}) from stdin with (format csv, header)`.writable();
      await pipeline(Readable.from(dailyBarsCsv(ids, dates, AS_OF)), writable);
    }
    const loadSec = (performance.now() - loadStarted) / 1000;
    const in2020 = dates.filter((d) => d >= WINDOW.from);
    const actions = ids.flatMap((instrumentId, i) => [
      {
        instrumentId,
        kind: 'split',
        effectiveDate: in2020[100 + (i % 100)],
        knowledgeDate: '2015-01-01',
        knowledgeProvenance: 'announced',
        params: { ratio: 2 },
        source: 'bench',
      },
      {
        instrumentId,
        kind: 'cash_dividend',
        effectiveDate: in2020[20 + (i % 60)],
        knowledgeDate: '2015-01-01',
        knowledgeProvenance: 'announced',
        params: { amount: 0.5, currency: 'USD' },
        source: 'bench',
      },
    ]);
    await service.admin.ok('POST', '/corporate-actions', actions);
    // Vacuumed and checkpointed before any read is timed: otherwise autovacuum
    // (it wakes each minute, and finds the freshly loaded chunks) and a
    // checkpoint of the load's WAL may start during the rounds, landing in
    // some rounds' reads and not others'.
    await sql`vacuum analyze`;
    await sql`checkpoint`;
    const expectedRows = instruments * in2020.length;

    // ---- (a) HTTP, uncompressed and compressed; (b) postgres.js alone, interleaved with (a)
    const bulkUrl = (span: { from: string; to: string }) => `/v1/prices/bulk?instrumentIds=${ids.join(',')}&from=${span.from}&to=${span.to}&adjusted=true`;
    const key = await service.admin.apiKey(['prices:read']);
    const get = (encoding: Encoding) => () => getBody(service.publicUrl, key, bulkUrl(WINDOW), { 'accept-encoding': encoding });
    const probe = await get('identity')();
    if (probe.status !== 200) throw new Error(`GET /v1/prices/bulk answered ${probe.status}: ${probe.text.slice(0, 500)}`);

    let responseBytes = 0;
    const checkHttp = (r: BodyRead) => {
      if (r.status !== 200) throw new Error(`bulk read answered ${r.status}`);
      const text = r.text;
      const body = JSON.parse(text);
      const keys = Object.keys(body.data);
      if (keys.length !== instruments) throw new Error(`bulk read returned ${keys.length} instruments, expected ${instruments}`);
      const bars = keys.reduce((n, k) => n + body.data[k].length, 0);
      if (bars !== expectedRows) throw new Error(`bulk read returned ${bars} bars, expected ${expectedRows}`);
      if (body.meta.priceBases[ids[0]].actionsApplied !== 2) throw new Error('expected both corporate actions applied');
      responseBytes = r.bytes;
    };
    const query = () => sql`
      select instrument_id, bar_date, open_price, high_price, low_price, close_price, volume, quote_currency, quote_unit, stale, source, as_of
      from daily_bars
      where instrument_id = any (${sortedIds}::uuid[]) and bar_date between ${WINDOW.from}::date and ${WINDOW.to}::date
      order by instrument_id, bar_date
    `;
    const checkSql = (rows: unknown[]) => {
      if (rows.length !== expectedRows) throw new Error(`baseline returned ${rows.length} rows, expected ${expectedRows}`);
    };
    // Interleaved rounds: each reads uncompressed, with gzip, br and zstd, and
    // by postgres.js back to back, in an order rotated each round, so a change
    // in the machine's load falls on every side of a round's ratios alike.
    // BENCH_BULK_COMPRESSED=off leaves the codings out (npm run bench:check
    // does: they are two thirds of a round's time, and carry no bar).
    type Side = Encoding | Columnar | 'postgresJs';
    const sides: Side[] = ['identity', ...compressedEncodings, ...columnarFormats, 'postgresJs'];
    const samples = Object.fromEntries(sides.map((s) => [s, [] as number[]])) as Record<Side, number[]>;
    const wire: Partial<Record<Encoding, BodyRead>> = {};
    const readOver = (encoding: Encoding) => () =>
      timeRuns(1, 0, get(encoding), (r) => {
        checkHttp(r);
        wire[encoding] = r;
      });
    // The columnar answers, uncompressed (Parquet's pages are zstd already),
    // checked by readers of their own outside the timing: apache-arrow reads
    // the stream's rows, DuckDB the file's.
    const columnarBody: Partial<Record<Columnar, Buffer>> = {};
    const readColumnar = (format: Columnar) => () =>
      timeRuns(
        1,
        0,
        () => getBody(service.publicUrl, key, `${bulkUrl(WINDOW)}&format=${format}`, { 'accept-encoding': 'identity' }),
        (r) => {
          if (r.status !== 200) throw new Error(`the ${format} bulk read answered ${r.status}`);
          columnarBody[format] = r.buffer;
          if (format === 'arrow' && tableFromIPC(r.buffer).numRows !== expectedRows) throw new Error(`the Arrow bulk read did not hold ${expectedRows} rows`);
        },
      );
    const measure: Record<Side, () => Promise<number[]>> = {
      postgresJs: () => timeRuns(1, 0, query, checkSql),
      arrow: readColumnar('arrow'),
      parquet: readColumnar('parquet'),
      identity: readOver('identity'),
      gzip: readOver('gzip'),
      br: readOver('br'),
      zstd: readOver('zstd'),
    };
    log(
      `bulk-read: (a) HTTP bulk read (${sides.slice(0, -1).join(', ')}) and (b) the postgres.js baseline, ${rounds} interleaved rounds after a warm-up of each`,
    );
    for (const side of sides) await measure[side]();
    for (let i = 0; i < rounds; i++) for (const side of roundOrder(sides, i)) samples[side].push(...(await measure[side]()));
    const compressed: Record<string, ReturnType<typeof summarise> & { responseBytes: number; ratioOverPostgresJs: number }> = {};
    // Keyed by the path of the ratio each gives the median of.
    const spreads: Record<string, RatioSpread> = { 'ratios.httpOverPostgresJs': ratioSpread(samples.identity, samples.postgresJs) };
    for (const encoding of compressedEncodings) {
      if (wire[encoding]?.encoding !== encoding) throw new Error(`asked for ${encoding}, got content-encoding ${wire[encoding]?.encoding}`);
      const spread = ratioSpread(samples[encoding], samples.postgresJs);
      spreads[`measured.httpBulkCompressed.${encoding}.ratioOverPostgresJs`] = spread;
      compressed[encoding] = { ...summarise(samples[encoding]), responseBytes: wire[encoding].wireBytes, ratioOverPostgresJs: spread.median };
    }
    const columnar: Record<string, ReturnType<typeof summarise> & { responseBytes: number; ratioOverPostgresJs: number }> = {};
    for (const format of columnarFormats) {
      const spread = ratioSpread(samples[format], samples.postgresJs);
      spreads[`measured.httpBulkColumnar.${format}.ratioOverPostgresJs`] = spread;
      columnar[format] = { ...summarise(samples[format]), responseBytes: columnarBody[format]?.length ?? 0, ratioOverPostgresJs: spread.median };
    }
    const httpSamples = samples.identity;
    const sqlSamples = samples.postgresJs;

    // ---- (e) the codings, on the window's JSON and CSV bodies, in this process
    // The window's CSV body, read once for the codings and the Parquet size.
    const csvBody =
      compressedEncodings.length || columnarBody.parquet
        ? await getBody(service.publicUrl, key, `${bulkUrl(WINDOW)}&format=csv`, { 'accept-encoding': 'identity' })
        : null;
    if (csvBody && csvBody.status !== 200) throw new Error(`the CSV bulk read answered ${csvBody.status}`);
    let codings: ReturnType<typeof measureCodings> | undefined;
    if (compressedEncodings.length && csvBody) {
      log(`bulk-read: (e) each coding over the JSON and CSV bodies, ${CODING_REPS} times`);
      codings = measureCodings({ json: Buffer.from(probe.text), csv: Buffer.from(csvBody.text) });
    }
    // Parquet's bytes against the same rows as CSV coded with gzip (the service's gzip, level 6).
    // DuckDB's writer, given the same rows, columns and row groups, at its
    // tightest settings: what a kept writer makes of float64 prices.
    let parquetOverGzipCsv: number | null = null;
    let parquetBytes: { gzipCsv: number; files: Record<string, ParquetSize & { overGzipCsv: number; columnsOverGzipCsv: number }> } | undefined;
    if (columnarBody.parquet && csvBody) {
      const parquetRows = await countParquetRows(columnarBody.parquet);
      if (parquetRows !== expectedRows) throw new Error(`the Parquet bulk read held ${parquetRows} rows, expected ${expectedRows}`);
      const gzipCsv = CODERS.gzip(csvBody.buffer).length;
      parquetOverGzipCsv = round(columnarBody.parquet.length / gzipCsv, 3);
      const { original, ...duckDb } = await parquetRewrittenSizes(columnarBody.parquet, DUCKDB_PARQUET_SETTINGS);
      const withRatios = (size: ParquetSize) => ({
        ...size,
        overGzipCsv: round(size.bytes / gzipCsv, 3),
        columnsOverGzipCsv: round(size.columnBytes / gzipCsv, 3),
      });
      parquetBytes = {
        gzipCsv,
        files: {
          service: withRatios(original),
          ...Object.fromEntries(Object.entries(duckDb).map(([name, size]) => [`duckDb_${name}`, withRatios(size)])),
        },
      };
    }

    // The same comparison on genuine prices: the demo set's daily bars.
    const realBars = columnarBody.parquet ? await realBarsBytes(ctx) : undefined;

    // ---- (c) memory, full span, one slow reader, uncompressed and br; (d) ten compressed ones at once
    const httpSummary = summarise(httpSamples);
    const measuredRate = responseBytes / (httpSummary.medianMs / 1000);
    const expectedBytes = responseBytes * (expectedFull / expectedRows);
    // Slower than the server can write (half the rate it delivered in (a)), so
    // the socket backs up and the server must hold back rather than buffer;
    // but not so slow that the response outlives BENCH_SLOW_READ_MAX_SEC
    // (default 35 s). BENCH_SLOW_READ_MBPS overrides. The pace counts the
    // body's decoded bytes, so a compressed reader takes bars as fast as an
    // uncompressed one. Each of the ten readers of (d) reads at a fifth of
    // that pace, unless that takes longer than BENCH_SLOW_READERS_MAX_SEC
    // (default 240 s); half ask for gzip, half for br.
    const maxSec = envInt('BENCH_SLOW_READ_MAX_SEC', 35);
    const paceBytesPerSec = envInt('BENCH_SLOW_READ_MBPS', 0) * MB || Math.max(measuredRate / 2, expectedBytes / maxSec);
    const readersPace = Math.max(paceBytesPerSec / 5, expectedBytes / envInt('BENCH_SLOW_READERS_MAX_SEC', 240));
    // Each slow reader of (d) on its own account's key: the first is the one of (a).
    const keys = [key];
    const streamToSlowReaders = async (encodings: Encoding[], pace: number) => {
      const readers = encodings.length;
      await sleep(1_000);
      const before = procStatus(service.pid);
      const hwmReset = resetPeakRss(service.pid);
      if (!hwmReset) notes.push('could not reset VmHWM via /proc/<pid>/clear_refs; peak is the sampled maximum VmRSS');
      const sampler = sampleRss(service.pid, 50);
      log(
        `bulk-read: full ${fullSpan.from}..${fullSpan.to} span (~${(expectedBytes / MB).toFixed(0)} MB) to ${readers} reader(s) (${encodings.join(', ')}), each at ${(pace / MB).toFixed(1)} MB/s`,
      );
      // Each starts once the one before has its answer's head: ten first pages
      // asked for at the same instant would queue for the bulk lane, and a
      // first page that waits past the acquire deadline is a 503.
      const reads: Promise<SlowRead>[] = [];
      for (const [i, encoding] of encodings.entries()) {
        const started = slowRead(
          `${service.publicUrl}${bulkUrl(fullSpan)}`,
          { authorization: `Bearer ${keys[i]}`, 'accept-encoding': encoding },
          pace,
          600_000,
        );
        reads.push(started.done);
        await started.head;
      }
      const results = await Promise.all(reads);
      const sampled = sampler.stop();
      const after = procStatus(service.pid);
      const peakKb = hwmReset ? after.hwmKb : sampled.maxRssKb;
      const incomplete = results.filter((slow) => !(slow.status === 200 && !slow.aborted && slow.bars === expectedFull && slow.wellFormed));
      for (const slow of incomplete) {
        serverIssues.push(
          `full-span bulk read (${instruments} ids, ${fullSpan.from}..${fullSpan.to}, ${readers} reader(s), ${slow.encoding}) did not complete: status ${slow.status}, ` +
            `${slow.aborted ? `connection aborted by the server after ${round(slow.ms / 1000, 1)} s and ${round(slow.bytes / MB, 1)} MB` : 'ended'}, ` +
            `${slow.bars} of ${expectedFull} bars, well-formed=${slow.wellFormed}`,
        );
      }
      return {
        request: `${fullSpan.from}..${fullSpan.to}, ${instruments} instruments, adjusted=true`,
        readers,
        encodings,
        readPaceMBps: round(pace / MB, 1),
        bytesReceived: results[0].decodedBytes,
        mbReceived: round(results[0].decodedBytes / MB, 1),
        wireMbReceived: round(results.reduce((n, r) => n + r.bytes, 0) / MB, 1),
        bars: results[0].bars,
        complete: incomplete.length === 0,
        seconds: round(Math.max(...results.map((r) => r.ms)) / 1000, 1),
        rssBeforeMb: round(before.rssKb / 1024, 1),
        peakRssMb: round(peakKb / 1024, 1),
        peakSource: hwmReset ? 'VmHWM (reset via clear_refs just before the request)' : 'sampled VmRSS maximum',
        sampledMaxRssMb: round(sampled.maxRssKb / 1024, 1),
        rssAfterMb: round(after.rssKb / 1024, 1),
        growthMb: round((peakKb - before.rssKb) / 1024, 1),
      };
    };
    // (c) also for the columnar answers: the full span as Arrow (its batches
    // spooled to disk until the meta is known) and as Parquet (row group by
    // row group), each read at full speed by one reader, its rows counted.
    const columnarMemory = async (format: Columnar) => {
      await sleep(1_000);
      const before = procStatus(service.pid);
      const hwmReset = resetPeakRss(service.pid);
      const sampler = sampleRss(service.pid, 50);
      log(`bulk-read: full ${fullSpan.from}..${fullSpan.to} span as ${format}, one reader at full speed`);
      const started = performance.now();
      const r = await getBody(service.publicUrl, key, `${bulkUrl(fullSpan)}&format=${format}`, { 'accept-encoding': 'identity' });
      const seconds = (performance.now() - started) / 1000;
      const sampled = sampler.stop();
      const after = procStatus(service.pid);
      const peakKb = hwmReset ? after.hwmKb : sampled.maxRssKb;
      const rows = r.status !== 200 ? 0 : format === 'arrow' ? tableFromIPC(r.buffer).numRows : await countParquetRows(r.buffer);
      if (rows !== expectedFull) serverIssues.push(`full-span ${format} bulk read answered ${r.status} with ${rows} of ${expectedFull} rows`);
      return {
        format,
        complete: rows === expectedFull,
        rows,
        mbReceived: round(r.bytes / MB, 1),
        seconds: round(seconds, 1),
        rssBeforeMb: round(before.rssKb / 1024, 1),
        peakRssMb: round(peakKb / 1024, 1),
        growthMb: round((peakKb - before.rssKb) / 1024, 1),
      };
    };
    const measureMemoryGrowth = async () => {
      keys.push(...(await Promise.all(Array.from({ length: SLOW_READERS - 1 }, () => service.admin.apiKey(['prices:read'])))));
      log('bulk-read: (c) one slow reader, uncompressed, then one asking for br');
      const memory = await streamToSlowReaders(['identity'], paceBytesPerSec);
      const memoryBr = await streamToSlowReaders(['br'], paceBytesPerSec);
      log(`bulk-read: (d) ${SLOW_READERS} slow readers at once, gzip and br`);
      const memoryTenReaders = await streamToSlowReaders(
        Array.from({ length: SLOW_READERS }, (_, i) => (i % 2 ? 'br' : 'gzip')),
        readersPace,
      );
      const memoryColumnar = [];
      for (const format of columnarFormats) memoryColumnar.push(await columnarMemory(format));
      return {
        sections: { memory, memoryBr, memoryTenReaders, ...(memoryColumnar.length ? { memoryColumnar } : {}) },
        targets: {
          memoryGrowthMb: `< ${TARGET_GROWTH_MB}`,
          memoryGrowthMbTenReaders: `< ${TARGET_GROWTH_MB_READERS}`,
          ...(memoryColumnar.length ? { memoryGrowthMbColumnar: `< ${TARGET_GROWTH_MB}` } : {}),
        },
        meetsTarget: {
          memoryGrowthMb: memory.complete && memory.growthMb < TARGET_GROWTH_MB && memoryBr.complete && memoryBr.growthMb < TARGET_GROWTH_MB,
          memoryGrowthMbTenReaders: memoryTenReaders.complete && memoryTenReaders.growthMb < TARGET_GROWTH_MB_READERS,
          ...(memoryColumnar.length ? { memoryGrowthMbColumnar: memoryColumnar.every((m) => m.complete && m.growthMb < TARGET_GROWTH_MB) } : {}),
        },
      };
    };
    const growth = measureMemory ? await measureMemoryGrowth() : null;
    if (!growth) notes.push('BENCH_BULK_MEMORY=off: the memory part, (c) and (d), was not measured');
    if (!compressedEncodings.length) notes.push('BENCH_BULK_COMPRESSED=off: the reads with gzip and br were not measured');

    const sqlSummary = summarise(sqlSamples);
    const readRatio = spreads['ratios.httpOverPostgresJs'].median;
    return {
      scenario: 'bulk-read',
      ...resultHeader(ctx, status, service),
      config: {
        instruments,
        series: { from: dates[0], to: SERIES_TO, weekdaysPerInstrument: dates.length, totalBars: expectedFull },
        corporateActionsPerInstrument: 2,
        window: { ...WINDOW, adjusted: true, bars: expectedRows },
        fullSpan: { ...fullSpan, adjusted: true, bars: expectedFull },
        rounds,
        warmups: 1,
      },
      setup: {
        load: loadMode,
        ...(loadMode === 'api' ? { batchInstruments: batchSize, concurrentUploads: 2 } : {}),
        loadSec: round(loadSec, 1),
        loadRowsPerSec: Math.round(expectedFull / loadSec),
      },
      measured: {
        httpBulk: { ...httpSummary, responseBytes, barsPerSec: Math.round(expectedRows / (httpSummary.medianMs / 1000)) },
        ...(compressedEncodings.length ? { httpBulkCompressed: compressed, codings } : {}),
        ...(columnarFormats.length ? { httpBulkColumnar: columnar } : {}),
        ...(parquetBytes ? { parquetBytes: { ...parquetBytes, ...(realBars ? { realBars } : {}) } } : {}),
      },
      baseline: { postgresJs: { ...sqlSummary, rows: expectedRows } },
      ratios: {
        httpOverPostgresJs: readRatio,
        ...(columnar.arrow ? { arrowOverPostgresJs: columnar.arrow.ratioOverPostgresJs } : {}),
        ...(parquetOverGzipCsv !== null ? { parquetBytesOverGzipCsvBytes: parquetOverGzipCsv } : {}),
      },
      spreads,
      ...growth?.sections,
      targets: {
        httpOverPostgresJs: `<= ${TARGET_RATIO}`,
        ...(columnar.arrow ? { arrowOverPostgresJs: `<= ${TARGET_ARROW_RATIO}` } : {}),
        ...(parquetOverGzipCsv !== null ? { parquetBytesOverGzipCsvBytes: `<= ${TARGET_PARQUET_BYTES}` } : {}),
        ...growth?.targets,
      },
      meetsTarget: {
        httpOverPostgresJs: readRatio <= TARGET_RATIO,
        ...(columnar.arrow ? { arrowOverPostgresJs: columnar.arrow.ratioOverPostgresJs <= TARGET_ARROW_RATIO } : {}),
        ...(parquetOverGzipCsv !== null ? { parquetBytesOverGzipCsvBytes: parquetOverGzipCsv <= TARGET_PARQUET_BYTES } : {}),
        ...growth?.meetsTarget,
      },
      serverIssues,
      notes,
    };
  } finally {
    await sql.end();
    await service.stop();
    await database.drop();
  }
}

/** Parquet and gzip CSV bytes of one bulk read of real bars. */
interface RealBarsBytes {
  instruments: number;
  rows: number;
  gzipCsv: number;
  parquet: number;
  overGzipCsv: number;
  /** The same rows written again by DuckDB at each of DUCKDB_PARQUET_SETTINGS, over the same gzip CSV. */
  duckDbOverGzipCsv: Record<string, number>;
}

/**
 * The Parquet body of a bulk read of the demo set's daily bars (genuine
 * prices, server/demo/data) against its CSV body coded with gzip, as the
 * synthetic window is compared: for every instrument with daily bars, and
 * for those whose every bar has all five numbers. The demo set is loaded the
 * way a new user's first `npm start` loads it, into a database of its own.
 */
async function realBarsBytes(ctx: ScenarioContext): Promise<{ from: string; to: string; sets: Record<'all' | 'ohlcv', RealBarsBytes> }> {
  log("bulk-read: Parquet against gzip CSV on the demo set's real daily bars");
  const database = await ctx.db.createDatabase(`${ctx.runId}_bulk_demo`);
  const service = await startService(database.url, { env: { DEMO_DATA: 'auto' } });
  const sql = benchSql(database.url);
  try {
    const key = await service.admin.apiKey(['prices:read']);
    const series = await sql<{ id: string; bars: number; complete: boolean; from: string; to: string }[]>`
      select instrument_id::text as id, count(*)::int as bars, min(bar_date)::text as from, max(bar_date)::text as to,
        bool_and(open_price is not null and high_price is not null and low_price is not null and close_price is not null and volume is not null) as complete
      from daily_bars group by instrument_id order by instrument_id
    `;
    if (!series.length) throw new Error('the demo set loaded no daily bars');
    const from = series.reduce((min, s) => (s.from < min ? s.from : min), series[0].from);
    const to = series.reduce((max, s) => (s.to > max ? s.to : max), series[0].to);
    const measure = async (chosen: readonly (typeof series)[number][]): Promise<RealBarsBytes> => {
      const path = `/v1/prices/bulk?instrumentIds=${chosen.map((s) => s.id).join(',')}&from=${from}&to=${to}&adjusted=false&asOf=${AS_OF}`;
      const [csv, parquet] = await Promise.all(
        ['csv', 'parquet'].map((format) => getBody(service.publicUrl, key, `${path}&format=${format}`, { 'accept-encoding': 'identity' })),
      );
      for (const body of [csv, parquet])
        if (body.status !== 200) throw new Error(`a bulk read of the demo bars answered ${body.status}: ${body.text.slice(0, 300)}`);
      const rows = chosen.reduce((n, s) => n + s.bars, 0);
      const parquetRows = await countParquetRows(parquet.buffer);
      if (parquetRows !== rows) throw new Error(`the demo bars' Parquet held ${parquetRows} rows, expected ${rows}`);
      const gzipCsv = CODERS.gzip(csv.buffer).length;
      const { original: _, ...duckDb } = await parquetRewrittenSizes(parquet.buffer, DUCKDB_PARQUET_SETTINGS);
      return {
        instruments: chosen.length,
        rows,
        gzipCsv,
        parquet: parquet.bytes,
        overGzipCsv: round(parquet.bytes / gzipCsv, 3),
        duckDbOverGzipCsv: Object.fromEntries(Object.entries(duckDb).map(([name, size]) => [name, round(size.bytes / gzipCsv, 3)])),
      };
    };
    return { from, to, sets: { all: await measure(series), ohlcv: await measure(series.filter((s) => s.complete)) } };
  } finally {
    await sql.end();
    await service.stop();
    await database.drop();
  }
}

type Encoding = 'identity' | 'gzip' | 'br' | 'zstd';
type Columnar = 'arrow' | 'parquet';

const CODING_REPS = 5;

/** The service's codings, with its settings. */
/**
 * DuckDB's Parquet writer with zstd at its default level (3, the service's)
 * and at its highest, with Parquet format 1's encodings (plain and
 * dictionary) and at the highest with format 2's (byte-stream-split doubles,
 * delta integers).
 */
const DUCKDB_PARQUET_SETTINGS = {
  zstd: `compression zstd, row_group_size ${BATCH_ROWS}`,
  zstd22: `compression zstd, compression_level 22, row_group_size ${BATCH_ROWS}`,
  zstd22V2: `compression zstd, compression_level 22, row_group_size ${BATCH_ROWS}, parquet_version v2`,
};

const CODERS: Record<'gzip' | 'br' | 'zstd', (body: Buffer) => Buffer> = {
  gzip: (body) => zlib.gzipSync(body),
  br: (body) => zlib.brotliCompressSync(body, BROTLI_OPTIONS),
  zstd: (body) => zlib.zstdCompressSync(body, ZSTD_OPTIONS),
};

/**
 * Each coding over each body, CODING_REPS times after one warm-up: the coded
 * bytes, their ratio to the body, and the CPU (user + system, median of the
 * repetitions) per MB of body.
 */
function measureCodings(bodies: Record<string, Buffer>) {
  const out: Record<string, Record<string, { bodyBytes: number; codedBytes: number; ratio: number; cpuMsPerMB: number }>> = {};
  for (const [name, body] of Object.entries(bodies)) {
    out[name] = {};
    for (const [coding, code] of Object.entries(CODERS)) {
      const coded = code(body);
      const cpu: number[] = [];
      for (let i = 0; i < CODING_REPS; i++) {
        const before = process.cpuUsage();
        code(body);
        const used = process.cpuUsage(before);
        cpu.push((used.user + used.system) / 1000);
      }
      cpu.sort((a, b) => a - b);
      out[name][coding] = {
        bodyBytes: body.length,
        codedBytes: coded.length,
        ratio: round(coded.length / body.length, 4),
        cpuMsPerMB: round(cpu[Math.floor(cpu.length / 2)] / (body.length / MB), 2),
      };
    }
  }
  return out;
}

interface SlowRead {
  encoding: string;
  status: number;
  /** Bytes on the wire, and after decoding. */
  bytes: number;
  decodedBytes: number;
  bars: number;
  ms: number;
  wellFormed: boolean;
  aborted: boolean;
}

/**
 * Streams a GET response and discards it, decoding it as its
 * Content-Encoding says, and pausing so the decoded bytes arrive at
 * `bytesPerSec` on average. Counts bars by their "barDate" keys (across chunk
 * boundaries) and checks the body's first and last bytes. `head` resolves
 * when the answer's head has arrived.
 */
function slowRead(url: string, headers: Record<string, string>, bytesPerSec: number, timeoutMs: number) {
  let headArrived!: () => void;
  const head = new Promise<void>((resolve) => (headArrived = resolve));
  const done = new Promise<SlowRead>((resolve, reject) => {
    const started = performance.now();
    const needle = '"barDate":';
    const req = http.get(url, { headers }, (res) => {
      headArrived();
      const { encoding, decoded } = decodedBody(res);
      let bytes = 0;
      let decodedBytes = 0;
      let bars = 0;
      let carry = '';
      let first = '';
      let settled = false;
      const finish = (aborted: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({
          encoding,
          status: res.statusCode ?? 0,
          bytes,
          decodedBytes,
          bars,
          ms: performance.now() - started,
          wellFormed: first.startsWith('{"data":{') && carry.endsWith('}}'),
          aborted,
        });
      };
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      decoded.setEncoding('utf8');
      decoded.on('data', (chunk: string) => {
        decodedBytes += Buffer.byteLength(chunk);
        if (first.length < 16) first += chunk.slice(0, 16);
        const text = carry + chunk;
        for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) bars++;
        carry = text.slice(-(needle.length - 1));
        const ahead = (decodedBytes / bytesPerSec) * 1000 - (performance.now() - started);
        if (ahead > 5) {
          // Pausing the decoder stops it reading the socket once its buffers fill.
          decoded.pause();
          setTimeout(() => decoded.resume(), ahead);
        }
      });
      decoded.on('end', () => finish(false));
      // The server cutting the stream short shows as 'aborted' then an error.
      res.on('aborted', () => finish(true));
      res.on('error', () => finish(true));
      decoded.on('error', () => finish(true));
    });
    const timer = setTimeout(() => req.destroy(new Error(`full-span read exceeded ${timeoutMs / 1000}s`)), timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      headArrived();
      reject(err);
    });
  });
  return { head, done };
}
