-- One knowledge time per bar revision: `as_of`, the instant the revision
-- became known (docs/api.md, "Point in time"). An upload row's `asOf` is
-- that instant; a row without one is known from the moment its upload began.
-- Every read prints a bar's asOf as the knowledge time of the revision it
-- serves, and a read with asOf=T serves only revisions whose as_of <= T.
--
-- Until this migration each revision carried two instants: `as_of`, the
-- row's stated publication time, printed but not used by any read, and
-- `known_at`, the instant every asOf read filtered on. The stored knowledge
-- times are kept: known_at becomes as_of and the other column goes, so every
-- read at any instant serves the same bars as before; only the printed asOf
-- changes, to the instant the read actually used.
--
-- Columns are dropped and renamed rather than copied, so no bar row is
-- rewritten (both are catalogue changes, compressed chunks included). The
-- continuous aggregates of full TimescaleDB read intraday_bars.as_of, so they
-- are dropped first and made again over the renamed column; 025 materialises
-- them, which cannot be done inside this transaction, and only then adds
-- their refresh policies (a policy's first run would collide with it).

alter table daily_bars drop column as_of;
alter table daily_bars rename column known_at to as_of;

alter table daily_bar_revisions drop column as_of;
alter table daily_bar_revisions rename column known_at to as_of;
alter table daily_bar_revisions rename constraint daily_bar_revisions_known_at to daily_bar_revisions_as_of;
alter index daily_bar_revisions_known_idx rename to daily_bar_revisions_as_of_idx;

alter table intraday_bar_revisions drop column as_of;
alter table intraday_bar_revisions rename column known_at to as_of;

do $$
declare
  tier text := (select s.tier from storage_tier s);
  rollup record;
  attempt integer;
begin
  if tier = 'timescaledb' then
    for rollup in select * from (values
      ('intraday_bars_5min'), ('intraday_bars_15min'), ('intraday_bars_30min'), ('intraday_bars_1hour')
    ) as r (name)
    loop
      -- Dropping an aggregate deletes its refresh policy's job, and TimescaleDB
      -- does so without waiting for a run of that job in flight, which may
      -- write the job's statistics at the same moment: "tuple concurrently
      -- updated" (seen when 002's policies ran at once on a fresh database).
      -- The deletion cancels the run, so the next attempt finds it gone.
      attempt := 1;
      loop
        begin
          execute format('drop materialized view %I', rollup.name);
          exit;
        exception when internal_error then
          if sqlerrm <> 'tuple concurrently updated' or attempt >= 50 then
            raise;
          end if;
          attempt := attempt + 1;
          perform pg_sleep(0.1);
        end;
      end loop;
    end loop;
  end if;

  alter table intraday_bars drop column as_of;
  alter table intraday_bars rename column known_at to as_of;

  for rollup in
    select * from (values
      ('intraday_bars_5min', interval '5 minutes'),
      ('intraday_bars_15min', interval '15 minutes'),
      ('intraday_bars_30min', interval '30 minutes'),
      ('intraday_bars_1hour', interval '1 hour')
    ) as r (name, width)
  loop
    if tier = 'timescaledb' then
      -- As sql/002 defines them, over the renamed column.
      execute format($view$
        create materialized view %I
        with (timescaledb.continuous, timescaledb.materialized_only = false) as
        select
          instrument_id,
          time_bucket(%L::interval, bar_ts) as bar_ts,
          first(open_price, bar_ts) as open_price,
          max(high_price) as high_price,
          min(low_price) as low_price,
          last(close_price, bar_ts) as close_price,
          case when count(volume) = count(*) then sum(volume) end as volume,
          last(quote_currency, bar_ts) as quote_currency,
          last(quote_unit, bar_ts) as quote_unit,
          last(source, bar_ts) as source,
          max(as_of) as as_of
        from intraday_bars
        group by instrument_id, time_bucket(%L::interval, bar_ts)
        with no data
      $view$, rollup.name, rollup.width, rollup.width);
    else
      -- A rollup table's asOf is the latest knowledge time of its minutes,
      -- as the ingest path writes it (prices/repository.ts, rollupOf).
      execute format($update$
        update %I r
        set as_of = m.as_of
        from (
          select instrument_id, date_bin(%L::interval, bar_ts, '2000-01-03T00:00:00Z') as bucket, max(as_of) as as_of
          from intraday_bars
          group by 1, 2
        ) m
        where m.instrument_id = r.instrument_id and m.bucket = r.bar_ts and m.as_of is distinct from r.as_of
      $update$, rollup.name, rollup.width);
    end if;
  end loop;
end
$$;
