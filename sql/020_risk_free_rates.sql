-- The stored history of the risk-free rate that model inputs read point in
-- time: the monthly 3-month Treasury bill rate (FRED TB3MS, secondary market,
-- monthly average, percent), one row per series and observation.
--
-- A row counts as known from `known_from` on, never before: a read at instant
-- T uses the row with the latest known_from <= T (server/macro/risk-free-history.ts).
-- For a monthly average that is the first instant after the month ends
-- (TB3MS 2001-03-01, the March 2001 average, is known from
-- 2001-04-01T00:00:00Z). The daily DGS3MO observations of a FRED copy stay in
-- macro_observations and follow their own rule (known from the end of their
-- UTC day); this table holds what is not served as a macro series.
create table risk_free_rates (
  series_id text not null check (series_id ~ '^[A-Z0-9]{1,30}$'),
  -- FRED's observation date: the first day of the month for a monthly average.
  obs_date date not null,
  known_from timestamptz not null check (known_from > obs_date::timestamp at time zone 'UTC'),
  -- Percent, as published (3.13 is 3.13 %).
  value double precision not null check (value > -100 and value < 100),
  -- Where the row came from, e.g. the bundled gretl snapshot of FRED.
  source text not null check (length(source) between 1 and 300),
  primary key (series_id, obs_date)
);

-- "The latest row known at T" is one backward step on this index.
create index risk_free_rates_known_from_idx on risk_free_rates (known_from desc, series_id);

-- Option contracts name their origin, as quotes do, so an answer built from
-- contracts alone (the expiries, a contract not quoted yet) can say where
-- they came from in meta.source. Contracts stored before this migration say
-- `unrecorded`: nothing told us their origin.
alter table option_contracts add column source text not null default 'unrecorded' check (length(source) between 1 and 300);

-- The demo's contracts were generated with their quotes (server/demo/synthetic-options.ts):
-- a contract whose every quote is synthetic-demo is a synthetic-demo contract.
update option_contracts c
set source = 'synthetic-demo'
where exists (select 1 from option_quotes q where q.contract_id = c.id)
  and not exists (select 1 from option_quotes q where q.contract_id = c.id and q.source <> 'synthetic-demo');
-- From here on every contract is written through the contracts ingest, which always names a source.
alter table option_contracts alter column source drop default;
