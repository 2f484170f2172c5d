import type { Lane, Reads, Units } from '../db/database.ts';
import { inReadScopeAt } from '../db/read-scope.ts';
import { InstrumentIdSchema } from '../core/ids.ts';
import { type Meta, sourcesMeta } from '../core/meta.ts';
import { freshness, type Freshness } from '../core/freshness.ts';
import type { PointInTime } from '../core/time.ts';
import { AsOfSchema } from '../core/time.ts';
import { AppError } from '../core/errors.ts';
import { ThreadTurns } from '../core/thread-turns.ts';
import { openBarFile } from '../prices/bar-files.ts';
import type { DailyBarsFormat } from '../prices/daily-text-repository.ts';
import { streamBulkPrices } from '../prices/bulk-stream.ts';
import { INTRADAY_ASSET_CLASSES } from '../prices/schema.ts';
import { readIntradayBars } from '../prices/service.ts';
import type { SymbolRun } from '../prices/symbol-runs.ts';
import { fileExtension } from './file-kinds.ts';
import { Encoder, StoredFile } from './file-store.ts';
import { exportInstruments, type JobRow } from './repository.ts';
import { setActionSetVersions, setPlan, setProgress } from './lease-repository.ts';
import { deleteUnfinishedChunks, finishedFiles } from './files-repository.ts';
import type { NormalisedRequest } from './schema.ts';

/** One file of an export: the bars of one calendar year (daily) or month (intraday, UTC), clipped to the window. */
export interface FilePlan {
  name: string;
  from: string;
  to: string;
}

const lastDayOfMonth = (year: number, month: number) => new Date(Date.UTC(year, month, 0)).toISOString().slice(0, 10);

/** The files of a request, in order. */
export function planFiles(r: Pick<NormalisedRequest, 'dataset' | 'from' | 'to' | 'format' | 'compression'>): FilePlan[] {
  const extension = fileExtension(r.format, r.compression);
  const clip = (name: string, from: string, to: string) => ({ name: `${name}.${extension}`, from: from < r.from ? r.from : from, to: to > r.to ? r.to : to });
  const files: FilePlan[] = [];
  const [fromYear, fromMonth] = [Number(r.from.slice(0, 4)), Number(r.from.slice(5, 7))];
  const [toYear, toMonth] = [Number(r.to.slice(0, 4)), Number(r.to.slice(5, 7))];
  if (r.dataset === 'daily-prices') {
    for (let y = fromYear; y <= toYear; y++) files.push(clip(String(y), `${y}-01-01`, `${y}-12-31`));
    return files;
  }
  for (let y = fromYear, m = fromMonth; y < toYear || (y === toYear && m <= toMonth); m === 12 ? (y++, (m = 1)) : m++) {
    const month = `${y}-${String(m).padStart(2, '0')}`;
    files.push(clip(month, `${month}-01`, lastDayOfMonth(y, m)));
  }
  return files;
}

export interface JobContext {
  /** Writes and the lease checks: the primary. */
  db: Units;
  /** Bar reads: the read router, each job in a read scope at its pinned asOf (a replica that has replayed past it, else the primary). */
  readDb: Reads;
  /** The lane of readDb that export reads share (bulk pages, intraday reads), so that exports never hold more of the pool than it. */
  pages: Lane;
  /** Throws LeaseLost when this process no longer holds the job (checked between instruments). */
  checkHeld: () => void;
}

/**
 * Files a job writes at once. On two cores one file leaves both idle in
 * turn: PostgreSQL while the request thread writes a row group, the thread
 * while it waits for the next page. Two at once took 0.907 times as long
 * for 500 instruments' ten years to Parquet (the median of 6 interleaved
 * rounds' ratios, 0.84 to 1.01); the pages of both still share the
 * exports lane (runner.ts).
 */
const FILES_AT_ONCE = 2;

/**
 * Bars an export's page statement reads at most, four times the bulk
 * read's: planning a page statement takes PostgreSQL about 5 ms whatever
 * its size (a fifth of a 10,000-bar page's time), and nobody waits on a
 * job's first page. For 500 instruments' ten years to Parquet, a job took
 * 0.889 times as long this way (the median of 5 interleaved rounds'
 * ratios, 0.85 to 1.09; two services each on its own copy of the data),
 * for files of the same sha256, with less CPU on both sides.
 */
const EXPORT_PAGE_ROWS = 40_000;

/**
 * Writes a job's files, FILES_AT_ONCE at a time in file order, skipping
 * those finished by an earlier holder (a process that died mid-job): each
 * file is an independent read of the same pinned request, so a file written
 * again is byte for byte the one it replaces. What an earlier holder left of
 * an unfinished file is deleted first.
 */
export function writeJobFiles(ctx: JobContext, job: JobRow, token: string): Promise<void> {
  const asOf = AsOfSchema.parse(job.request.asOf);
  return inReadScopeAt(asOf.instant, () => writeFiles(ctx, job, token, asOf));
}

async function writeFiles(ctx: JobContext, job: JobRow, token: string, asOf: PointInTime): Promise<void> {
  const r = job.request;
  const files = planFiles(r);
  const daily = r.dataset === 'daily-prices';
  const ids = await ctx.readDb.run((sql) =>
    exportInstruments(sql, { ids: r.instrumentIds, storedBy: job.acceptedAt, assetClasses: daily ? null : INTRADAY_ASSET_CLASSES }),
  );
  const done = await ctx.db.run(async (sql) => {
    await deleteUnfinishedChunks(sql, job.id);
    await setPlan(sql, job.id, token, { filesTotal: files.length, instrumentsTotal: ids.length });
    return finishedFiles(sql, job.id);
  });
  // Rows of finished files: the progress an earlier holder wrote also counted the rows of the file it died writing, which is written again.
  let rowsDone = [...done.values()].reduce((sum, rows) => sum + rows, 0);
  // The files being written, by ordinal, with what each has written so far.
  const writing = new Map<number, { instruments: number; rows: number }>();
  let progressAt = 0;
  // Instruments: those of the first file being written, as the API document says; rows: every file's.
  const progress = async (force = false) => {
    // At most one progress write a second: a file of 5,000 instruments would otherwise cost 5,000 statements.
    if (!force && Date.now() - progressAt < 1000) return;
    progressAt = Date.now();
    const first = writing.size ? writing.get(Math.min(...writing.keys())) : undefined;
    const rows = [...writing.values()].reduce((sum, file) => sum + file.rows, rowsDone);
    await ctx.db.run((sql) => setProgress(sql, job.id, token, { instrumentsDone: first?.instruments ?? ids.length, rowsDone: rows }));
  };

  // The first failure of a file stops the other at its next instrument, and is the job's.
  let failure: { err: unknown } | undefined;

  const writeFile = async (ordinal: number, plan: FilePlan) => {
    const stored = new StoredFile(ctx.db, { id: job.id, token, format: r.format }, plan.name);
    const encoder = new Encoder(r.format === 'csv' ? r.compression : 'none', (bytes) => stored.write(bytes));
    const file = openBarFile(r.format, daily ? 'daily' : 'intraday', (bytes) => encoder.write(bytes));
    const written = { instruments: 0, rows: 0 };
    writing.set(ordinal, written);
    // A page of a year's bars is 109 series, otherwise unpacked and gathered without a wait.
    const turns = new ThreadTurns();
    const add: AddSeries = async (id, parts, symbols) => {
      ctx.checkHeld();
      if (failure) throw failure.err;
      if (parts.length) written.rows += await file.add(id, parts, symbols);
      written.instruments++;
      await progress();
      await turns.take();
    };
    const read: FileRead = { ctx, r, asOf, ids, plan, add };
    const meta = daily ? await readDailyFile(read, file.textFormat) : await readIntradayFile(read, file.textFormat);
    const head = await encoder.head(await file.end(meta));
    await encoder.end();
    if (written.rows === 0) await stored.discard();
    else await stored.finish(head, written.rows, ordinal);
    writing.delete(ordinal);
    rowsDone += written.rows;
    await progress(true);
    if (written.rows && daily && meta.actionSetVersions) {
      const versions = meta.actionSetVersions as Record<string, number>;
      await ctx.db.run((sql) => setActionSetVersions(sql, job.id, token, versions));
    }
  };

  const todo = [...files.entries()].filter(([, plan]) => !done.has(plan.name));
  let next = 0;
  const writers = Array.from({ length: Math.min(FILES_AT_ONCE, todo.length) }, async () => {
    while (next < todo.length && !failure) {
      const [ordinal, plan] = todo[next++];
      try {
        await writeFile(ordinal, plan);
      } catch (err) {
        failure ??= { err };
      }
    }
  });
  await Promise.all(writers);
  if (failure) throw failure.err;
}

type AddSeries = (id: string, parts: Buffer[], symbols: SymbolRun[]) => Promise<void>;

/** What reading one file of a job takes: its window (plan) and instruments, at the job's asOf, each series handed to `add`. */
interface FileRead {
  ctx: JobContext;
  r: NormalisedRequest;
  asOf: PointInTime;
  ids: string[];
  plan: FilePlan;
  add: AddSeries;
}

/**
 * A year's daily bars of every instrument, in id order, through the bulk read
 * (it pages); its meta is the file's, that of the bulk read of the year at
 * the job's asOf, as for no instruments.
 */
function readDailyFile({ ctx, r, asOf, ids, plan, add }: FileRead, format: DailyBarsFormat): Promise<Meta> {
  const q = {
    instrumentIds: ids.map((id) => InstrumentIdSchema.parse(id)),
    from: plan.from,
    to: plan.to,
    adjusted: r.adjusted,
    asOf,
    includeBackfilled: r.includeBackfilled,
  };
  // A job waits for its next page as long as it must: nobody is waiting on a socket.
  return streamBulkPrices(ctx.readDb, q, format, (id, bars, symbols) => add(id, bars ? [bars] : [], symbols), {
    lane: ctx.pages,
    nextPageWaitMs: 60_000,
    pageRows: EXPORT_PAGE_ROWS,
  });
}

/**
 * A month's intraday bars of every instrument, in id order, one read each,
 * through the exports lane. The file's meta says what the reads have in
 * common, and is stale when one of them is, for the first reason in id
 * order, as a bulk read's is.
 */
async function readIntradayFile({ ctx, r, asOf, ids, plan, add }: FileRead, format: DailyBarsFormat): Promise<Meta> {
  const sources = new Set<string>();
  let stale: Freshness = freshness();
  // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- the request schema requires interval for intraday-bars
  const interval = r.interval!;
  for (const id of ids) {
    let parts: Buffer[] = [];
    let symbols: SymbolRun[] = [];
    try {
      // A columnar file takes the symbols beside the bars; a CSV row carries its own.
      const answer = await readIntradayBars(ctx.pages, id, { from: plan.from, to: plan.to, interval, asOf }, format, r.format !== 'csv');
      parts = answer.items;
      symbols = answer.symbols;
      for (const s of String(answer.meta.source).split(', ')) if (s !== 'none') sources.add(s);
      if (!stale.stale && answer.meta.stale) stale = { stale: true, staleReason: answer.meta.staleReason as Freshness['staleReason'] };
    } catch (err) {
      // Removed since the job was planned: it has no bars to write.
      if (!(err instanceof AppError && err.code === 'not_found')) throw err;
    }
    await add(id, parts, symbols);
  }
  return {
    asOf: asOf.input,
    source: sourcesMeta(sources),
    ...stale,
    interval,
    from: `${plan.from}T00:00:00.000Z`,
    to: `${plan.to}T23:59:59.999Z`,
    adjusted: false,
    instruments: ids.length,
  };
}
