import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import type { PointInTime } from '../core/time.ts';
import { planAdjustments, type InstrumentPlan } from '../price-history/adjustment-plan.ts';
import { adjustSeries, type MultiplierSegment } from '../price-history/adjustment.ts';
import { dayToDate } from '../core/day-numbers.ts';
import { versionView } from '../price-history/versions-repository.ts';
import * as repo from './daily-bars-repository.ts';
import { dateOrder, float64s, inOrder, int32s, reflectsThrough, type DailyColumns } from './packed-columns.ts';
import * as text from './daily-text-repository.ts';
import type { DailyBarsFormat, DailySeriesText } from './daily-text-repository.ts';
import { entryOf } from '../core/map-entry.ts';

// The one read interface of daily bars: the price routes and every other
// area (analytics, event reactions, source leads, options) read daily_bars
// through these functions. Their SQL is in daily-bars-repository.ts and
// daily-text-repository.ts; the reads an adjustment plan makes (versions, the
// actions at a version, prior closes, a superseded version's bars) are in
// price-history/. Two representations of bars remain, each for its callers:
//
// - Text (readSeriesText), for the daily-price and bulk-price routes, which
//   send bars and compute nothing on them. Each series comes whole in one
//   row, adjusted with the plan's multiplier segments: as its CSV rows,
//   written and adjusted by PostgreSQL, or packed (the doubles' bytes) and
//   adjusted by the service to the same doubles (adjusted-values.ts), from
//   which daily-json.ts writes the JSON objects (answerBars; it says why) and the
//   columnar files take their columns. No row is parsed into an object.
// - Columns (DailyColumns, typed arrays by field), for everything that
//   computes on bars. readAdjustedSeries (technicals, correlations, beta,
//   event reactions, source leads) decodes a few base64 strings per
//   instrument, PostgreSQL having packed each column, instead of making an
//   object per bar (repo.selectPackedSeries says what that saves), and
//   adjusts the columns with adjustSeries, the same segments as the text
//   path, bit for bit; the arrays can be transferred to the worker pool
//   without copying.
//   readRawBars (implied-volatility snapshots) returns the same columns, raw:
//   at most 31 bars, mapped from rows once.
//
// The other reads answer lookups rather than series: readRawCloses, the raw
// close known at each quote's instant (an option's spot); readLastBarDates,
// the newest bar known at an instant (a series' freshness); readStoredBars,
// what a window holds whatever was known when (why a read found no bar);
// readSessionSpan, the dates a source-lead derivation reads; readBarSources.
//
// Every read takes the instant it reads at (docs/api.md, "Point in time"):
// the bars as known then, each bar's revision with the latest knowledge time
// (as_of) not after it. A read of the latest revisions passes none; those
// are the bars as known now, since no revision is known in the future.
// test/unit/bar-reads.test.ts holds every other module to this interface.

/** Adjusted columns of one instrument, with the version whose actions adjusted them. */
export interface AdjustedSeries extends DailyColumns {
  /** What each bar's prices were multiplied by (1 where no action applied); empty unless the read asked for it. */
  priceMultiplier: Float64Array;
  actionSetVersion: number;
  firstDate: string | null;
  lastDate: string | null;
}

/**
 * The series of `ids` in the window as the response text, each with the bars
 * of the version its plan applies, as known at the window's asOf. A plan of a superseded version reads that
 * version's bars; a series whose version moved on after the plan was read (an
 * upload corrected or filled in its bars meanwhile) is read again as the
 * planned version, whose bars are kept as they stood, so the bars always
 * match the version the meta reports.
 */
export async function readSeriesText(
  sql: ISql,
  format: DailyBarsFormat,
  ids: string[],
  segments: Map<string, MultiplierSegment[]>,
  window: { from: string; to: string; asOf?: PointInTime },
  plans: Map<string, InstrumentPlan>,
): Promise<DailySeriesText[]> {
  const view = ids.length === 1 ? entryOf(plans, ids[0]).view : undefined;
  const knownAt = window.asOf?.instant;
  const read = await text.dailySeriesText(sql, statementFormat(format), ids, segments, window.from, window.to, view, knownAt);
  const asPlanned = await Promise.all(
    read.map(async (series) => {
      const id = series.instrumentId;
      const { version } = entryOf(plans, id);
      if (view || series.latestVersion === version) return series;
      const segment = segments.get(id);
      const own = new Map(segment ? [[id, segment]] : []);
      const [again] = await text.dailySeriesText(sql, statementFormat(format), [id], own, window.from, window.to, await versionView(sql, id, version), knownAt);
      return again;
    }),
  );
  // The planned version may have no bars in the window where the latest has some.
  return asPlanned.filter((series) => series !== undefined);
}

/** A JSON read's series come packed: answerBars (daily-json.ts) writes their text. */
const statementFormat = (format: DailyBarsFormat) => (format === 'json' ? 'packed' : format);

/**
 * Adjusted daily bars as columns, for the worker pool and the derivations:
 * each instrument's window in one packed row (repo.selectPackedSeries),
 * adjusted with the plan the price routes use. Each bar as known at the
 * cut-off, and only actions known then apply; backfilled actions are left out, so figures are
 * point-in-time. An instrument without bars in the window gets empty columns.
 */
export async function readAdjustedSeries(
  sql: ISql,
  ids: string[],
  window: { from: string; to: string; asOf?: PointInTime; fields: 'close' | 'ohlcv'; multipliers?: boolean },
): Promise<Map<string, AdjustedSeries>> {
  const q = { from: window.from, to: window.to, adjusted: true, asOf: window.asOf, includeBackfilled: false };
  const [plans, rows] = await Promise.all([
    planAdjustments(sql, ids, q),
    timed('adjusted_series_bars', repo.selectPackedSeries(sql, ids, window.from, window.to, window.fields, window.asOf?.instant)),
  ]);
  const packed = new Map(rows.map((r) => [r.instrument_id, r]));
  const out = new Map<string, AdjustedSeries>();
  const ohlcv = window.fields === 'ohlcv';
  for (const id of ids) {
    const r = packed.get(id);
    const days = int32s(r?.days);
    const order = dateOrder(days);
    const column = (base64: string | null | undefined) => inOrder(float64s(base64), order);
    const dates = inOrder(days, order);
    const close = column(r?.close_price);
    const s: AdjustedSeries = {
      dates,
      open: ohlcv ? column(r?.open_price) : new Float64Array(0),
      high: ohlcv ? column(r?.high_price) : new Float64Array(0),
      low: ohlcv ? column(r?.low_price) : new Float64Array(0),
      close,
      volume: ohlcv ? column(r?.volume) : new Float64Array(0),
      // Adjusted like a price column: a 1 comes out as the bar's multiplier, exactly.
      priceMultiplier: window.multipliers ? new Float64Array(dates.length).fill(1) : new Float64Array(0),
      actionSetVersion: entryOf(plans, id).version,
      firstDate: dates.length ? dayToDate(dates[0]) : null,
      lastDate: dates.length ? dayToDate(dates[dates.length - 1]) : null,
    };
    const reflects = reflectsThrough(dates, order, int32s(r?.reflects), int32s(r?.reflects_days));
    const prices = ohlcv ? [s.open, s.high, s.low, close] : [close];
    if (window.multipliers) prices.push(s.priceMultiplier);
    adjustSeries(entryOf(plans, id).factors, dates, reflects, prices, ohlcv ? s.volume : null);
    out.set(id, s);
  }
  return out;
}

/** The instrument's last `count` raw bars dated on or before `day` as known at `knownAt`, as columns (close, high, low) in date order. */
export function readRawBars(sql: ISql, instrumentId: string, day: string, count: number, knownAt: Date): Promise<DailyColumns> {
  return repo.rawBarsUpTo(sql, instrumentId, day, count, knownAt);
}

/**
 * For each instant, the instrument's latest raw close known at it, dated on
 * or before its UTC day, by the instant's milliseconds (absent when there is
 * none); no query for no instants.
 */
export function readRawCloses(sql: ISql, instrumentId: string, instants: Date[]): Promise<Map<number, { barDate: string; close: number }>> {
  return instants.length ? repo.rawClosesKnownAt(sql, instrumentId, instants) : Promise.resolve(new Map<number, { barDate: string; close: number }>());
}

/**
 * Each of `ids` that names an instrument, with its asset class and its last
 * daily bar dated on or before `day` and known at `knownAt` (null: none),
 * among the bars dated after `after` when given.
 */
export async function readLastBarDates(
  sql: ISql,
  ids: string[],
  day: string,
  knownAt: Date,
  after: string | null,
): Promise<Map<string, { assetClass: string; lastBar: string | null }>> {
  const rows = await repo.lastKnownBarDates(sql, ids, day, knownAt, after);
  return new Map(rows.map(({ id, ...last }) => [id, last]));
}

/**
 * For each of `ids` with bars stored in [from, to] whatever their knowledge
 * time: how many, and when the first of them (any revision) became known.
 * Absent: none stored.
 */
export async function readStoredBars(sql: ISql, ids: string[], from: string, to: string): Promise<Map<string, { bars: number; firstKnown: Date }>> {
  const rows = await repo.storedBarsInWindow(sql, ids, from, to);
  return new Map(rows.map(({ instrumentId, ...stored }) => [instrumentId, stored]));
}

/** Why a price read returned no bar for an instrument (docs/api.md, "Point in time"). */
export const EMPTY_REASONS = ['no_stored_bars', 'not_yet_known', 'not_in_version'] as const;
export type EmptyReason = (typeof EMPTY_REASONS)[number];

/**
 * Why each of `ids`, which had no bar in [from, to] as read, has none:
 * `no_stored_bars`, no revision of any bar is stored in the window;
 * `not_yet_known`, bars are stored but none was known at `asOf`; otherwise
 * `not_in_version`, the pinned action-set version the read asked for holds
 * none of them. No query for no ids.
 */
export async function readEmptyReasons(sql: ISql, ids: string[], from: string, to: string, asOf: PointInTime | undefined): Promise<Map<string, EmptyReason>> {
  if (!ids.length) return new Map();
  const stored = await readStoredBars(sql, ids, from, to);
  return new Map(
    ids.map((id) => {
      const s = stored.get(id);
      return [id, !s ? 'no_stored_bars' : asOf && s.firstKnown > asOf.instant ? 'not_yet_known' : 'not_in_version'];
    }),
  );
}

/** The sources of the instrument's bars on `days`, the latest revisions; no query for no days. */
export function readBarSources(sql: ISql, instrumentId: string, days: string[]): Promise<string[]> {
  return days.length ? repo.barSources(sql, instrumentId, days) : Promise.resolve([]);
}

/**
 * The dates of bars around the instruments' days (`days`, a relation of
 * instrument_id, first_day and last_day): from the session before the
 * session of an instrument's first day to the `lagSessions`-th session after
 * its last (repo.sessionSpan); null for no days.
 */
export function readSessionSpan(sql: ISql, days: postgres.Fragment, lagSessions: number): Promise<{ from: string; to: string } | null> {
  return repo.sessionSpan(sql, days, lagSessions);
}
