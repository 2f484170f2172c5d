import { newYorkTime } from '../core/new-york-time.ts';

/**
 * What "fresh" means for options, at the read's instant R (asOf, or now):
 *
 * - A quote is stale once a whole regular session (09:30 to 16:00 New York,
 *   Monday to Friday) has opened at or after its observation and closed at or
 *   before R: it is then older than one session. A quote at Friday's close is
 *   fresh through Monday until 16:00 New York, and stale from then on. The
 *   calendar knows no exchange holidays, so a holiday weekday counts as a
 *   session: across one, a quote turns stale a session early, never late.
 * - A contract is inactive (`isActive: false`) from 16:00 New York on its
 *   expiry day on (when US equity and index options stop trading), or when
 *   the source marked it inactive.
 */

const DAY_MS = 86_400_000;

export const STALE_REASONS = ['contract_expired', 'quote_older_than_one_session', 'no_quote'] as const;
export type OptionStaleReason = (typeof STALE_REASONS)[number];

const SESSION_OPEN = '09:30';
const SESSION_CLOSE = '16:00';

/** The last instant whose UTC day is a four-digit year (9999-12-31). */
const LAST_DAY_MS = Date.parse('9999-12-31T00:00:00Z');

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const isWeekday = (day: string) => {
  const weekday = new Date(`${day}T00:00:00Z`).getUTCDay();
  return weekday !== 0 && weekday !== 6;
};

/** The close (ms) of the first regular session that opens at or after `observedAt`; Infinity when none opens before year 10000. */
export function firstFullSessionCloseAfter(observedAt: Date): number {
  const at = observedAt.getTime();
  // New York is 4 or 5 hours behind UTC: its day is the UTC day or the one before.
  for (let t = at - DAY_MS; t <= LAST_DAY_MS; t += DAY_MS) {
    const day = dayOf(t);
    if (isWeekday(day) && newYorkTime(day, SESSION_OPEN) >= at) return newYorkTime(day, SESSION_CLOSE);
  }
  return Infinity;
}

/** Whether a quote observed at `observedAt` is older than one session at `readAt`. */
export function isQuoteStale(observedAt: Date, readAt: Date): boolean {
  return firstFullSessionCloseAfter(observedAt) <= readAt.getTime();
}

/** 16:00 New York on the expiry day (ms): from then on the contract is expired. */
export const expiryInstant = (expiry: string) => newYorkTime(expiry, SESSION_CLOSE);

/** Whether the contract trades at `readAt`: marked active by its source and not past its expiry. */
export const isActiveAt = (contract: { isActive: boolean; expiry: string }, readAt: Date) =>
  contract.isActive && readAt.getTime() < expiryInstant(contract.expiry);

/** Why one contract's row is stale at `readAt`, or null when it is fresh. */
export function rowStaleReason(contract: { expiry: string }, quote: { observedAt: Date } | null, readAt: Date): OptionStaleReason | null {
  if (readAt.getTime() >= expiryInstant(contract.expiry)) return 'contract_expired';
  if (!quote) return 'no_quote';
  return isQuoteStale(quote.observedAt, readAt) ? 'quote_older_than_one_session' : null;
}

/** The reason a list reports: the first of STALE_REASONS any of its rows has. */
export function firstReason(reasons: Iterable<OptionStaleReason | null>): OptionStaleReason | null {
  const present = new Set(reasons);
  return STALE_REASONS.find((r) => present.has(r)) ?? null;
}
