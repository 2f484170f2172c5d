import type { Sql } from '../db/sql.ts';
import { countedStagedUpsert } from '../ingest/repository.ts';

// Ingest: statements over the `ingest_staging` table of an options upload
// (options/ingest.ts), inside its transaction.

/** The first staged contract whose id is stored under another underlying. */
export function stagedContractsOfAnotherInstrument(tx: Sql) {
  return tx<{ row_index: number }[]>`
    select s.row_index
    from ingest_staging s
    join option_contracts c on c.id = s.id and c.instrument_id <> s.instrument_id
    order by s.row_index
    limit 1
  `;
}

/** Upserts the staged contracts on id; a stored contract is rewritten only when a value differs. */
export function upsertStagedContracts(tx: Sql) {
  return countedStagedUpsert(
    tx,
    tx`
      insert into option_contracts as c (id, instrument_id, contract_symbol, expiry, strike, option_right, multiplier, is_active, listed_at)
      select id, instrument_id, contract_symbol, expiry, strike, option_right, multiplier, is_active, listed_at
      from ingest_staging
      on conflict (id) do update set
        contract_symbol = excluded.contract_symbol,
        expiry = excluded.expiry,
        strike = excluded.strike,
        option_right = excluded.option_right,
        multiplier = excluded.multiplier,
        is_active = excluded.is_active,
        listed_at = excluded.listed_at,
        updated_at = now()
      where (c.contract_symbol, c.expiry, c.strike, c.option_right, c.multiplier, c.is_active, c.listed_at)
        is distinct from
        (excluded.contract_symbol, excluded.expiry, excluded.strike, excluded.option_right, excluded.multiplier, excluded.is_active, excluded.listed_at)
      returning (xmax = 0) as inserted
    `,
  );
}

/** The first staged quote of a contract that is not stored. */
export function stagedQuotesOfUnknownContracts(tx: Sql) {
  return tx<{ row_index: number }[]>`
    select s.row_index
    from ingest_staging s
    where not exists (select 1 from option_contracts c where c.id = s.contract_id)
    order by s.row_index
    limit 1
  `;
}

/** The first staged row whose (`a`, `b`) an earlier row of the batch already has. */
function repeatedStagedPairs(tx: Sql, a: string, b: string) {
  return tx<{ row_index: number }[]>`
    select row_index
    from (
      select row_index, row_number() over (partition by ${tx(a)}, ${tx(b)} order by row_index) as k
      from ingest_staging
    ) d
    where k > 1
    order by row_index
    limit 1
  `;
}

export const repeatedStagedObservations = (tx: Sql) => repeatedStagedPairs(tx, 'contract_id', 'observed_at');
export const repeatedStagedSnapshots = (tx: Sql) => repeatedStagedPairs(tx, 'instrument_id', 'as_of_date');

const QUOTE_VALUES = ['bid', 'ask', 'last_price', 'volume', 'open_interest', 'source', 'delta', 'gamma', 'theta', 'vega', 'rho', 'implied_volatility'] as const;

/** The first staged quote stored before with other values: observations are append-only. */
export function stagedQuotesThatRewrite(tx: Sql) {
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
export function appendStagedQuotes(tx: Sql) {
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
export function upsertStagedIvSnapshots(tx: Sql) {
  return countedStagedUpsert(
    tx,
    tx`
      insert into iv_snapshots as v (instrument_id, as_of_date, underlying_price, atm_implied_volatility, implied_volatility_30d,
        historical_volatility_30d, parkinson_historical_volatility_30d, put_call_iv_ratio_30d, term_structure, source)
      select instrument_id, as_of_date, underlying_price, atm_implied_volatility, implied_volatility_30d,
        historical_volatility_30d, parkinson_historical_volatility_30d, put_call_iv_ratio_30d, term_structure, source
      from ingest_staging
      on conflict (instrument_id, as_of_date) do update set
        underlying_price = excluded.underlying_price,
        atm_implied_volatility = excluded.atm_implied_volatility,
        implied_volatility_30d = excluded.implied_volatility_30d,
        historical_volatility_30d = excluded.historical_volatility_30d,
        parkinson_historical_volatility_30d = excluded.parkinson_historical_volatility_30d,
        put_call_iv_ratio_30d = excluded.put_call_iv_ratio_30d,
        term_structure = excluded.term_structure,
        source = excluded.source,
        updated_at = now()
      where (v.underlying_price, v.atm_implied_volatility, v.implied_volatility_30d, v.historical_volatility_30d,
          v.parkinson_historical_volatility_30d, v.put_call_iv_ratio_30d, v.term_structure, v.source)
        is distinct from
        (excluded.underlying_price, excluded.atm_implied_volatility, excluded.implied_volatility_30d, excluded.historical_volatility_30d,
          excluded.parkinson_historical_volatility_30d, excluded.put_call_iv_ratio_30d, excluded.term_structure, excluded.source)
      returning (xmax = 0) as inserted
    `,
  );
}
