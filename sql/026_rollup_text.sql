-- Each intraday rollup bar's response text, kept beside its numbers: its JSON
-- object and its CSV row as the price reads write them (server/prices/bar-text.ts).
-- The ingest path writes both whenever it recomputes a bucket
-- (prices/repository.ts, refreshRollups), so a read without asOf joins stored
-- text instead of writing it. A year of 1-hour bars (8,760): 6.6 ms to join
-- the stored objects against 32 ms to write them from the numbers (TimescaleDB
-- Apache edition, 2 cores; docs/benchmarks.md).
--
-- Rows stored before this migration are given their text by the migration
-- runner (server/migrations.ts, after this file), with the code the ingest path
-- uses; a row still without it is written at read, so nothing reads wrong
-- meanwhile. Full TimescaleDB keeps the rollups as continuous aggregates,
-- which write the text at read.
do $$
declare
  rollup text;
begin
  if (select s.tier from storage_tier s) <> 'timescaledb' then
    foreach rollup in array array['intraday_bars_5min', 'intraday_bars_15min', 'intraday_bars_30min', 'intraday_bars_1hour'] loop
      execute format('alter table %I add column bar_json text, add column bar_csv text', rollup);
    end loop;
  end if;
end
$$;
