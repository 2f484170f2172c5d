import type { Database } from '../db/database.ts';
import * as repo from './repository.ts';
import type { FxDerivation, FxRate } from './schema.ts';
import { AppError } from '../core/errors.ts';

/**
 * The rate of base/quote on a day: the stored row, or else the stored
 * quote/base row inverted (1 / rate, the float64 reciprocal, unrounded), which
 * meta.derivation reports. A stored pair always wins over its inverse. No
 * cross rate through a third currency, and a day with no stored row in either
 * direction is 404: never interpolated, never carried forward.
 */
export async function getFxRate(db: Database, base: string, quote: string, date: string) {
  const { rates, nearest } = await db.run(async (sql) => {
    const rates = await repo.ratesOnDate(sql, base, quote, date);
    return { rates, nearest: rates.length ? null : await repo.nearestRateDates(sql, base, quote, date) };
  });
  const direct = rates.find((r) => r.base === base);
  const stored = direct ?? rates[0];
  if (!stored) throw rateNotStored(base, quote, date, nearest!);
  const data: FxRate = direct ?? { base, quote, rateDate: date, rate: 1 / stored.rate, asOf: stored.asOf, source: stored.source };
  const derivation: FxDerivation | null = direct ? null : { method: 'inverse', storedPair: `${stored.base}/${stored.quote}`, storedRate: stored.rate };
  return { data, meta: { asOf: stored.asOf, source: stored.source, stale: false, derivation } };
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
