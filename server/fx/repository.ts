import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { countedStagedUpsert } from '../ingest/repository.ts';
import type { FxRate } from './schema.ts';

interface FxRateRow {
  base: string;
  quote: string;
  rate_date: string;
  rate: number;
  source: string;
  as_of: Date;
}

function toFxRate(r: FxRateRow): FxRate {
  return { base: r.base, quote: r.quote, rateDate: r.rate_date, rate: r.rate, asOf: r.as_of.toISOString(), source: r.source };
}

/** The rows stored for the day in either direction, base/quote and quote/base: none, one or two. */
export async function ratesOnDate(sql: ISql, base: string, quote: string, date: string): Promise<FxRate[]> {
  const rows = await timed(
    'fx_rates_on_date',
    sql<FxRateRow[]>`
      select base, quote, rate_date, rate, source, as_of
      from fx_rates
      where (base, quote) in ((${base}, ${quote}), (${quote}, ${base}))
        and rate_date = ${date}::date
    `,
  );
  return rows.map(toFxRate);
}

/** The latest day on or before `day` with a stored rate for the pair in either direction; null when none. */
export async function latestRateDate(sql: ISql, base: string, quote: string, day: string): Promise<string | null> {
  const latest = (b: string, q: string) => sql`
    (select rate_date from fx_rates where base = ${b} and quote = ${q} and rate_date <= ${day}::date order by rate_date desc limit 1)
  `;
  const [row] = await timed(
    'fx_latest_rate_date',
    sql<{ latest: string | null }[]>`select greatest(${latest(base, quote)}, ${latest(quote, base)})::text as latest`,
  );
  return row.latest;
}

/**
 * The nearest stored days before and after `date` for the pair in either
 * direction (null where there is none). Each of the four subqueries is one
 * descent of the primary key (base, quote, rate_date).
 */
export async function nearestRateDates(sql: ISql, base: string, quote: string, date: string): Promise<{ before: string | null; after: string | null }> {
  const before = (b: string, q: string) => sql`
    (select rate_date from fx_rates where base = ${b} and quote = ${q} and rate_date < ${date}::date order by rate_date desc limit 1)
  `;
  const after = (b: string, q: string) => sql`
    (select rate_date from fx_rates where base = ${b} and quote = ${q} and rate_date > ${date}::date order by rate_date limit 1)
  `;
  // greatest and least skip nulls: a direction with no day on that side drops out.
  const [row] = await timed(
    'fx_nearest_rate_dates',
    sql<{ before: string | null; after: string | null }[]>`
      select
        greatest(${before(base, quote)}, ${before(quote, base)}) as before,
        least(${after(base, quote)}, ${after(quote, base)}) as after
    `,
  );
  return row;
}

// Ingest: statements over the `ingest_staging` table of an FX upload
// (fx/ingest.ts), inside its transaction.

/** Staged rows that repeat an earlier row's (base, quote, rateDate), first first. */
export function repeatedStagedRates(tx: ISql) {
  return tx<{ row_index: number }[]>`
    select row_index
    from (select row_index, row_number() over (partition by base, quote, rate_date order by row_index) as k from ingest_staging) d
    where k > 1
    order by row_index
    limit 1
  `;
}

/**
 * Upserts the staged rates. A row equal in rate and source to the stored one
 * changes nothing (its asOf is kept); a different rate or source is a
 * correction: the row takes the new value and the new asOf. A row without an
 * asOf takes the transaction's time, when the service received it.
 */
export function upsertStagedRates(tx: ISql) {
  return countedStagedUpsert(
    tx,
    tx`
      insert into fx_rates as f (base, quote, rate_date, rate, source, as_of)
      select base, quote, rate_date, rate, source, coalesce(as_of, now())
      from ingest_staging
      on conflict (base, quote, rate_date) do update set
        rate = excluded.rate,
        source = excluded.source,
        as_of = excluded.as_of
      where (f.rate, f.source) is distinct from (excluded.rate, excluded.source)
      returning (xmax = 0) as inserted
    `,
  );
}
