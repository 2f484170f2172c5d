import { SOURCE_SILENCE_DAYS } from '../core/freshness.ts';

/**
 * The window in which a news source must have published for a read at
 * `instant`: the SOURCE_SILENCE_DAYS before it, both ends included. An item
 * counts when it was published within the window, on any instrument, and
 * stored by the read's instant (its createdAt): one published later, or
 * known only later, was not there to be read. A wire silent for a week has
 * stopped, and what it would have published since is missing. News and
 * catalyst events are fresh by the silence rule (core/freshness.ts,
 * sourceSilence): without rows, the read's scope is the instrument's news (of
 * the read's class, company-confirmed for events).
 */
export function newsSilenceWindow(instant: number): { since: Date; until: Date } {
  return { since: new Date(instant - SOURCE_SILENCE_DAYS * 86_400_000), until: new Date(instant) };
}
