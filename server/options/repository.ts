import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { countedStagedUpsert, stagedUpsert } from '../ingest/repository.ts';
import type { InstrumentId } from '../core/ids.ts';
import type { OptionRight } from './schema.ts';

// Ingest: statements over the `ingest_staging` table of an options upload
// (options/ingest.ts), inside its transaction.

/** The first staged contract whose id is stored under another underlying. */
export function stagedContractsOfAnotherInstrument(tx: ISql) {
  return tx<{ row_index: number }[]>`
    select s.row_index
    from ingest_staging s
    join option_contracts c on c.id = s.id and c.instrument_id <> s.instrument_id
    order by s.row_index
    limit 1
  `;
}

/** Upserts the staged contracts on id; a stored contract is rewritten only when a value differs. */
export function upsertStagedContracts(tx: ISql) {
  return countedStagedUpsert(
    tx,
    stagedUpsert(tx, {
      table: 'option_contracts',
      key: ['id'],
      kept: ['instrument_id'],
      updated: ['contract_symbol', 'expiry', 'strike', 'option_right', 'multiplier', 'is_active', 'listed_at', 'source'],
      setsUpdatedAt: true,
    }),
  );
}

/** The first staged quote of a contract that is not stored. */
export function stagedQuotesOfUnknownContracts(tx: ISql) {
  return tx<{ row_index: number }[]>`
    select s.row_index
    from ingest_staging s
    where not exists (select 1 from option_contracts c where c.id = s.contract_id)
    order by s.row_index
    limit 1
  `;
}

const QUOTE_VALUES = ['bid', 'ask', 'last_price', 'volume', 'open_interest', 'source', 'delta', 'gamma', 'theta', 'vega', 'rho', 'implied_volatility'] as const;

/** The first staged quote stored before with other values: observations are append-only. */
export function stagedQuotesThatRewrite(tx: ISql) {
  const staged = QUOTE_VALUES.map((c, i) => (i ? tx`, s.${tx(c)}` : tx`s.${tx(c)}`));
  const stored = QUOTE_VALUES.map((c, i) => (i ? tx`, q.${tx(c)}` : tx`q.${tx(c)}`));
  return tx<{ row_index: number }[]>`
    select s.row_index
    from ingest_staging s
    join option_quotes q on q.contract_id = s.contract_id and q.observed_at = s.observed_at
    where (${stored}) is distinct from (${staged})
    order by s.row_index
    limit 1
  `;
}

/** Appends the staged observations not stored yet; those stored with the same values are unchanged. */
export function appendStagedQuotes(tx: ISql) {
  const columns = ['contract_id', 'observed_at', ...QUOTE_VALUES];
  const list = columns.map((c, i) => (i ? tx`, ${tx(c)}` : tx`${tx(c)}`));
  return countedStagedUpsert(
    tx,
    tx`
      insert into option_quotes (${list})
      select ${list}
      from ingest_staging
      on conflict (contract_id, observed_at) do nothing
      returning true as inserted
    `,
  );
}

/** Upserts the staged snapshots on (instrument, asOfDate); a stored one is rewritten only when a value differs. */
export function upsertStagedIvSnapshots(tx: ISql) {
  return countedStagedUpsert(
    tx,
    stagedUpsert(tx, {
      table: 'iv_snapshots',
      key: ['instrument_id', 'as_of_date'],
      updated: [
        'underlying_price',
        'atm_implied_volatility',
        'implied_volatility_30d',
        'historical_volatility_30d',
        'parkinson_historical_volatility_30d',
        'put_call_iv_ratio_30d',
        'term_structure',
        'source',
      ],
      setsUpdatedAt: true,
    }),
  );
}

// Reads.

/** A contract as stored. */
export interface OptionContract {
  id: string;
  instrumentId: string;
  contractSymbol: string;
  expiry: string;
  strike: number;
  right: OptionRight;
  multiplier: number;
  isActive: boolean;
  /** Null when the source did not say: the contract counts as listed from its first quote observation. */
  listedAt: Date | null;
  /** Where the contract came from. */
  source: string;
}

/** The provider's Greeks of an observation. */
export interface ProviderGreeks {
  delta: number;
  gamma: number;
  theta: number;
  vega: number;
  rho: number;
  impliedVolatility: number;
}

/** One quote observation of a contract. */
export interface QuoteObservation {
  observedAt: Date;
  bid: number | null;
  ask: number | null;
  lastPrice: number | null;
  volume: number | null;
  openInterest: number | null;
  source: string;
  /** Null when the provider sent none. */
  greeks: ProviderGreeks | null;
}

/** A contract with its latest quote observation at or before the cut-off. */
export interface ContractAtCutoff {
  contract: OptionContract;
  /** Null when none was observed by then. */
  quote: QuoteObservation | null;
}

/**
 * A contract row joined to its latest quote: every quote column null when
 * there is none. A stored quote has a source, and its six Greeks are all null
 * or none (sql/008_options.sql).
 */
type ContractRow = {
  id: string;
  instrument_id: string;
  contract_symbol: string;
  expiry: string;
  strike: number;
  option_right: OptionRight;
  multiplier: number;
  is_active: boolean;
  listed_at: Date | null;
  contract_source: string;
} & (
  | ({
      observed_at: Date;
      bid: number | null;
      ask: number | null;
      last_price: number | null;
      volume: number | null;
      open_interest: number | null;
      source: string;
    } & (
      | { delta: number; gamma: number; theta: number; vega: number; rho: number; implied_volatility: number }
      | { delta: null; gamma: null; theta: null; vega: null; rho: null; implied_volatility: null }
    ))
  | {
      observed_at: null;
      bid: null;
      ask: null;
      last_price: null;
      volume: null;
      open_interest: null;
      source: null;
      delta: null;
      gamma: null;
      theta: null;
      vega: null;
      rho: null;
      implied_volatility: null;
    }
);

/** The row's contract and quote: a quote exactly when observed_at is set, its Greeks exactly when implied_volatility is. */
function toContractAtCutoff(r: ContractRow): ContractAtCutoff {
  return {
    contract: {
      id: r.id,
      instrumentId: r.instrument_id,
      contractSymbol: r.contract_symbol,
      expiry: r.expiry,
      strike: r.strike,
      right: r.option_right,
      multiplier: r.multiplier,
      isActive: r.is_active,
      listedAt: r.listed_at,
      source: r.contract_source,
    },
    quote:
      r.observed_at === null
        ? null
        : {
            observedAt: r.observed_at,
            bid: r.bid,
            ask: r.ask,
            lastPrice: r.last_price,
            volume: r.volume,
            openInterest: r.open_interest,
            source: r.source,
            greeks:
              r.implied_volatility === null
                ? null
                : { delta: r.delta, gamma: r.gamma, theta: r.theta, vega: r.vega, rho: r.rho, impliedVolatility: r.implied_volatility },
          },
  };
}

export interface ChainFilter {
  expiry?: string;
  strike?: number;
  right?: OptionRight;
}

/**
 * Listed at the cut-off: listed_at at or before it, or, when the source gave
 * no listing time, a quote observed at or before it. The latest observation
 * per contract is one backward step on the primary key (contract_id,
 * observed_at) from the cut-off, so older history is never read.
 */
const LATEST_QUOTE = (sql: ISql, cutoff: Date) => sql`
  left join lateral (
    select q.observed_at, q.bid, q.ask, q.last_price, q.volume, q.open_interest, q.source,
      q.delta, q.gamma, q.theta, q.vega, q.rho, q.implied_volatility
    from option_quotes q
    where q.contract_id = c.id and q.observed_at <= ${cutoff}
    order by q.observed_at desc
    limit 1
  ) q on true
`;
const LISTED = (sql: ISql, cutoff: Date) => sql`(c.listed_at <= ${cutoff} or (c.listed_at is null and q.observed_at is not null))`;
const CONTRACT_COLUMNS = (sql: ISql) =>
  sql`c.id, c.instrument_id, c.contract_symbol, c.expiry, c.strike, c.option_right, c.multiplier, c.is_active, c.listed_at, c.source as contract_source, q.*`;

/** The chain at the cut-off: contracts listed then and not expired before its day, by expiry, strike and right (call first). */
export async function chainAt(sql: ISql, instrumentId: string, cutoff: Date, cutoffDay: string, filter: ChainFilter): Promise<ContractAtCutoff[]> {
  const rows = await timed(
    'option_chain',
    sql<ContractRow[]>`
      select ${CONTRACT_COLUMNS(sql)}
      from option_contracts c
      ${LATEST_QUOTE(sql, cutoff)}
      where c.instrument_id = ${instrumentId}
        and c.expiry >= ${cutoffDay}
        and ${LISTED(sql, cutoff)}
        ${filter.expiry ? sql`and c.expiry = ${filter.expiry}` : sql``}
        ${filter.strike !== undefined ? sql`and c.strike = ${filter.strike}` : sql``}
        ${filter.right ? sql`and c.option_right = ${filter.right}` : sql``}
      order by c.expiry, c.strike, c.option_right
    `,
  );
  return rows.map(toContractAtCutoff);
}

/** One contract at the cut-off, and whether it was listed then (the caller decides); undefined for an unknown id. */
export async function contractAt(sql: ISql, id: string, cutoff: Date): Promise<(ContractAtCutoff & { listed: boolean }) | undefined> {
  const [row] = await sql<(ContractRow & { listed: boolean })[]>`
    select ${CONTRACT_COLUMNS(sql)}, ${LISTED(sql, cutoff)} as listed
    from option_contracts c
    ${LATEST_QUOTE(sql, cutoff)}
    where c.id = ${id}
  `;
  return row && { ...toContractAtCutoff(row), listed: row.listed };
}

/** How many contracts the underlying has stored at all, and how many of them had expired before the cut-off's day. */
export async function storedContractCounts(sql: ISql, instrumentId: string, cutoffDay: string): Promise<{ stored: number; expired: number }> {
  const [row] = await sql<{ stored: number; expired: number }[]>`
    select count(*)::int as stored, count(*) filter (where expiry < ${cutoffDay})::int as expired
    from option_contracts
    where instrument_id = ${instrumentId}
  `;
  return row;
}

/** An underlying and a UTC day of its quote observations: what one snapshot covers. */
export interface SnapshotDay {
  instrumentId: InstrumentId;
  day: string;
}

/**
 * Which of the (underlying, day) pairs are due a snapshot: a day with quote
 * observations and no snapshot, or a derived snapshot older than a quote
 * recorded for that day since. An ingested snapshot is never replaced by a
 * derived one. `scope` narrows the search: the pairs an upload touched (each
 * read through the quotes primary key, one day's range per contract), or whole
 * underlyings; without it every stored quote is grouped (a full derive).
 */
export function snapshotDaysToDerive(sql: ISql, scope: { days?: SnapshotDay[]; instrumentIds?: string[] }): Promise<SnapshotDay[]> {
  if (scope.days) {
    return sql<SnapshotDay[]>`
      select s.instrument_id as "instrumentId", s.day::text as day
      from unnest(${scope.days.map((d) => d.instrumentId)}::uuid[], ${scope.days.map((d) => d.day)}::date[]) as s (instrument_id, day)
      cross join lateral (
        select max(q.recorded_at) as recorded_at
        from option_contracts c
        join option_quotes q on q.contract_id = c.id
          and q.observed_at >= s.day::timestamp at time zone 'UTC' and q.observed_at < (s.day + 1)::timestamp at time zone 'UTC'
        where c.instrument_id = s.instrument_id
      ) d
      left join iv_snapshots v on v.instrument_id = s.instrument_id and v.as_of_date = s.day
      where d.recorded_at is not null and (v.instrument_id is null or (v.source like 'derived%' and v.updated_at < d.recorded_at))
      order by 1, 2
    `;
  }
  return sql<SnapshotDay[]>`
    select c.instrument_id as "instrumentId", d.day::text as day
    from (
      select q.contract_id, (q.observed_at at time zone 'UTC')::date as day, max(q.recorded_at) as recorded_at
      from option_quotes q
      group by 1, 2
    ) d
    join option_contracts c on c.id = d.contract_id
    left join iv_snapshots v on v.instrument_id = c.instrument_id and v.as_of_date = d.day
    where (v.instrument_id is null or (v.source like 'derived%' and v.updated_at < d.recorded_at))
      ${scope.instrumentIds ? sql`and c.instrument_id = any (${scope.instrumentIds}::uuid[])` : sql``}
    group by c.instrument_id, d.day
    order by 1, 2
  `;
}

/** Calendar days of quotes one page of derivableQuoteDays reads. */
const QUOTE_DAYS_PAGE = 64;

/** The UTC day of the underlying's first quote observed at or after `from` (an instant), null when none. */
function firstQuoteDay(sql: ISql, instrumentId: postgres.Fragment, from: postgres.Fragment): postgres.Fragment {
  return sql`(
    select (min(q.observed_at) at time zone 'UTC')::date::text
    from option_contracts c
    join option_quotes q on q.contract_id = c.id and q.observed_at >= ${from}
    where c.instrument_id = ${instrumentId}
  )`;
}

/** Each underlying's first UTC day with a quote on or after its `day`; an underlying with none is absent. */
export async function firstQuoteDays(sql: ISql, starts: SnapshotDay[]): Promise<Map<InstrumentId, string>> {
  const rows = await sql<{ instrumentId: InstrumentId; day: string | null }[]>`
    select s.instrument_id as "instrumentId", ${firstQuoteDay(sql, sql`s.instrument_id`, sql`s.day::timestamp at time zone 'UTC'`)} as day
    from unnest(${starts.map((s) => s.instrumentId)}::uuid[], ${starts.map((s) => s.day)}::date[]) as s (instrument_id, day)
  `;
  return new Map(rows.flatMap((r) => (r.day === null ? [] : [[r.instrumentId, r.day] as const])));
}

/**
 * The UTC days of the underlying's quotes in the 64 calendar days from
 * `from` whose snapshot is absent or derived (an ingested one is never
 * replaced), in order, and the day of its first quote after them (null: none),
 * where the next page starts. Paged so that a bar upload reaching back years
 * reads the quotes only as far as the snapshots its bars can reach.
 */
export async function derivableQuoteDays(sql: ISql, instrumentId: InstrumentId, from: string): Promise<{ days: string[]; next: string | null }> {
  const [row] = await sql<{ days: string[]; next: string | null }[]>`
    with quoted as (
      select distinct (q.observed_at at time zone 'UTC')::date as day
      from option_contracts c
      join option_quotes q on q.contract_id = c.id
        and q.observed_at >= ${from}::date::timestamp at time zone 'UTC'
        and q.observed_at < (${from}::date + ${QUOTE_DAYS_PAGE}::int)::timestamp at time zone 'UTC'
      where c.instrument_id = ${instrumentId}
    )
    select
      array(
        select d.day::text
        from quoted d
        left join iv_snapshots v on v.instrument_id = ${instrumentId} and v.as_of_date = d.day
        where v.instrument_id is null or v.source like 'derived%'
        order by d.day
      ) as days,
      ${firstQuoteDay(sql, sql`${instrumentId}::uuid`, sql`(${from}::date + ${QUOTE_DAYS_PAGE}::int)::timestamp at time zone 'UTC'`)} as next
  `;
  return row;
}

/** The (underlying, UTC day) pairs of the staged quotes. */
export function stagedQuoteDays(tx: ISql) {
  return tx<SnapshotDay[]>`
    select distinct c.instrument_id as "instrumentId", (s.observed_at at time zone 'UTC')::date::text as day
    from ingest_staging s
    join option_contracts c on c.id = s.contract_id
  `;
}

/** The (underlying, UTC day) pairs of the staged contracts' stored quotes: a changed contract changes its days' chains. */
export function stagedContractQuoteDays(tx: ISql) {
  return tx<SnapshotDay[]>`
    select distinct s.instrument_id as "instrumentId", (q.observed_at at time zone 'UTC')::date::text as day
    from ingest_staging s
    join option_quotes q on q.contract_id = s.id
  `;
}
