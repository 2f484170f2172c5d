import type { ProviderFailure } from './fred.ts';
import type { StaleReason } from './schema.ts';

/** Why FRED is not asked for a series now, and when a client may try again. */
export interface FredRefusal {
  reason: StaleReason;
  detail: string;
  retryAfterS?: number;
}

/**
 * Each series' last FRED failure, kept for one process: for `backoffMs` after
 * it, reads of that series are served what is stored (or refused) without
 * waiting on FRED again.
 */
export interface FredFailures {
  /** Why FRED is not to be asked for `seriesId` now (a failure within the backoff); null when it may be. */
  refusal(seriesId: string): FredRefusal | null;
  /** Seconds until FRED may be asked for `seriesId` again, at least 1 (Retry-After). */
  retryAfterS(seriesId: string): number;
  failed(seriesId: string, failure: ProviderFailure): void;
  succeeded(seriesId: string): void;
}

export function fredFailures(backoffMs: number): FredFailures {
  const last = new Map<string, { at: number; failure: ProviderFailure }>();
  const retryAfterS = (seriesId: string) => {
    const failed = last.get(seriesId);
    const remaining = failed ? backoffMs - (Date.now() - failed.at) : 0;
    return Math.max(1, Math.ceil(remaining / 1000));
  };
  return {
    refusal(seriesId) {
      const failed = last.get(seriesId);
      if (!failed || Date.now() - failed.at >= backoffMs) return null;
      return {
        reason: staleReason(failed.failure),
        detail: `FRED failed within the last ${backoffMs} ms: ${failed.failure.message}`,
        retryAfterS: retryAfterS(seriesId),
      };
    },
    retryAfterS,
    failed: (seriesId, failure) => void last.set(seriesId, { at: Date.now(), failure }),
    succeeded: (seriesId) => void last.delete(seriesId),
  };
}

/** meta.staleReason for a copy FRED failed to refresh. */
export function staleReason(failure: ProviderFailure): StaleReason {
  return failure.kind === 'unreachable' ? 'provider_unreachable' : 'provider_error';
}
