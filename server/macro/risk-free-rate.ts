import { AppError } from '../core/errors.ts';
import type { Meta } from '../core/meta.ts';
import type { PointInTime } from '../core/time.ts';
import * as repo from './repository.ts';
import { dailyKnownFrom, latestKnownAt, monthlyKnownFrom, newerObservationDue, type KnownObservation, type RiskFreeSeriesId } from './risk-free-history.ts';
import type { MacroSeriesId, RiskFreeFallback, RiskFreeRate, RiskFreeStaleReason, StaleReason } from './schema.ts';
import { currentCopy, type CopyDeps } from './series-copy.ts';

/** The series the live risk-free rate reads: the 3-month Treasury constant-maturity yield, in percent. */
const LIVE_SERIES = 'DGS3MO' as const satisfies MacroSeriesId;

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

type RiskFreeMeta<Reason = RiskFreeStaleReason | null, Fallback = RiskFreeFallback | null> = Meta & {
  staleReason: Reason;
  seriesId: RiskFreeSeriesId;
  fallback: Fallback;
};

/**
 * The current annualised risk-free rate as a decimal (GET /v1/rates/risk-free
 * without asOf): the latest DGS3MO observation. Source `fred` when it comes
 * from a fresh copy; otherwise a stand-in with source `fallback`: the last
 * stored observation, or the hard-coded rate when none is stored. Model
 * inputs never read this: they take the rate known at their own instant
 * (riskFreeRatesKnownAt).
 */
export async function riskFreeRate(deps: CopyDeps): Promise<{ data: RiskFreeRate; meta: RiskFreeMeta }> {
  const copy = await currentCopy(deps, LIVE_SERIES);
  const stored = copy.kind === 'stored' ? await deps.db.run((sql) => repo.latestOfCopy(sql, LIVE_SERIES)) : undefined;
  if (stored?.latest && copy.kind === 'stored') {
    const rate = percentToDecimal(stored.latest.value);
    const meta = { asOf: stored.series.fetchedAt.toISOString(), source: stored.series.source, seriesId: LIVE_SERIES };
    const knownFrom = dailyKnownFrom(stored.latest.date);
    const observation = { rate, maturity: '3M' as const, asOf: stored.latest.date, seriesId: LIVE_SERIES, knownFrom: knownFrom.toISOString() };
    // A fresh copy can still hold an old observation (FRED behind, a holiday run): judged as the asOf reads judge it.
    const due = newerObservationDue(LIVE_SERIES, knownFrom, new Date());
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
  const why = copy.kind === 'none' ? copy : { reason: 'provider_error' as const, detail: `the stored ${LIVE_SERIES} copy has no observations` };
  // No DGS3MO copy to stand in: the latest observation of the stored history (TB3MS), before the hard-coded one.
  const [history] = (await riskFreeRatesKnownAt(deps, [new Date()])).values();
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
export async function riskFreeRatesKnownAt(deps: CopyDeps, instants: Date[]): Promise<Map<number, KnownRiskFreeRate | null>> {
  const distinct = [...new Map(instants.map((i) => [i.getTime(), i])).values()];
  if (!distinct.length) return new Map();
  if (deps.refresh) await currentCopy(deps, LIVE_SERIES);
  const latest = await deps.db.run((sql) => latestKnownAt(sql, distinct));
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
export async function riskFreeRateAt(deps: CopyDeps, asOf: PointInTime): Promise<{ data: RiskFreeRate; meta: RiskFreeMeta }> {
  const known = (await riskFreeRatesKnownAt(deps, [asOf.instant])).get(asOf.instant.getTime());
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
): { data: RiskFreeRate; meta: RiskFreeMeta<RiskFreeStaleReason, RiskFreeFallback> } {
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
