import { daysBefore, EARNINGS_SILENCE_DAYS, freshness, utcDay, type Freshness, type SilenceStaleReason } from '../core/freshness.ts';
import type { EarningsReport } from './schema.ts';

/**
 * The report dates in which an earnings source must have a report, of any
 * instrument, for a read at `readAt`: the EARNINGS_SILENCE_DAYS before the
 * read's UTC day, to that day, both included. A date after the read's day
 * does not count: it is not a report yet, and a calendar that stopped with
 * its next dates listed has stopped all the same.
 */
export function reportDateWindow(readAt: number): { since: string; until: string } {
  return { since: daysBefore(readAt, EARNINGS_SILENCE_DAYS), until: utcDay(readAt) };
}

/**
 * The calendar is stale when a returned report is still `scheduled` on a day
 * after its reportDate (UTC): the report is out and the stored calendar has
 * not caught up. Else, by the silence rule (core/freshness.ts,
 * sourceSilence): with rows, when a source of them has no report in its
 * window; without rows, when none of the read's sources (those of the
 * instrument's reports, or every source on the market-wide read) has;
 * `no_source` when there are none (docs/api.md, "Freshness").
 */
export function earningsFreshness(
  data: Pick<EarningsReport, 'status' | 'reportDate'>[],
  readAt: number,
  silence: SilenceStaleReason | null,
): Freshness<'report_past_due' | SilenceStaleReason> {
  const today = utcDay(readAt);
  return freshness(data.some((r) => r.status === 'scheduled' && r.reportDate < today) && 'report_past_due', silence);
}
