// ingest: a 1,000,000-row daily-bar CSV file streamed to
// POST /admin/v1/bars/daily, against psql's \copy of the same file straight
// into the same daily_bars table (emptied first), and, for reference, into a
// plain table with the file's columns and primary key; then the idempotent
// re-post of the same file.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { benchUuid, DAILY_BARS_COLUMNS, dailyBarsCsv, equity, weekdays } from './lib/data.ts';
import { benchSql } from './lib/database.ts';
import { envInt, log, onCleanup } from './lib/harness.ts';
import { settleUpload, type UploadOutcome } from './lib/http.ts';
import { findPsql, runPsql } from './lib/psql.ts';
import { resultHeader, type ScenarioContext, type ScenarioResult } from './lib/results.ts';
import { startService } from './lib/service.ts';
import { MB, ratio, round } from './lib/stats.ts';

const AS_OF = '2021-01-01T00:00:00.000Z';

type Upload = UploadOutcome<{ rows: number; inserted: number; updated: number; unchanged: number }>;
const TARGET_RATIO = 0.5;

export async function run(ctx: ScenarioContext): Promise<ScenarioResult> {
  const instruments = envInt('BENCH_INGEST_INSTRUMENTS', 400);
  const days = envInt('BENCH_INGEST_DAYS', 2_500);
  const rows = instruments * days;
  const psql = findPsql();
  const serverIssues: string[] = [];
  const notes: string[] = [
    'the service is a child process; the file is streamed as a chunked request body (fs.createReadStream piped to http.request)',
    'baseline: psql \\copy of the file straight into daily_bars after truncating it (the same table, indexes and, on TimescaleDB, hypertable as the service writes to); rates include psql start-up',
    'reference: psql \\copy into a plain table with the CSV columns and primary key (instrument_id, bar_date), not a hypertable',
    "a CHECKPOINT runs before each timed step so none pays for the previous one's dirty pages",
  ];
  const ids = Array.from({ length: instruments }, (_, i) => benchUuid(`ingest-${i}`));
  const dates = weekdays('2011-01-03', '2030-12-31', days);

  const dir = await mkdtemp(path.join(os.tmpdir(), 'mds-bench-ingest-'));
  const removeDir = onCleanup('ingest temp dir', () => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'daily-bars.csv');
  const database = await ctx.db.createDatabase(`${ctx.runId}_ingest`);
  let service = await startService(database.url);
  const sql = benchSql(database.url);
  try {
    const status = await service.admin.status();
    log(`ingest: writing ${rows} rows (${instruments} instruments × ${days} weekdays) to ${file}`);
    await pipeline(Readable.from(dailyBarsCsv(ids, dates, AS_OF)), createWriteStream(file));
    const fileBytes = (await stat(file)).size;

    await service.admin.ok(
      'POST',
      '/instruments',
      ids.map((id, i) => equity(`Ingest Equity ${i}`, `IN${String(i).padStart(4, '0')}`, id)),
    );

    // ---- (a) ours, into an empty daily_bars
    const uploadOpts = { stallMs: envInt('BENCH_UPLOAD_STALL_SEC', 30) * 1000, timeoutMs: envInt('BENCH_UPLOAD_TIMEOUT_SEC', 900) * 1000 };
    const upload = (body: () => Readable | AsyncIterable<string>): Promise<Upload> =>
      settleUpload(service.admin.postStream('/bars/daily', 'text/csv', body(), uploadOpts));
    const fileBody = () => createReadStream(file, { highWaterMark: 256 * 1024 });
    await sql`checkpoint`;
    log(`ingest: (a) POST /admin/v1/bars/daily, ${(fileBytes / MB).toFixed(1)} MB CSV`);
    const first = await upload(fileBody);
    let again: Upload | null = null;
    let chunked: Record<string, unknown> | null = null;
    let chunkedRate = NaN;
    if (first.ok) {
      if (first.result.inserted !== rows) throw new Error(`ingest inserted ${first.result.inserted}, expected ${rows}`);
      const [{ n: stored }] = await sql`select count(*)::int as n from daily_bars`;
      if (stored !== rows) throw new Error(`daily_bars holds ${stored} rows, expected ${rows}`);
      // ---- the same file again: every row unchanged
      await sql`checkpoint`;
      log('ingest: re-posting the same file (idempotent)');
      again = await upload(fileBody);
      if (!again.ok) serverIssues.push(`re-posting the ${rows}-row file failed: ${again.failure}`);
      else if (again.result.unchanged !== rows) throw new Error(`re-post: ${JSON.stringify(again.result)}; expected ${rows} unchanged`);
    } else {
      serverIssues.push(`POST /admin/v1/bars/daily of the ${rows}-row CSV file (${round(fileBytes / MB, 1)} MB) did not complete: ${first.failure}`);
      // The request may be stuck holding a connection: start afresh, then
      // measure the same path on smaller uploads so there is still a rate.
      await service.stop();
      service = await startService(database.url);
      const chunkInstruments = envInt('BENCH_INGEST_CHUNK_INSTRUMENTS', 10);
      const chunkCount = envInt('BENCH_INGEST_FALLBACK_CHUNKS', 4);
      const chunks = Array.from({ length: chunkCount }, (_, k) => ids.slice(k * chunkInstruments, (k + 1) * chunkInstruments)).filter((c) => c.length);
      const chunkRows = chunkInstruments * days;
      const total = chunks.reduce((n, c) => n + c.length * days, 0);
      log(`ingest: fallback, the first ${total} rows of the file in ${chunks.length} uploads of ${chunkRows} rows`);
      await sql`checkpoint`;
      const post = async () => {
        let ms = 0;
        const results = [];
        for (const c of chunks) {
          const r = await upload(() => dailyBarsCsv(c, dates, AS_OF));
          if (!r.ok) throw new Error(`fallback upload of ${c.length * days} rows failed: ${r.failure}`);
          ms += r.ms;
          results.push(r.result);
        }
        return { ms, results };
      };
      const p1 = await post();
      if (p1.results.some((r) => r.inserted !== chunkRows)) throw new Error(`fallback uploads: ${JSON.stringify(p1.results)}`);
      await sql`checkpoint`;
      const p2 = await post();
      if (p2.results.some((r) => r.unchanged !== chunkRows)) throw new Error(`fallback re-post: ${JSON.stringify(p2.results)}`);
      chunkedRate = total / (p1.ms / 1000);
      chunked = {
        rows: total,
        uploads: chunks.length,
        rowsPerUpload: chunkRows,
        seconds: round(p1.ms / 1000, 2),
        rowsPerSec: Math.round(chunkedRate),
        repostUnchangedSeconds: round(p2.ms / 1000, 2),
        repostUnchangedRowsPerSec: Math.round(total / (p2.ms / 1000)),
      };
    }

    // ---- (b) baseline: psql \copy straight into daily_bars
    await sql`truncate daily_bars`;
    await sql`checkpoint`;
    log(`ingest: (b) psql \\copy into daily_bars (baseline)`);
    const copy = await runPsql(psql, database.url, `\\copy daily_bars (${DAILY_BARS_COLUMNS.join(', ')}) from '${file}' with (format csv, header)`);
    const [{ n: copied }] = await sql`select count(*)::int as n from daily_bars`;
    if (copied !== rows) throw new Error(`baseline copied ${copied} rows, expected ${rows}`);

    // ---- (c) reference: psql \copy into a plain table
    await sql`
      create table bench_copy_plain (
        instrument_id uuid not null,
        bar_date date not null,
        open_price double precision,
        high_price double precision,
        low_price double precision,
        close_price double precision not null,
        volume double precision,
        quote_currency text not null,
        quote_unit text not null,
        source text not null,
        as_of timestamptz not null,
        primary key (instrument_id, bar_date)
      )
    `;
    await sql`checkpoint`;
    log(`ingest: (c) psql \\copy into a plain table (reference)`);
    const plainCopy = await runPsql(psql, database.url, `\\copy bench_copy_plain from '${file}' with (format csv, header)`);
    const [{ n: plainCopied }] = await sql`select count(*)::int as n from bench_copy_plain`;
    if (plainCopied !== rows) throw new Error(`plain-table copy stored ${plainCopied} rows, expected ${rows}`);
    const plainRate = rows / (plainCopy.ms / 1000);

    const copyRate = rows / (copy.ms / 1000);
    const oursRate = first.ok ? rows / (first.ms / 1000) : NaN;
    const againRate = again?.ok ? rows / (again.ms / 1000) : NaN;
    const ingestRatio = first.ok ? ratio(oursRate, copyRate) : null;
    const describe = (u: Upload | null, rate: number) =>
      u === null
        ? { completed: false, skipped: 'the first post did not complete' }
        : u.ok
          ? {
              completed: true,
              seconds: round(u.ms / 1000, 2),
              rowsPerSec: Math.round(rate),
              mbPerSec: round(fileBytes / MB / (u.ms / 1000), 2),
              result: u.result,
            }
          : { completed: false, secondsUntilFailure: round(u.ms / 1000, 1), failure: u.failure };
    return {
      scenario: 'ingest',
      ...resultHeader(ctx, status, service),
      config: { rows, instruments, weekdaysPerInstrument: days, fileBytes, fileMb: round(fileBytes / MB, 1), contentType: 'text/csv', psql },
      measured: {
        post: describe(first, oursRate),
        repostUnchanged: describe(again, againRate),
        ...(chunked ? { fallbackSmallerUploads: chunked } : {}),
      },
      baseline: {
        psqlCopyIntoDailyBars: { seconds: round(copy.ms / 1000, 2), rowsPerSec: Math.round(copyRate) },
        psqlCopyIntoPlainTable: { seconds: round(plainCopy.ms / 1000, 2), rowsPerSec: Math.round(plainRate) },
      },
      ratios: {
        postOverCopy: ingestRatio,
        repostOverCopy: again?.ok ? ratio(againRate, copyRate) : null,
        postOverPlainTableCopy: first.ok ? ratio(oursRate, plainRate) : null,
        ...(chunked ? { fallbackSmallerUploadsOverCopy: ratio(chunkedRate, copyRate) } : {}),
      },
      targets: { postOverCopy: `>= ${TARGET_RATIO} (the whole file in one request)` },
      meetsTarget: { postOverCopy: ingestRatio !== null && ingestRatio >= TARGET_RATIO },
      serverIssues,
      notes,
    };
  } finally {
    await sql.end();
    await service.stop();
    await database.drop();
    await removeDir();
  }
}
