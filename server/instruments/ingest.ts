import { z } from 'zod';
import type { Sql } from '../db/sql.ts';
import { ingestCounts, type IngestKind } from '../ingest/kind.ts';
import { rejectFirstRow } from '../ingest/service.ts';
import { effectiveSymbol } from './repository.ts';
import { InstrumentIngestSchema, type InstrumentIngestRow } from './schema.ts';
import { dayOf } from './service.ts';

/** rejectFirstRow for a check whose message names what it found in the row. */
async function rejectFound<T extends { row_index: number }>(check: PromiseLike<readonly T[]>, field: string, message: (row: T) => string) {
  const [row] = await check;
  if (row) await rejectFirstRow(Promise.resolve([row]), field, message(row));
}

/**
 * An instrument has no natural key that stays fixed: tickers are renamed and
 * recycled, names change, ISINs are absent for crypto, FX and indices and
 * shared by listings on several exchanges. An id derived from such fields
 * would change with a correction (a duplicate) or coincide for two
 * instruments (a merge). So the id is the identity, and a row without one is
 * a new instrument, refused when its natural key is taken: one of its symbols
 * held, case aside, on an overlapping day by another instrument of the same
 * asset class and exchange, stored (and kept as it is by the batch) or
 * earlier in the batch. The message names the holder's id.
 */
async function rejectTakenSymbols(tx: Sql) {
  await rejectFound(
    tx<{ row_index: number; symbol: string; holder_id: string | null; holder_row: number | null }[]>`
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
    `,
    'id',
    (r) =>
      r.holder_row === null
        ? `required: ${r.symbol} is held on overlapping days by the stored instrument ${r.holder_id} of the same asset class and exchange; include its id to update it`
        : `required: ${r.symbol} is held on overlapping days by row ${r.holder_row} of this batch (same asset class and exchange); one row per instrument`,
  );
}

/**
 * Instruments upsert on id; their symbol history (when the row gives one) and
 * broker codes are replaced by the batch's (the batch states the whole
 * history). A row as GET returns it is accepted: its currentSymbol is checked
 * against the history the batch leaves, and its vendorCode by the row schema.
 */
export const instrumentIngest: IngestKind<InstrumentIngestRow> = {
  label: 'instruments',
  rowSchema: InstrumentIngestSchema,
  resultSchema: z.strictObject({ ...ingestCounts, ids: z.array(z.string()).describe('the id of each row, in upload order (the first 10,000)') }),
  stagingColumns: [
    ['id', 'uuid'],
    ['asset_class', 'text'],
    ['display_name', 'text'],
    ['exchange', 'text'],
    ['region', 'text'],
    ['isin', 'text'],
    ['cusip', 'text'],
    ['distribution_policy', 'text'],
    ['quote_currency', 'text'],
    ['quote_unit', 'text'],
    ['is_active', 'bool'],
    ['broker_codes', 'jsonb'],
    ['symbols', 'jsonb'],
    ['current_symbol', 'text'],
  ],
  toStagingValues: (r) => [
    r.id?.toLowerCase() ?? null,
    r.assetClass,
    r.displayName,
    r.exchange ?? null,
    r.region ?? null,
    r.isin ?? null,
    r.cusip ?? null,
    r.distributionPolicy ?? null,
    r.quoteCurrency ?? null,
    r.quoteUnit ?? null,
    r.isActive,
    JSON.stringify(r.brokerCodes),
    r.symbols ? JSON.stringify(r.symbols) : null,
    r.currentSymbol ?? null,
  ],
  async apply(tx) {
    await rejectFirstRow(
      tx`
        select row_index
        from (select row_index, row_number() over (partition by id order by row_index) as k from ingest_staging where id is not null) d
        where k > 1
        order by row_index
        limit 1
      `,
      'id',
      'the same instrument id appears twice in the batch',
    );
    await rejectFirstRow(
      tx`
        select s.row_index
        from ingest_staging s
        where s.symbols is null
          and not exists (select 1 from instruments i where i.id = s.id)
        order by s.row_index
        limit 1
      `,
      'symbols',
      'required for an instrument not stored yet; only a stored instrument keeps its history when symbols is left out',
    );
    await rejectTakenSymbols(tx);
    await tx`update ingest_staging set id = gen_random_uuid() where id is null`;
    const [counts] = await tx<{ inserted: number; updated: number; rows: number }[]>`
      with upserted as (
        insert into instruments as i (id, asset_class, display_name, exchange, region, isin, cusip,
          distribution_policy, quote_currency, quote_unit, is_active)
        select id, asset_class, display_name, exchange, region, isin, cusip,
          distribution_policy, quote_currency, quote_unit, is_active
        from ingest_staging
        on conflict (id) do update set
          asset_class = excluded.asset_class,
          display_name = excluded.display_name,
          exchange = excluded.exchange,
          region = excluded.region,
          isin = excluded.isin,
          cusip = excluded.cusip,
          distribution_policy = excluded.distribution_policy,
          quote_currency = excluded.quote_currency,
          quote_unit = excluded.quote_unit,
          is_active = excluded.is_active,
          updated_at = now()
        where (i.asset_class, i.display_name, i.exchange, i.region, i.isin, i.cusip, i.distribution_policy,
               i.quote_currency, i.quote_unit, i.is_active)
          is distinct from
              (excluded.asset_class, excluded.display_name, excluded.exchange, excluded.region, excluded.isin, excluded.cusip,
               excluded.distribution_policy, excluded.quote_currency, excluded.quote_unit, excluded.is_active)
        returning (xmax = 0) as inserted
      )
      select
        count(*) filter (where inserted)::int as inserted,
        count(*) filter (where not inserted)::int as updated,
        (select count(*)::int from ingest_staging) as rows
      from upserted
    `;
    await tx`delete from instrument_symbols where instrument_id in (select id from ingest_staging where symbols is not null)`;
    await tx`
      insert into instrument_symbols (instrument_id, symbol, valid_from, valid_to)
      select s.id, p.symbol, coalesce(p."validFrom"::date, '-infinity'::date), p."validTo"::date
      from ingest_staging s
      cross join lateral jsonb_to_recordset(s.symbols) as p (symbol text, "validFrom" text, "validTo" text)
    `;
    await tx`delete from instrument_broker_codes where instrument_id in (select id from ingest_staging)`;
    await tx`
      insert into instrument_broker_codes (instrument_id, broker, code)
      select s.id, b.key, b.value
      from ingest_staging s
      cross join lateral jsonb_each_text(s.broker_codes) as b
    `;
    // The day GET /v1/instruments/{id} maps the symbol on.
    const day = dayOf(undefined);
    await rejectFound(
      tx<{ row_index: number; symbol: string | null }[]>`
        select s.row_index, e.symbol
        from ingest_staging s
        join instruments i on i.id = s.id
        ${effectiveSymbol(tx, day)}
        where s.current_symbol is not null
          and s.current_symbol is distinct from e.symbol
        order by s.row_index
        limit 1
      `,
      'currentSymbol',
      (r) => `is read-only and contradicts the symbol history, which gives ${r.symbol === null ? 'no symbol' : r.symbol} on ${day}; change symbols instead`,
    );
    const ids = await tx<{ id: string }[]>`select id from ingest_staging order by row_index limit 10000`;
    return {
      rows: counts.rows,
      inserted: counts.inserted,
      updated: counts.updated,
      unchanged: counts.rows - counts.inserted - counts.updated,
      ids: ids.map((r) => r.id),
    };
  },
};
