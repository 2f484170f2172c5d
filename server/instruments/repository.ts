import type { Sql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import type { Instrument } from './schema.ts';

/**
 * The symbol the instrument carried on `day`: the mapping valid that day, or,
 * for an instrument whose mappings had all ended (delisted, merged away), its
 * last one, so delisted instruments stay findable. An instrument with no
 * mapping started by then did not trade under any symbol: null.
 */
function effectiveSymbol(sql: Sql, day: string) {
  return sql`
    left join lateral (
      select s.symbol
      from instrument_symbols s
      where s.instrument_id = i.id
        and s.valid_from <= ${day}::date
      order by (s.valid_to is null or s.valid_to >= ${day}::date) desc, s.valid_from desc
      limit 1
    ) e on true
  `;
}

function selectInstruments(sql: Sql, day: string, vendorBroker: string) {
  return sql`
    select
      i.*,
      e.symbol as current_symbol,
      coalesce(
        (select jsonb_object_agg(b.broker, b.code) from instrument_broker_codes b where b.instrument_id = i.id),
        '{}'::jsonb
      ) as broker_codes,
      (select b.code from instrument_broker_codes b where b.instrument_id = i.id and b.broker = ${vendorBroker}) as vendor_code
    from instruments i
    ${effectiveSymbol(sql, day)}
  `;
}

/** A row of selectInstruments. */
export interface InstrumentRow {
  id: string;
  asset_class: Instrument['assetClass'];
  display_name: string;
  exchange: string | null;
  region: string | null;
  isin: string | null;
  cusip: string | null;
  distribution_policy: Instrument['distributionPolicy'];
  quote_currency: string | null;
  quote_unit: string | null;
  is_active: boolean;
  current_symbol: string | null;
  broker_codes: Record<string, string>;
  vendor_code: string | null;
}

export function toInstrument(r: InstrumentRow): Instrument {
  return {
    id: r.id,
    assetClass: r.asset_class,
    displayName: r.display_name,
    exchange: r.exchange,
    region: r.region,
    isin: r.isin,
    cusip: r.cusip,
    distributionPolicy: r.distribution_policy,
    quoteCurrency: r.quote_currency,
    quoteUnit: r.quote_unit,
    isActive: r.is_active,
    currentSymbol: r.current_symbol,
    brokerCodes: r.broker_codes,
    vendorCode: r.vendor_code,
  };
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

// word_similarity above this is a fuzzy hit; 0.4 admits one typo in a
// six-letter word ("Microsft") but not unrelated names sharing a trigram.
const FUZZY_THRESHOLD = 0.4;
// One- and two-letter queries are tickers being typed: fuzzy matching on so
// few characters hits nearly every name, so they get exact and prefix only.
const MIN_FUZZY_LENGTH = 3;

export async function searchInstruments(
  sql: Sql,
  q: { text: string; day: string; assetClass?: string; limit: number; vendorBroker: string },
): Promise<Instrument[]> {
  const upper = q.text.toUpperCase();
  const lower = q.text.toLowerCase();
  const rows = await timed(
    'search_instruments',
    sql<InstrumentRow[]>`
      select * from (
        select
          x.*,
          case
            when upper(x.current_symbol) = ${upper} then 0
            when upper(x.current_symbol) like ${escapeLike(upper) + '%'} or lower(x.display_name) like ${escapeLike(lower) + '%'} then 1
            else 2
          end as match_rank,
          greatest(
            similarity(upper(coalesce(x.current_symbol, '')), ${upper}),
            word_similarity(${lower}, lower(x.display_name))
          ) as score
        from (${selectInstruments(sql, q.day, q.vendorBroker)}) x
        where x.current_symbol is not null
          ${q.assetClass ? sql`and x.asset_class = ${q.assetClass}` : sql``}
      ) ranked
      where match_rank < 2
         or ${q.text.length >= MIN_FUZZY_LENGTH}::boolean and (
              lower(display_name) like ${'%' + escapeLike(lower) + '%'}
              or score >= ${FUZZY_THRESHOLD}
            )
      order by match_rank, is_active desc, score desc, current_symbol, id
      limit ${q.limit}
    `,
  );
  return rows.map(toInstrument);
}

export async function findByBrokerCode(
  sql: Sql,
  q: { broker: string; code: string; day: string; assetClass?: string; limit: number; vendorBroker: string },
): Promise<Instrument[]> {
  const rows = await timed(
    'find_by_broker_code',
    sql<InstrumentRow[]>`
      select x.*
      from (${selectInstruments(sql, q.day, q.vendorBroker)}) x
      where x.id in (
        select instrument_id
        from instrument_broker_codes
        where broker = ${q.broker}
          and code = ${q.code}
      )
      ${q.assetClass ? sql`and x.asset_class = ${q.assetClass}` : sql``}
      order by x.is_active desc, x.id
      limit ${q.limit}
    `,
  );
  return rows.map(toInstrument);
}

export async function findByIds(sql: Sql, ids: string[], day: string, vendorBroker: string): Promise<Instrument[]> {
  if (ids.length === 0) return [];
  const rows = await timed(
    'find_instruments_by_id',
    sql<InstrumentRow[]>`
      select x.*
      from (${selectInstruments(sql, day, vendorBroker)}) x
      where x.id = any (${ids}::uuid[])
    `,
  );
  const byId = new Map(rows.map((r) => [r.id, toInstrument(r)]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** Minimal facts the price and analytics routes need before reading bars. */
export async function findInstrumentHeader(sql: Sql, id: string, day: string) {
  const [row] = await timed(
    'instrument_header',
    sql<{ id: string; asset_class: string; symbol: string | null }[]>`
      select i.id, i.asset_class, i.quote_currency, i.quote_unit, e.symbol
      from instruments i
      ${effectiveSymbol(sql, day)}
      where i.id = ${id}
    `,
  );
  return row
    ? { id: row.id, assetClass: row.asset_class, symbol: row.symbol }
    : null;
}
