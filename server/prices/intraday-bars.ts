import type { ISql } from '../db/sql.ts';
import { readStorageTier } from '../db/migrate.ts';
import { lastMinuteBarDay, storedMinuteBars } from './intraday-bars-at-repository.ts';
import type { EmptyReason } from './daily-bars.ts';
import type { Interval } from './repository.ts';
import { intradayText } from './intraday-text-repository.ts';

// The one read interface of intraday bars, daily-bars.ts's twin: the price
// routes and freshness read intraday_bars, its revisions and its rollups
// through these functions, each at the instant it reads at (docs/api.md,
// "Point in time"): a read with asOf takes the 1-minute bars as known then
// and rolls them up at read; one without reads the stored bars or rollups,
// the latest revisions. Their SQL is in intraday-text-repository.ts and
// intraday-bars-at-repository.ts; the writes are in repository.ts.

export type { IntradayText } from './intraday-text-repository.ts';
export { joinIntradayTexts } from './intraday-text-repository.ts';

/**
 * The instrument's bars at `interval` starting within [from, to] as response
 * text, as known at `knownAt` (undefined: the latest); with `storedText`, the
 * text stored with each rollup bar (readsStoredText).
 */
export const readIntradayText = intradayText;

// Whether the database's rollups are tables with their bars' text (sql/026),
// per pool: the storage tier is chosen once, when a database is first
// migrated, and never changes.
const rollupTables = new WeakMap<ISql, Promise<boolean>>();

/**
 * Whether a read of `interval` at `knownAt` can take each bar's stored text:
 * a rollup read without asOf, where the rollups are tables (every tier but
 * full TimescaleDB, whose continuous aggregates write the text at read).
 */
export function readsStoredText(sql: ISql, interval: Interval, knownAt: Date | undefined): Promise<boolean> | false {
  if (knownAt || interval === '1min') return false;
  let tables = rollupTables.get(sql);
  if (!tables) {
    tables = readStorageTier(sql).then((t) => t.tier !== 'timescaledb');
    // A failed lookup is asked again by the next read.
    tables.catch(() => rollupTables.delete(sql));
    rollupTables.set(sql, tables);
  }
  return tables;
}

/**
 * The instrument's asset class and the day of its last 1-minute bar at or
 * before `knownAt` and known by then (New York day; UTC day for crypto),
 * after `after` when given; undefined for an unknown instrument.
 */
export const readLastMinuteBarDay = lastMinuteBarDay;

/**
 * Why an intraday read of [from, to] found no bar: `no_stored_bars`, none
 * is stored in the window, or `not_yet_known`, bars are stored but none was
 * known at `knownAt`.
 */
export async function readIntradayEmptyReason(
  sql: ISql,
  instrumentId: string,
  from: Date,
  to: Date,
  knownAt: Date | undefined,
): Promise<Exclude<EmptyReason, 'not_in_version'>> {
  if (!knownAt) return 'no_stored_bars';
  const stored = await storedMinuteBars(sql, instrumentId, from, to);
  return stored.firstKnown && stored.firstKnown > knownAt ? 'not_yet_known' : 'no_stored_bars';
}
