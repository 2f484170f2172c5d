-- Each UTC day of each intraday rollup, as the JSON answer's text of its bars:
-- their objects (the rollup rows' bar_json, sql/026) joined by commas in time
-- order, with the distinct sources and the latest asOf among them. A read
-- without asOf of a rollup in JSON covers whole UTC days, so it joins one row
-- per day instead of one per bar (server/prices/intraday-text-repository.ts).
-- A year of 1-hour bars (8,760): 3.9 ms for its 365 day rows through
-- postgres.js, against 10.8 ms to join the rows' stored objects in one
-- string_agg (TimescaleDB Apache edition, 2 cores; docs/benchmarks.md).
--
-- The ingest path rewrites the days a batch touched whenever it recomputes
-- their buckets, in the same transaction (server/prices/repository.ts,
-- refreshRollups). Days stored before this migration are written by the
-- migration runner (server/runtime/migrations.ts) with the same statement.
-- Full TimescaleDB keeps the rollups as continuous aggregates, which write
-- the text at read, and has no such table.
do $$
begin
  if (select s.tier from storage_tier s) <> 'timescaledb' then
    create table intraday_rollup_days (
      instrument_id uuid not null,
      rollup text not null check (rollup in ('5min', '15min', '30min', '1hour')),
      day date not null,
      bars_json text not null,
      -- A JSON array of the day's distinct sources, in sorted order.
      sources text not null,
      latest_as_of timestamptz not null,
      primary key (instrument_id, rollup, day)
    );
  end if;
end
$$;
