import type { PointInTime } from '../http/params.ts';

const DAY_MS = 86_400_000;

export interface LookbackWindow {
  /** First calendar day inside the window. */
  from: string;
  /** Last calendar day inside the window: the asOf day, or today (UTC). */
  to: string;
  lookbackDays: number;
}

/** The calendar window (end − lookbackDays, end] shared by technicals, correlations and beta. */
export function lookbackWindow(lookbackDays: number, asOf: PointInTime | undefined, now = new Date()): LookbackWindow {
  const end = (asOf?.instant ?? now).toISOString().slice(0, 10);
  const from = new Date(Date.parse(`${end}T00:00:00Z`) - (lookbackDays - 1) * DAY_MS).toISOString().slice(0, 10);
  return { from, to: end, lookbackDays };
}

