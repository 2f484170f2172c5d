import type { Units } from '../db/database.ts';
import { latestCoverageChecks } from '../price-history/action-set-repository.ts';
import { planAdjustments, readSegments, type InstrumentPlan } from '../price-history/adjustment-plan.ts';
import { provenanceCounts } from '../price-history/adjustment.ts';
import { actionCoverage, priceBasisMeta, provenanceMeta, seriesUse } from '../price-history/read-meta.ts';
import { PROVENANCES, zeroProvenanceCounts, type CoverageCheck } from '../price-history/schema.ts';
import { readEmptyReasons, readSeriesText } from './daily-bars.ts';
import { answerBars } from './daily-json.ts';
import type { DailyBarsFormat } from './daily-text-repository.ts';
import { existingInstruments } from '../instruments/repository.ts';
import type { BulkPricesQuery } from './schema.ts';
import { type Meta, sourcesMeta } from '../core/meta.ts';
import { freshness, readInstant, seriesFreshness } from '../core/freshness.ts';
import { lastDailyBars } from './freshness.ts';
import type { TextFormat } from '../core/params.ts';
import { entryOf } from '../core/map-entry.ts';
import { servedAsOf } from '../db/read-scope.ts';
import { openBarFile, type BarFile } from './bar-files.ts';
import { Spool } from './bar-spool.ts';
import type { SymbolRun } from './symbol-runs.ts';
import { readSymbolRuns } from './symbol-runs-repository.ts';

// One page statement returns at most this many bars (one row per instrument:
// 0.5 MB packed, 2.5 MB as JSON, 2.2 MB as CSV) unless a single instrument's
// window holds more; see instrumentsPerPage.
const PAGE_ROWS = 10_000;
const CHUNK_BYTES = 64 * 1024;
// Page statements a download has running or read and not yet written; the
// bulk lane (prices/routes.ts) has as many permits, shared by all downloads.
const PAGES_AHEAD = 2;
// The first page holds this share of a page's instruments (see streamBulkPrices).
const FIRST_PAGE_SHARE = 4;

/**
 * How many instruments one page statement reads: as many whole series as
 * fit in `pageRows`, counting the most a series can hold (one bar per calendar
 * day of the window, the table's key), and at least one.
 */
function instrumentsPerPage(from: string, to: string, pageRows: number): number {
  const windowDays = Math.round((Date.parse(to) - Date.parse(from)) / 86_400_000) + 1;
  return Math.max(1, Math.floor(pageRows / windowDays));
}

/**
 * Streams a bulk read with bounded memory, holding no database connection
 * while it waits for its client. Units of work read the instruments, their
 * adjustment plans (action-set versions, the actions at exactly those
 * versions, prior closes), the first page's instruments apart so that page
 * is read while the others are planned, and what the meta needs of every
 * series (coverage, last bars, symbols); then pages of whole series, each read by
 * one short statement on a pooled connection that is released before the
 * page is written. Each series is adjusted with the plan's multipliers
 * (daily-text-repository.ts) and comes packed, or as CSV rows; a JSON
 * answer's series is written from the packed bars as it is sent (answerBars).
 * The next PAGES_AHEAD pages are read while this one is
 * written, so at most three pages are held; a stalled client costs a socket
 * and those pages, and nothing in the database. The plan is read with `db`,
 * the pages through `pages`, a lane of the pool (prices/routes.ts): however
 * many downloads run, their page reads leave the rest of the pool free.
 *
 * What a reader can rely on while corrections land during the stream: each
 * instrument's series comes from one statement, so it never mixes bars from
 * before and after a correction; each is adjusted with exactly the action set
 * at the version meta.actionSetVersions reports, read before the first byte.
 * Different instruments may be read moments apart.
 *
 * Instruments appear in ascending id order: `onSeries` hears each known
 * instrument with its bars in `format` (undefined without bars in the
 * window) and its symbols over the window (empty without bars); unknown ids
 * are skipped. bulkText writes them as the text answer, bar-files.ts as a
 * columnar one. The meta's `symbols` lists each series' symbol runs.
 */
export async function streamBulkPrices(
  db: Units,
  q: Pick<BulkPricesQuery, 'instrumentIds' | 'from' | 'to' | 'adjusted' | 'asOf' | 'includeBackfilled'>,
  format: DailyBarsFormat,
  onSeries: (instrumentId: string, bars: Buffer | undefined, symbols: SymbolRun[]) => Promise<void>,
  pages: { lane: Units; nextPageWaitMs: number; pageRows?: number },
): Promise<Meta> {
  const readAt = new Date();
  const instant = readInstant(q.asOf, readAt);
  const known = [...(await db.run((sql) => existingInstruments(sql, q.instrumentIds)))].sort();
  const perPage = instrumentsPerPage(q.from, q.to, pages.pageRows ?? PAGE_ROWS);
  // The first page is read before anything is sent, so waiting too long for
  // it is a 503; once the response has begun, a stream waits for its next page
  // as long as it would for an idle reader before it is cut. It is a quarter
  // of the others, so that the time nothing overlaps is short.
  const firstPage = Math.max(1, Math.ceil(perPage / FIRST_PAGE_SHARE));
  const pageIds = [known.slice(0, firstPage)];
  for (let start = firstPage; start < known.length; start += perPage) pageIds.push(known.slice(start, start + perPage));
  // The first page's instruments are planned on their own, so that page is
  // read while the others are planned beside it, with what the meta needs
  // of every series (coverage, the last bars, the symbols).
  const planOf = (ids: string[]) => (ids.length ? db.run((sql) => planAdjustments(sql, ids, q)) : Promise.resolve(new Map<string, InstrumentPlan>()));
  const firstPlans = planOf(pageIds[0]);
  const rest = Promise.all([
    planOf(known.slice(firstPage)),
    known.length
      ? db.run((sql) =>
          Promise.all([
            latestCoverageChecks(sql, known, q.asOf?.instant),
            lastDailyBars(sql, known, instant),
            // Every series' symbols in one statement, for the meta and the columnar files (the CSV rows carry theirs).
            readSymbolRuns(sql, known, q.from, q.to),
          ]),
        )
      : Promise.resolve([
          new Map<string, CoverageCheck>(),
          new Map<string, { assetClass: string; lastBar: string | null }>(),
          new Map<string, SymbolRun[]>(),
        ] as const),
  ]);
  // Awaited once the first page is asked for; when the first plans fail first, it settles unobserved.
  rest.catch(() => {});
  const plans = await firstPlans;
  const uses = new Map<string, ReturnType<typeof seriesUse>>();
  const firstBar = new Map<string, string>();
  const symbols: Record<string, SymbolRun[]> = {};
  const sources = new Set<string>();
  let stale = false;

  const readPage = (ids: string[], first: boolean) => {
    const segments = readSegments(q, plans, ids);
    return pages.lane.run((sql) => readSeriesText(sql, format, ids, segments, q, plans), first ? undefined : pages.nextPageWaitMs);
  };
  // Pages are read PAGES_AHEAD at a time: PostgreSQL writing a page's text is
  // the bulk read's cost, and two statements run on two cores at once. The
  // first page is read alone until the others are planned.
  const ahead: ReturnType<typeof readPage>[] = [];
  let begun = 0;
  const readAhead = (depth: number) => {
    while (ahead.length < depth && begun < pageIds.length) {
      const read = readPage(pageIds[begun], begun === 0);
      begun++;
      // Awaited in its turn; when an earlier page's writes fail first, it settles unobserved.
      read.catch(() => {});
      ahead.push(read);
    }
  };
  readAhead(1);
  const [restPlans, [coverage, lastBars, runs]] = await rest;
  for (const [id, plan] of restPlans) plans.set(id, plan);
  readAhead(PAGES_AHEAD);
  for (const ids of pageIds) {
    // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- readAhead keeps a page read ahead for every page not yet taken, at least this one
    const page = new Map((await ahead.shift()!).map((series) => [series.instrumentId, series]));
    readAhead(PAGES_AHEAD);
    for (const id of ids) {
      const series = page.get(id);
      // Let the series go once it is written: a download holds no more than it must.
      page.delete(id);
      await onSeries(id, series && answerBars(format, series), series ? entryOf(runs, id) : []);
      if (series) {
        firstBar.set(id, series.firstBar);
        symbols[id] = entryOf(runs, id);
        for (const source of series.sources) sources.add(source);
        stale ||= series.stale;
      }
      uses.set(id, seriesUse(q, entryOf(plans, id), series));
    }
  }

  const actionSetVersions: Record<string, number> = {};
  const priceBases: Record<string, unknown> = {};
  const actionCoverages: Record<string, ReturnType<typeof actionCoverage>> = {};
  const provenance = zeroProvenanceCounts();
  for (const id of known) {
    const plan = entryOf(plans, id);
    const use = entryOf(uses, id);
    actionSetVersions[id] = plan.version;
    priceBases[id] = priceBasisMeta(q, use, plan, readAt);
    actionCoverages[id] = actionCoverage(coverage.get(id), firstBar.get(id) ?? q.from);
    const counts = provenanceCounts(use.applied);
    for (const p of PROVENANCES) provenance[p] += counts[p];
  }
  const empty = known.filter((id) => !firstBar.has(id));
  const emptyReasons = Object.fromEntries(empty.length ? await db.run((sql) => readEmptyReasons(sql, empty, q.from, q.to, q.asOf)) : []);
  const coverages = Object.values(actionCoverages);
  // Stale when any series is, by the first reason found in id order (docs/api.md, "Freshness").
  const fresh = known.map((id) => seriesFreshness(lastBars.get(id)?.lastBar, instant, lastBars.get(id)?.assetClass, stale)).find((f) => f.stale) ?? freshness();
  const meta = {
    asOf: q.asOf?.input ?? readAt.toISOString(),
    source: sourcesMeta(sources),
    ...fresh,
    emptyReasons,
    adjusted: q.adjusted,
    includeBackfilled: q.includeBackfilled,
    requested: q.instrumentIds.length,
    found: known.length,
    actionSetVersions,
    priceBases,
    actionCoverages,
    symbols,
    actionCoverage: {
      checked: coverages.length > 0 && coverages.every((c) => c.checked),
      coversSeries: coverages.length > 0 && coverages.every((c) => c.coversSeries),
      actionsFound: coverages.every((c) => c.actionsFound !== null) ? coverages.reduce((n, c) => n + (c.actionsFound ?? 0), 0) : null,
    },
    provenance: provenanceMeta(provenance),
  };
  return meta;
}

const CLOSE_ARRAY = Buffer.from(']');

/**
 * The text answer's series writer for streamBulkPrices: in JSON, the members
 * of the data object, `"id":[bars]` comma-separated (a known instrument
 * without bars maps to an empty array); in CSV, the rows, which name their
 * instrument. Written in chunks of CHUNK_BYTES or more (Chunks); `flush` sends the last.
 */
export function bulkText(format: TextFormat, write: (parts: Buffer[]) => Promise<void>) {
  const out = new Chunks(write);
  let members = 0;
  return {
    async onSeries(id: string, bars: Buffer | undefined) {
      if (format === 'json') await out.add(Buffer.from(`${members++ ? ',' : ''}"${id}":[`));
      if (bars) await out.add(bars);
      if (format === 'json') await out.add(CLOSE_ARRAY);
    },
    flush: () => out.flush(),
  };
}

/**
 * Writes parts in chunks of at least CHUNK_BYTES: parts gathered as they come
 * (a series is one part: a year of daily bars is about 64 KB of JSON) and
 * written together, uncopied (streamFramed corks the socket for them), so a
 * chunk holds at most CHUNK_BYTES beyond its last part. Copying every part
 * into chunk-sized buffers instead copied each bulk read's whole body once
 * more: 30 MB for 500 instruments' year, and a full garbage collection a
 * read in the service, started by that much new buffer memory.
 */
class Chunks {
  private parts: Buffer[] = [];
  private size = 0;

  private readonly write: (parts: Buffer[]) => Promise<void>;

  constructor(write: (parts: Buffer[]) => Promise<void>) {
    this.write = write;
  }

  async add(part: Buffer): Promise<void> {
    this.parts.push(part);
    this.size += part.length;
    if (this.size >= CHUNK_BYTES) await this.flush();
  }

  async flush(): Promise<void> {
    if (!this.size) return;
    const parts = this.parts;
    this.parts = [];
    this.size = 0;
    await this.write(parts);
  }
}

/**
 * A bulk read as a columnar file, written to `write` (streamFramed's): Parquet
 * as its row groups fill, its footer (with the meta) last; Arrow once every
 * series is read, since its first message, the schema, carries the meta: the
 * record batches wait in a Spool on disk meanwhile, so memory stays bounded
 * whatever the window. The meta states the instant the answer holds, as the
 * text answer's does (servedAsOf).
 */
export async function streamBulkFile(
  db: Units,
  q: BulkPricesQuery,
  format: 'arrow' | 'parquet',
  write: (chunk: Buffer) => Promise<void>,
  pages: { lane: Units; nextPageWaitMs: number },
): Promise<Meta> {
  const served = (meta: Meta) => ({ ...meta, asOf: servedAsOf(meta.asOf) });
  const read = (file: BarFile) =>
    streamBulkPrices(
      db,
      q,
      file.textFormat,
      async (id, bars, symbols) => {
        if (bars) await file.add(id, [bars], symbols);
      },
      pages,
    );
  if (format === 'parquet') {
    const file = openBarFile('parquet', 'daily', write);
    const meta = await read(file);
    await file.end(served(meta));
    return meta;
  }
  const spool = await Spool.open();
  try {
    const file = openBarFile('arrow', 'daily', (chunk) => spool.write(chunk));
    const meta = await read(file);
    await write(await file.end(served(meta)));
    await spool.replay(write);
    return meta;
  } finally {
    await spool.close();
  }
}
