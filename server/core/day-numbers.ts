// Dates as day numbers, days since 1970-01-01 (UTC): the form of the packed
// series' dates (prices/daily-bars.ts) and of the keys adjustSeries compares.

const DAY_MS = 86_400_000;

/**
 * The first day there is: PostgreSQL's date input has no year 0, and
 * JavaScript writes the days before year 1 as "0000-…" or "-000001-…", which
 * it refuses. As text and as its first instant (ms).
 */
export const FIRST_DAY = '0001-01-01';
export const FIRST_DAY_MS = Date.parse(`${FIRST_DAY}T00:00:00Z`);

/** Days since 1970-01-01 of a yyyy-mm-dd date, by arithmetic (this runs per bar; no Date objects). */
export function dayNumber(date: string): number {
  let y = (date.charCodeAt(0) - 48) * 1000 + (date.charCodeAt(1) - 48) * 100 + (date.charCodeAt(2) - 48) * 10 + (date.charCodeAt(3) - 48);
  const m = (date.charCodeAt(5) - 48) * 10 + (date.charCodeAt(6) - 48);
  const d = (date.charCodeAt(8) - 48) * 10 + (date.charCodeAt(9) - 48);
  // Howard Hinnant's days_from_civil.
  if (m <= 2) y -= 1;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/** The yyyy-mm-dd date of a day number (the inverse of dayNumber). */
export const dayToDate = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);
