import type { ISql } from '../db/sql.ts';
import { latestObservationsAt } from './risk-free-repository.ts';
import type { RISK_FREE_SERIES } from './schema.ts';

/**
 * The risk-free rate as it was known at an instant: no look-ahead.
 *
 * Two stored series answer, each observation counting as known from a fixed
 * instant and never before:
 *
 * - TB3MS (3-month Treasury bill, secondary market, monthly average), in the
 *   risk_free_rates table (sql/020_risk_free_rates.sql): a month's average is
 *   known from the first instant after the month ends, 00:00 UTC on the first
 *   day of the next month (TB3MS 2001-03-01 from 2001-04-01T00:00:00.000Z).
 * - DGS3MO (3-month Treasury, constant maturity, daily), the FRED copy in
 *   macro_observations: a day's observation is known from the end of its UTC
 *   day, 00:00 UTC the next day (2025-01-03 from 2025-01-04T00:00:00.000Z).
 *
 * At an instant T the answer is the observation with the latest known-from
 * instant at or before T across both (a tie goes to DGS3MO, a point
 * observation rather than an average); when none is known, there is no rate.
 * The hard-coded stand-in of the live route (TB3MS 2022-09) counts as one more
 * TB3MS observation, known from 2022-10-01, and is used only when it is more
 * recent than anything stored: never at an instant before it was known.
 */

export type RiskFreeSeriesId = (typeof RISK_FREE_SERIES)[number];

/** How often a series publishes: what `stale` is measured against. */
export const RISK_FREE_CADENCE: Record<RiskFreeSeriesId, 'daily' | 'monthly'> = { DGS3MO: 'daily', TB3MS: 'monthly' };

const DAY_MS = 86_400_000;

/** A monthly average (dated the first of its month) is known from the first instant of the next month, UTC. */
export function monthlyKnownFrom(obsDate: string): Date {
  const year = Number(obsDate.slice(0, 4));
  const month = Number(obsDate.slice(5, 7));
  return new Date(Date.UTC(year, month, 1));
}

/** A daily observation is known from the end of its UTC day: 00:00 UTC the next day. */
export function dailyKnownFrom(obsDate: string): Date {
  return new Date(Date.parse(`${obsDate}T00:00:00.000Z`) + DAY_MS);
}

/**
 * A daily series is behind when its newest known observation has been known
 * for more than 4 days: a weekend and a holiday Monday or Friday keep the
 * Treasury market shut for at most 3 days in a row, so by then the next one
 * was due.
 */
export const DAILY_STALE_AFTER_MS = 4 * DAY_MS;

/**
 * Whether a newer observation of the series was due by `at`: for a monthly
 * series, when the observation is older than the month before `at`'s month
 * (its known-from is before the first instant of `at`'s month); for a daily
 * one, when it has been known for more than DAILY_STALE_AFTER_MS.
 */
export function newerObservationDue(seriesId: RiskFreeSeriesId, knownFrom: Date, at: Date): boolean {
  if (RISK_FREE_CADENCE[seriesId] === 'monthly') return knownFrom.getTime() < Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1);
  return at.getTime() - knownFrom.getTime() > DAILY_STALE_AFTER_MS;
}

/** One stored observation with the instant it counts as known from. */
export interface KnownObservation {
  seriesId: RiskFreeSeriesId;
  /** FRED's observation date yyyy-mm-dd (the first of the month for a monthly average). */
  date: string;
  /** Percent, as published. */
  value: number;
  knownFrom: Date;
  /** The row's source: the stored copy's (`fred` for a live DGS3MO copy) or the bundled snapshot's. */
  source: string;
}

/**
 * For each instant, the latest risk_free_rates row known at it and the latest
 * DGS3MO observation of the stored copy known at it, keyed by the instant's
 * epoch milliseconds.
 */
export async function latestKnownAt(sql: ISql, instants: Date[]): Promise<Map<number, { table: KnownObservation | null; dgs3mo: KnownObservation | null }>> {
  const rows = await latestObservationsAt(sql, instants);
  return new Map(
    rows.map(({ at, table, dgs3mo: dg }) => [
      at.getTime(),
      { table, dgs3mo: dg && { seriesId: 'DGS3MO', date: dg.date, value: dg.value, knownFrom: dailyKnownFrom(dg.date), source: dg.source } },
    ]),
  );
}
