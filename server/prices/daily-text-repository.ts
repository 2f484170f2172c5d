import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { fragmentList, timed } from '../db/sql.ts';
import type { MultiplierSegment, SeriesKeys } from '../price-history/adjustment.ts';
import { dailyBarsAt } from '../price-history/bars-repository.ts';
import { latestVersion, type VersionView } from '../price-history/versions-repository.ts';
import type { TextFormat } from '../core/params.ts';
import { adjusted, roundedValue, roundingScale } from './adjusted-values-sql.ts';
import { adjustPackedBars } from './adjusted-values.ts';
import { int32s } from './packed-columns.ts';
import { symbolRuns } from '../instruments/repository.ts';
import { barsText, barText, bool, DAILY_BAR, packedSeries, symbolCell, text, type ExpectedTexts } from './bar-text-sql.ts';

// The daily read of the daily-price and bulk-price routes, called through
// daily-bars.ts: each series handed over in one row, as the CSV rows
// PostgreSQL writes, adjusted in SQL (bar-text-sql.ts), or packed
// (packedBars) and adjusted by the service (adjusted-values.ts).

type Fragment = postgres.Fragment;

const NUMBER_COLUMNS = [
  ['open_price', 'price'],
  ['high_price', 'price'],
  ['low_price', 'price'],
  ['close_price', 'price'],
  ['volume', 'volume'],
] as const;

/**
 * What a daily read answers in: the JSON or CSV answer's text, or packed
 * columns for the Arrow and Parquet files. Its statement (dailySeriesText)
 * writes the CSV rows, and packs the bars for the others: the JSON objects
 * are written from the packed series (daily-json.ts).
 */
export type DailyBarsFormat = TextFormat | 'packed';

/** One instrument's bars in a window, as CSV rows or packed, with what meta needs to know of them. */
export interface DailySeriesText {
  instrumentId: string;
  /** The bars: CSV rows in date order, or packed columns (packedBars). */
  bars: Buffer;
  firstBar: string;
  sources: string[];
  stale: boolean;
  bases: { raw: boolean; vendorAdjusted: boolean };
  keys: SeriesKeys;
  /**
   * The instrument's latest version, and its latest stored bar date when that
   * is on or after the window's end, else the last bar date read (then before
   * the window's end), in the statement's snapshot. Whether the window ends on
   * or before the latest stored bar is all a caller asks (service.ts,
   * isImmutable), and looking from the window's end on keeps the lookup's plan
   * to the chunks from there. Over every chunk, a bulk page of 7 instruments
   * as known at an instant took 42-65 ms to plan and 170-190 ms to run on a
   * 100-year history (101 chunks, 99 compressed), against 7-8 and 100-130 ms
   * on 10 years; from the window's end, about 4 and 90-110 ms on both.
   */
  latestVersion: number;
  latestBar: string;
}

/**
 * A series' bars packed in one bytea for the JSON answers (daily-json.ts) and
 * the columnar files (bar-files.ts), both read through unpackDaily: the bar count (int4), then one record per bar of its day
 * (days since 1970-01-01, int4), open, high, low, close and volume (float8,
 * NaN where the source has no value: no stored value is NaN, ingest refuses
 * it), asOf as stored (timestamptz_send: microseconds since 2000-01-01 UTC,
 * int8; the reader cuts it to the millisecond, as the JSON answer writes it) and
 * stale (one byte, 1 or 0), big-endian as PostgreSQL's send functions write
 * them; then the three text columns as UTF-8 JSON,
 * [quoteCurrency, quoteUnit, source], each `[value]` when every bar has it,
 * else `[[day, value], …]`. The values are the CSV rows' (the same columns of
 * the same statement), sent as their bytes.
 *
 * The records are in no set order (the reader puts them in date order): an
 * ordered aggregate sorts each series again although its rows come from the
 * index in date order, and on PostgreSQL 15 that sort was half the
 * statement's time (125 against 61 ms for 100,000 bars of 40 series here).
 * Writing a double's bytes costs PostgreSQL a fraction of writing its
 * shortest decimal: on 500 instruments' adjusted year, the database's CPU
 * for a bulk read was 760 ms packed against 1,300 ms writing JSON objects.
 *
 * Two choices more, measured with pgbench on the bars of a page of an
 * export (27 series, 7,020 bars; medians of interleaved rounds):
 * - The instant goes as stored: milliseconds since 1970 in SQL take numeric
 *   arithmetic (extract(epoch) returns numeric). The packing alone took 8.7
 *   ms with them, 5.7 ms without.
 * - A series whose texts vary has them listed by day from a second scan of
 *   its bars (`seriesBars`, in the same snapshot), as the vendor spans are: an
 *   aggregate under CASE runs for every row whichever branch is taken, so
 *   listing them in the aggregate built three JSON arrays a bar for every
 *   series. The page statement, with planning, took 36 ms that way, 20 ms
 *   this way.
 */
function packedBars(sql: ISql, seriesBars: (alias: string) => Fragment, expected?: ExpectedTexts): Fragment {
  const day = (alias: string) => dayOf(sql, alias);
  const record = [
    sql`int4send(${day('a')})`,
    ...NUMBER_COLUMNS.map(([name]) => sql`float8send(coalesce(a.${sql(name)}, 'NaN'::float8))`),
    sql`timestamptz_send(a.as_of)`,
    sql`case when a.stale then '\\x01'::bytea else '\\x00'::bytea end`,
  ].reduce((all, next) => sql`${all} || ${next}`);
  return packedSeries(sql, 'a', record, day('s'), seriesBars('s'), expected);
}

/** A bar's date as days since 1970-01-01. */
const dayOf = (sql: ISql, alias: string) => sql`(${sql(alias)}.bar_date - date '1970-01-01')`;

/**
 * A packed series adjusted with the instrument's segments (none: as stored).
 * `vendorKeys` (base64; null when there are none, or no segments) lists the
 * bars whose key is later than their date, a vendor-adjusted bar's
 * reflects-through date, as pairs of day numbers (int4): the bar's day, then
 * its key's.
 */
function adjustedPacked(packed: Buffer, segments: MultiplierSegment[] | undefined, vendorKeys: Buffer | null): Buffer {
  if (!segments?.length) return packed;
  const keys = new Map<number, number>();
  const pairs = int32s(vendorKeys?.toString('latin1'));
  for (let k = 0; k < pairs.length; k += 2) keys.set(pairs[k], pairs[k + 1]);
  adjustPackedBars(packed, segments, keys);
  return packed;
}

/**
 * Calendar days from which a window's series are read one instrument at a
 * time (seriesApart).
 */
const SERIES_APART_DAYS = 28;

/**
 * Whether a window's series are read one instrument at a time, each by its
 * own scan under a lateral join, rather than all at once and grouped by
 * instrument. Grouping sorts every bar of the statement by instrument (the
 * scans return them in the table's order), where a scan per instrument
 * returns each series whole, at a cost per instrument. Measured on a page of
 * 500 instruments' bars as known at an instant (medians of interleaved
 * runs): apart took 0.64 times as long over a quarter, 0.82 over a month,
 * 0.98 over half a month and 1.42 over a week (20 against 14 ms); on a page
 * of 109 instruments' year it took 0.71 times as long (38 against 55 ms,
 * where the grouped statement's sort of 28,000 bars also overran work_mem's
 * 4 MB and went to disk).
 */
function seriesApart(from: string, to: string): boolean {
  return (Date.parse(to) - Date.parse(from)) / 86_400_000 + 1 >= SERIES_APART_DAYS;
}

/**
 * The daily bars of `instrumentIds` in [from, to], adjusted with each
 * instrument's multiplier segments (none: as stored), one row per instrument
 * with bars, in one statement: each series is read whole from one snapshot.
 * CSV rows are adjusted in the statement, as PostgreSQL writes their text;
 * packed series leave it with their stored values and are adjusted here
 * (adjustedPacked), to the same doubles, bit for bit. PostgreSQL evaluating
 * the rounding's expressions and the segment join was half of a bulk page's
 * time: a page of 27 instruments' adjusted year took 26 ms with them, 13 ms
 * without (medians of 21 prepared executions), and the service's pass over
 * the bars takes 0.035 ms a year's series (18 ms for 500).
 * With `view`, the bars of that superseded version of its one instrument;
 * with `knownAt`, each bar as known at that instant (dailyBarsAt).
 *
 * The vendor-adjusted spans are read by a second scan of the same instrument
 * within the statement (same snapshot), only for instruments that have such
 * bars in the window.
 *
 * The rows come back raw (postgres.js hands over the bytes as they arrived),
 * and only the small columns are decoded. The CSV's inner select is kept
 * apart (offset 0) so each adjusted value is computed once, not once for
 * every reference the CSV expression makes to it.
 *
 * A CSV row carries the instrument's symbol on its date: the statement reads
 * each instrument's symbols over the window as a few runs (symbolRuns, the
 * rule asked once per symbol period, not per bar) and each bar takes its
 * run's cell by a join on the instrument and the run's days. The other
 * formats leave symbols to the caller (symbol-runs-repository.ts).
 *
 * A window of SERIES_APART_DAYS or more is read one instrument at a time
 * (seriesApart), a shorter one grouped by instrument.
 */
export async function dailySeriesText(
  sql: ISql,
  format: Exclude<DailyBarsFormat, 'json'>,
  instrumentIds: string[],
  segments: Map<string, MultiplierSegment[]>,
  from: string,
  to: string,
  view?: VersionView,
  knownAt?: Date,
): Promise<DailySeriesText[]> {
  const apart = seriesApart(from, to);
  // The series' instrument, as the statement's columns name it: the id read apart, or the group's.
  const series = apart ? sql`i.id` : sql`a.instrument_id`;
  const stored = dailyBarsAt(sql, view, knownAt);
  // A group's series read again as `alias`, in the statement's snapshot, for
  // what only some series need listed (vendor spans, texts that vary).
  const seriesBars = (alias: string) =>
    sql`from ${stored} ${sql(alias)} where ${sql(alias)}.instrument_id = ${series} and ${sql(alias)}.bar_date between ${from}::date and ${to}::date`;
  const flat = [...segments].flatMap(([id, list]) => list.map((s) => ({ id, ...s })));
  const adjustInSql = format === 'csv' && flat.length > 0;
  const key = sql`greatest(b.bar_date, b.reflects_actions_through)`;
  const inSegment = sql`${key} >= s.from_key and ${key} < s.until_key`;
  const allSegments = sql`unnest(
          ${flat.map((s) => s.id)}::uuid[],
          ${flat.map((s) => s.from ?? '-infinity')}::date[],
          ${flat.map((s) => s.until)}::date[],
          ${flat.map((s) => s.price)}::float8[],
          ${flat.map((s) => s.volume)}::float8[]
        ) as s (instrument_id, from_key, until_key, price, volume)`;
  // The CSV bars' join to their multiplier segments, and (read apart) what it
  // reads from under the instruments. Read apart, a series joins only its own
  // segments, gathered once per instrument (seg). Joined to the page's whole
  // list, PostgreSQL's generic plan for the prepared statement (taken from its
  // sixth execution on a connection, as it estimates 3 bars an instrument)
  // scans the list once per bar: a page of 27 instruments' year took 50 ms
  // that way, against 23 ms with each instrument's own.
  const [seriesSegments, join] = !adjustInSql
    ? [sql``, sql``]
    : apart
      ? [
          sql`cross join lateral (
            select array_agg(s.from_key) as from_keys, array_agg(s.until_key) as until_keys, array_agg(s.price) as prices, array_agg(s.volume) as volumes
            from ${allSegments}
            where s.instrument_id = i.id
          ) seg`,
          sql`left join unnest(seg.from_keys, seg.until_keys, seg.prices, seg.volumes) as s (from_key, until_key, price, volume) on ${inSegment}`,
        ]
      : [sql``, sql`left join ${allSegments} on s.instrument_id = b.instrument_id and ${inSegment}`];
  const other = sql`b.instrument_id, b.bar_date, b.quote_currency, b.quote_unit, b.stale, b.as_of, b.source, b.reflects_actions_through, ${key} as key`;
  const where = sql`where b.instrument_id = ${apart ? series : sql`any (${instrumentIds}::uuid[])`} and b.bar_date between ${from}::date and ${to}::date`;
  // Raw: the stored values. Adjusted: each value times its segment's
  // multiplier and that product's rounding scale, one level down, then the
  // rounded value from those two; each level kept apart (offset 0) so a value
  // is computed once, not once for every reference the level above makes to it.
  const bars = adjustInSql
    ? sql`(
        select
          u.instrument_id, u.bar_date, u.quote_currency, u.quote_unit, u.stale, u.as_of, u.source, u.reflects_actions_through, u.key,
          ${fragmentList(
            sql,
            NUMBER_COLUMNS.map(([c]) => sql`${roundedValue(sql, sql`u.${sql(c)}`, sql`u.${sql(`${c}_scale`)}`)} as ${sql(c)}`),
          )}
        from (
          select
            ${other},
            ${fragmentList(
              sql,
              NUMBER_COLUMNS.map(
                ([c, factor]) =>
                  sql`${adjusted(sql, sql`b.${sql(c)}`, factor)} as ${sql(c)}, ${roundingScale(sql, sql`b.${sql(c)}`, factor)} as ${sql(`${c}_scale`)}`,
              ),
            )}
          from ${stored} b
          ${join}
          ${where}
          offset 0
        ) u
        offset 0
      )`
    : sql`(
        select ${other}, ${fragmentList(
          sql,
          NUMBER_COLUMNS.map(([c]) => sql`b.${sql(c)}`),
        )}
        from ${stored} b
        ${where}
        offset 0
      )`;
  // A CSV row's symbol cell is its run's (symbolRuns), written once per run, not per bar (its escaping
  // reads the text twice); offset 0 keeps the planner from moving it into the join, where it is per bar.
  const onRun = sql`
    join (
      select instrument_id, from_day, until_day, ${symbolCell(sql, sql`symbol`)} as cell
      from (${symbolRuns(sql, apart ? sql`array[i.id]` : sql`${instrumentIds}::uuid[]`, from, to)}) runs
      offset 0
    ) r on r.instrument_id = a.instrument_id and a.bar_date >= r.from_day and a.bar_date < r.until_day
  `;
  const aggregates = sql`
        ${
          format === 'packed'
            ? packedBars(sql, seriesBars, apart ? { currency: sql`i.quote_currency`, unit: sql`i.quote_unit` } : undefined)
            : barsText(
                sql,
                format,
                barText(sql, format, DAILY_BAR, (name) => sql`a.${sql(name)}`, sql`r.cell`),
                sql`a.bar_date`,
              )
        } as bars,
        min(a.bar_date)::text as first_bar,
        array_to_json(array_agg(distinct a.source))::text as sources,
        bool_or(a.stale) as stale,
        bool_or(a.reflects_actions_through is null) as has_raw,
        bool_or(a.reflects_actions_through is not null) as has_vendor,
        min(a.key)::text as min_key,
        case when bool_or(a.reflects_actions_through is not null) then (
          select json_agg(json_build_array(v.reflects_actions_through, v.first_bar))::text
          from (
            select reflects_actions_through, min(bar_date) as first_bar
            ${seriesBars('v')}
              and reflects_actions_through is not null
            group by reflects_actions_through
          ) v
        ) end as vendor_spans,
        ${
          format === 'packed' && flat.length
            ? sql`encode(string_agg(int4send(${dayOf(sql, 'a')}) || int4send(a.key - date '1970-01-01'), ''::bytea) filter (where a.key > a.bar_date), 'base64')`
            : sql`null`
        } as vendor_keys,
        ${latestVersion(sql, series)}::text as latest_version,
        coalesce(
          (select bar_date from daily_bars where instrument_id = ${series} and bar_date >= ${to}::date order by bar_date desc limit 1),
          max(a.bar_date)
        )::text as latest_bar
      from ${bars} a
      ${format === 'csv' ? onRun : sql``}
  `;
  const rows = await timed(
    'daily_series_text',
    apart
      ? sql`
          select i.id::text, g.*
          from instruments i
          ${seriesSegments}
          cross join lateral (select ${aggregates} having count(*) > 0) g
          where i.id = any (${instrumentIds}::uuid[])
        `.raw()
      : sql`select a.instrument_id::text, ${aggregates} group by a.instrument_id`.raw(),
  );
  return rows.map(([id, bars, firstBar, sources, stale, hasRaw, hasVendor, minKey, vendorSpans, vendorKeys, latestVersion, latestBar]) => ({
    instrumentId: text(id),
    bars: format === 'packed' ? adjustedPacked(Buffer.from(bars.toString('latin1'), 'base64'), segments.get(text(id)), vendorKeys) : bars,
    firstBar: text(firstBar),
    sources: JSON.parse(text(sources)) as string[],
    stale: bool(stale),
    bases: { raw: bool(hasRaw), vendorAdjusted: bool(hasVendor) },
    keys: {
      minKey: text(minKey),
      vendorSpans: vendorSpans
        ? (JSON.parse(text(vendorSpans)) as [string, string][]).map(([reflectsThrough, firstBar]) => ({ reflectsThrough, firstBar }))
        : [],
    },
    latestVersion: Number(text(latestVersion)),
    latestBar: text(latestBar),
  }));
}
