import { dayNumber, dayToDate } from '../core/day-numbers.ts';
import { newYorkTimeToUtc } from '../core/new-york-time.ts';
import { roundSignificant } from '../core/significant.ts';

/**
 * Which session a news item falls in, and the move across it.
 *
 * Sessions are the days with a daily bar of the instrument, each closing at
 * 16:00 New York time (the regular close of the US exchanges, EST or EDT by
 * the time-zone database). An item falls in the first session whose close is
 * at or after its publication: published before or during a session, that
 * session; after its close, at a weekend or on a holiday, the next one. Its
 * move is that session's adjusted close over the previous bar's.
 *
 * A day without a bar is not a session, so a gap in the data would stretch a
 * "session" over days or weeks. No US market closure since 1990 has been
 * longer than 7 calendar days between closes (9/11: 2001-09-10 to
 * 2001-09-17), so a session more than 7 days after the New York day of
 * publication, or more than 7 days after the previous bar, is taken for
 * missing data, and the item gets no reaction rather than a move over an
 * unknown span.
 */

export const SESSION_TIME_ZONE = 'America/New_York';
export const SESSION_CLOSE = '16:00';
export const MAX_GAP_DAYS = 7;

const DAY_MS = 86_400_000;

/** The UTC day (days since 1970-01-01) of an instant in ms. */
export const utcDayOf = (instant: number) => Math.floor(instant / DAY_MS);

/**
 * Publications the rule places: New York has kept EST and EDT since 1883
 * (before, local mean time, which newYorkTimeToUtc does not model), and the
 * last day leaves room for the next day's date. An item outside gets no row.
 */
const FIRST_PLACEABLE_DAY = dayNumber('1900-01-01');
const LAST_PLACEABLE_DAY = dayNumber('9999-12-30');
const LAST_DAY = dayNumber('9999-12-31');

/** A daily series as readAdjustedSeries returns it, with each bar's price multiplier. */
export interface ReactionSeries {
  /** Days since 1970-01-01, ascending. */
  dates: Int32Array;
  /** Adjusted closes. */
  close: Float64Array;
  priceMultiplier: Float64Array;
  actionSetVersion: number;
}

export interface Placed {
  eventDate: string;
  previousSessionDate: string;
  previousClose: number;
  sessionClose: number;
  reactionPct: number;
  absMovePct: number;
  isCorporateAdjusted: boolean;
  actionSetVersion: number | null;
}

/**
 * New York midnights and closes by day number, cached for a derivation run:
 * each costs two or four time-zone conversions, and news clusters on days.
 */
export class SessionClock {
  private readonly midnights = new Map<number, number>();
  private readonly closes = new Map<number, number>();

  private at(cache: Map<number, number>, day: number, time: string): number {
    let instant = cache.get(day);
    if (instant === undefined) cache.set(day, (instant = newYorkTimeToUtc(dayToDate(day), time)));
    return instant;
  }

  /** The New York calendar day (days since 1970-01-01) of an instant: its UTC day, or the day before (New York is 4 or 5 hours behind). */
  newYorkDay(instant: number): number {
    const utcDay = utcDayOf(instant);
    return instant >= this.at(this.midnights, utcDay, '00:00') ? utcDay : utcDay - 1;
  }

  /** The first day whose 16:00 New York close is at or after `instant`. */
  firstCloseDay(instant: number, newYorkDay: number): number {
    return instant <= this.at(this.closes, newYorkDay, SESSION_CLOSE) ? newYorkDay : newYorkDay + 1;
  }
}

/** Whether an item published at `instant` can be placed at all (see FIRST_PLACEABLE_DAY). */
export function isPlaceable(instant: number): boolean {
  const utcDay = utcDayOf(instant);
  return utcDay >= FIRST_PLACEABLE_DAY && utcDay <= LAST_PLACEABLE_DAY;
}

/** The bar days the series must cover to place items published on these UTC days: from 8 days before the first to 7 after the last. */
export function barsWindow(firstUtcDay: number, lastUtcDay: number): { from: string; to: string } {
  // The New York day is the UTC day or the one before; the session at most
  // MAX_GAP_DAYS after it, and the previous bar at most MAX_GAP_DAYS before the session.
  return { from: dayToDate(firstUtcDay - 1 - MAX_GAP_DAYS), to: dayToDate(Math.min(lastUtcDay + MAX_GAP_DAYS, LAST_DAY)) };
}

/** Index of the first element of ascending `days` at or after `day`; days.length when none. */
function firstAtOrAfter(days: Int32Array, day: number): number {
  let lo = 0;
  let hi = days.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (days[mid] < day) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The reaction of `series` to an item published at `instant` (a placeable
 * one), or null: no bar on or after its session, none before, a gap longer
 * than MAX_GAP_DAYS, or closes whose ratio is not a finite number.
 */
export function placeEvent(series: ReactionSeries, instant: number, clock: SessionClock): Placed | null {
  const newYorkDay = clock.newYorkDay(instant);
  const i = firstAtOrAfter(series.dates, clock.firstCloseDay(instant, newYorkDay));
  if (i === 0 || i === series.dates.length) return null;
  const session = series.dates[i];
  const previous = series.dates[i - 1];
  if (session - newYorkDay > MAX_GAP_DAYS || session - previous > MAX_GAP_DAYS) return null;
  // A close an action scaled is printed as the price routes print it (13
  // significant digits); an unscaled close is the stored double. The move is
  // computed from the closes as printed, so it can be checked against them.
  const isCorporateAdjusted = series.priceMultiplier[i] !== 1 || series.priceMultiplier[i - 1] !== 1;
  const previousClose = series.priceMultiplier[i - 1] === 1 ? series.close[i - 1] : roundSignificant(series.close[i - 1]);
  const sessionClose = series.priceMultiplier[i] === 1 ? series.close[i] : roundSignificant(series.close[i]);
  const reactionPct = 100 * (sessionClose / previousClose - 1);
  if (!(previousClose > 0) || !Number.isFinite(reactionPct)) return null;
  return {
    eventDate: dayToDate(session),
    previousSessionDate: dayToDate(previous),
    previousClose,
    sessionClose,
    reactionPct,
    absMovePct: Math.abs(reactionPct),
    isCorporateAdjusted,
    actionSetVersion: isCorporateAdjusted ? series.actionSetVersion : null,
  };
}
