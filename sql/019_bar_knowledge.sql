-- When each revision of a bar became known (docs/api.md, "Point in time"):
-- the instant an upload stated for it (`knownAt`), else the instant the upload
-- that stored it began. A read with asOf=T gives, for each bar, the latest
-- revision known at T: the stored bar when its known_at <= T, else the latest
-- kept revision known by then, else no bar. An upload may not replace a
-- revision with one known earlier, so along a bar's revisions known_at never
-- decreases and "latest known" is the last written.
--
-- Rows stored before this migration have no recorded knowledge time. They
-- are taken as known at the end of their bar's day (a daily bar) or minute
-- (an intraday bar), the assumption the demo load states for its history.

-- Added not null with a constant default, the form a compressed hypertable
-- accepts (full TimescaleDB), then set for the rows already stored. Uploads
-- write it explicitly; a row written without it (a bulk COPY by hand) is
-- known from when it was stored.
alter table daily_bars add column known_at timestamptz not null default '-infinity';
update daily_bars set known_at = bar_date + interval '1 day' - interval '1 millisecond';
alter table daily_bars alter column known_at set default now();

-- A kept revision's own known_at; null where the revision records that the
-- bar was absent.
alter table daily_bar_revisions add column known_at timestamptz;
update daily_bar_revisions set known_at = bar_date + interval '1 day' - interval '1 millisecond' where not absent;
alter table daily_bar_revisions add constraint daily_bar_revisions_known_at check (absent = (known_at is null));

-- The revisions of a bar known at an instant: a read looks them up by bar and knowledge time.
create index daily_bar_revisions_known_idx on daily_bar_revisions (instrument_id, bar_date, known_at);

alter table intraday_bars add column known_at timestamptz not null default '-infinity';
update intraday_bars set known_at = bar_ts + interval '1 minute';
alter table intraday_bars alter column known_at set default now();

-- What an intraday upload replaced: a stored 1-minute bar's earlier values,
-- with the instant they were known. Intraday bars have no versions; the
-- revisions of a bar are ordered by known_at, then by when they were
-- replaced (replaced_seq) for revisions stated known at the same instant.
create table intraday_bar_revisions (
  instrument_id uuid not null references instruments (id),
  bar_ts timestamptz not null,
  replaced_seq bigint generated always as identity,
  known_at timestamptz not null,
  open_price double precision not null,
  high_price double precision not null,
  low_price double precision not null,
  close_price double precision not null,
  volume double precision,
  quote_currency text not null,
  quote_unit text not null,
  source text not null,
  as_of timestamptz not null,
  primary key (instrument_id, bar_ts, replaced_seq)
);
