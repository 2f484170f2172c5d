import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { identifierList, timed } from '../db/sql.ts';
import type { StagingColumns } from '../ingest/kind.ts';
import type { PriorClose } from './adjustment.ts';
import { latestVersion, type VersionView } from './versions-repository.ts';

// The daily bars as each version had them: the stored bars, what an upload
// replaced in them (daily_bar_revisions, sql/015), and the reads an
// adjustment plan makes of them.

type Fragment = postgres.Fragment;

/** daily_bars' columns in COPY order, with their staging types; a bar upload's staging table and upsert, and the versioned view, all come from this. */
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
const DAILY_NAMES = DAILY_COLUMNS.map(([name]) => name);

/**
 * What stands for `daily_bars` in a read: the table itself, or, for a
 * superseded version, the bars as that version had them. A date replaced in
 * a later version takes the values of its earliest revision replaced after
 * the version read (none when that revision says the bar was absent), every
 * other date the stored bar; dates after the version's last bar date are
 * left out. Same columns as daily_bars.
 */
export function dailyBarsAt(sql: ISql, view: VersionView | undefined): Fragment {
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

/** The latest stored bar date of the instrument `instrumentId` names, as text (null without bars): one probe of the primary key's index. */
export function latestBarDate(sql: ISql, instrumentId: Fragment): Fragment {
  return sql`(select bar_date from daily_bars where instrument_id = ${instrumentId} order by bar_date desc limit 1)::text`;
}

/** The latest stored bar date of each instrument, null for one without bars. */
export async function latestBarDates(sql: ISql, ids: string[]): Promise<Map<string, string | null>> {
  const rows = await timed(
    'latest_bar_dates',
    sql<{ id: string; latest: string | null }[]>`
      select i.id, ${latestBarDate(sql, sql`i.id`)} as latest
      from unnest(${ids}::uuid[]) as i (id)
    `,
  );
  return new Map(rows.map((r) => [r.id, r.latest]));
}

/**
 * For each dividend, the last raw bar before its ex-date (one query for all),
 * from the bars of `view` when given; and the latest version, in the same
 * snapshot, of each instrument with such a bar, so a caller can tell whether
 * those bars are still the version it planned for.
 */
export async function priorCloses(
  sql: ISql,
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
 * instrument. Returns the instruments with such a bar. Inside
 * lockPriceHistory, over the `ingest_staging` table of a bar upload
 * (prices/ingest.ts).
 */
export async function keepReplacedBars(tx: ISql, writes: HistoryWrite[]): Promise<string[]> {
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
