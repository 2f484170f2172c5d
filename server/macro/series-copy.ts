import type { Database } from '../db/database.ts';
import { macroReads } from '../observability/metrics.ts';
import { ProviderFailure } from './fred.ts';
import { staleReason, type FredFailures, type FredRefusal } from './fred-failures.ts';
import * as repo from './repository.ts';
import { isFresh } from './series-freshness.ts';
import type { StaleReason } from './schema.ts';

/** What can be served for a series now. */
export type Copy =
  | { kind: 'stored'; fresh: true; fetched: boolean }
  | { kind: 'stored'; fresh: false; reason: StaleReason; detail: string }
  | { kind: 'none'; reason: StaleReason; detail: string; retryAfterS?: number };

export interface CopyDeps {
  db: Database;
  /** Fetches and stores a series from FRED (series-refresh.ts); null without a FRED_API_KEY. */
  refresh: ((seriesId: string) => Promise<void>) | null;
  failures: FredFailures;
}

/**
 * Whether a fresh copy of the series is stored, refreshing it first when it
 * is not and FRED can be asked; counted by how the read is served
 * (macro_series_reads_total).
 */
export async function currentCopy(deps: CopyDeps, seriesId: string): Promise<Copy> {
  const copy = await decideCopy(deps, seriesId);
  macroReads.inc({ served: copy.kind === 'none' ? 'unavailable' : copy.fresh ? (copy.fetched ? 'fetched' : 'stored') : 'stale' });
  return copy;
}

const NO_KEY: FredRefusal = { reason: 'no_provider_key', detail: 'no FRED_API_KEY is configured' };

/** What is served when FRED is not asked: the stored copy, stale, or nothing. */
const servedWithoutFred = (stored: repo.StoredSeries | undefined, why: FredRefusal): Copy =>
  stored ? { kind: 'stored', fresh: false, reason: why.reason, detail: why.detail } : { kind: 'none', ...why };

async function decideCopy({ db, refresh, failures }: CopyDeps, seriesId: string): Promise<Copy> {
  let stored = await db.run((sql) => repo.storedSeries(sql, seriesId));
  if (stored && isFresh(stored, Date.now())) return { kind: 'stored', fresh: true, fetched: false };
  if (!refresh) return servedWithoutFred(stored, NO_KEY);
  const refused = failures.refusal(seriesId);
  if (refused) return servedWithoutFred(stored, refused);
  try {
    await refresh(seriesId);
    return { kind: 'stored', fresh: true, fetched: true };
  } catch (err) {
    if (!(err instanceof ProviderFailure)) throw err;
    // A refresh another process completed meanwhile still counts.
    stored = await db.run((sql) => repo.storedSeries(sql, seriesId));
    if (stored && isFresh(stored, Date.now())) return { kind: 'stored', fresh: true, fetched: false };
    const reason = staleReason(err);
    const detail = `FRED did not serve ${seriesId}: ${err.message}`;
    return stored ? { kind: 'stored', fresh: false, reason, detail } : { kind: 'none', reason, detail, retryAfterS: failures.retryAfterS(seriesId) };
  }
}
