import type { Reads } from '../db/database.ts';
import * as repo from './repository.ts';
import type { FxDerivation, FxRate } from './schema.ts';
import { AppError } from '../core/errors.ts';
import { freshness, previousBusinessDay, utcDay } from '../core/freshness.ts';

/**
 * The rate of base/quote on a day: the stored row, or else the stored
 * quote/base row inverted (1 / rate, the float64 reciprocal, unrounded), which
 * meta.derivation reports. A stored pair always wins over its inverse. No
 * cross rate through a third currency, and a day with no stored row in either
 * direction is 404: never interpolated, never carried forward.
 */
export async function getFxRate(db: Reads, base: string, quote: string, date: string) {
  const readAt = Date.now();
  const { rates, nearest, latest } = await db.run(async (sql) => {
    const rates = await repo.ratesOnDate(sql, base, quote, date);
    if (!rates.length) return { rates, nearest: await repo.nearestRateDates(sql, base, quote, date), latest: null };
    return { rates, nearest: null, latest: await repo.latestRateDate(sql, base, quote, utcDay(readAt)) };
  });
  const direct = rates.find((r) => r.base === base);
  const stored = direct ?? rates[0];
  if (!stored) throw rateNotStored(base, quote, date, nearest!);
  const data: FxRate = direct ?? { base, quote, rateDate: date, rate: 1 / stored.rate, asOf: stored.asOf, source: stored.source };
  const derivation: FxDerivation | null = direct ? null : { method: 'inverse', storedPair: `${stored.base}/${stored.quote}`, storedRate: stored.rate };
  return { data, meta: { asOf: stored.asOf, source: stored.source, ...fxFreshness(latest, readAt), derivation } };
}

/**
 * Fresh while the pair (either direction) has a stored rate dated on or
 * after the business day before the day of the read: a daily feed that has
 * published nothing since is behind, whatever date was asked for.
 */
export function fxFreshness(latestRateDate: string | null, readAt: number) {
  return freshness<'rate_behind'>((latestRateDate === null || latestRateDate < previousBusinessDay(readAt)) && 'rate_behind');
}

function rateNotStored(base: string, quote: string, date: string, nearest: { before: string | null; after: string | null }): AppError {
  const pair = `${base}/${quote}`;
  const near = [
    ...(nearest.before ? [`nearest stored date before: ${nearest.before}`] : []),
    ...(nearest.after ? [`nearest stored date after: ${nearest.after}`] : []),
  ];
  return new AppError(
    'not_found',
    `no ${pair} rate is stored for ${date}, in either direction; rates are never interpolated or carried forward from another day`,
    { date: near.length ? near : [`no ${pair} or ${quote}/${base} rate is stored for any date`] },
  );
}
