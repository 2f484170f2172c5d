import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { countedStagedUpsert, lockUploads } from '../ingest/repository.ts';
import type { FxRate } from './schema.ts';

type Fragment = postgres.Fragment;

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

/** Rows of the pair in either direction, base/quote and quote/base, by the columns of `alias`. */
const eitherDirection = (sql: ISql, alias: string, base: string, quote: string) =>
  sql`(${sql(alias)}.base, ${sql(alias)}.quote) in ((${base}, ${quote}), (${quote}, ${base}))`;

/**
 * The rates of the day in either direction, base/quote and quote/base: none,
 * one or two. Without `knownAt`, the stored rows (each day's latest
 * revision), read from fx_rates alone. With it, each as known at that instant
 * (sql/024_fx_rate_revisions.sql): the stored row when its asOf is at or
 * before it, else the latest revision it replaced that was known by then, else
 * nothing for that direction.
 */
export async function ratesOnDate(sql: ISql, base: string, quote: string, date: string, knownAt?: Date): Promise<FxRate[]> {
  if (!knownAt) {
    const rows = await timed(
      'fx_rates_on_date',
      sql<FxRateRow[]>`
        select base, quote, rate_date, rate, source, as_of
        from fx_rates f
        where ${eitherDirection(sql, 'f', base, quote)}
          and rate_date = ${date}::date
      `,
    );
    return rows.map(toFxRate);
  }
  // The two branches of the lateral exclude each other (f.as_of <= T, f.as_of > T): one row per direction at most.
  const rows = await timed(
    'fx_rates_on_date_known_at',
    sql<FxRateRow[]>`
      select f.base, f.quote, f.rate_date, k.rate, k.source, k.as_of
      from fx_rates f
      cross join lateral (
        select f.rate, f.source, f.as_of
        where f.as_of <= ${knownAt}
        union all
        (
          select r.rate, r.source, r.as_of
          from fx_rate_revisions r
          where r.base = f.base
            and r.quote = f.quote
            and r.rate_date = f.rate_date
            and f.as_of > ${knownAt}
            and r.as_of <= ${knownAt}
          order by r.as_of desc, r.replaced_seq desc
          limit 1
        )
      ) k
      where ${eitherDirection(sql, 'f', base, quote)}
        and f.rate_date = ${date}::date
    `,
  );
  return rows.map(toFxRate);
}

/**
 * When a rate of the day, in either direction, first became known: the
 * earliest asOf among the stored rows and the revisions they replaced; null
 * when none is stored.
 */
export async function firstKnownOnDate(sql: ISql, base: string, quote: string, date: string): Promise<string | null> {
  const [row] = await timed(
    'fx_first_known_on_date',
    sql<{ first_known: Date | null }[]>`
      select min(k.as_of) as first_known
      from (
        select f.as_of from fx_rates f where ${eitherDirection(sql, 'f', base, quote)} and f.rate_date = ${date}::date
        union all
        select r.as_of from fx_rate_revisions r where ${eitherDirection(sql, 'r', base, quote)} and r.rate_date = ${date}::date
      ) k
    `,
  );
  return row.first_known?.toISOString() ?? null;
}

/**
 * The pair's nearest day in one direction among the days that meet `bound`:
 * the latest when `latest`, else the earliest. Without `knownAt`, a day with a
 * stored rate: one descent of the primary key (base, quote, rate_date). With
 * it, a day with a rate known by then: its stored row was, or a revision it
 * replaced was (the nearer of the two tables' days).
 */
function nearestDay(sql: ISql, base: string, quote: string, bound: Fragment, latest: boolean, knownAt?: Date): Fragment {
  const order = latest ? sql`desc` : sql`asc`;
  const known = knownAt ? sql`and as_of <= ${knownAt}` : sql``;
  const from = (table: 'fx_rates' | 'fx_rate_revisions') => sql`
    (select rate_date from ${sql(table)} where base = ${base} and quote = ${quote} and ${bound} ${known} order by rate_date ${order} limit 1)
  `;
  if (!knownAt) return from('fx_rates');
  // greatest and least skip nulls: a table with no such day drops out.
  return latest ? sql`greatest(${from('fx_rates')}, ${from('fx_rate_revisions')})` : sql`least(${from('fx_rates')}, ${from('fx_rate_revisions')})`;
}

/**
 * The latest day on or before `day` with a rate for the pair in either
 * direction, stored (or, with `knownAt`, known by then); null when none.
 */
export async function latestRateDate(sql: ISql, base: string, quote: string, day: string, knownAt?: Date): Promise<string | null> {
  const bound = sql`rate_date <= ${day}::date`;
  const [row] = await timed(
    knownAt ? 'fx_latest_rate_date_known_at' : 'fx_latest_rate_date',
    sql<{ latest: string | null }[]>`
      select greatest(${nearestDay(sql, base, quote, bound, true, knownAt)}, ${nearestDay(sql, quote, base, bound, true, knownAt)})::text as latest
    `,
  );
  return row.latest;
}

/**
 * The nearest days before and after `date` with a rate for the pair in either
 * direction, stored (or, with `knownAt`, known by then); null where there is
 * none.
 */
export async function nearestRateDates(
  sql: ISql,
  base: string,
  quote: string,
  date: string,
  knownAt?: Date,
): Promise<{ before: string | null; after: string | null }> {
  const before = sql`rate_date < ${date}::date`;
  const after = sql`rate_date > ${date}::date`;
  // greatest and least skip nulls: a direction with no day on that side drops out.
  const [row] = await timed(
    knownAt ? 'fx_nearest_rate_dates_known_at' : 'fx_nearest_rate_dates',
    sql<{ before: string | null; after: string | null }[]>`
      select
        greatest(${nearestDay(sql, base, quote, before, true, knownAt)}, ${nearestDay(sql, quote, base, before, true, knownAt)}) as before,
        least(${nearestDay(sql, base, quote, after, false, knownAt)}, ${nearestDay(sql, quote, base, after, false, knownAt)}) as after
    `,
  );
  return row;
}

// Ingest: statements over the `ingest_staging` table of an FX upload
// (fx/ingest.ts), inside its transaction. Its as_of is each row's knowledge
// time: the row's asOf, else the upload's start (as_of_stated false).

const FX_INGEST_LOCK = 7_311_020_024;

/**
 * Serialises FX uploads until the transaction ends: an upload checks its
 * knowledge times against the stored rows and keeps the rows it replaces, and
 * a concurrent upload's correction of the same day, committed in between,
 * would otherwise be replaced unchecked and its revision lost.
 */
export const lockFxUploads = (tx: ISql) => lockUploads(tx, FX_INGEST_LOCK);

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

export interface StagedKnowledge {
  row_index: number;
  rate_date: string;
  as_of: Date;
  as_of_stated: boolean;
}

/** The first staged row known before its day begins (00:00 UTC of rate_date), if any. */
export function stagedKnownBeforeTheirDay(tx: ISql) {
  return tx<StagedKnowledge[]>`
    select row_index, rate_date, as_of, as_of_stated
    from ingest_staging
    where as_of < rate_date::timestamp at time zone 'UTC'
    order by row_index
    limit 1
  `;
}

/** A staged row that changes the stored rate of its day: a different rate or source (a correction). */
const replacesStored = (tx: ISql) => tx`(f.rate, f.source) is distinct from (s.rate, s.source)`;

/** The first staged correction known before the stored revision it would replace, with that revision's asOf, if any. */
export function stagedKnownBeforeStored(tx: ISql) {
  return tx<(StagedKnowledge & { stored_as_of: Date })[]>`
    select s.row_index, s.rate_date, s.as_of, s.as_of_stated, f.as_of as stored_as_of
    from ingest_staging s
    join fx_rates f on f.base = s.base and f.quote = s.quote and f.rate_date = s.rate_date
    where ${replacesStored(tx)}
      and s.as_of < f.as_of
    order by s.row_index
    limit 1
  `;
}

/** Keeps each stored rate a staged correction is about to replace, with its asOf, in fx_rate_revisions. */
export async function keepReplacedRates(tx: ISql): Promise<void> {
  await tx`
    insert into fx_rate_revisions (base, quote, rate_date, rate, source, as_of)
    select f.base, f.quote, f.rate_date, f.rate, f.source, f.as_of
    from ingest_staging s
    join fx_rates f on f.base = s.base and f.quote = s.quote and f.rate_date = s.rate_date
    where ${replacesStored(tx)}
    order by s.row_index
  `;
}

/**
 * Upserts the staged rates. A row equal in rate and source to the stored one
 * changes nothing, its asOf included; a different rate or source is a
 * correction: the row takes the new value and the new asOf (the replaced one
 * is kept first, keepReplacedRates).
 */
export function upsertStagedRates(tx: ISql) {
  return countedStagedUpsert(
    tx,
    tx`
      insert into fx_rates as f (base, quote, rate_date, rate, source, as_of)
      select base, quote, rate_date, rate, source, as_of
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
