-- Sentiment: scores as their sources publish them, each source's one scale,
-- and the source leads derived from the scores and the adjusted daily closes.
--
-- A score is stored exactly as ingested (float8, never rescaled); its scale
-- belongs to its source. A source has one scale, fixed by its first upload:
-- the leads pool a source's scores over every instrument, which only means
-- something when all of them are on the same scale. A source that changes
-- its scale is a new source.
create table sentiment_sources (
  source text primary key check (length(source) between 1 and 300),
  scale_min double precision not null check (scale_min > '-infinity'),
  scale_max double precision not null check (scale_max < 'infinity'),
  check (scale_min < scale_max)
);

create table sentiment_scores (
  instrument_id uuid not null references instruments (id),
  source text not null references sentiment_sources (source),
  subject_class text not null check (subject_class in ('business', 'market_commentary')),
  as_of_date date not null,
  -- 'NaN' is greater than 'infinity' in PostgreSQL, so the bounds refuse both;
  -- the ingest refuses a score outside its source's scale before this.
  score double precision not null check (score > '-infinity' and score < 'infinity'),
  is_headline_only boolean not null,
  updated_at timestamptz not null default now(),
  -- The read is one instrument's scores over a date range, ordered by date,
  -- source and subject class: the key in that order serves it as it stands.
  primary key (instrument_id, as_of_date, source, subject_class)
);

-- One row per source and subject class with scores, derived (never ingested)
-- by server/sentiment/derive.ts: the Pearson correlation of the score with the
-- adjusted return of each of the 11 sessions from lag 0 to lag 10, and the
-- verdict. Figures the pairs cannot support are null, never 0.
create table sentiment_source_leads (
  source text not null references sentiment_sources (source),
  subject_class text not null check (subject_class in ('business', 'market_commentary')),
  best_lag_days integer check (best_lag_days between 0 and 10),
  peak_correlation double precision check (peak_correlation between -1 and 1),
  sample_size integer check (sample_size >= 0),
  is_promotion_eligible boolean not null,
  -- Per lag 0..10: the correlation (null with too few pairs) and the pairs.
  correlations double precision[] not null check (cardinality(correlations) = 11),
  sample_sizes integer[] not null check (cardinality(sample_sizes) = 11),
  instruments integer not null check (instruments > 0),
  first_as_of_date date not null,
  last_as_of_date date not null,
  updated_at timestamptz not null default now(),
  primary key (source, subject_class),
  check ((best_lag_days is null) = (peak_correlation is null) and (best_lag_days is null) = (sample_size is null))
);

do $$
begin
  if (select s.tier from storage_tier s) in ('timescaledb', 'timescaledb-apache') then
    -- Reads name their instrument (the primary key); the default index on the
    -- time column alone would only cost writes (see 004_bar_time_indexes.sql).
    -- Scores are corrected in place, so no compression.
    perform create_hypertable('sentiment_scores', 'as_of_date',
      chunk_time_interval => interval '365 days', create_default_indexes => false);
  end if;
end
$$;
