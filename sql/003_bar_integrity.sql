-- Bars no longer carry a foreign key to instruments.
--
-- A foreign key is checked row by row: on 500,000 bars (TimescaleDB tier)
-- INSERT ... SELECT into daily_bars took 13.7 s with it and 4.5 s without,
-- COPY 12.1 s and 5.0 s; bars are the bulk of every ingest. The same
-- guarantee is kept another way:
--   * every bar reaches the database through the ingest path, which refuses
--     a batch naming an unknown instrument inside the transaction that writes
--     it (and names the offending row);
--   * instruments are never deleted (a delisted instrument stays, because
--     point-in-time reads need it), and the trigger below makes that a rule,
--     so no instrument can disappear between that check and the commit.
do $$
declare
  fk record;
begin
  for fk in
    select c.conrelid::regclass as tbl, c.conname
    from pg_constraint c
    where c.contype = 'f'
      and c.confrelid = 'instruments'::regclass
      and c.conrelid in (
        select oid from pg_class
        where relname in ('daily_bars', 'intraday_bars', 'intraday_bars_5min', 'intraday_bars_15min', 'intraday_bars_30min', 'intraday_bars_1hour')
          and relnamespace = current_schema()::regnamespace
      )
  loop
    execute format('alter table %s drop constraint %I', fk.tbl, fk.conname);
  end loop;
end
$$;

create function refuse_instrument_removal() returns trigger language plpgsql as $$
begin
  raise exception 'instruments are never deleted: delisted instruments stay for point-in-time reads, and bars rely on it'
    using errcode = 'restrict_violation';
end
$$;

create trigger instruments_never_deleted
  before delete on instruments
  for each row execute function refuse_instrument_removal();

create trigger instruments_never_truncated
  before truncate on instruments
  for each statement execute function refuse_instrument_removal();
