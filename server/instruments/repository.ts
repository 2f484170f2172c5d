import type postgres from 'postgres';
import type { ISql, Sql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import type { Instrument } from './schema.ts';

/**
 * The symbol the instrument carried on `day`: the mapping valid that day, or,
 * for an instrument whose mappings had all ended (delisted, merged away), its
 * last one, so delisted instruments stay findable. An instrument with no
 * mapping started by then did not trade under any symbol: null. `day` is a
 * date, or a column of the outer query (one day per row); `instrumentId` the
 * outer query's instrument (`i.id` unless given).
 */
export function effectiveSymbol(sql: ISql, day: string | postgres.Fragment, instrumentId: postgres.Fragment = sql`i.id`) {
  return sql`
    left join lateral (
      select s.symbol
      from instrument_symbols s
      where s.instrument_id = ${instrumentId}
        and s.valid_from <= ${day}::date
      order by (s.valid_to is null or s.valid_to >= ${day}::date) desc, s.valid_from desc
      limit 1
    ) e on true
  `;
}

/**
 * The symbols of the instruments `ids` (an expression of type uuid[]) over
 * the days from `from` to `to`, as runs: a row (instrument_id, from_day,
 * until_day, symbol) per run of days under one symbol by effectiveSymbol's
 * rule (null where none), `until_day` the day after its last. Each
 * instrument's runs cover the window without gap or overlap, whether or not
 * it has symbols. The rule's answer can change only on a day a period starts
 * or the day after one ends, so it is asked on those days alone (and on
 * `from`), never per day or per bar: a read of ten years of an instrument
 * renamed once asks it twice.
 */
export function symbolRuns(sql: ISql, ids: postgres.Fragment, from: string | postgres.Fragment, to: string | postgres.Fragment) {
  return sql`
    select k.instrument_id, k.day as from_day, coalesce(lead(k.day) over w, ${to}::date + 1) as until_day, k.symbol
    from (
      select c.instrument_id, c.day, e.symbol, lag(c.day) over w as day_before, lag(e.symbol) over w as symbol_before
      from (
        select i.id as instrument_id, ${from}::date as day
        from unnest(${ids}) as i (id)
        union
        select s.instrument_id, b.day
        from instrument_symbols s
        cross join lateral (values (s.valid_from), (s.valid_to + 1)) as b (day)
        where s.instrument_id = any (${ids})
          and b.day > ${from}::date
          and b.day <= ${to}::date
      ) c
      ${effectiveSymbol(sql, sql`c.day`, sql`c.instrument_id`)}
      window w as (partition by c.instrument_id order by c.day)
    ) k
    where k.day_before is null or k.symbol is distinct from k.symbol_before
    window w as (partition by k.instrument_id order by k.day)
  `;
}

function selectInstruments(sql: ISql, day: string, vendorBroker: string) {
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

export interface SearchQuery {
  text: string;
  day: string;
  assetClass?: string;
  limit: number;
  vendorBroker: string;
  /** Only the matches after this position of the ranking (keyset paging). */
  after?: SearchKey;
}

/**
 * A match's position in the search ranking: its rank (0 exact symbol, 1
 * prefix, 2 substring or fuzzy), whether it is delisted, its similarity score
 * (a float4, as PostgreSQL writes it: shortest text that reads back exactly),
 * its symbol on the day and its id.
 */
export interface SearchKey {
  rank: number;
  inactive: boolean;
  score: string;
  symbol: string;
  id: string;
}

/** A reverse lookup's position: whether the instrument is delisted, and its id. */
export interface BrokerCodeKey {
  inactive: boolean;
  id: string;
}

/** A search row with its key columns; a search matches only instruments with a current symbol (searchStatement). */
interface RankedRow extends InstrumentRow {
  current_symbol: string;
  match_rank: number;
  score_key: string;
}

/**
 * Sets the thresholds pg_trgm's `%` and `<%` operators read, for the rest of
 * the transaction: both to FUZZY_THRESHOLD, so the candidates the indexes
 * return include every fuzzy hit the ranking admits.
 */
export function searchThresholds(sql: ISql) {
  const threshold = String(FUZZY_THRESHOLD);
  return sql`
    select
      set_config('pg_trgm.similarity_threshold', ${threshold}, true),
      set_config('pg_trgm.word_similarity_threshold', ${threshold}, true)
  `;
}

/**
 * Instruments that may match, each branch an index probe: the ticker itself
 * (instrument_symbols_symbol_idx), longer tickers it begins and near-misses
 * (instrument_symbols_trgm), names it begins, contains or nearly matches
 * (instruments_display_name_trgm). Symbols are probed over every period; the
 * ranking keeps only matches on the symbol in effect on the day. This is a
 * superset of what the ranking admits, so the result is the ranking's alone.
 */
function searchCandidates(sql: ISql, upper: string, lower: string, fuzzy: boolean) {
  return sql`
    select s.instrument_id
    from instrument_symbols s
    where upper(s.symbol) = ${upper}
    union all
    select s.instrument_id
    from instrument_symbols s
    where upper(s.symbol) like ${escapeLike(upper) + '_%'}
      ${fuzzy ? sql`or upper(s.symbol) % ${upper}` : sql``}
    union all
    select i.id
    from instruments i
    where ${
      fuzzy
        ? sql`lower(i.display_name) like ${'%' + escapeLike(lower) + '%'} or ${lower} <% lower(i.display_name)`
        : sql`lower(i.display_name) like ${escapeLike(lower) + '%'}`
    }
  `;
}

/**
 * The search: exact symbol, then prefix (symbol or name), then fuzzy; active
 * before delisted within each. Run it after searchThresholds in the same
 * transaction, as searchInstruments does.
 */
export function searchStatement(sql: ISql, q: SearchQuery) {
  const upper = q.text.toUpperCase();
  const lower = q.text.toLowerCase();
  const fuzzy = q.text.length >= MIN_FUZZY_LENGTH;
  const a = q.after;
  return sql`
    select *, score::text as score_key from (
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
      where x.id in (${searchCandidates(sql, upper, lower, fuzzy)})
        and x.current_symbol is not null
        ${q.assetClass ? sql`and x.asset_class = ${q.assetClass}` : sql``}
    ) ranked
    where (match_rank < 2
       or ${fuzzy}::boolean and (
            lower(display_name) like ${'%' + escapeLike(lower) + '%'}
            or score >= ${FUZZY_THRESHOLD}
          ))
      ${
        a
          ? sql`and (match_rank, not is_active, -score, current_symbol, id) > (${a.rank}::int, ${a.inactive}::boolean, -(${a.score}::text::real), ${a.symbol}::text, ${a.id}::uuid)`
          : sql``
      }
    order by match_rank, not is_active, -score, current_symbol, id
    limit ${q.limit}
  `;
}

export async function searchInstruments(sql: Sql, q: SearchQuery): Promise<Instrument[]> {
  return (await searchPage(sql, q)).map((r) => r.row);
}

/** The search's matches, each with its position in the ranking (the key a cursor after it holds). */
export async function searchPage(sql: Sql, q: SearchQuery): Promise<{ row: Instrument; key: SearchKey }[]> {
  const [, rows] = await timed(
    'search_instruments',
    sql.begin((tx) => [tx`${searchThresholds(sql)}`, tx<RankedRow[]>`${searchStatement(sql, q)}`]),
  );
  return rows.map((r) => ({
    row: toInstrument(r),
    key: { rank: r.match_rank, inactive: !r.is_active, score: r.score_key, symbol: r.current_symbol, id: r.id },
  }));
}

export interface BrokerCodeQuery {
  broker: string;
  code: string;
  day: string;
  assetClass?: string;
  limit: number;
  vendorBroker: string;
  /** Only the instruments after this position (keyset paging). */
  after?: BrokerCodeKey;
}

/** Reverse lookup: exact on (broker, code), through instrument_broker_codes_lookup_idx; active first, then by id. */
export function brokerCodeStatement(sql: ISql, q: BrokerCodeQuery) {
  return sql<InstrumentRow[]>`
    select x.*
    from (${selectInstruments(sql, q.day, q.vendorBroker)}) x
    where x.id in (
      select instrument_id
      from instrument_broker_codes
      where broker = ${q.broker}
        and code = ${q.code}
    )
    ${q.assetClass ? sql`and x.asset_class = ${q.assetClass}` : sql``}
    ${q.after ? sql`and (not x.is_active, x.id) > (${q.after.inactive}::boolean, ${q.after.id}::uuid)` : sql``}
    order by not x.is_active, x.id
    limit ${q.limit}
  `;
}

export async function findByBrokerCode(sql: ISql, q: BrokerCodeQuery): Promise<Instrument[]> {
  return (await brokerCodePage(sql, q)).map((r) => r.row);
}

/** The reverse lookup's instruments, each with its position (the key a cursor after it holds). */
export async function brokerCodePage(sql: ISql, q: BrokerCodeQuery): Promise<{ row: Instrument; key: BrokerCodeKey }[]> {
  const rows = await timed('find_by_broker_code', brokerCodeStatement(sql, q));
  return rows.map((r) => ({ row: toInstrument(r), key: { inactive: !r.is_active, id: r.id } }));
}

export async function findByIds(sql: ISql, ids: string[], day: string, vendorBroker: string): Promise<Instrument[]> {
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
export async function findInstrumentHeader(sql: ISql, id: string, day: string) {
  const [row] = await timed(
    'instrument_header',
    sql<{ id: string; asset_class: string; symbol: string | null }[]>`
      select i.id, i.asset_class, i.quote_currency, i.quote_unit, e.symbol
      from instruments i
      ${effectiveSymbol(sql, day)}
      where i.id = ${id}
    `,
  );
  return row ? { id: row.id, assetClass: row.asset_class, symbol: row.symbol } : null;
}

/** meta.source of the instrument master's own rows. */
export const REFERENCE_SOURCE = 'mds-reference';

/** The sources of the broker codes of `ids`: the reads name them beside the master's. */
export async function brokerCodeSources(sql: ISql, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  const rows = await sql<{ source: string }[]>`select distinct source from instrument_broker_codes where instrument_id = any(${ids}::uuid[])`;
  return rows.map((r) => r.source);
}

/** Of `ids`, those marked active with no symbol period covering `day`. */
export async function activeWithoutSymbolOn(sql: ISql, ids: string[], day: string): Promise<string[]> {
  if (!ids.length) return [];
  const rows = await sql<{ id: string }[]>`
    select i.id from instruments i
    where i.id = any(${ids}::uuid[]) and i.is_active
      and not exists (
        select 1 from instrument_symbols s
        where s.instrument_id = i.id and s.valid_from <= ${day}::date and (s.valid_to is null or s.valid_to >= ${day}::date)
      )
  `;
  return rows.map((r) => r.id);
}

/** Whether any instrument is stored. */
export async function anyInstrumentStored(sql: ISql): Promise<boolean> {
  const [row] = await sql<{ any: boolean }[]>`select exists (select 1 from instruments) as any`;
  return row.any;
}

/** Those of `ids` that name an instrument. */
export async function existingInstruments(sql: ISql, ids: string[]): Promise<Set<string>> {
  const rows = await timed(
    'existing_instruments',
    sql<{ id: string }[]>`
      select id
      from instruments
      where id = any (${ids}::uuid[])
    `,
  );
  return new Set(rows.map((r) => r.id));
}
