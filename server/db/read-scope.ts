import { AsyncLocalStorage } from 'node:async_hooks';
import type { Replica } from './replicas.ts';

/** Why a read-only unit runs on the primary (db_read_units_total's reason). */
export type PrimaryReason = 'none_serving' | 'as_of_not_replayed' | 'replica_failed';

/**
 * What one request's reads have used so far: set per public request while
 * replicas are configured (server/app.ts), read and written by the replica
 * router (db/replica-router.ts).
 */
export interface ReadScope {
  /** The request's asOf cut-off (ms), when it has one: only a replica that has replayed past it may answer. */
  asOf: number | null;
  /**
   * Where its units run, once the first has (on the primary: why), so that
   * one answer comes from one server: later units follow while it stays eligible.
   */
  server: Replica | PrimaryReason | null;
  /** The earliest replayedThrough of a replica that served a unit while behind the primary. */
  behindThrough: number | null;
}

const scopes = new AsyncLocalStorage<ReadScope>();

/** Runs `next` (the rest of a request) with a read scope of its own. */
export function withReadScope(next: () => void): void {
  scopes.run({ asOf: null, server: null, behindThrough: null }, next);
}

/**
 * Runs `read` with a read scope of its own whose cut-off is `instant`, as a
 * request with that asOf has: work outside a request that reads as of a
 * pinned instant (an export job) runs its units on a replica that has
 * replayed past it, else on the primary, and on one server while it stays so.
 */
export function inReadScopeAt<T>(instant: Date, read: () => Promise<T>): Promise<T> {
  return scopes.run({ asOf: instant.getTime(), server: null, behindThrough: null }, read);
}

/** The current request's read scope; undefined outside one (no replicas, or not a public request). */
export function currentReadScope(): ReadScope | undefined {
  return scopes.getStore();
}

/** Records the request's asOf cut-off: its reads go to a replica only if that has replayed past it. */
export function readsAsOf(instant: Date): void {
  const scope = scopes.getStore();
  if (scope) scope.asOf = instant.getTime();
}

/**
 * The meta.asOf an answer states, given the one its service built: a request
 * without asOf answered by a replica that was behind the primary is an answer
 * as of the instant that replica had replayed, so it says that instant when
 * it is earlier. Unchanged otherwise: a replica that had replayed the
 * primary's last sample (at most CHECK_INTERVAL_MS old, db/replicas.ts)
 * answers what the primary would.
 */
export function servedAsOf(asOf: string): string {
  const scope = scopes.getStore();
  if (!scope || scope.asOf !== null || scope.behindThrough === null) return asOf;
  if (!(Date.parse(asOf) > scope.behindThrough)) return asOf;
  return new Date(scope.behindThrough).toISOString();
}
