-- News about instruments (catalyst events are the company-confirmed ones),
-- and the price reaction derived for each. Plain tables on every storage
-- tier: a few news items per instrument and week, read per instrument newest
-- first or aggregated per instrument, not a series of bars to bucket or
-- compress.

-- One row per news item. event_class is an open vocabulary (the source's own
-- classes: earnings_release, guidance, merger_acquisition, ...). created_at is
-- the first receipt and never moves; updated_at moves when a correction
-- changes a value.
create table news (
  id uuid primary key,
  instrument_id uuid not null references instruments (id),
  event_class text not null check (length(event_class) between 1 and 64),
  headline text not null check (length(headline) between 1 and 1000),
  source text not null check (length(source) between 1 and 300),
  url text not null check (length(url) between 1 and 2048 and url ~* '^https?://'),
  published_at timestamptz not null,
  is_company_confirmed boolean not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- The news and events reads: one instrument, newest published first, ties by
-- id, limit N, optionally bounded in time; eventClass and the company-confirmed
-- predicate filter the rows walked. Also the derivation's read of an
-- instrument's news.
create index news_instrument_published_idx on news (instrument_id, published_at desc, id);

-- One row per news item whose session the instrument's daily bars can place
-- (server/event-reactions/derive.ts says how); an item they cannot place has
-- no row, never a zero move. event_class and published_at are those of the
-- news item the row was derived from.
create table event_reactions (
  event_id uuid primary key references news (id),
  instrument_id uuid not null references instruments (id),
  event_class text not null,
  published_at timestamptz not null,
  event_date date not null,
  previous_session_date date not null check (previous_session_date < event_date),
  previous_close double precision not null,
  session_close double precision not null,
  reaction_pct double precision not null,
  abs_move_pct double precision not null check (abs_move_pct >= 0),
  is_corporate_adjusted boolean not null,
  -- The action-set version behind an adjusted move, and only there.
  action_set_version integer check ((action_set_version is not null) = is_corporate_adjusted),
  updated_at timestamptz not null default now()
);

-- The per-instrument reactions read (by event date) and the derivation's
-- per-instrument delete.
create index event_reactions_instrument_date_idx on event_reactions (instrument_id, event_date, event_id);

-- The coverage aggregate over some classes can read only their reactions, from
-- the index alone once the table's pages are all visible. Measured on 2,000
-- instruments × 50 reactions in 5 classes, two classes asked for: 270 buffers
-- instead of the table's 1,840. Over every class the statement reads the table
-- once, as no index would make it cheaper
-- (test/integration/event-reaction-coverage-plan.test.ts).
create index event_reactions_class_idx on event_reactions (event_class, instrument_id, event_date);
