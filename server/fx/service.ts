import type { Reads } from '../db/database.ts';
import * as repo from './repository.ts';
import type { FxDerivation, FxRate } from './schema.ts';
import { AppError } from '../core/errors.ts';
import { freshness, previousBusinessDay, utcDay } from '../core/freshness.ts';
import type { PointInTime } from '../core/time.ts';

/**
 * The rate of base/quote on a day: the stored row, or else the stored
 * quote/base row inverted (1 / rate, the float64 reciprocal, unrounded), which
 * meta.derivation reports. A stored pair always wins over its inverse. No
 * cross rate through a third currency, and a day with no stored row in either
 * direction is 404: never interpolated, never carried forward.
 *
 * With `asOf`, every one of those rows is the revision known at its instant
 * (repository.ts, ratesOnDate), and the inverse rule applies to what was known
 * then: a pair whose own rate was not yet known is served from its inverse if
 * that was. A day whose rates were all first known later is 404, saying so.
 */
export async function getFxRate(db: Reads, base: string, quote: string, date: string, asOf?: PointInTime) {
  const knownAt = asOf?.instant;
  const readAt = knownAt?.getTime() ?? Date.now();
  const found = await db.run(async (sql): Promise<Found> => {
    const rates = await repo.ratesOnDate(sql, base, quote, date, knownAt);
    if (rates.length) return { rates, latest: await repo.latestRateDate(sql, base, quote, utcDay(readAt), knownAt) };
    const firstKnown = asOf ? await repo.firstKnownOnDate(sql, base, quote, date) : null;
    if (asOf && firstKnown) return { asOf, firstKnown };
    return { nearest: await repo.nearestRateDates(sql, base, quote, date, knownAt) };
  });
  if (!('latest' in found)) {
    throw 'firstKnown' in found ? rateNotYetKnown(base, quote, date, found.asOf, found.firstKnown) : rateNotStored(base, quote, date, found.nearest, asOf);
  }
  const { rates, latest } = found;
  const direct = rates.find((r) => r.base === base);
  const stored = direct ?? rates[0];
  const data: FxRate = direct ?? { base, quote, rateDate: date, rate: 1 / stored.rate, asOf: stored.asOf, source: stored.source };
  const derivation: FxDerivation | null = direct ? null : { method: 'inverse', storedPair: `${stored.base}/${stored.quote}`, storedRate: stored.rate };
  return { data, meta: { asOf: stored.asOf, source: stored.source, ...fxFreshness(latest, readAt), derivation } };
}

/** What the read found: the day's rates (at least one) and the pair's latest rate date, or why there are none (first known after asOf, or none stored). */
type Found =
  { rates: FxRate[]; latest: string | null } | { asOf: PointInTime; firstKnown: string } | { nearest: { before: string | null; after: string | null } };

/**
 * Fresh while the pair (either direction) has a rate, known at the read's
 * instant, dated on or after the business day before that instant's day: a
 * daily feed that has published nothing since is behind, whatever date was
 * asked for.
 */
export function fxFreshness(latestRateDate: string | null, readAt: number) {
  return freshness<'rate_behind'>((latestRateDate === null || latestRateDate < previousBusinessDay(readAt)) && 'rate_behind');
}

function rateNotStored(base: string, quote: string, date: string, nearest: { before: string | null; after: string | null }, asOf?: PointInTime): AppError {
  const pair = `${base}/${quote}`;
  const which = asOf ? `date with a rate known at asOf ${asOf.input}` : 'stored date';
  const near = [
    ...(nearest.before ? [`nearest ${which} before: ${nearest.before}`] : []),
    ...(nearest.after ? [`nearest ${which} after: ${nearest.after}`] : []),
  ];
  const none = asOf
    ? `no ${pair} or ${quote}/${base} rate of any date was known at asOf ${asOf.input}`
    : `no ${pair} or ${quote}/${base} rate is stored for any date`;
  return new AppError(
    'not_found',
    `no ${pair} rate is stored for ${date}, in either direction; rates are never interpolated or carried forward from another day`,
    { date: near.length ? near : [none] },
  );
}

function rateNotYetKnown(base: string, quote: string, date: string, asOf: PointInTime, firstKnown: string): AppError {
  const pair = `${base}/${quote}`;
  return new AppError(
    'not_found',
    `no ${pair} rate for ${date} was known at asOf ${asOf.input}, in either direction: one is stored, first known at ${firstKnown}`,
    { asOf: [`a rate for ${date} is stored but was not yet known at ${asOf.instant.toISOString()}: it was first known at ${firstKnown}`] },
  );
}
