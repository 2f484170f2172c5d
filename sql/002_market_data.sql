-- Reference data, daily and intraday bars, corporate actions.
-- Tier-specific storage (hypertables, continuous aggregates, compression) is
-- chosen from storage_tier, recorded by the migration runner before this runs.

create extension if not exists pg_trgm;

create table instruments (
  id uuid primary key,
  asset_class text not null check (asset_class in ('equity', 'etf', 'index', 'crypto', 'fx', 'future', 'metal', 'other', 'fund', 'bond')),
  display_name text not null,
  exchange text,
  region text,
  isin text,
  cusip text,
  distribution_policy text check (distribution_policy in ('accumulating', 'distributing')),
  quote_currency text,
  quote_unit text,
  is_active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create index instruments_display_name_trgm on instruments using gin (lower(display_name) gin_trgm_ops);

-- Point-in-time symbology: which symbol an instrument traded under, by day.
-- valid_to is the last day (inclusive); null while the mapping is current.
-- valid_from is '-infinity' when the start predates what the source records.
create table instrument_symbols (
  instrument_id uuid not null references instruments (id),
  symbol text not null,
  valid_from date not null,
  valid_to date,
  primary key (instrument_id, valid_from),
  check (valid_to is null or valid_to >= valid_from)
);

create index instrument_symbols_symbol_idx on instrument_symbols (upper(symbol));
create index instrument_symbols_trgm on instrument_symbols using gin (upper(symbol) gin_trgm_ops);

-- Broker namespaces: reverse lookup is exact on (broker, code).
create table instrument_broker_codes (
  instrument_id uuid not null references instruments (id),
  broker text not null,
  code text not null,
  primary key (instrument_id, broker)
);

create index instrument_broker_codes_lookup_idx on instrument_broker_codes (broker, code);

-- Daily bars exactly as ingested. A source that publishes only closes leaves
-- open, high, low and volume null. Most sources are raw; a vendor-adjusted
-- source already reflects every action effective through
-- reflects_actions_through, so the engine never applies those twice.
create table daily_bars (
  instrument_id uuid not null references instruments (id),
  bar_date date not null,
  open_price double precision,
  high_price double precision,
  low_price double precision,
  close_price double precision not null,
  volume double precision,
  quote_currency text not null,
  quote_unit text not null,
  stale boolean not null default false,
  price_basis text not null default 'raw' check (price_basis in ('raw', 'vendor_adjusted')),
  reflects_actions_through date,
  source text not null,
  as_of timestamptz not null,
  primary key (instrument_id, bar_date),
  check ((price_basis = 'vendor_adjusted') = (reflects_actions_through is not null))
);

-- One-minute bars; coarser intervals are rollups of these.
create table intraday_bars (
  instrument_id uuid not null references instruments (id),
  bar_ts timestamptz not null,
  open_price double precision not null,
  high_price double precision not null,
  low_price double precision not null,
  close_price double precision not null,
  volume double precision,
  quote_currency text not null,
  quote_unit text not null,
  source text not null,
  as_of timestamptz not null,
  primary key (instrument_id, bar_ts)
);

-- Corporate actions are append-only: a correction is a new revision under a
-- new action-set version, so the set of any past version can be rebuilt.
create table corporate_action_revisions (
  revision_id bigint generated always as identity primary key,
  action_id uuid not null,
  instrument_id uuid not null references instruments (id),
  action_set_version integer not null check (action_set_version > 0),
  kind text not null check (kind in ('split', 'cash_dividend', 'stock_dividend', 'spinoff', 'merger', 'symbol_change', 'delisting')),
  effective_date date not null,
  announcement_date date,
  knowledge_date timestamptz,
  knowledge_provenance text not null check (knowledge_provenance in ('observed', 'vendor_pit', 'announced', 'backfilled')),
  params jsonb not null,
  source text not null,
  created_at timestamptz not null,
  recorded_at timestamptz not null default now(),
  unique (action_id, action_set_version),
  check ((knowledge_provenance = 'backfilled') = (knowledge_date is null))
);

create index corporate_action_revisions_instrument_idx on corporate_action_revisions (instrument_id, action_set_version);

create table action_set_versions (
  instrument_id uuid primary key references instruments (id),
  version integer not null,
  changed_at timestamptz not null default now()
);

-- Each time someone checked an instrument's action history against a source.
create table action_coverage_checks (
  id bigint generated always as identity primary key,
  instrument_id uuid not null references instruments (id),
  checked_at timestamptz not null,
  source text not null,
  covered_from date not null,
  actions_found integer not null check (actions_found >= 0),
  unique (instrument_id, checked_at, source)
);

do $$
declare
  tier text := (select s.tier from storage_tier s);
  rollup record;
begin
  if tier in ('timescaledb', 'timescaledb-apache') then
    perform create_hypertable('daily_bars', 'bar_date', chunk_time_interval => interval '365 days');
    perform create_hypertable('intraday_bars', 'bar_ts', chunk_time_interval => interval '7 days');
  end if;

  for rollup in
    select * from (values
      ('intraday_bars_5min', interval '5 minutes', interval '1 day'),
      ('intraday_bars_15min', interval '15 minutes', interval '2 days'),
      ('intraday_bars_30min', interval '30 minutes', interval '3 days'),
      ('intraday_bars_1hour', interval '1 hour', interval '7 days')
    ) as r (name, width, lookback)
  loop
    if tier = 'timescaledb' then
      -- Continuous aggregate with real-time aggregation: rows not yet
      -- materialised are computed from intraday_bars at query time.
      execute format($view$
        create materialized view %I
        with (timescaledb.continuous, timescaledb.materialized_only = false) as
        select
          instrument_id,
          time_bucket(%L::interval, bar_ts) as bar_ts,
          first(open_price, bar_ts) as open_price,
          max(high_price) as high_price,
          min(low_price) as low_price,
          last(close_price, bar_ts) as close_price,
          case when count(volume) = count(*) then sum(volume) end as volume,
          last(quote_currency, bar_ts) as quote_currency,
          last(quote_unit, bar_ts) as quote_unit,
          last(source, bar_ts) as source,
          max(as_of) as as_of
        from intraday_bars
        group by instrument_id, time_bucket(%L::interval, bar_ts)
        with no data
      $view$, rollup.name, rollup.width, rollup.width);
      perform add_continuous_aggregate_policy(rollup.name,
        start_offset => rollup.lookback,
        end_offset => rollup.width,
        schedule_interval => rollup.width);
    else
      -- Same name and columns as the continuous aggregate (and as the 1-minute
      -- table); the ingest path recomputes every bucket a batch touches.
      execute format(
        'create table %I (like intraday_bars including defaults including constraints including indexes)',
        rollup.name);
      execute format('alter table %I add foreign key (instrument_id) references instruments (id)', rollup.name);
    end if;
  end loop;

  if tier = 'timescaledb' then
    alter table daily_bars set (timescaledb.compress, timescaledb.compress_segmentby = 'instrument_id', timescaledb.compress_orderby = 'bar_date');
    perform add_compression_policy('daily_bars', interval '3 years');
    alter table intraday_bars set (timescaledb.compress, timescaledb.compress_segmentby = 'instrument_id', timescaledb.compress_orderby = 'bar_ts');
    perform add_compression_policy('intraday_bars', interval '30 days');
  end if;
end
$$;
