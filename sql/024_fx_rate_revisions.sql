-- The FX rates a correction replaced, each with the instant it became known
-- (docs/api.md, "FX rates"). A rate's knowledge time is its row's as_of: the
-- instant its upload row states, else the instant the upload began. fx_rates
-- keeps the latest revision of each (base, quote, rate_date), so a read
-- without asOf reads fx_rates alone; this table holds the earlier
-- ones. A read with asOf = T takes the stored row when its as_of <= T, else
-- the last revision replaced with as_of <= T, else no rate.
--
-- An upload may not replace a revision with one known earlier, so along a
-- rate's revisions as_of never decreases, and the last replaced revision
-- known at T is the latest known at T. Two revisions known at the same
-- instant are ordered by replaced_seq: the later upload is the later
-- revision.
--
-- The rows stored before this migration keep their as_of as their knowledge
-- time; the values their corrections replaced were not kept, so this table
-- starts empty.
--
-- A plain table on every storage tier: corrections are rare (a handful per
-- pair and day at most) and every read names one pair and day, which the
-- primary key serves; a hypertable would add a chunk lookup to each read.
create table fx_rate_revisions (
  base text not null,
  quote text not null,
  rate_date date not null,
  replaced_seq bigint generated always as identity,
  -- The bounds of fx_rates.rate (sql/005_fx_rates.sql): a kept rate is one that was stored.
  rate double precision not null check (rate >= 2.2250738585072014e-308 and rate < 'infinity'),
  source text not null,
  as_of timestamptz not null,
  primary key (base, quote, rate_date, replaced_seq)
);
