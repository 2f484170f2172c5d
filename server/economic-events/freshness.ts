import { CALENDAR_SILENCE_DAYS, freshness, type Freshness, type SilenceStaleReason } from '../core/freshness.ts';

/**
 * The instants within which a release of the read's scope must be scheduled
 * for a read at `instant`: the CALENDAR_SILENCE_DAYS before it, both ends
 * included. A release scheduled after the read's instant does not count: it
 * is a plan, not a publication, and a calendar that stopped with its next
 * releases listed has stopped all the same.
 */
export function releaseWindow(instant: number): { since: Date; until: Date } {
  return { since: new Date(instant - CALENDAR_SILENCE_DAYS * 86_400_000), until: new Date(instant) };
}

/**
 * The calendar is stale when a returned release is past its scheduled time at
 * the read's instant with its `actual` still missing: the provider has
 * published the figure and the stored calendar has not caught up. Else, by the
 * silence rule (core/freshness.ts, sourceSilence) within the read's filters
 * (country, eventClass, importance): with rows, when a source of them has no
 * release there in its window; without rows, when no release there is in the
 * window; `no_source` when the filters select no release at all (docs/api.md,
 * "Freshness").
 */
export function calendarFreshness(
  rows: { scheduledAt: string; actual: string | null }[],
  instant: number,
  silence: SilenceStaleReason | null,
): Freshness<'release_past_due' | SilenceStaleReason> {
  return freshness(rows.some((r) => r.actual === null && Date.parse(r.scheduledAt) <= instant) && 'release_past_due', silence);
}
