import type { Database } from '../db/database.ts';
import type { Logger } from '../observability/logger.ts';
import { ProviderFailure, type FredClient } from './fred.ts';
import type { FredFailures } from './fred-failures.ts';
import * as repo from './repository.ts';
import { FRED_SOURCE, isFresh } from './series-freshness.ts';

export interface RefreshDeps {
  db: Database;
  logger: Logger;
  fred: FredClient;
  failures: FredFailures;
}

/**
 * Fetches a series from FRED and stores it; concurrent callers in this
 * process share one refresh of a series. The refresh first looks at the
 * stored copy again, so a caller that read a stale copy just before another
 * refresh finished does not fetch twice. No database connection is held while
 * FRED is asked. A ProviderFailure is recorded in `failures` and rethrown.
 */
export function sharedRefresh(deps: RefreshDeps): (seriesId: string) => Promise<void> {
  const running = new Map<string, Promise<void>>();
  return (seriesId) => {
    let refresh = running.get(seriesId);
    if (!refresh) {
      refresh = fetchAndStore(deps, seriesId).finally(() => running.delete(seriesId));
      running.set(seriesId, refresh);
    }
    return refresh;
  };
}

async function fetchAndStore({ db, logger, fred, failures }: RefreshDeps, seriesId: string): Promise<void> {
  const stored = await db.run((sql) => repo.storedSeries(sql, seriesId));
  if (stored && isFresh(stored, Date.now())) return;
  const started = Date.now();
  try {
    const { observations, ...description } = await fred.fetchSeries(seriesId);
    const fetchedAt = new Date();
    await db.run((sql) => repo.replaceSeries(sql, seriesId, description, observations, FRED_SOURCE, fetchedAt));
    failures.succeeded(seriesId);
    logger.info({ seriesId, observations: observations.length, ms: Date.now() - started }, 'macro series fetched from FRED');
  } catch (err) {
    if (err instanceof ProviderFailure) {
      failures.failed(seriesId, err);
      logger.warn({ seriesId, kind: err.kind, reason: err.message, ms: Date.now() - started }, 'FRED fetch failed');
    }
    throw err;
  }
}
