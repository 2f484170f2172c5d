-- Options: contracts, their quote observations (with the provider's Greeks
-- when it sent them), and per-underlying implied-volatility snapshots.
--
-- Quote observations are append-only: an observation is never rewritten, so
-- the chain as of any past instant is rebuilt from what was stored then.
-- Computed Greeks are model output, worked out at read time, and never stored.

create table option_contracts (
  id uuid primary key,
  instrument_id uuid not null references instruments (id),
  contract_symbol text not null check (length(contract_symbol) between 1 and 64),
  expiry date not null,
  strike double precision not null check (strike > 0 and strike < 'infinity'),
  option_right text not null check (option_right in ('call', 'put')),
  multiplier integer not null check (multiplier > 0),
  is_active boolean not null,
  -- When the contract was listed; null when the source does not say, and the
  -- contract then counts as listed from its first quote observation.
  listed_at timestamptz,
  updated_at timestamptz not null default now()
);

-- A chain read is one underlying's contracts, optionally one expiry.
create index option_contracts_chain_idx on option_contracts (instrument_id, expiry, strike);

create table option_quotes (
  contract_id uuid not null references option_contracts (id),
  observed_at timestamptz not null,
  bid double precision check (bid >= 0 and bid < 'infinity'),
  ask double precision check (ask >= 0 and ask < 'infinity'),
  last_price double precision check (last_price >= 0 and last_price < 'infinity'),
  volume double precision check (volume >= 0 and volume < 'infinity'),
  open_interest double precision check (open_interest >= 0 and open_interest < 'infinity'),
  source text not null check (length(source) between 1 and 300),
  -- The provider's Greeks: all six or none (an observation is whole or absent, never partly zero).
  delta double precision,
  gamma double precision,
  theta double precision,
  vega double precision,
  rho double precision,
  implied_volatility double precision,
  recorded_at timestamptz not null default now(),
  -- "The latest observation at or before T" per contract walks this key backwards from T.
  primary key (contract_id, observed_at),
  check (bid is null or ask is null or bid <= ask),
  check (
    (delta, gamma, theta, vega, rho, implied_volatility) is null
    or (delta, gamma, theta, vega, rho, implied_volatility) is not null
  )
);

-- One row per underlying and day: ingested, or derived from the stored
-- chain and bars (POST /admin/v1/derive). Figures the data cannot support
-- are null, never 0.
create table iv_snapshots (
  instrument_id uuid not null references instruments (id),
  as_of_date date not null,
  underlying_price double precision,
  atm_implied_volatility double precision,
  implied_volatility_30d double precision,
  historical_volatility_30d double precision,
  parkinson_historical_volatility_30d double precision,
  put_call_iv_ratio_30d double precision,
  term_structure jsonb not null default '[]',
  source text not null check (length(source) between 1 and 300),
  updated_at timestamptz not null default now(),
  primary key (instrument_id, as_of_date)
);

do $$
begin
  if (select s.tier from storage_tier s) in ('timescaledb', 'timescaledb-apache') then
    -- Reads name their contracts (the primary key); the default index on the
    -- time column alone would only cost writes (see 004_bar_time_indexes.sql).
    perform create_hypertable('option_quotes', 'observed_at',
      chunk_time_interval => interval '30 days', create_default_indexes => false);
    perform create_hypertable('iv_snapshots', 'as_of_date',
      chunk_time_interval => interval '365 days', create_default_indexes => false);
  end if;
end
$$;
