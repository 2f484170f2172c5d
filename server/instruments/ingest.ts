import { z } from 'zod';
import { randomUUID } from 'node:crypto';
import { ingestCounts, type IngestKind } from '../ingest/kind.ts';
import { rejectFirstRow } from '../ingest/service.ts';
import { InstrumentIngestSchema, type InstrumentIngestRow } from './schema.ts';

/**
 * Instruments upsert on id; their symbol history and broker codes are
 * replaced by the batch's (the batch states the whole history).
 */
export const instrumentIngest: IngestKind<InstrumentIngestRow> = {
  label: 'instruments',
  rowSchema: InstrumentIngestSchema,
  resultSchema: z.strictObject({ ...ingestCounts, ids: z.array(z.string()).describe('the id of each row, in upload order (the first 10,000)') }),
  stagingColumns: [
    ['id', 'uuid'], ['asset_class', 'text'], ['display_name', 'text'], ['exchange', 'text'], ['region', 'text'], ['isin', 'text'], ['cusip', 'text'],
    ['distribution_policy', 'text'], ['quote_currency', 'text'], ['quote_unit', 'text'], ['is_active', 'bool'], ['broker_codes', 'jsonb'], ['symbols', 'jsonb'],
  ],
  toStagingValues: (r) => [
    r.id?.toLowerCase() ?? randomUUID(),
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
    JSON.stringify(r.symbols),
  ],
  async apply(tx) {
    await rejectFirstRow(
      tx`
        select row_index
        from (select row_index, row_number() over (partition by id order by row_index) as k from ingest_staging) d
        where k > 1
        order by row_index
        limit 1
      `,
      'id',
      'the same instrument id appears twice in the batch',
    );
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
    await tx`delete from instrument_symbols where instrument_id in (select id from ingest_staging)`;
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
