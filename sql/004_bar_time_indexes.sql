-- Bar tables keep only the indexes their queries use.
--
-- create_hypertable adds an index on the time column alone (`bar_date DESC`,
-- `bar_ts DESC`). On daily_bars nothing reads by date alone: every query
-- names its instruments (instrument_id = any (...) and a bar_date range, or
-- the last bar before a date per instrument), which the primary key
-- (instrument_id, bar_date) serves, and the ingest upserts on that key.
-- The index only cost writes: 1.46 million bars took 41.1 s to insert with it
-- and 29.6 s without (INSERT ... SELECT, TimescaleDB 2.19.3 Apache edition).
--
-- intraday_bars keeps its bar_ts index: on the tiers without continuous
-- aggregates, refreshing the rollups reads every instrument's minutes in the
-- batch's time range. For a one-day batch in a 7-day chunk of 100 instruments
-- the index read 39,000 rows where a scan read the chunk's 273,000 (87 ms
-- against 191 ms, TimescaleDB 2.19.3 Apache edition).
--
-- On the TimescaleDB Apache tier the four rollups are plain tables created
-- LIKE intraday_bars, so they copied its bar_ts index; they are read per
-- instrument and upserted on their primary key (instrument_id, bar_ts).
--
-- On plain PostgreSQL none of these indexes exist, and on full TimescaleDB
-- the rollups are continuous aggregates, whose indexes have other names:
-- `if exists` makes this one statement list for every tier.
drop index if exists daily_bars_bar_date_idx;
drop index if exists intraday_bars_5min_bar_ts_idx;
drop index if exists intraday_bars_15min_bar_ts_idx;
drop index if exists intraday_bars_30min_bar_ts_idx;
drop index if exists intraday_bars_1hour_bar_ts_idx;
