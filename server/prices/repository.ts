import type postgres from 'postgres';
import type { Sql } from '../db/sql.ts';
import { identifierList, timed } from '../db/sql.ts';
import type { PriorClose } from './adjustment.ts';
import type { StagingColumns, WriteCounts } from '../ingest/kind.ts';
import { INTERVAL_MINUTES } from './schema.ts';

type Fragment = postgres.Fragment;

const MINUTE_MS = 60_000;

/**
 * A superseded version of one instrument's daily bars (sql/015): the version
 * read, and the last bar date it covers (null for a version made before
 * revisions were kept: not capped).
 */
export interface VersionView {
  instrumentId: string;
  version: number;
  lastBarDate: string | null;
}

/**
 * What stands for `daily_bars` in a read: the table itself, or, for a
 * superseded version, the bars as that version had them. A date replaced in
 * a later version takes the values of its earliest revision replaced after
 * the version read (none when that revision says the bar was absent), every
 * other date the stored bar; dates after the version's last bar date are
 * left out. Same columns as daily_bars.
 */
export function dailyBarsAt(sql: Sql, view: VersionView | undefined): Fragment {
  if (!view) return sql`daily_bars`;
  const columns = (alias: string) =>
    identifierList(
      sql,
      DAILY_NAMES.map((c) => `${alias}.${c}`),
    );
  const cap = (alias: string) => (view.lastBarDate === null ? sql`` : sql`and ${sql(`${alias}.bar_date`)} <= ${view.lastBarDate}::date`);
  return sql`(
    select ${columns('b')}
    from daily_bars b
    where b.instrument_id = ${view.instrumentId} ${cap('b')}
      and not exists (
        select from daily_bar_revisions r
        where r.instrument_id = b.instrument_id and r.bar_date = b.bar_date and r.replaced_in_version > ${view.version}
      )
    union all
    select ${columns('r')}
    from (
      select distinct on (r.bar_date) r.*
      from daily_bar_revisions r
      where r.instrument_id = ${view.instrumentId} and r.replaced_in_version > ${view.version} ${cap('r')}
      order by r.bar_date, r.replaced_in_version
    ) r
    where not r.absent
  )`;
}

/** Version `version` of one instrument, to be read as superseded: its last bar date is recorded on the version after it. */
export async function versionView(sql: Sql, instrumentId: string, version: number): Promise<VersionView> {
  const [row] = await timed(
    'daily_version_view',
    sql<{ prior_last_bar_date: string | null }[]>`
      select prior_last_bar_date::text
      from daily_price_versions
      where instrument_id = ${instrumentId} and version = ${version + 1}
    `,
  );
  return { instrumentId, version, lastBarDate: row?.prior_last_bar_date ?? null };
}

/** The latest stored bar date of the instrument `instrumentId` names, as text (null without bars): one probe of the primary key's index. */
export function latestBarDate(sql: Sql, instrumentId: Fragment): Fragment {
  return sql`(select bar_date from daily_bars where instrument_id = ${instrumentId} order by bar_date desc limit 1)::text`;
}

/** The latest stored bar date of each instrument, null for one without bars. */
export async function latestBarDates(sql: Sql, ids: string[]): Promise<Map<string, string | null>> {
  const rows = await timed(
    'latest_bar_dates',
    sql<{ id: string; latest: string | null }[]>`
      select i.id, ${latestBarDate(sql, sql`i.id`)} as latest
      from unnest(${ids}::uuid[]) as i (id)
    `,
  );
  return new Map(rows.map((r) => [r.id, r.latest]));
}

/** The latest action-set version of the instrument `instrumentId` names (0 before its first), as the statement's snapshot has it. */
export function latestVersion(sql: Sql, instrumentId: Fragment): Fragment {
  return sql`coalesce((select version from action_set_versions where instrument_id = ${instrumentId}), 0)`;
}

/**
 * For each dividend, the last raw bar before its ex-date (one query for all),
 * from the bars of `view` when given; and the latest version, in the same
 * snapshot, of each instrument with such a bar, so a caller can tell whether
 * those bars are still the version it planned for.
 */
export async function priorCloses(
  sql: Sql,
  dividends: { instrumentId: string; effectiveDate: string }[],
  view?: VersionView,
): Promise<{ closes: Map<string, PriorClose[]>; latestVersions: Map<string, number> }> {
  const closes = new Map<string, PriorClose[]>();
  const latestVersions = new Map<string, number>();
  if (dividends.length === 0) return { closes, latestVersions };
  const rows = await timed(
    'dividend_prior_closes',
    sql<{ instrument_id: string; effective_date: string; bar_date: string; close_price: number; quote_currency: string; latest_version: number }[]>`
      select d.instrument_id, d.effective_date, b.bar_date, b.close_price, b.quote_currency, ${latestVersion(sql, sql`d.instrument_id`)} as latest_version
      from unnest(${dividends.map((d) => d.instrumentId)}::uuid[], ${dividends.map((d) => d.effectiveDate)}::date[]) as d (instrument_id, effective_date)
      join lateral (
        select bar_date, close_price, quote_currency
        from ${dailyBarsAt(sql, view)} b
        where instrument_id = d.instrument_id
          and bar_date < d.effective_date
        order by bar_date desc
        limit 1
      ) b on true
    `,
  );
  for (const r of rows) {
    const list = closes.get(r.instrument_id) ?? [];
    list.push({ effectiveDate: r.effective_date, barDate: r.bar_date, close: r.close_price, quoteCurrency: r.quote_currency });
    closes.set(r.instrument_id, list);
    latestVersions.set(r.instrument_id, r.latest_version);
  }
  return { closes, latestVersions };
}

export async function existingInstruments(sql: Sql, ids: string[]): Promise<Map<string, { quoteCurrency: string | null }>> {
  const rows = await timed(
    'existing_instruments',
    sql<{ id: string; quote_currency: string | null }[]>`
      select id, quote_currency
      from instruments
      where id = any (${ids}::uuid[])
    `,
  );
  return new Map(rows.map((r) => [r.id, { quoteCurrency: r.quote_currency }]));
}

export const INTRADAY_TABLES = {
  '1min': 'intraday_bars',
  '5min': 'intraday_bars_5min',
  '15min': 'intraday_bars_15min',
  '30min': 'intraday_bars_30min',
  '1hour': 'intraday_bars_1hour',
} as const;

export type Interval = keyof typeof INTRADAY_TABLES;

// Ingest: statements over the `ingest_staging` table of a bar upload
// (prices/ingest.ts), inside its transaction.

/** Table columns in COPY order, with their staging types; the staging table and the upsert both come from this. */
export const DAILY_COLUMNS: StagingColumns = [
  ['instrument_id', 'uuid'],
  ['bar_date', 'date'],
  ['open_price', 'float8'],
  ['high_price', 'float8'],
  ['low_price', 'float8'],
  ['close_price', 'float8'],
  ['volume', 'float8'],
  ['quote_currency', 'text'],
  ['quote_unit', 'text'],
  ['stale', 'bool'],
  ['price_basis', 'text'],
  ['reflects_actions_through', 'date'],
  ['source', 'text'],
  ['as_of', 'timestamptz'],
];
export const INTRADAY_COLUMNS: StagingColumns = [
  ['instrument_id', 'uuid'],
  ['bar_ts', 'timestamptz'],
  ['open_price', 'float8'],
  ['high_price', 'float8'],
  ['low_price', 'float8'],
  ['close_price', 'float8'],
  ['volume', 'float8'],
  ['quote_currency', 'text'],
  ['quote_unit', 'text'],
  ['source', 'text'],
  ['as_of', 'timestamptz'],
];
export const columnNames = (columns: StagingColumns) => columns.map(([name]) => name);
const DAILY_NAMES = columnNames(DAILY_COLUMNS);

/**
 * Upserts the staged batch into `table`, keyed by (instrument_id, the time
 * column). A stored row is rewritten only when some value differs, so an
 * unchanged re-post writes nothing; the counts tell inserted from updated.
 */
export async function upsertStagedBars(tx: Sql, table: 'daily_bars' | 'intraday_bars', columns: StagingColumns): Promise<WriteCounts> {
  const names = columnNames(columns);
  const [, time, ...values] = names;
  const list = (alias?: string) => identifierList(tx, alias ? values.map((c) => `${alias}.${c}`) : values);
  const [row] = await tx<{ inserted: number; updated: number }[]>`
    with upserted as (
      insert into ${tx(table)} as b (${identifierList(tx, names)})
      select ${identifierList(tx, names)} from ingest_staging
      on conflict (instrument_id, ${tx(time)}) do update set (${list()}) = (${list('excluded')})
      where (${list('b')}) is distinct from (${list('excluded')})
      returning (xmax = 0) as inserted
    )
    select count(*) filter (where inserted)::int as inserted, count(*) filter (where not inserted)::int as updated
    from upserted
  `;
  return { inserted: row.inserted, updated: row.updated };
}

/** An instrument a daily upload writes: the version its changes go under, and its latest bar date before the upload. */
export interface HistoryWrite {
  instrumentId: string;
  version: number;
  latestBefore: string | null;
}

/**
 * Keeps what the staged daily batch replaces (sql/015): for each staged bar
 * that differs from the stored one, the stored values; for each new bar
 * dated on or before its instrument's latest date before the upload, that it
 * was absent. Each goes under the version the upload writes for its
 * instrument. Returns the instruments with such a bar.
 */
export async function keepReplacedBars(tx: Sql, writes: HistoryWrite[]): Promise<string[]> {
  const values = DAILY_NAMES.slice(2);
  const list = (alias: string) =>
    identifierList(
      tx,
      values.map((c) => `${alias}.${c}`),
    );
  const rows = await tx<{ instrument_id: string }[]>`
    with kept as (
      insert into daily_bar_revisions (instrument_id, bar_date, replaced_in_version, absent, ${identifierList(tx, values)})
      select s.instrument_id, s.bar_date, w.version, b.instrument_id is null, ${list('b')}
      from ingest_staging s
      join unnest(${writes.map((w) => w.instrumentId)}::uuid[], ${writes.map((w) => w.version)}::int[], ${writes.map((w) => w.latestBefore)}::date[])
        as w (instrument_id, version, latest_before) on w.instrument_id = s.instrument_id
      left join daily_bars b on b.instrument_id = s.instrument_id and b.bar_date = s.bar_date
      where (b.instrument_id is null and s.bar_date <= w.latest_before)
         or (b.instrument_id is not null and (${list('b')}) is distinct from (${list('s')}))
      returning instrument_id
    )
    select distinct instrument_id from kept
  `;
  return rows.map((r) => r.instrument_id);
}

const ROLLUPS = (['5min', '15min', '30min', '1hour'] as const).map((interval) => ({
  table: INTRADAY_TABLES[interval],
  width: `${INTERVAL_MINUTES[interval]} minutes`,
  ms: INTERVAL_MINUTES[interval] * MINUTE_MS,
}));

// Bucket origin: a Monday midnight UTC, the same as TimescaleDB's time_bucket
// default, so both tiers cut identical buckets.
const BUCKET_ORIGIN = '2000-01-03T00:00:00Z';

/**
 * Recomputes every rollup bucket the batch touched, from the stored 1-minute
 * bars (not just the batch), so a correction or a partial bucket is right.
 *
 * One pass over the stored minutes between the batch's first and last whole
 * bucket (constants, so only those chunks are read), kept to the touched
 * (instrument, bucket) pairs by a hash semi-join on equality. A join on the
 * bucket range instead degenerates into comparing every stored minute of an
 * instrument with every touched bucket (24 s for a 20-day batch, measured).
 */
export async function refreshRollups(tx: Sql, firstMinute: number, lastMinute: number) {
  const origin = Date.parse(BUCKET_ORIGIN);
  // The semi-join must be hashed. With statistics that lag a fast-growing
  // table the planner can pick a nested loop that rescans the staged batch for
  // every stored minute: measured once at 96 s for a monthly upload that
  // otherwise takes 2 s. Only for these statements; restored below.
  await tx`set local enable_nestloop = off`;
  for (const { table, width, ms } of ROLLUPS) {
    const lo = new Date(origin + Math.floor((firstMinute * MINUTE_MS - origin) / ms) * ms);
    // The last minute of the last touched bucket, not the instant the bucket
    // ends: for the bucket that ends year 9999 that instant is in year 10000,
    // which a Date sends as "+010000-01-01T00:00:00.000Z" and PostgreSQL
    // refuses. Stored bars are whole minutes (the row schema), so `<=` this
    // selects exactly what `<` the end would, and the bound stays a constant.
    const hi = new Date(origin + (Math.floor((lastMinute * MINUTE_MS - origin) / ms) + 1) * ms - MINUTE_MS);
    const bucket = (column: string) => tx`date_bin(${width}::interval, ${tx(column)}, ${BUCKET_ORIGIN}::timestamptz)`;
    await tx`
      insert into ${tx(table)} as r (instrument_id, bar_ts, open_price, high_price, low_price, close_price, volume,
        quote_currency, quote_unit, source, as_of)
      select
        m.instrument_id,
        ${bucket('bar_ts')},
        (array_agg(m.open_price order by m.bar_ts))[1],
        max(m.high_price),
        min(m.low_price),
        (array_agg(m.close_price order by m.bar_ts desc))[1],
        case when count(m.volume) = count(*) then sum(m.volume) end,
        (array_agg(m.quote_currency order by m.bar_ts desc))[1],
        (array_agg(m.quote_unit order by m.bar_ts desc))[1],
        (array_agg(m.source order by m.bar_ts desc))[1],
        max(m.as_of)
      from intraday_bars m
      where m.bar_ts >= ${lo} and m.bar_ts <= ${hi}
        and (m.instrument_id, ${bucket('bar_ts')}) in (select instrument_id, ${bucket('bar_ts')} from ingest_staging)
      group by 1, 2
      on conflict (instrument_id, bar_ts) do update set
        open_price = excluded.open_price,
        high_price = excluded.high_price,
        low_price = excluded.low_price,
        close_price = excluded.close_price,
        volume = excluded.volume,
        quote_currency = excluded.quote_currency,
        quote_unit = excluded.quote_unit,
        source = excluded.source,
        as_of = excluded.as_of
    `;
  }
  await tx`set local enable_nestloop = on`;
}

/**
 * Re-materialises the continuous aggregates (full TimescaleDB) over whole
 * hours from `first` to the end of `lastHour`. The end is added in SQL: after
 * the last hour of year 9999 it is in year 10000, which a Date cannot send
 * (see refreshRollups). A refresh cannot run inside a transaction.
 */
export async function refreshContinuousAggregates(sql: Sql, first: Date, lastHour: Date): Promise<void> {
  for (const { table } of ROLLUPS) {
    await sql`call refresh_continuous_aggregate(${table}, ${first}, ${lastHour}::timestamptz + interval '1 hour')`;
  }
}
