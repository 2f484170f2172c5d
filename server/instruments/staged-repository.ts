import type { ISql } from '../db/sql.ts';
import { countedStagedUpsert, stagedUpsert } from '../ingest/repository.ts';
import { effectiveSymbol, REFERENCE_SOURCE } from './repository.ts';

// Statements over the `ingest_staging` table of an instrument upload
// (instruments/ingest.ts), inside its transaction. The reads of stored
// instruments are in repository.ts.

/** The first staged row without symbols whose id is not a stored instrument, if any. */
export function stagedNewWithoutSymbols(tx: ISql) {
  return tx<{ row_index: number }[]>`
    select s.row_index
    from ingest_staging s
    where s.symbols is null
      and not exists (select 1 from instruments i where i.id = s.id)
    order by s.row_index
    limit 1
  `;
}

/** A symbol a new staged instrument claims that another holds: a stored instrument (holder_id) or an earlier or identified row of the batch (holder_row). */
export interface SymbolClash {
  row_index: number;
  symbol: string;
  holder_id: string | null;
  holder_row: number | null;
}

/**
 * The first clash of a staged row without an id: one of its symbols held,
 * case aside, on an overlapping day by another instrument of the same asset
 * class and exchange, stored (and kept as it is by the batch) or earlier in
 * the batch.
 */
export function stagedSymbolClashes(tx: ISql) {
  return tx<SymbolClash[]>`
    with claims as (
      select s.row_index, s.id, s.asset_class, s.exchange, p.symbol,
        daterange(coalesce(p."validFrom", '-infinity'), p."validTo", '[]') as days
      from ingest_staging s
      cross join lateral jsonb_to_recordset(s.symbols) as p (symbol text, "validFrom" date, "validTo" date)
    )
    select * from (
      select c.row_index, c.symbol, t.instrument_id as holder_id, null::integer as holder_row
      from claims c
      join instrument_symbols t on upper(t.symbol) = upper(c.symbol)
      join instruments i on i.id = t.instrument_id
      left join ingest_staging b on b.id = t.instrument_id
      where c.id is null
        and daterange(t.valid_from, t.valid_to, '[]') && c.days
        and (b.id is null or b.symbols is null)
        and coalesce(b.asset_class, i.asset_class) = c.asset_class
        and (case when b.id is null then i.exchange else b.exchange end) is not distinct from c.exchange
      union all
      select c.row_index, c.symbol, null, o.row_index
      from claims c
      join claims o on upper(o.symbol) = upper(c.symbol)
      where c.id is null
        and o.days && c.days
        and o.asset_class = c.asset_class
        and o.exchange is not distinct from c.exchange
        and o.row_index <> c.row_index
        and (o.id is not null or o.row_index < c.row_index)
    ) clash
    order by row_index, holder_row nulls first
    limit 1
  `;
}

/** Gives each staged row without an id a new one. */
export async function assignStagedIds(tx: ISql): Promise<void> {
  await tx`update ingest_staging set id = gen_random_uuid() where id is null`;
}

/** Upserts the staged instruments on id; a row equal to the stored one is left as it is (its updated_at too). */
export function upsertStagedInstruments(tx: ISql): Promise<{ rows: number; inserted: number; updated: number }> {
  return countedStagedUpsert(
    tx,
    stagedUpsert(tx, {
      table: 'instruments',
      key: ['id'],
      updated: ['asset_class', 'display_name', 'exchange', 'region', 'isin', 'cusip', 'distribution_policy', 'quote_currency', 'quote_unit', 'is_active'],
      setsUpdatedAt: true,
    }),
  );
}

/** Replaces the symbol history of each staged row that gives one; a row without symbols keeps its stored history. */
export async function replaceStagedSymbols(tx: ISql): Promise<void> {
  await tx`delete from instrument_symbols where instrument_id in (select id from ingest_staging where symbols is not null)`;
  await tx`
    insert into instrument_symbols (instrument_id, symbol, valid_from, valid_to)
    select s.id, p.symbol, coalesce(p."validFrom"::date, '-infinity'::date), p."validTo"::date
    from ingest_staging s
    cross join lateral jsonb_to_recordset(s.symbols) as p (symbol text, "validFrom" text, "validTo" text)
  `;
}

/** Replaces the broker codes of every staged instrument. */
export async function replaceStagedBrokerCodes(tx: ISql): Promise<void> {
  // A code posted again without a source keeps the one it has; a new code without one is the instrument master's.
  await tx`
    insert into instrument_broker_codes (instrument_id, broker, code, source)
    select s.id, b.key, b.value, coalesce(s.broker_codes_source, c.source, ${REFERENCE_SOURCE})
    from ingest_staging s
    cross join lateral jsonb_each_text(s.broker_codes) as b
    left join instrument_broker_codes c on c.instrument_id = s.id and c.broker = b.key and c.code = b.value
    on conflict (instrument_id, broker) do update set code = excluded.code, source = excluded.source
  `;
  await tx`
    delete from instrument_broker_codes c
    using ingest_staging s
    where c.instrument_id = s.id and not (s.broker_codes ? c.broker)
  `;
}

/** The first staged row whose currentSymbol differs from the symbol its stored history gives on `day`, if any. */
export function stagedCurrentSymbolContradictions(tx: ISql, day: string) {
  return tx<{ row_index: number; symbol: string | null }[]>`
    select s.row_index, e.symbol
    from ingest_staging s
    join instruments i on i.id = s.id
    ${effectiveSymbol(tx, day)}
    where s.current_symbol is not null
      and s.current_symbol is distinct from e.symbol
    order by s.row_index
    limit 1
  `;
}

/** The ids of the first `limit` staged rows, in upload order. */
export async function stagedIds(tx: ISql, limit: number): Promise<string[]> {
  const rows = await tx<{ id: string }[]>`select id from ingest_staging order by row_index limit ${limit}`;
  return rows.map((r) => r.id);
}
