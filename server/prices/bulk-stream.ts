import type { Units } from '../db/database.ts';
import { timed } from '../db/sql.ts';
import { sourcesMeta, type Meta } from '../http/envelope.ts';
import { PROVENANCES, zeroProvenanceCounts, type CoverageCheck } from '../actions/schema.ts';
import { actionCoverage, latestCoverageChecks, provenanceMeta } from '../actions/service.ts';
import { BarAdjuster } from './adjustment.ts';
import { planAdjustments, priceBasisMeta, type InstrumentPlan } from './adjustment-plan.ts';
import * as repo from './repository.ts';
import { dailyBarJson, type BulkPricesQuery } from './schema.ts';

// One page statement returns at most this many bars (~2 MB of JSON, a few
// MB of row objects) unless a single instrument's window holds more; see
// instrumentsPerPage.
const PAGE_ROWS = 10_000;
const FLUSH_BYTES = 64 * 1024;

/**
 * How many instruments one page statement reads: as many whole series as
 * fit in PAGE_ROWS, counting the most a series can hold (one bar per calendar
 * day of the window, the table's key), and at least one.
 */
function instrumentsPerPage(from: string, to: string): number {
  const windowDays = Math.round((Date.parse(to) - Date.parse(from)) / 86_400_000) + 1;
  return Math.max(1, Math.floor(PAGE_ROWS / windowDays));
}

/**
 * Streams a bulk read with bounded memory, holding no database connection
 * while it waits for its client. One unit of work reads the instruments and
 * their adjustment plans (action-set versions, the actions at exactly those
 * versions, prior closes, coverage); then pages of whole series, each read by
 * one short statement on a pooled connection that is released before the
 * page is written. The next page is read while this one is written, so at
 * most two pages are held; a stalled client costs a socket and those pages,
 * and nothing in the database. The plan is read with `db`, the pages through
 * `pages`, a lane of the pool (prices/routes.ts): however many downloads run,
 * their page reads leave the rest of the pool free.
 *
 * What a reader can rely on while corrections land during the stream: each
 * instrument's series comes from one statement, so it never mixes bars from
 * before and after a correction; each is adjusted with exactly the action set
 * at the version meta.actionSetVersions reports, read before the first byte.
 * Different instruments may be read moments apart.
 *
 * Instruments appear in ascending id order; known instruments without bars in
 * the window map to an empty array, unknown ids are absent.
 */
export async function streamBulkPrices(
  db: Units,
  q: BulkPricesQuery,
  write: (chunk: string) => Promise<void>,
  pages: { lane: Units; nextPageWaitMs: number },
): Promise<Meta> {
  const readAt = new Date();
  const { known, plans, coverage } = await db.run(async (sql) => {
    const known = [...(await repo.existingInstruments(sql, q.instrumentIds)).keys()].sort();
    if (!known.length) return { known, plans: new Map<string, InstrumentPlan>(), coverage: new Map<string, CoverageCheck>() };
    const [plans, coverage] = await Promise.all([planAdjustments(sql, known, q), latestCoverageChecks(sql, known, q.asOf?.instant)]);
    return { known, plans, coverage };
  });
  const adjusters = new Map(known.map((id) => [id, new BarAdjuster(q.adjusted ? plans.get(id)!.factors : [])]));
  const firstBar = new Map<string, string>();
  const sources = new Set<string>();
  let stale = false;

  let buffer = '{';
  let written = 0;
  const flush = async () => {
    await write(buffer);
    buffer = '';
  };
  let pending = 0;
  let current: string | null = null;
  let first = true;
  const open = (id: string) => {
    buffer += `${written++ ? ',' : ''}"${id}":[`;
    current = id;
    first = true;
  };
  const closeUpTo = (id: string | null) => {
    if (current !== null) buffer += ']';
    current = null;
    while (pending < known.length && (id === null || known[pending] < id)) {
      buffer += `${written++ ? ',' : ''}"${known[pending++]}":[]`;
    }
    if (id !== null && known[pending] === id) pending++;
  };

  const perPage = instrumentsPerPage(q.from, q.to);
  // The first page is read before anything is sent, so waiting too long for
  // it is a 503; once the response has begun, a stream waits for its next page
  // as long as it would for an idle reader before it is cut.
  const readPage = (start: number) =>
    pages.lane.run(
      (sql) => timed('bulk_bars_page', repo.selectDailyBars(sql, known.slice(start, start + perPage), q.from, q.to)),
      start === 0 ? undefined : pages.nextPageWaitMs,
    );
  let next = known.length ? readPage(0) : null;
  for (let start = 0; next; start += perPage) {
    const page = await next;
    next = start + perPage < known.length ? readPage(start + perPage) : null;
    // Awaited on the next round; when this page's writes fail first, it settles unobserved.
    next?.catch(() => {});
    for (const raw of page) {
      const id = raw.instrumentId;
      if (id !== current) {
        closeUpTo(id);
        open(id);
        firstBar.set(id, raw.barDate);
      }
      const bar = adjusters.get(id)!.adjust(raw);
      sources.add(bar.source);
      stale ||= bar.stale;
      buffer += `${first ? '' : ','}${dailyBarJson(bar)}`;
      first = false;
      if (buffer.length >= FLUSH_BYTES) await flush();
    }
  }
  closeUpTo(null);

  const actionSetVersions: Record<string, number> = {};
  const priceBases: Record<string, unknown> = {};
  const actionCoverages: Record<string, ReturnType<typeof actionCoverage>> = {};
  const provenance = zeroProvenanceCounts();
  for (const id of known) {
    const plan = plans.get(id)!;
    const adjuster = adjusters.get(id)!;
    actionSetVersions[id] = plan.version;
    priceBases[id] = priceBasisMeta(q, adjuster, plan, readAt);
    actionCoverages[id] = actionCoverage(coverage.get(id), firstBar.get(id) ?? q.from);
    const counts = adjuster.provenanceCounts();
    for (const p of PROVENANCES) provenance[p] += counts[p];
  }
  const coverages = Object.values(actionCoverages);
  const meta = {
    asOf: q.asOf?.input ?? readAt.toISOString(),
    source: sourcesMeta(sources),
    stale,
    adjusted: q.adjusted,
    includeBackfilled: q.includeBackfilled,
    requested: q.instrumentIds.length,
    found: known.length,
    actionSetVersions,
    priceBases,
    actionCoverages,
    actionCoverage: {
      checked: coverages.length > 0 && coverages.every((c) => c.checked),
      coversSeries: coverages.length > 0 && coverages.every((c) => c.coversSeries),
      actionsFound: coverages.every((c) => c.actionsFound !== null) ? coverages.reduce((n, c) => n + (c.actionsFound ?? 0), 0) : null,
    },
    provenance: provenanceMeta(provenance),
  };
  buffer += '}';
  await flush();
  return meta;
}
