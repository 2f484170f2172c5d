import { z } from 'zod';
import { dayToDate, FIRST_DAY_MS } from './day-numbers.ts';
import { newYorkTimeToUtc } from './new-york-time.ts';

/**
 * Whether an answer is stale, and why (docs/api.md, "Freshness"): each area
 * states what fresh means and computes `stale` from its data at the read's
 * instant (the request's asOf when it has one, else the time of the read).
 * `staleReason` is a short code when stale, null when fresh, as the macro
 * routes give it.
 */
export const STALE_REASONS = [
  // A returned bar was ingested marked stale by its source.
  'bar_marked_stale',
  // The series' last bar on or before the read's day is older than the last completed session.
  'series_behind',
  // No bar at all on or before the read's day.
  'no_bars',
  // The pair's latest stored rate is older than the business day before the read's day.
  'rate_behind',
  // A returned report is still `scheduled` after its report date passed.
  'report_past_due',
  // A returned release's scheduled time passed and its `actual` is still missing.
  'release_past_due',
  // A source of the returned rows has published nothing within its window before the read's instant;
  // without rows, none of the sources that ever published within the read's scope has.
  'source_silent',
  // Nothing within the read's scope (an instrument's news, scores or reports; the calendar's filters) was ever stored, known at the read's instant.
  'no_source',
  // An instrument marked active has no symbol period covering the read's day.
  'symbol_history_lapsed',
  // The instrument's corporate actions were never checked against a source by the read's instant.
  'actions_never_checked',
  // Their latest check is more than ACTIONS_CHECK_MAX_AGE_DAYS old at the read's instant.
  'actions_check_old',
] as const;

export type StaleReason = (typeof STALE_REASONS)[number];

export interface Freshness<R extends StaleReason = StaleReason> {
  stale: boolean;
  staleReason: R | null;
}

/** The freshness a rule found: the first reason that holds, or fresh. */
export function freshness<R extends StaleReason>(...reasons: (R | null | undefined | false)[]): Freshness<R> {
  const reason = reasons.find((r): r is R => typeof r === 'string') ?? null;
  return { stale: reason !== null, staleReason: reason };
}

/** The zod fields of meta.stale and meta.staleReason, with the codes a route can give. */
export function staleMetaFields<const R extends readonly [StaleReason, ...StaleReason[]]>(reasons: R, rule: string) {
  return {
    stale: z.boolean().describe(`whether the answer is stale at the read's instant: ${rule}`),
    staleReason: z.enum(reasons).nullable().describe('why it is stale; null when fresh'),
  };
}

const DAY_MS = 86_400_000;

const isWeekend = (day: number) => {
  const weekday = new Date(day * DAY_MS).getUTCDay();
  return weekday === 0 || weekday === 6;
};

/** The read's instant in ms: the asOf asked for, else now. */
export const readInstant = (asOf?: { instant: Date }, now = new Date()) => (asOf?.instant ?? now).getTime();

/**
 * The date of the last session completed at `instant`: the latest weekday
 * whose 16:00 New York close is at or before it (the regular close of the US
 * exchanges, EST or EDT by the time-zone database). Exchange holidays are not
 * modelled. For crypto, which trades every day, the last UTC day completed.
 */
export function lastCompletedSession(instant: number, assetClass?: string): string {
  // A bulk read asks this for every series at one instant: the New York clock is read once per asset class.
  const memo = lastSessions.get(assetClass);
  if (memo?.instant === instant) return memo.day;
  const day = completedSessionAt(instant, assetClass);
  lastSessions.set(assetClass, { instant, day });
  return day;
}

/** The last answer of lastCompletedSession for each asset class (a handful). */
const lastSessions = new Map<string | undefined, { instant: number; day: string }>();

function completedSessionAt(instant: number, assetClass?: string): string {
  let day = Math.floor(instant / DAY_MS);
  if (assetClass === 'crypto') return dayToDate(day - 1);
  // The New York day is the UTC day or the one before; start from the UTC day and step back.
  for (;;) {
    if (!isWeekend(day) && newYorkTimeToUtc(dayToDate(day), '16:00') <= instant) return dayToDate(day);
    day--;
  }
}

/** The weekday before the UTC day of `instant`: the last business day a daily rate published by then can be for. */
export function previousBusinessDay(instant: number): string {
  let day = Math.floor(instant / DAY_MS) - 1;
  while (isWeekend(day)) day--;
  return dayToDate(day);
}

/** How long a check of an instrument's action history keeps its corporate actions fresh. */
export const ACTIONS_CHECK_MAX_AGE_DAYS = 31;

/** How long a news or sentiment source may publish nothing before what it published is stale. */
export const SOURCE_SILENCE_DAYS = 7;

/**
 * How long an earnings calendar may hold no report date before the read's
 * day: 92 days, the longest quarter, plus 50, since a company's annual report
 * comes later after its period than its quarterly ones (the SEC allows 60 to
 * 90 days for a 10-K against 40 to 45 for a 10-Q), which widens the gap from
 * the Q3 report to the annual one by up to 90 - 40 = 50 days.
 */
export const EARNINGS_SILENCE_DAYS = 92 + 50;

/**
 * How long the economic calendar, within the read's filters, may hold no
 * release scheduled before the read's instant: 92 days, the longest quarter,
 * since a read can narrow to one country's one class and some of those are
 * published only quarterly (GDP, New Zealand's CPI and labour market, the
 * Swiss National Bank's rate decisions), plus 14 for a release day that moves
 * within its month. A monthly window would call such a kept calendar stale
 * two months in three.
 */
export const CALENDAR_SILENCE_DAYS = 92 + 14;

export const SILENCE_STALE_REASONS = ['source_silent', 'no_source'] as const;
export type SilenceStaleReason = (typeof SILENCE_STALE_REASONS)[number];

/**
 * Whether the sources a read of published items (news and catalyst events,
 * sentiment, earnings, the economic calendar) covers still publish
 * (docs/api.md, "Silent sources"). With rows, `rowSources` holds, for each source
 * of the returned rows, whether it published within its window before the
 * read's instant: each must, or what it would have published since may be
 * missing. Without rows, `scope` says whether anything was ever stored,
 * known at the read's instant, within the read's scope, and whether any of
 * the sources that stored it published within the window: a window after the
 * feeds' last item is stale, not an empty fresh answer.
 */
export function sourceSilence(rowSources: boolean[], scope?: SourceScope): SilenceStaleReason | null {
  if (rowSources.length) return rowSources.every(Boolean) ? null : 'source_silent';
  if (!scope?.covered) return 'no_source';
  return scope.publishing ? null : 'source_silent';
}

/** What a read's scope holds: whether anything was ever stored in it, known at the read's instant, and whether one of its sources published within the window. */
export interface SourceScope {
  covered: boolean;
  publishing: boolean;
}

/**
 * sourceSilence with the one lookup it needs: with rows, whether each of
 * their `sources` published within its window (`publishing`); without rows,
 * the read's scope (`scope`).
 */
export async function lookUpSourceSilence(
  sources: string[],
  publishing: (sources: string[]) => Promise<boolean[]>,
  scope: () => Promise<SourceScope>,
): Promise<SilenceStaleReason | null> {
  return sources.length ? sourceSilence(await publishing(sources)) : sourceSilence([], await scope());
}

/**
 * The day `days` calendar days before the UTC day of `instant`, but not
 * before FIRST_DAY: a week before an asOf of 0001-01-03 would be written
 * "0000-12-27", which PostgreSQL refuses as a date.
 */
export const daysBefore = (instant: number, days: number) => dayToDate(Math.max(FIRST_DAY_MS / DAY_MS, Math.floor(instant / DAY_MS) - days));

/** The UTC day of an instant, yyyy-mm-dd. */
export const utcDay = (instant: number) => dayToDate(Math.floor(instant / DAY_MS));

export const SERIES_STALE_REASONS = ['bar_marked_stale', 'series_behind', 'no_bars'] as const;
export type SeriesStaleReason = (typeof SERIES_STALE_REASONS)[number];

/**
 * A daily series' freshness at `instant` from its last bar dated on or
 * before that day (undefined: none): stale when that bar is older than the
 * last completed session, or any returned bar was marked stale at ingest.
 */
export function seriesFreshness(
  lastBar: string | null | undefined,
  instant: number,
  assetClass?: string,
  barMarkedStale = false,
): Freshness<SeriesStaleReason> {
  if (barMarkedStale) return freshness<'bar_marked_stale'>('bar_marked_stale');
  if (!lastBar) return freshness<'no_bars'>('no_bars');
  return freshness<'series_behind'>(lastBar < lastCompletedSession(instant, assetClass) && 'series_behind');
}

export const SERIES_RULE =
  'a series is stale when its last bar on or before the read’s day, known at the read’s instant, is older than the last session completed at the read’s instant (weekdays closing 16:00 New York; every UTC day for crypto), or when a returned bar was marked stale at ingest';
