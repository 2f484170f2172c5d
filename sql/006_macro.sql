-- Macro series fetched from the upstream provider (FRED), stored so reads are
-- served from here while the copy is fresh, and while the provider is down.
--
-- macro_series holds each series' description and when its copy was fetched;
-- macro_observations its observations. A refresh replaces a series' stored
-- observations in one transaction, so a read sees one fetched copy, never a
-- mix of two. Missing observations (FRED's ".") are not stored at all.
create table macro_series (
  series_id text primary key check (series_id ~ '^[A-Z0-9]{1,30}$'),
  title text not null,
  units text not null,
  frequency text not null check (frequency in ('daily', 'weekly', 'biweekly', 'monthly', 'quarterly', 'semiannual', 'annual')),
  seasonal_adjustment text,
  -- When the provider last revised the series (FRED's last_updated); null for a bundled copy.
  provider_updated_at timestamptz,
  source text not null,
  fetched_at timestamptz not null
);

create table macro_observations (
  series_id text not null references macro_series (series_id),
  obs_date date not null,
  value double precision not null check (value = value and value <> 'infinity' and value <> '-infinity'),
  primary key (series_id, obs_date)
);

do $$
begin
  if (select s.tier from storage_tier s) in ('timescaledb', 'timescaledb-apache') then
    -- Daily series reach back to 1962 (about 16,000 observations each);
    -- ten-year chunks keep a series' full-history read to a few chunks. Every
    -- read names its series, which the primary key serves, so the default
    -- index on obs_date alone is not created.
    perform create_hypertable('macro_observations', 'obs_date',
      chunk_time_interval => interval '3650 days', create_default_indexes => false);
  end if;
end
$$;
