-- Versioned daily bars. An instrument's action-set version also counts the
-- uploads that change its stored daily history: a bar's values corrected, or
-- a bar inserted on or before its latest stored date. Such an upload bumps
-- the version once, and what it replaced is kept here, so every version can
-- be read again exactly as it stood (docs/api.md, "Versions"). Bars appended
-- after the latest stored date change no version.

-- One row per version made from here on: when, and the latest bar date stored
-- just before it, which is the last date the previous version covers (bars
-- appended later belong to later versions). Null for a version made before
-- this table existed: its bars are not capped.
create table daily_price_versions (
  instrument_id uuid not null references instruments (id),
  version integer not null check (version > 0),
  made_at timestamptz not null,
  prior_last_bar_date date,
  primary key (instrument_id, version)
);

insert into daily_price_versions (instrument_id, version, made_at, prior_last_bar_date)
select instrument_id, action_set_version, min(recorded_at), null
from corporate_action_revisions
group by instrument_id, action_set_version;

-- What a version-bumping upload replaced: a bar's earlier values, or, with
-- `absent`, that the bar did not exist before (its values are then null).
-- Version v reads, for each date, the values of the earliest revision
-- replaced in a version above v, else the stored bar.
create table daily_bar_revisions (
  instrument_id uuid not null references instruments (id),
  bar_date date not null,
  replaced_in_version integer not null check (replaced_in_version > 0),
  absent boolean not null,
  open_price double precision,
  high_price double precision,
  low_price double precision,
  close_price double precision,
  volume double precision,
  quote_currency text,
  quote_unit text,
  stale boolean,
  price_basis text,
  reflects_actions_through date,
  source text,
  as_of timestamptz,
  primary key (instrument_id, bar_date, replaced_in_version),
  check (absent = (close_price is null))
);
