-- mds:no-transaction
-- Materialises the continuous aggregates that 022 made again (full
-- TimescaleDB) over the whole history, then gives them the refresh policies
-- of sql/002. The policies reach back only a few days, and a real-time
-- aggregate serves from its materialisation below the last refreshed bucket,
-- so a bucket never refreshed would be missing from a read. A refresh cannot
-- run inside a transaction; this DO block runs on its own, outside one. The
-- policies come last: a policy's first run, due at once, would collide with
-- the refresh ("due to a concurrent refresh").
do $$
declare
  rollup record;
begin
  if (select s.tier from storage_tier s) = 'timescaledb' then
    for rollup in
      select * from (values
        ('intraday_bars_5min', interval '5 minutes', interval '1 day'),
        ('intraday_bars_15min', interval '15 minutes', interval '2 days'),
        ('intraday_bars_30min', interval '30 minutes', interval '3 days'),
        ('intraday_bars_1hour', interval '1 hour', interval '7 days')
      ) as r (name, width, lookback)
    loop
      call refresh_continuous_aggregate(rollup.name::regclass, null, null);
      perform add_continuous_aggregate_policy(rollup.name::regclass,
        start_offset => rollup.lookback,
        end_offset => rollup.width,
        schedule_interval => rollup.width);
    end loop;
  end if;
end
$$;
