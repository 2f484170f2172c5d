-- FX rates: one rate per currency pair and day, as ingested. `rate` is units
-- of the quote currency per one unit of the base currency. A correction
-- rewrites the row in place (latest value, its as_of), so no compression: a
-- compressed chunk would turn each correction into a decompression.
--
-- The lowest rate accepted is the smallest normal double (2.2250738585072014e-308):
-- the inverse pair is served as 1 / rate, and the reciprocal of anything
-- smaller is infinite. 'NaN' is greater than 'infinity' in PostgreSQL, so the
-- upper bound refuses both.
create table fx_rates (
  base text not null check (base ~ '^[A-Z]{3}$'),
  quote text not null check (quote ~ '^[A-Z]{3}$'),
  rate_date date not null,
  rate double precision not null check (rate >= 2.2250738585072014e-308 and rate < 'infinity'),
  source text not null,
  as_of timestamptz not null,
  primary key (base, quote, rate_date),
  check (base <> quote)
);

-- Every read names its pair: the exact day, or the nearest day before or
-- after, all served by the primary key. The hypertable's default index on
-- rate_date alone would only cost writes (see 004_bar_time_indexes.sql).
do $$
begin
  if (select s.tier from storage_tier s) in ('timescaledb', 'timescaledb-apache') then
    perform create_hypertable('fx_rates', 'rate_date', chunk_time_interval => interval '365 days', create_default_indexes => false);
  end if;
end
$$;
