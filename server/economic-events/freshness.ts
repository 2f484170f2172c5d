import { freshness, type Freshness } from '../core/freshness.ts';

/**
 * The calendar is fresh unless a returned release is past its scheduled time
 * at the read's instant with its `actual` still missing: the provider has
 * published the figure and the stored calendar has not caught up
 * (docs/api.md, "Freshness").
 */
export function calendarFreshness(rows: { scheduledAt: string; actual: string | null }[], instant: number): Freshness<'release_past_due'> {
  return freshness<'release_past_due'>(rows.some((r) => r.actual === null && Date.parse(r.scheduledAt) <= instant) && 'release_past_due');
}
