import type { Lane, Reads } from '../db/database.ts';
import { requireInstrument } from '../instruments/service.ts';
import { latestCoverageChecks } from '../price-history/action-set-repository.ts';
import { planAdjustments, readSegments, type InstrumentPlan } from '../price-history/adjustment-plan.ts';
import { provenanceCounts } from '../price-history/adjustment.ts';
import { actionCoverage, priceBasisMeta, provenanceMeta, seriesUse } from '../price-history/read-meta.ts';
import { readEmptyReasons, readSeriesText } from './daily-bars.ts';
import { answerBars } from './daily-json.ts';
import type { DailyBarsFormat, DailySeriesText } from './daily-text-repository.ts';
import { joinIntradayTexts, readIntradayEmptyReason, readIntradayText, readsStoredText, type IntradayText } from './intraday-bars.ts';
import { INTERVAL_MINUTES, INTRADAY_ASSET_CLASSES, type DailyPricesQuery, type INTERVALS } from './schema.ts';
import { readInExportedSnapshot, readInSnapshot } from '../db/snapshot.ts';
import type { ISql } from '../db/sql.ts';
import { AppError, notFound } from '../core/errors.ts';
import { type Meta, sourcesMeta } from '../core/meta.ts';
import { readInstant } from '../core/freshness.ts';
import { dailySeriesFreshness, intradayFreshness, recentMinuteBar, type LastMinuteBar } from './freshness.ts';
import { withoutGatherWorkers } from './read-settings-repository.ts';
import type { PointInTime } from '../core/time.ts';
import { entryOf } from '../core/map-entry.ts';
import type { SymbolRun } from './symbol-runs.ts';
import { readSymbolRuns } from './symbol-runs-repository.ts';

export { streamBulkFile, streamBulkPrices } from './bulk-stream.ts';

export { CSV_COLUMNS } from './bar-text-sql.ts';

/**
 * A price read's answer: the bars as text in `format` (JSON objects joined by
 * commas, or CSV rows), in parts to be sent one after another; the meta; and
 * the time of reading as the meta writes it, when it does (no asOf asked
 * for), else null.
 */
export interface PriceText {
  items: Buffer[];
  meta: Meta;
  readAt: string | null;
  /** Whether the answer's bytes can never change (`immutable` caching, docs/api.md "Caching"). */
  immutable: boolean;
  /** The instrument's symbols over the window, read for a columnar file's symbol column (`packed` daily bars, intraday ones asked `withSymbols`); else empty: the CSV rows carry their own, the JSON answers none. */
  symbols: SymbolRun[];
}

/**
 * Whether a daily read's bars and numbers are fixed for good: it pins a
 * version and its window ended before today (UTC), and either the version is
 * superseded (its bars are kept as they stood) or the window ends on or
 * before the instrument's latest bar when the bars were read, so that only an
 * upload that bumps the version could change a bar in it (sql/015).
 */
function isImmutable(q: DailyPricesQuery, plan: InstrumentPlan, series: DailySeriesText | undefined, today: string): boolean {
  if (q.actionSetVersion === undefined || q.to >= today) return false;
  return plan.view !== undefined || (series !== undefined && q.to <= series.latestBar);
}

export async function readDailyPrices(db: Reads, id: string, q: DailyPricesQuery, format: DailyBarsFormat): Promise<PriceText> {
  const readAt = new Date();
  const { plan, coverage, series, fresh, empty, symbols } = await db.run(async (sql) => {
    await requireInstrument(sql, id);
    // planAdjustments refuses a pinned version the instrument has not reached.
    const [plans, coverage, symbols] = await Promise.all([
      planAdjustments(sql, [id], q),
      latestCoverageChecks(sql, [id], q.asOf?.instant),
      // The columnar file's symbol column; CSV rows carry theirs.
      format === 'packed' ? readSymbolRuns(sql, [id], q.from, q.to) : undefined,
    ]);
    const [series] = await readSeriesText(sql, format, [id], readSegments(q, plans, [id]), q, plans);
    const fresh = await dailySeriesFreshness(sql, [id], readInstant(q.asOf, readAt), series?.stale ?? false);
    const empty = series ? undefined : (await readEmptyReasons(sql, [id], q.from, q.to, q.asOf)).get(id);
    return { plan: entryOf(plans, id), coverage, series, fresh, empty, symbols: symbols?.get(id) ?? [] };
  });
  const immutable = isImmutable(q, plan, series, readAt.toISOString().slice(0, 10));
  const use = seriesUse(q, plan, series);
  const meta = {
    asOf: q.asOf?.input ?? readAt.toISOString(),
    source: sourcesMeta(new Set(series?.sources)),
    ...fresh,
    emptyReason: empty ?? null,
    adjusted: q.adjusted,
    actionSetVersion: plan.version,
    actionSetVersionPinned: q.actionSetVersion !== undefined,
    includeBackfilled: q.includeBackfilled,
    provenance: provenanceMeta(provenanceCounts(use.applied)),
    priceBasis: priceBasisMeta(q, use, plan, readAt),
    actionCoverage: actionCoverage(coverage.get(id), series?.firstBar ?? q.from),
  };
  return { items: series ? [answerBars(format, series)] : [], meta, readAt: q.asOf ? null : readAt.toISOString(), immutable, symbols };
}

/**
 * Intraday windows of at least this many bars (a window's length over the
 * interval) are read in two halves at once, when a second connection is free:
 * PostgreSQL writing the bars' text is most of such a read, and two
 * statements use two cores.
 */
export const SPLIT_INTRADAY_BARS = 2_000;

/**
 * One instrument's intraday bars in [q.from, q.to] as text in `format`; with
 * `withSymbols`, also its symbols over the window's days, for a columnar
 * file's symbol column (a bar's is its UTC day's).
 */
export async function readIntradayBars(
  db: Lane,
  id: string,
  q: { from: string; to: string; interval: (typeof INTERVALS)[number]; asOf?: PointInTime },
  format: DailyBarsFormat,
  withSymbols = false,
): Promise<PriceText> {
  const knownAt = q.asOf?.instant;
  const from = new Date(`${q.from}T00:00:00.000Z`);
  const to = new Date(`${q.to}T23:59:59.999Z`);
  const barMs = INTERVAL_MINUTES[q.interval] * 60_000;
  // Judged at the read's instant: the asOf, else the time of reading.
  const instant = knownAt?.getTime() ?? Date.now();
  // The instrument's check is the series' recent last bar, which its
  // freshness needs too: an unknown id has none, and it names the asset class.
  const checked = (recent: LastMinuteBar | undefined): LastMinuteBar => {
    if (!recent) throw notFound('instrument');
    if (!(INTRADAY_ASSET_CLASSES as readonly string[]).includes(recent.assetClass)) {
      throw new AppError('invalid_request', `intraday bars are served for ${INTRADAY_ASSET_CLASSES.join(', ')} only`, {
        id: [`asset class ${recent.assetClass} has no intraday bars`],
      });
    }
    return recent;
  };
  const after = async (sql: ISql, recent: LastMinuteBar, bars: IntradayText) => ({
    bars,
    fresh: await intradayFreshness(sql, id, instant, recent, bars.bars.length > 0),
    empty: bars.bars.length ? null : await readIntradayEmptyReason(sql, id, from, to, knownAt),
    symbols: withSymbols && bars.bars.length ? entryOf(await readSymbolRuns(sql, [id], q.from, q.to), id) : [],
  });
  const { bars, fresh, empty, symbols } = await db.run(async (sql) => {
    const storedText = await readsStoredText(sql, q.interval, knownAt);
    // Stored text is joined, not written: one statement is quickest.
    if (storedText || (to.getTime() - from.getTime()) / barMs < SPLIT_INTRADAY_BARS) {
      // The lookup runs beside the bars' statement, on a second connection
      // when one is free now, else before it: with a year of 1-hour bars on
      // 2 cores it took 1 to 2.6 ms a read (the mean of 200 reads, in two
      // runs), which the read no longer waits for.
      const beside = db.tryRun((other) => recentMinuteBar(other, id, instant));
      if (!beside) {
        const recent = checked(await recentMinuteBar(sql, id, instant));
        return after(sql, recent, await readIntradayText(sql, format, id, q.interval, from, to, knownAt, storedText));
      }
      // Awaited below; when the bars' statement fails first, it settles unobserved.
      beside.catch(() => {});
      const text = await readIntradayText(sql, format, id, q.interval, from, to, knownAt, storedText);
      return after(sql, checked(await beside), text);
    }
    // Both halves read one snapshot, so the answer is what one statement would give.
    return readInExportedSnapshot(sql, async (tx, snapshot) => {
      const recent = checked(await recentMinuteBar(tx, id, instant));
      if (knownAt) await withoutGatherWorkers(tx);
      // The later half starts on a bar boundary of the interval (bars start on whole multiples of it).
      const middle = new Date(Math.ceil((from.getTime() + to.getTime()) / 2 / barMs) * barMs);
      const endOfFirst = new Date(middle.getTime() - 1);
      const second = db.tryRun((other) =>
        readInSnapshot(other, snapshot, async (s) => {
          if (knownAt) await withoutGatherWorkers(s);
          return readIntradayText(s, format, id, q.interval, middle, to, knownAt);
        }),
      );
      // No connection free now: one statement reads the whole window.
      if (!second) return after(tx, recent, await readIntradayText(tx, format, id, q.interval, from, to, knownAt));
      // Awaited below; when the first half fails first, it settles unobserved.
      second.catch(() => {});
      const first = await readIntradayText(tx, format, id, q.interval, from, endOfFirst, knownAt);
      return after(tx, recent, joinIntradayTexts(format, first, await second));
    });
  });
  // The bars carry no asOf of their own in the answer: meta reports the asOf asked for, else the latest, or the time of reading without bars.
  const asOf = q.asOf?.input ?? bars.latestAsOf ?? new Date().toISOString();
  const readAt = q.asOf || bars.latestAsOf ? null : asOf;
  return {
    items: bars.bars,
    readAt,
    immutable: false,
    symbols,
    meta: {
      asOf,
      source: sourcesMeta(new Set(bars.sources)),
      ...fresh,
      emptyReason: empty,
      interval: q.interval,
      adjusted: false,
      from: `${q.from}T00:00:00.000Z`,
      to: `${q.to}T23:59:59.999Z`,
      bucketing: q.interval === '1min' ? 'stored 1-minute bars' : 'UTC buckets: open first, high max, low min, close last, volume sum',
      readFrom: !knownAt ? (q.interval === '1min' ? 'stored_minute_bars' : 'stored_rollup') : 'minute_bars_known_at_asof',
    },
  };
}
