import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { fragmentList, identifierList, timed } from '../db/sql.ts';
import type { StagingColumns } from '../ingest/kind.ts';
import { copyInto } from '../ingest/repository.ts';
import { invalidRequest, type AppError } from '../core/errors.ts';
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
 * superseded version, the bars as that version had them (versionedBars);
 * with `knownAt`, each of those bars as it was known at that instant: the
 * revision with the latest knowledge time (as_of, sql/022) not after it.
 * Same columns as daily_bars.
 */
export function dailyBarsAt(sql: ISql, view: VersionView | undefined, knownAt?: Date): Fragment {
  const bars = view ? versionedBars(sql, view) : sql`daily_bars`;
  if (!knownAt) return bars;
  // A bar known at the instant as it stands, else its latest revision known
  // then: revisions are kept in the order they became known, and among those
  // stated known at the same instant the one replaced last is the later.
  // Those of a superseded version are the ones replaced by then.
  const replacedBy = view ? sql`and r.replaced_in_version <= ${view.version}` : sql``;
  return sql`(
    select ${columns(sql, 'b')}
    from ${bars} b
    where b.as_of <= ${knownAt}
    union all
    select ${columns(sql, 'r')}
    from (
      select distinct on (r.instrument_id, r.bar_date) r.*
      from daily_bar_revisions r
      join ${bars} b on b.instrument_id = r.instrument_id and b.bar_date = r.bar_date and b.as_of > ${knownAt}
      where not r.absent and r.as_of <= ${knownAt} ${replacedBy}
      order by r.instrument_id, r.bar_date, r.as_of desc, r.replaced_in_version desc
    ) r
  )`;
}

/**
 * `daily_bars` as known at `knownAt` (an instant, or a column of the
 * statement naming one), by the rule of dailyBarsAt, written for reads that
 * walk one instrument's bars in date order and stop early (ORDER BY bar_date
 * LIMIT n): one descent of the primary key, a bar's kept revisions looked up
 * only when its stored revision was known after the instant. Through
 * dailyBarsAt's union the planner cannot stop early: on 400 instruments x
 * 2,500 bars (TimescaleDB 2.28.3) the newest bar known at an instant took
 * 1,245 ms that way and 19-23 ms this way. Same columns as daily_bars; the
 * caller's filters on instrument_id and bar_date reach the primary key.
 */
export function dailyBarsKnownAtWalk(sql: ISql, knownAt: Date | Fragment): Fragment {
  const known = sql`d.as_of <= ${knownAt}`;
  const value = (c: string) => sql`case when ${known} then d.${sql(c)} else r.${sql(c)} end as ${sql(c)}`;
  return sql`(
    select d.instrument_id, d.bar_date, ${fragmentList(sql, DAILY_NAMES.slice(2).map(value))}
    from daily_bars d
    left join lateral (
      select r.*
      from daily_bar_revisions r
      where not ${known} and r.instrument_id = d.instrument_id and r.bar_date = d.bar_date and r.as_of <= ${knownAt}
      order by r.as_of desc, r.replaced_in_version desc
      limit 1
    ) r on true
    where ${known} or r.instrument_id is not null
  )`;
}

const columns = (sql: ISql, alias: string) =>
  identifierList(
    sql,
    DAILY_NAMES.map((c) => `${alias}.${c}`),
  );

/**
 * The bars of a superseded version: a date replaced in a later version takes
 * the values of its earliest revision replaced after the version read (none
 * when that revision says the bar was absent), every other date the stored
 * bar; dates after the version's last bar date are left out.
 */
function versionedBars(sql: ISql, view: VersionView): Fragment {
  const cap = (alias: string) => (view.lastBarDate === null ? sql`` : sql`and ${sql(`${alias}.bar_date`)} <= ${view.lastBarDate}::date`);
  return sql`(
    select ${columns(sql, 'b')}
    from daily_bars b
    where b.instrument_id = ${view.instrumentId} ${cap('b')}
      and not exists (
        select from daily_bar_revisions r
        where r.instrument_id = b.instrument_id and r.bar_date = b.bar_date and r.replaced_in_version > ${view.version}
      )
    union all
    select ${columns(sql, 'r')}
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

/** How far before its ex-date the first look for a dividend's prior close goes (see priorCloses). */
const PRIOR_CLOSE_LOOKBACK_DAYS = 14;

/**
 * For each dividend, the last raw bar before its ex-date, from the bars of
 * `view` when given, as known at `knownAt` when given; and the latest
 * version, in the same snapshot, of each instrument with such a bar, so a
 * caller can tell whether those bars are still the version it planned for.
 *
 * One statement for all, looking back PRIOR_CLOSE_LOOKBACK_DAYS from each
 * ex-date and no earlier than that from the first, so TimescaleDB leaves out
 * the chunks before then once for the statement instead of weighing every
 * chunk again for every dividend; a second, without the bound, for the
 * dividends with no bar in their fortnight. On 10 years of bars (11 chunks)
 * 500 dividends of one year took 14 ms bounded against 32 ms unbounded.
 * The bars as known at `knownAt` are walked newest first and the walk stops
 * at the first bar (dailyBarsKnownAtWalk): through dailyBarsAt's union every
 * dividend read and sorted all of its instrument's bars, 684 ms against 31 ms
 * for the same dividends, a bulk read's wait before its first byte.
 */
export async function priorCloses(
  sql: ISql,
  dividends: { instrumentId: string; effectiveDate: string }[],
  view?: VersionView,
  knownAt?: Date,
): Promise<{ closes: Map<string, PriorClose[]>; latestVersions: Map<string, number> }> {
  const closes = new Map<string, PriorClose[]>();
  const latestVersions = new Map<string, number>();
  const record = (rows: PriorCloseRow[]) => {
    for (const { instrumentId, latestVersion: version, ...close } of rows) {
      const list = closes.get(instrumentId) ?? [];
      list.push(close);
      closes.set(instrumentId, list);
      // Versions only grow: the later of two statements' is the one to compare with.
      latestVersions.set(instrumentId, Math.max(version, latestVersions.get(instrumentId) ?? version));
    }
  };
  if (dividends.length === 0) return { closes, latestVersions };
  const first = dividends.reduce((min, d) => (d.effectiveDate < min ? d.effectiveDate : min), dividends[0].effectiveDate);
  const bounded = await priorCloseRows(sql, dividends, view, knownAt, first);
  record(bounded);
  const found = new Set(bounded.map((r) => `${r.instrumentId} ${r.effectiveDate}`));
  const rest = dividends.filter((d) => !found.has(`${d.instrumentId} ${d.effectiveDate}`));
  if (rest.length) record(await priorCloseRows(sql, rest, view, knownAt, null));
  return { closes, latestVersions };
}

interface PriorCloseRow extends PriorClose {
  instrumentId: string;
  latestVersion: number;
}

/** priorCloses' statement: looking back PRIOR_CLOSE_LOOKBACK_DAYS from each ex-date, and from `first` (the earliest), or without a bound (null). */
function priorCloseRows(
  sql: ISql,
  dividends: { instrumentId: string; effectiveDate: string }[],
  view: VersionView | undefined,
  knownAt: Date | undefined,
  first: string | null,
): Promise<PriorCloseRow[]> {
  const lookback = sql`${PRIOR_CLOSE_LOOKBACK_DAYS}::int`;
  return timed(
    first ? 'dividend_prior_closes' : 'dividend_prior_closes_unbounded',
    sql<PriorCloseRow[]>`
      select d.instrument_id as "instrumentId", d.effective_date as "effectiveDate", b.bar_date as "barDate", b.close_price as close,
        b.quote_currency as "quoteCurrency", ${latestVersion(sql, sql`d.instrument_id`)} as "latestVersion"
      from unnest(${dividends.map((d) => d.instrumentId)}::uuid[], ${dividends.map((d) => d.effectiveDate)}::date[]) as d (instrument_id, effective_date)
      join lateral (
        select bar_date, close_price, quote_currency
        from ${view || !knownAt ? dailyBarsAt(sql, view, knownAt) : dailyBarsKnownAtWalk(sql, knownAt)} b
        where instrument_id = d.instrument_id
          and bar_date < d.effective_date
          ${first ? sql`and bar_date >= ${first}::date - ${lookback} and bar_date >= d.effective_date - ${lookback}` : sql``}
        order by bar_date desc
        limit 1
      ) b on true
    `,
  );
}

/** Copies a batch of daily bars (COPY text in DAILY_COLUMNS order) straight into daily_bars: bars that only append, inside the upload's transaction. */
export function appendDailyBars(tx: ISql, text: string): Promise<void> {
  return copyInto(tx, 'daily_bars', text, DAILY_NAMES);
}

/** An instrument a daily upload writes: the version its changes go under, and its latest bar date before the upload. */
export interface HistoryWrite {
  instrumentId: string;
  version: number;
  latestBefore: string | null;
}

/**
 * Writes the staged daily batch (prices/ingest.ts) with writeStagedBars, and
 * keeps what a changed bar replaces (sql/015): the stored values with the
 * instant they became known, or, for a new bar dated on or before its
 * instrument's latest date before the upload, that it was absent; each under
 * the version the upload writes for its instrument. Returns the counts and
 * the instruments with such a kept revision, whose version the caller bumps.
 * Inside lockPriceHistory, so no other upload writes these bars meanwhile.
 */
export function writeStagedDailyBars(tx: ISql, writes: HistoryWrite[], batch: StagedSpan): Promise<StagedWrite> {
  return writeStagedBars(tx, DAILY_TABLE, batch, {
    columns: tx`w.version, w.latest_before`,
    join: tx`join unnest(${writes.map((w) => w.instrumentId)}::uuid[], ${writes.map((w) => w.version)}::int[], ${writes.map((w) => w.latestBefore)}::date[])
        as w (instrument_id, version, latest_before) on w.instrument_id = s.instrument_id`,
    keep: (kept) => tx`
      insert into daily_bar_revisions (instrument_id, bar_date, replaced_in_version, absent, ${identifierList(tx, kept)})
      select instrument_id, bar_date, version, absent, ${identifierList(
        tx,
        kept.map((c) => `stored_${c}`),
      )}
      from changed
      where not absent or bar_date <= latest_before
      returning instrument_id
    `,
  });
}

/** A table of bars a staged batch is written to: its name, time column and field, and its columns in COPY order. */
export interface BarTable {
  table: 'daily_bars' | 'intraday_bars';
  time: 'bar_date' | 'bar_ts';
  timeType: 'date' | 'timestamptz';
  field: 'barDate' | 'barTimestamp';
  columns: StagingColumns;
}

const DAILY_TABLE: BarTable = { table: 'daily_bars', time: 'bar_date', timeType: 'date', field: 'barDate', columns: DAILY_COLUMNS };

export interface StagedWrite {
  inserted: number;
  updated: number;
  /** The instruments with a kept revision. */
  revised: string[];
}

/**
 * Writes a staged bar batch in one statement, over one join of the staged
 * bars with the stored ones (`changed`): a staged bar whose values differ
 * from the stored bar's rewrites it, a new one is inserted, and an equal one
 * writes nothing (its stored knowledge time stays: as_of is said of the
 * values, not one of them). `history` keeps what a changed bar replaced: the
 * columns and join it adds to `changed`, where each stored value is
 * `stored_<column>`, and the insert of the revisions, returning their
 * instrument_id. A staged bar stated known before the bar it replaces is
 * refused (sql/022: along a bar's revisions, as_of never decreases), and
 * the transaction with it.
 */
export async function writeStagedBars(
  tx: ISql,
  bars: BarTable,
  batch: StagedSpan,
  history: { columns?: Fragment; join?: Fragment; keep: (kept: string[]) => Fragment },
): Promise<StagedWrite> {
  const { table, time, timeType } = bars;
  const names = bars.columns.map(([name]) => name);
  const kept = names.slice(2);
  const compared = kept.filter((c) => c !== 'as_of');
  const list = (alias: string, columns: string[]) =>
    identifierList(
      tx,
      columns.map((c) => `${alias}.${c}`),
    );
  const stored = kept.map((c) => tx`b.${tx(c)} as ${tx(`stored_${c}`)}`).reduce((all, c) => tx`${all}, ${c}`);
  // The batch's span as constants: only its chunks, and in them only its instruments' index ranges, are read.
  const inSpan = tx`b.instrument_id = any (${batch.instrumentIds}::uuid[]) and b.${tx(time)} between ${batch.from}::${tx(timeType)} and ${batch.to}::${tx(timeType)}`;
  const [row] = await tx<
    {
      inserted: number;
      updated: number;
      revised: string[] | null;
      earlier: { instrumentId: string; at: string; asOf: string; storedAsOf: string } | null;
    }[]
  >`
    with changed as (
      select s.*, b.instrument_id is null as absent, ${history.columns ? tx`${history.columns},` : tx``} ${stored}
      from ingest_staging s
      ${history.join ?? tx``}
      left join ${tx(table)} b on b.instrument_id = s.instrument_id and b.${tx(time)} = s.${tx(time)} and ${inSpan}
      where b.instrument_id is null or (${list('b', compared)}) is distinct from (${list('s', compared)})
    ),
    kept as (${history.keep(kept)}),
    inserted as (
      insert into ${tx(table)} (${identifierList(tx, names)})
      select ${identifierList(tx, names)}
      from changed
      where absent
      returning 1
    ),
    updated as (
      update ${tx(table)} b
      set (${identifierList(tx, kept)}) = (${list('c', kept)})
      from changed c
      where not c.absent and b.instrument_id = c.instrument_id and b.${tx(time)} = c.${tx(time)} and ${inSpan}
      returning 1
    )
    select
      (select count(*) from inserted)::int as inserted,
      (select count(*) from updated)::int as updated,
      (select array_agg(distinct instrument_id) from kept) as revised,
      (
        select json_build_object('instrumentId', instrument_id, 'at', ${tx(time)}, 'asOf', as_of, 'storedAsOf', stored_as_of)
        from changed
        where not absent and as_of < stored_as_of
        limit 1
      ) as earlier
  `;
  const e = row.earlier;
  if (e) throw knownBeforeStored(bars.field, e.instrumentId, timeType === 'date' ? e.at : new Date(e.at).toISOString(), e.asOf, e.storedAsOf);
  return { inserted: row.inserted, updated: row.updated, revised: row.revised ?? [] };
}

/** What a staged batch spans: its instruments, and its first and last bar date (or instant). */
export interface StagedSpan {
  instrumentIds: string[];
  from: string;
  to: string;
}

/** The 400 for a bar stated known before the stored revision it would replace. */
export function knownBeforeStored(field: string, instrumentId: string, bar: string, asOf: string, storedAsOf: string): AppError {
  const at = (t: string) => new Date(t).toISOString();
  return invalidRequest(`a bar may not replace a revision known later than itself; nothing was stored`, {
    asOf: [
      `the bar of ${instrumentId} at ${field} ${bar} states asOf ${at(asOf)}, before the stored revision's ${at(storedAsOf)}: post the revisions of a bar in the order they became known`,
    ],
  });
}
