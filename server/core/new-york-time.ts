/**
 * New York wall-clock times as UTC instants, with daylight saving time from
 * the time-zone database (Intl): 17:00 is 21:00 UTC under daylight saving
 * time (EDT, UTC−4) and 22:00 UTC otherwise (EST, UTC−5). Used for option
 * expiries (16:00 on the expiry day), the demo FX closes (the 17:00 cut-off)
 * and the demo calendar's release times.
 */

const HOUR_MS = 3_600_000;

const NEW_YORK = new Intl.DateTimeFormat('en-US', {
  timeZone: 'America/New_York',
  hourCycle: 'h23',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
});

/** The New York wall clock at an instant, as milliseconds of the same wall clock read as UTC. */
function newYorkWallClock(instant: number): number {
  const part = Object.fromEntries(NEW_YORK.formatToParts(instant).map((p) => [p.type, p.value]));
  return Date.UTC(Number(part.year), Number(part.month) - 1, Number(part.day), Number(part.hour), Number(part.minute));
}

/**
 * The UTC instant (ms) of `time` (hh:mm) in New York on `day`. Exactly one of
 * the two offsets fits any time outside the 02:00 hour a switch skips or
 * repeats; the callers' times (08:30, 16:15, 17:00) never fall in it.
 */
export function newYorkTimeToUtc(day: string, time: string): number {
  const wall = Date.parse(`${day}T${time}:00Z`);
  for (const hours of [5, 4]) {
    const instant = wall + hours * HOUR_MS;
    if (newYorkWallClock(instant) === wall) return instant;
  }
  throw new Error(`${day} ${time} does not exist in New York`);
}

/**
 * `time` in New York on `day` (ms). Before New York kept standard time
 * (1883-11-18) the time-zone database has its local mean time, which no whole
 * hour fits; those days are read at UTC−5 (EST), so any stored date has an
 * instant and no read fails on it.
 */
export function newYorkTime(day: string, time: string): number {
  try {
    return newYorkTimeToUtc(day, time);
  } catch {
    return Date.parse(`${day}T${time}:00Z`) + 5 * HOUR_MS;
  }
}
