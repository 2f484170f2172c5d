import { z } from 'zod';
import { errorCode } from '../core/errors.ts';
import { upstreamDuration } from '../observability/metrics.ts';
import type { MacroFrequency } from './schema.ts';

/**
 * The upstream macro provider: FRED's `series` and `series/observations`
 * endpoints (https://fred.stlouisfed.org/docs/api/fred/), in JSON.
 *
 * The API key travels in the query string, as FRED requires, so no URL is
 * ever logged or put in an error message; messages carry the endpoint name,
 * the HTTP status and FRED's own `error_message`, with the key removed should
 * FRED ever echo it.
 */

/** A series as fetched: its description and every observation FRED has a value for. */
export interface FetchedSeries {
  title: string;
  units: string;
  frequency: MacroFrequency;
  seasonalAdjustment: string | null;
  /** FRED's last_updated, as an instant. */
  providerUpdatedAt: string | null;
  /** Ascending by date; FRED's "." rows are left out. */
  observations: { date: string; value: number }[];
}

/** Why a fetch failed: no answer in time or no connection, or an answer that was an error or unreadable. */
export type FailureKind = 'unreachable' | 'error';

export class ProviderFailure extends Error {
  readonly kind: FailureKind;

  constructor(kind: FailureKind, message: string) {
    super(message);
    this.kind = kind;
    this.name = 'ProviderFailure';
  }
}

// FRED's frequency_short values. Weekly series report "W" whatever the day the
// week ends on (the long `frequency` says "Weekly, Ending Friday").
const FREQUENCIES: Record<string, MacroFrequency> = {
  D: 'daily',
  W: 'weekly',
  BW: 'biweekly',
  M: 'monthly',
  Q: 'quarterly',
  SA: 'semiannual',
  A: 'annual',
};

const SeriesResponseSchema = z.object({
  seriess: z
    .array(
      z.object({
        id: z.string(),
        title: z.string(),
        units: z.string(),
        frequency_short: z.string(),
        seasonal_adjustment_short: z.string().optional(),
        last_updated: z.string().optional(),
      }),
    )
    .length(1),
});

const ObservationsResponseSchema = z.object({
  count: z.number().int().nonnegative(),
  offset: z.number().int().nonnegative(),
  observations: z.array(z.object({ date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/), value: z.string() })),
});

const ErrorBodySchema = z.object({ error_code: z.number().optional(), error_message: z.string() });

/** FRED's maximum page of observations. */
const PAGE = 100_000;

// FRED writes a decimal number, or "." for a missing observation.
const DECIMAL = /^-?(\d+\.?\d*|\.\d+)$/;

/** "2024-05-01 07:52:05-05" (FRED's last_updated) as an ISO instant; null when FRED writes something else. */
export function fredTimestamp(text: string | undefined): string | null {
  const m = text?.match(/^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})([+-]\d{2})(\d{2})?$/);
  if (!m) return null;
  const at = new Date(`${m[1]}T${m[2]}${m[3]}:${m[4] ?? '00'}`);
  return Number.isNaN(at.getTime()) ? null : at.toISOString();
}

/** Observations with FRED's "." rows left out; any other value that is not a decimal number makes the answer unreadable. */
export function fredObservations(rows: { date: string; value: string }[]): { date: string; value: number }[] {
  const out: { date: string; value: number }[] = [];
  for (const row of rows) {
    if (row.value === '.') continue;
    if (!DECIMAL.test(row.value)) throw new ProviderFailure('error', `observations: unreadable value ${JSON.stringify(row.value.slice(0, 20))} on ${row.date}`);
    out.push({ date: row.date, value: Number(row.value) });
  }
  return out;
}

export interface FredClientOptions {
  baseUrl: string;
  apiKey: string;
  /** One deadline for the whole fetch: both endpoints and every page. */
  timeoutMs: number;
}

export class FredClient {
  private readonly options: FredClientOptions;

  constructor(options: FredClientOptions) {
    this.options = options;
  }

  /** The series' description and all its observations, or a ProviderFailure. */
  async fetchSeries(seriesId: string): Promise<FetchedSeries> {
    // The first failure cancels the other call rather than leaving it to run out the deadline.
    const failed = new AbortController();
    const signal = AbortSignal.any([AbortSignal.timeout(this.options.timeoutMs), failed.signal]);
    const settle = <T>(p: Promise<T>) => p.catch((err: unknown) => (failed.abort(err), Promise.reject(err)));
    const [series, observations] = await Promise.all([settle(this.series(seriesId, signal)), settle(this.observations(seriesId, signal))]);
    return { ...series, observations };
  }

  private async series(seriesId: string, signal: AbortSignal) {
    const body = SeriesResponseSchema.safeParse(await this.get('series', { series_id: seriesId }, signal));
    if (!body.success || body.data.seriess[0].id !== seriesId)
      throw new ProviderFailure('error', 'series: the answer is not a description of the series asked for');
    const s = body.data.seriess[0];
    const frequency = FREQUENCIES[s.frequency_short];
    if (!frequency) throw new ProviderFailure('error', `series: unknown frequency ${JSON.stringify(s.frequency_short.slice(0, 10))}`);
    return {
      title: s.title,
      units: s.units,
      frequency,
      seasonalAdjustment: s.seasonal_adjustment_short ?? null,
      providerUpdatedAt: fredTimestamp(s.last_updated),
    };
  }

  private async observations(seriesId: string, signal: AbortSignal) {
    const rows: { date: string; value: string }[] = [];
    for (;;) {
      const page = ObservationsResponseSchema.safeParse(
        await this.get('series/observations', { series_id: seriesId, limit: String(PAGE), offset: String(rows.length) }, signal),
      );
      if (!page.success || page.data.offset !== rows.length) throw new ProviderFailure('error', 'observations: the answer is not a page of observations');
      rows.push(...page.data.observations);
      if (rows.length >= page.data.count || page.data.observations.length === 0) break;
    }
    for (let i = 1; i < rows.length; i++) {
      if (rows[i].date <= rows[i - 1].date) throw new ProviderFailure('error', 'observations: dates are not ascending');
    }
    return fredObservations(rows);
  }

  /** One GET, its JSON body, or a ProviderFailure that says what went wrong without the URL. */
  private async get(endpoint: string, params: Record<string, string>, signal: AbortSignal): Promise<unknown> {
    const url = new URL(`${this.options.baseUrl.replace(/\/+$/, '')}/${endpoint}`);
    for (const [k, v] of Object.entries({ ...params, api_key: this.options.apiKey, file_type: 'json' })) url.searchParams.set(k, v);
    const end = upstreamDuration.startTimer({ provider: 'fred', endpoint });
    let outcome = 'unreachable';
    try {
      let res: Response;
      try {
        res = await fetch(url, { signal, headers: { accept: 'application/json' } });
      } catch (err) {
        if (signal.reason instanceof ProviderFailure) throw signal.reason;
        const timedOut = signal.aborted;
        throw new ProviderFailure(
          'unreachable',
          `${endpoint}: ${timedOut ? `no answer within ${this.options.timeoutMs} ms` : `no connection (${causeCode(err)})`}`,
        );
      }
      let text: string;
      try {
        text = await res.text();
      } catch {
        throw new ProviderFailure('unreachable', `${endpoint}: the answer was cut off${signal.aborted ? ` at the ${this.options.timeoutMs} ms deadline` : ''}`);
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      outcome = res.ok ? 'ok' : `http_${res.status}`;
      if (!res.ok) {
        const fredError = ErrorBodySchema.safeParse(body);
        const said = fredError.success ? `: ${this.withoutKey(fredError.data.error_message).slice(0, 300)}` : '';
        throw new ProviderFailure('error', `${endpoint}: HTTP ${res.status}${said}`);
      }
      if (body === undefined) {
        outcome = 'unreadable';
        throw new ProviderFailure('error', `${endpoint}: the answer is not JSON`);
      }
      return body;
    } finally {
      end({ outcome });
    }
  }

  private withoutKey(text: string): string {
    return text.split(this.options.apiKey).join('[redacted]');
  }
}

function causeCode(err: unknown): string {
  if (!(err instanceof Error)) return 'unknown';
  return errorCode(err.cause) ?? err.name;
}
