-- The economic calendar: one row per scheduled release of a macro figure.
-- A plain table on every storage tier: a calendar holds a few thousand rows
-- a year across all countries, read newest first with filters, not a series
-- of bars to bucket or compress.
--
-- actual, forecast and previous are the provider's strings, stored exactly as
-- ingested (never trimmed or parsed); null when the provider gives none.
create table economic_events (
  id uuid primary key,
  country text not null check (country ~ '^[A-Z]{2}$'),
  event_class text not null check (event_class in (
    'central_bank', 'employment', 'inflation', 'growth', 'consumer', 'manufacturing', 'services',
    'housing', 'trade', 'sentiment_survey', 'fiscal', 'bond_auction', 'energy'
  )),
  importance text not null check (importance in ('low', 'medium', 'high')),
  name text not null check (length(name) between 1 and 200),
  reference_period text not null check (length(reference_period) between 1 and 64),
  scheduled_at timestamptz not null,
  actual text check (length(actual) <= 64),
  forecast text check (length(forecast) <= 64),
  previous text check (length(previous) <= 64),
  source text not null check (length(source) between 1 and 300),
  updated_at timestamptz not null default now()
);

-- The read is "newest scheduled first, ties by id, limit N" with optional
-- filters. Without a country filter it walks this index from the newest end
-- and stops after N matches (eventClass and importance filter the rows it
-- walks); with one it walks the second, which holds only that country's
-- releases in the same order.
create index economic_events_scheduled_idx on economic_events (scheduled_at desc, id);
create index economic_events_country_scheduled_idx on economic_events (country, scheduled_at desc, id);
