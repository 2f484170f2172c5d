import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import type { Logger } from '../observability/logger.ts';
import { FredClient } from './fred.ts';
import { fredFailures } from './fred-failures.ts';
import * as repo from './repository.ts';
import { riskFreeRate, riskFreeRateAt, riskFreeRatesKnownAt } from './risk-free-rate.ts';
import type { MacroSeriesId, MacroSeriesQuery, StaleReason } from './schema.ts';
import { currentCopy, type CopyDeps } from './series-copy.ts';
import { sharedRefresh } from './series-refresh.ts';
import { AppError } from '../core/errors.ts';
import type { PointInTime } from '../core/time.ts';

export { HARDCODED_RISK_FREE, percentToDecimal, riskFreeRateLabel, type KnownRiskFreeRate } from './risk-free-rate.ts';

/**
 * A macro series from storage, refreshed from FRED first when its stored copy
 * is past its freshness window (series-copy.ts); 503 upstream_unavailable
 * when nothing is stored and FRED cannot serve it.
 */
export async function readSeries(deps: CopyDeps, seriesId: MacroSeriesId, q: MacroSeriesQuery) {
  const copy = await currentCopy(deps, seriesId);
  if (copy.kind === 'none') throw unavailable(seriesId, copy);
  const { series, observations } = await deps.db.run((sql) => repo.readCopy(sql, seriesId, q.start, q.end));
  return {
    data: { seriesId, title: series.title, units: series.units, frequency: series.frequency, observations },
    meta: {
      asOf: series.fetchedAt.toISOString(),
      source: series.source,
      stale: !copy.fresh,
      staleReason: copy.fresh ? null : copy.reason,
      providerUpdatedAt: series.providerUpdatedAt,
      seasonalAdjustment: series.seasonalAdjustment,
      start: q.start ?? null,
      end: q.end ?? null,
    },
  };
}

function unavailable(seriesId: string, why: { reason: StaleReason; detail: string; retryAfterS?: number }): AppError {
  const headers: Record<string, string> = why.retryAfterS ? { 'Retry-After': String(why.retryAfterS) } : {};
  return new AppError(
    'upstream_unavailable',
    `${seriesId} has no stored copy and FRED cannot serve it now (${why.detail}); no series is made up in its place`,
    { seriesId: [why.reason] },
    headers,
  );
}

/**
 * Macro series and the risk-free rate, bound to one process's FRED state:
 * the refreshes in flight (series-refresh.ts) and each series' last failure
 * (fred-failures.ts).
 */
export interface MacroService {
  readSeries(seriesId: MacroSeriesId, q: MacroSeriesQuery): ReturnType<typeof readSeries>;
  riskFreeRate(): ReturnType<typeof riskFreeRate>;
  riskFreeRateAt(asOf: PointInTime): ReturnType<typeof riskFreeRateAt>;
  riskFreeRatesKnownAt(instants: Date[]): ReturnType<typeof riskFreeRatesKnownAt>;
}

/** The service as the configuration sets it up: FRED is asked only with FRED_API_KEY. */
export function macroServiceOf(db: Database, logger: Logger, config: Config): MacroService {
  const failures = fredFailures(config.FRED_FAILURE_BACKOFF_MS);
  const fred = config.FRED_API_KEY ? new FredClient({ baseUrl: config.FRED_BASE_URL, apiKey: config.FRED_API_KEY, timeoutMs: config.FRED_TIMEOUT_MS }) : null;
  const deps: CopyDeps = { db, failures, refresh: fred ? sharedRefresh({ db, logger, fred, failures }) : null };
  return {
    readSeries: (seriesId, q) => readSeries(deps, seriesId, q),
    riskFreeRate: () => riskFreeRate(deps),
    riskFreeRateAt: (asOf) => riskFreeRateAt(deps, asOf),
    riskFreeRatesKnownAt: (instants) => riskFreeRatesKnownAt(deps, instants),
  };
}
