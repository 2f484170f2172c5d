-- The earnings calendar: one row per report of an instrument's fiscal period.
-- A plain table on every storage tier: a company reports four or so times a
-- year, so even 10,000 instruments over 20 years are under a million rows,
-- read by a window of report dates, not a series to bucket or compress.
--
-- (instrument_id, fiscal_year, fiscal_period) is the natural key: a
-- rescheduled report (a new report_date or session) or one now reported is a
-- correction of its row, never a second row. id is the row's stable name,
-- given at ingest or derived from the natural key; the two always agree.
-- There is no EPS column of any kind: estimates, actuals and consensus are
-- not part of the calendar.
create table earnings_reports (
  id uuid primary key,
  instrument_id uuid not null references instruments (id),
  fiscal_year integer not null check (fiscal_year between 1900 and 2200),
  fiscal_period text not null check (fiscal_period in ('Q1', 'Q2', 'Q3', 'Q4', 'H1', 'H2', 'FY')),
  report_date date not null,
  -- bmo: before market open; amc: after market close; dmh: during market hours.
  session text not null check (session in ('bmo', 'amc', 'dmh', 'unknown')),
  status text not null check (status in ('scheduled', 'reported')),
  source text not null check (length(source) between 1 and 300),
  updated_at timestamptz not null default now(),
  unique (instrument_id, fiscal_year, fiscal_period)
);

-- The market-wide read is a window of report dates (at most 365 days), in
-- report_date order: a range scan of this index. The per-instrument read, and
-- the market-wide one narrowed to an instrument, scan the second.
create index earnings_reports_report_date_idx on earnings_reports (report_date);
create index earnings_reports_instrument_date_idx on earnings_reports (instrument_id, report_date);
