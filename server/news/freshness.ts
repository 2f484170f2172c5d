import { freshness, SOURCE_SILENCE_DAYS, sourceSilence, type Freshness, type SilenceStaleReason } from '../core/freshness.ts';

/**
 * The window in which a news source must have published for a read at
 * `instant`: the SOURCE_SILENCE_DAYS before it, both ends included. An item
 * counts when it was published within the window, on any instrument, and
 * stored by the read's instant (its createdAt): one published later, or
 * known only later, was not there to be read. A wire silent for a week has
 * stopped, and what it would have published since is missing.
 */
export function newsSilenceWindow(instant: number): { since: Date; until: Date } {
  return { since: new Date(instant - SOURCE_SILENCE_DAYS * 86_400_000), until: new Date(instant) };
}

/**
 * News and catalyst events are fresh while each source of the returned rows
 * publishes within its window; without rows, while one of the sources that
 * ever published the instrument's news (of the read's class, company-confirmed
 * for events) does; stale `no_source` when none ever did (docs/api.md,
 * "Freshness").
 */
export function newsFreshness(rowSources: boolean[], scope?: { covered: boolean; publishing: boolean }): Freshness<SilenceStaleReason> {
  return freshness(sourceSilence(rowSources, scope));
}
