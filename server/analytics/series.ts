import type { PointInTime } from '../core/time.ts';
import { FIRST_DAY_MS } from '../core/day-numbers.ts';

const DAY_MS = 86_400_000;

export interface LookbackWindow {
  /** First calendar day inside the window. */
  from: string;
  /** Last calendar day inside the window: the asOf day, or today (UTC). */
  to: string;
  lookbackDays: number;
}

function windowMs(lookbackDays: number, asOf: PointInTime | undefined, now: Date) {
  const end = (asOf?.instant ?? now).toISOString().slice(0, 10);
  return { end, fromMs: Date.parse(`${end}T00:00:00Z`) - (lookbackDays - 1) * DAY_MS };
}

/** The calendar window (end − lookbackDays, end] shared by technicals, correlations and beta. */
export function lookbackWindow(lookbackDays: number, asOf: PointInTime | undefined, now = new Date()): LookbackWindow {
  const { end, fromMs } = windowMs(lookbackDays, asOf, now);
  return { from: new Date(fromMs).toISOString().slice(0, 10), to: end, lookbackDays };
}

/** Whether the window would start before FIRST_DAY (asOf 0001-01-01 with any lookback beyond one day, say). */
export function startsBeforeFirstDay(lookbackDays: number, asOf: PointInTime | undefined, now = new Date()): boolean {
  return windowMs(lookbackDays, asOf, now).fromMs < FIRST_DAY_MS;
}

/**
 * Why an instrument's window read no bar (docs/api.md, "When there is not
 * enough data"): `no_stored_bars`, no revision of any bar is stored in the
 * window; `not_yet_known`, bars are stored there but none was known at asOf.
 */
export const EMPTY_WINDOW_REASONS = ['no_stored_bars', 'not_yet_known'] as const;
export type EmptyWindowReason = (typeof EMPTY_WINDOW_REASONS)[number];
