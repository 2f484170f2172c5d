import type { StoredSeries } from './repository.ts';
import type { MacroFrequency } from './schema.ts';

/** The `source` of a copy fetched from FRED; any other source (the bundled demo snapshot) is never fresh. */
export const FRED_SOURCE = 'fred';

const HOUR_MS = 3_600_000;

/**
 * How long a copy fetched from FRED is served without asking FRED again, by
 * the series' frequency. FRED posts a daily series (Treasury yields, VIX)
 * once each business day, so a daily copy is at most 6 hours behind FRED at
 * the cost of at most 4 fetches a series a day. Weekly series are refreshed
 * every 12 hours; monthly and rarer ones, published on one day of the month
 * at most, every 24 hours: a new release appears within a day.
 */
export const FRESH_FOR_MS: Record<MacroFrequency, number> = {
  daily: 6 * HOUR_MS,
  weekly: 12 * HOUR_MS,
  biweekly: 24 * HOUR_MS,
  monthly: 24 * HOUR_MS,
  quarterly: 24 * HOUR_MS,
  semiannual: 24 * HOUR_MS,
  annual: 24 * HOUR_MS,
};

/** Whether a stored copy is FRED's and inside its freshness window at `now` (ms). */
export const isFresh = (s: StoredSeries, now: number) => s.source === FRED_SOURCE && now - s.fetchedAt.getTime() < FRESH_FOR_MS[s.frequency];
