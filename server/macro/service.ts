import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import type { Logger } from '../observability/logger.ts';
import { macroReads } from '../observability/metrics.ts';
import { FredClient, ProviderFailure } from './fred.ts';
import * as repo from './repository.ts';
import type { StoredSeries } from './repository.ts';
import { dailyKnownFrom, latestKnownAt, monthlyKnownFrom, newerObservationDue, type KnownObservation, type RiskFreeSeriesId } from './risk-free-history.ts';
import type { MacroFrequency, MacroSeriesId, MacroSeriesQuery, RiskFreeFallback, RiskFreeRate, RiskFreeStaleReason, StaleReason } from './schema.ts';
import { AppError } from '../core/errors.ts';
import type { Meta } from '../core/meta.ts';
import type { PointInTime } from '../core/time.ts';

/** The `source` of a copy fetched from FRED; any other source (the bundled demo snapshot) is never fresh. */
export const FRED_SOURCE = 'fred';

const HOUR_MS = 3_600_000;

/**
 * How long a copy fetched from FRED is served without asking FRED again, by
 * the series' frequency. FRED posts a daily series (Treasury yields, VIX)
 * once each business day, so a daily copy is at most 6 hours behind FRED at
 * the cost of at most 4 fetches a series a day. Weekly series are refreshed
 * every 12 hours; monthly and rarer ones, published on one day of the month
 * at most, every 24 hours: a new release appears within a day.
 */
export const FRESH_FOR_MS: Record<MacroFrequency, number> = {
  daily: 6 * HOUR_MS,
  weekly: 12 * HOUR_MS,
  biweekly: 24 * HOUR_MS,
  monthly: 24 * HOUR_MS,
  quarterly: 24 * HOUR_MS,
  semiannual: 24 * HOUR_MS,
  annual: 24 * HOUR_MS,
};

/** The series the risk-free rate reads: the 3-month Treasury constant-maturity yield, in percent. */
export const RISK_FREE_SERIES = 'DGS3MO' as const satisfies MacroSeriesId;

/**
 * The hard-coded risk-free rate, for when FRED cannot be asked and DGS3MO
 * was never stored: TB3MS (3-month Treasury bill, secondary market, monthly
 * average) for September 2022, 3.13 %, the latest 3-month rate in the bundled
 * FRED snapshot (gretl-data 2022c). It is a stand-in, years old: configure
 * FRED_API_KEY for a live rate.
 */
export const HARDCODED_RISK_FREE = { percent: 3.13, observationDate: '2022-09-01', source: 'TB3MS 2022-09 (gretl-data 2022c snapshot of FRED)' };

/** The hard-coded rate as a TB3MS observation: the September 2022 average, known from the first instant of October 2022. */
const HARDCODED_OBSERVATION: KnownObservation = {
  seriesId: 'TB3MS',
  date: HARDCODED_RISK_FREE.observationDate,
  value: HARDCODED_RISK_FREE.percent,
  knownFrom: monthlyKnownFrom(HARDCODED_RISK_FREE.observationDate),
  source: HARDCODED_RISK_FREE.source,
};

/**
 * The risk-free rate known at an instant (server/macro/risk-free-history.ts):
 * the observation, the rate as a decimal, and whether it is the hard-coded
 * stand-in rather than a stored row.
 */
export interface KnownRiskFreeRate extends KnownObservation {
  rate: number;
  hardcoded: boolean;
}

/** The label computed Greeks carry as model.riskFreeRateSource: `fred:<series>` for a stored observation, `fallback` for the hard-coded one. */
export const riskFreeRateLabel = (r: KnownRiskFreeRate) => (r.hardcoded ? 'fallback' : (`fred:${r.seriesId}` as const));

export interface MacroServiceOptions {
  apiKey?: string;
  baseUrl: string;
  timeoutMs: number;
  failureBackoffMs: number;
}

/** What can be served for a series now. */
type Copy =
  | { kind: 'stored'; fresh: true; fetched: boolean }
  | { kind: 'stored'; fresh: false; reason: StaleReason; detail: string }
  | { kind: 'none'; reason: StaleReason; detail: string; retryAfterS?: number };

const isFresh = (s: StoredSeries, now: number) => s.source === FRED_SOURCE && now - s.fetchedAt.getTime() < FRESH_FOR_MS[s.frequency];

/**
 * Macro series and the risk-free rate, served from storage and refreshed from
 * FRED when the stored copy is past its freshness window.
 *
 * One instance per process holds the refreshes in flight (concurrent reads of
 * a series share one fetch) and each series' last failure (for
 * failureBackoffMs after it, reads do not wait on FRED again). No database
 * connection is held while FRED is asked.
 */
export class MacroService {
  private readonly fred: FredClient | null;
  private readonly refreshing = new Map<string, Promise<void>>();
  private readonly failures = new Map<string, { at: number; failure: ProviderFailure }>();

  private readonly db: Database;
  private readonly logger: Logger;
  private readonly options: MacroServiceOptions;

  constructor(db: Database, logger: Logger, options: MacroServiceOptions) {
    this.db = db;
    this.logger = logger;
    this.options = options;
    this.fred = options.apiKey ? new FredClient({ baseUrl: options.baseUrl, apiKey: options.apiKey, timeoutMs: options.timeoutMs }) : null;
  }

  async readSeries(seriesId: MacroSeriesId, q: MacroSeriesQuery) {
    const copy = await this.currentCopy(seriesId);
    if (copy.kind === 'none') throw unavailable(seriesId, copy);
    const { series, observations } = await this.db.run((sql) => repo.readCopy(sql, seriesId, q.start, q.end));
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

  /**
   * The current annualised risk-free rate as a decimal (GET /v1/rates/risk-free
   * without asOf): the latest DGS3MO observation. Source `fred` when it comes
   * from a fresh copy; otherwise a stand-in with source `fallback`: the last
   * stored observation, or the hard-coded rate when none is stored. Model
   * inputs never read this: they take the rate known at their own instant
   * (riskFreeRatesKnownAt).
   */
  async riskFreeRate(): Promise<{
    data: RiskFreeRate;
    meta: Meta & { staleReason: RiskFreeStaleReason | null; seriesId: RiskFreeSeriesId; fallback: RiskFreeFallback | null };
  }> {
    const copy = await this.currentCopy(RISK_FREE_SERIES);
    const stored = copy.kind === 'stored' ? await this.db.run((sql) => repo.latestOfCopy(sql, RISK_FREE_SERIES)) : undefined;
    if (stored?.latest && copy.kind === 'stored') {
      const rate = percentToDecimal(stored.latest.value);
      const meta = { asOf: stored.series.fetchedAt.toISOString(), source: stored.series.source, seriesId: RISK_FREE_SERIES };
      const knownFrom = dailyKnownFrom(stored.latest.date);
      const observation = { rate, maturity: '3M' as const, asOf: stored.latest.date, seriesId: RISK_FREE_SERIES, knownFrom: knownFrom.toISOString() };
      // A fresh copy can still hold an old observation (FRED behind, a holiday run): judged as the asOf reads judge it.
      const due = newerObservationDue(RISK_FREE_SERIES, knownFrom, new Date());
      return copy.fresh
        ? { data: { ...observation, source: 'fred' }, meta: { ...meta, stale: due, staleReason: due ? 'newer_observation_due' : null, fallback: null } }
        : {
            data: { ...observation, source: 'fallback' },
            meta: {
              ...meta,
              stale: true,
              staleReason: copy.reason,
              fallback: { standIn: 'last_stored_observation', reason: copy.reason, detail: copy.detail },
            },
          };
    }
    const why = copy.kind === 'none' ? copy : { reason: 'provider_error' as const, detail: `the stored ${RISK_FREE_SERIES} copy has no observations` };
    // No DGS3MO copy to stand in: the latest observation of the stored history (TB3MS), before the hard-coded one.
    const [history] = (await this.riskFreeRatesKnownAt([new Date()])).values();
    if (history && !history.hardcoded) return standInRate(history, 'last_stored_observation', why);
    return standInRate(HARDCODED_OBSERVATION, 'hardcoded', why);
  }

  /**
   * The risk-free rate known at each instant, by the rule of
   * server/macro/risk-free-history.ts: the stored observation (TB3MS history,
   * DGS3MO copy) with the latest known-from instant at or before it, or the
   * hard-coded TB3MS 2022-09 when that is more recent; null when nothing was
   * known then. What computed Greeks and implied volatilities use, so no
   * rate from after a quote enters its model. With a FRED key the DGS3MO copy
   * is refreshed first when past its window, as the live read does.
   */
  async riskFreeRatesKnownAt(instants: Date[]): Promise<Map<number, KnownRiskFreeRate | null>> {
    const distinct = [...new Map(instants.map((i) => [i.getTime(), i])).values()];
    if (!distinct.length) return new Map();
    if (this.fred) await this.currentCopy(RISK_FREE_SERIES);
    const latest = await this.db.run((sql) => latestKnownAt(sql, distinct));
    return new Map(
      distinct.map((at) => {
        const { table = null, dgs3mo = null } = latest.get(at.getTime()) ?? {};
        return [at.getTime(), pickKnown(at, table, dgs3mo)];
      }),
    );
  }

  /**
   * GET /v1/rates/risk-free?asOf=…: the rate known at the cut-off
   * (riskFreeRatesKnownAt), stale when a newer observation of its series was
   * due by then; 404 when no rate was known then.
   */
  async riskFreeRateAt(asOf: PointInTime): Promise<{
    data: RiskFreeRate;
    meta: Meta & { staleReason: RiskFreeStaleReason | null; seriesId: RiskFreeSeriesId; fallback: RiskFreeFallback | null };
  }> {
    const known = (await this.riskFreeRatesKnownAt([asOf.instant])).get(asOf.instant.getTime());
    if (!known) {
      throw new AppError('not_found', `no risk-free rate was known at ${asOf.input}: no rate is made up, and none from a later date is used`, {
        asOf: ['no stored observation was known then: a TB3MS month counts from the first instant after it ends, a DGS3MO day from the end of that UTC day'],
      });
    }
    const due = newerObservationDue(known.seriesId, known.knownFrom, asOf.instant);
    return {
      data: {
        rate: known.rate,
        maturity: '3M',
        asOf: known.date,
        source: known.hardcoded ? 'fallback' : 'fred',
        seriesId: known.seriesId,
        knownFrom: known.knownFrom.toISOString(),
      },
      meta: {
        asOf: asOf.input,
        source: known.source,
        stale: due,
        staleReason: due ? 'newer_observation_due' : null,
        seriesId: known.seriesId,
        fallback: known.hardcoded
          ? {
              standIn: 'hardcoded',
              reason: 'no_stored_observation',
              detail: `no stored observation known at ${asOf.input} is more recent than the hard-coded ${HARDCODED_RISK_FREE.source}`,
            }
          : null,
      },
    };
  }

  /**
   * Whether a fresh copy is stored, refreshing it first when it is not and
   * FRED can be asked; counted by how the read is served.
   */
  private async currentCopy(seriesId: string): Promise<Copy> {
    const copy = await this.decideCopy(seriesId);
    macroReads.inc({ served: copy.kind === 'none' ? 'unavailable' : copy.fresh ? (copy.fetched ? 'fetched' : 'stored') : 'stale' });
    return copy;
  }

  private async decideCopy(seriesId: string): Promise<Copy> {
    let stored = await this.db.run((sql) => repo.storedSeries(sql, seriesId));
    if (stored && isFresh(stored, Date.now())) return { kind: 'stored', fresh: true, fetched: false };
    const refused = this.refusal(seriesId);
    if (refused) return stored ? { kind: 'stored', fresh: false, reason: refused.reason, detail: refused.detail } : { kind: 'none', ...refused };
    try {
      await this.refresh(seriesId);
      return { kind: 'stored', fresh: true, fetched: true };
    } catch (err) {
      if (!(err instanceof ProviderFailure)) throw err;
      // A refresh another process completed meanwhile still counts.
      stored = await this.db.run((sql) => repo.storedSeries(sql, seriesId));
      if (stored && isFresh(stored, Date.now())) return { kind: 'stored', fresh: true, fetched: false };
      const reason = staleReason(err);
      const detail = `FRED did not serve ${seriesId}: ${err.message}`;
      return stored ? { kind: 'stored', fresh: false, reason, detail } : { kind: 'none', reason, detail, retryAfterS: this.retryAfterS(seriesId) };
    }
  }

  /** Why FRED is not to be asked now: no key, or a failure within the backoff. */
  private refusal(seriesId: string): { reason: StaleReason; detail: string; retryAfterS?: number } | null {
    if (!this.fred) return { reason: 'no_provider_key', detail: 'no FRED_API_KEY is configured' };
    const last = this.failures.get(seriesId);
    if (last && Date.now() - last.at < this.options.failureBackoffMs) {
      return {
        reason: staleReason(last.failure),
        detail: `FRED failed within the last ${this.options.failureBackoffMs} ms: ${last.failure.message}`,
        retryAfterS: this.retryAfterS(seriesId),
      };
    }
    return null;
  }

  private retryAfterS(seriesId: string): number {
    const last = this.failures.get(seriesId);
    const remaining = last ? this.options.failureBackoffMs - (Date.now() - last.at) : 0;
    return Math.max(1, Math.ceil(remaining / 1000));
  }

  /**
   * Fetches and stores a series; concurrent callers share one refresh. The
   * refresh first looks at the stored copy again, so a caller that read a
   * stale copy just before another refresh finished does not fetch twice.
   */
  private refresh(seriesId: string): Promise<void> {
    let running = this.refreshing.get(seriesId);
    if (!running) {
      running = this.fetchAndStore(seriesId).finally(() => this.refreshing.delete(seriesId));
      this.refreshing.set(seriesId, running);
    }
    return running;
  }

  private async fetchAndStore(seriesId: string): Promise<void> {
    const stored = await this.db.run((sql) => repo.storedSeries(sql, seriesId));
    if (stored && isFresh(stored, Date.now())) return;
    const started = Date.now();
    try {
      const { observations, ...description } = await this.fred!.fetchSeries(seriesId);
      const fetchedAt = new Date();
      await this.db.run((sql) => repo.replaceSeries(sql, seriesId, description, observations, FRED_SOURCE, fetchedAt));
      this.failures.delete(seriesId);
      this.logger.info({ seriesId, observations: observations.length, ms: Date.now() - started }, 'macro series fetched from FRED');
    } catch (err) {
      if (err instanceof ProviderFailure) {
        this.failures.set(seriesId, { at: Date.now(), failure: err });
        this.logger.warn({ seriesId, kind: err.kind, reason: err.message, ms: Date.now() - started }, 'FRED fetch failed');
      }
      throw err;
    }
  }
}

/** The service as the configuration sets it up. */
export function macroServiceOf(db: Database, logger: Logger, config: Config): MacroService {
  return new MacroService(db, logger, {
    apiKey: config.FRED_API_KEY,
    baseUrl: config.FRED_BASE_URL,
    timeoutMs: config.FRED_TIMEOUT_MS,
    failureBackoffMs: config.FRED_FAILURE_BACKOFF_MS,
  });
}

/** The most recent of the candidates known at `at`: a tie goes to DGS3MO, then to a stored row over the hard-coded one. */
function pickKnown(at: Date, table: KnownObservation | null, dgs3mo: KnownObservation | null): KnownRiskFreeRate | null {
  const candidates: [KnownObservation, boolean][] = [];
  if (dgs3mo) candidates.push([dgs3mo, false]);
  if (table) candidates.push([table, false]);
  if (HARDCODED_OBSERVATION.knownFrom.getTime() <= at.getTime()) candidates.push([HARDCODED_OBSERVATION, true]);
  let best: [KnownObservation, boolean] | undefined;
  for (const c of candidates) if (!best || c[0].knownFrom.getTime() > best[0].knownFrom.getTime()) best = c;
  return best ? { ...best[0], rate: percentToDecimal(best[0].value), hardcoded: best[1] } : null;
}

/**
 * The live read answered by a stand-in observation (the last stored one, or
 * the hard-coded one) because no DGS3MO copy can serve it: always stale, for
 * `why`, with the observation's own date as asOf.
 */
function standInRate(
  observation: KnownObservation,
  standIn: RiskFreeFallback['standIn'],
  why: { reason: StaleReason; detail: string },
): { data: RiskFreeRate; meta: Meta & { staleReason: RiskFreeStaleReason; seriesId: RiskFreeSeriesId; fallback: RiskFreeFallback } } {
  return {
    data: {
      rate: percentToDecimal(observation.value),
      maturity: '3M',
      asOf: observation.date,
      source: 'fallback',
      seriesId: observation.seriesId,
      knownFrom: observation.knownFrom.toISOString(),
    },
    meta: {
      asOf: `${observation.date}T00:00:00.000Z`,
      source: observation.source,
      stale: true,
      staleReason: why.reason,
      seriesId: observation.seriesId,
      fallback: { standIn, reason: why.reason, detail: why.detail },
    },
  };
}

function staleReason(failure: ProviderFailure): StaleReason {
  return failure.kind === 'unreachable' ? 'provider_unreachable' : 'provider_error';
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
 * A percentage as a decimal, by moving the decimal point of the number as
 * written (4.37 → 0.0437) rather than dividing in binary floating point:
 * 1.1 / 100 is 0.011000000000000001, and so are 141 of the 500 two-decimal
 * rates from 1.00 to 5.99.
 */
export function percentToDecimal(percent: number): number {
  const text = String(percent);
  if (/e/i.test(text)) return percent / 100;
  const negative = text.startsWith('-');
  const [whole, fraction = ''] = (negative ? text.slice(1) : text).split('.');
  const padded = whole.padStart(3, '0');
  return Number(`${negative ? '-' : ''}${padded.slice(0, -2)}.${padded.slice(-2)}${fraction}`);
}
