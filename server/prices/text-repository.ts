import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { identifierList, timed } from '../db/sql.ts';
import type { MultiplierSegment, SeriesKeys } from '../price-history/adjustment.ts';
import { dailyBarsAt } from '../price-history/bars-repository.ts';
import { latestVersion, type VersionView } from '../price-history/versions-repository.ts';
import { columnNames, INTRADAY_COLUMNS, INTRADAY_TABLES, rollupOf, type Interval } from './repository.ts';
import type { Format } from '../core/params.ts';
import { SIGNIFICANT_DIGITS } from '../core/significant.ts';
import { INTERVAL_MINUTES } from './schema.ts';

// The price reads whose response text PostgreSQL writes: each bar becomes
// its JSON object in SQL, adjusted there with the multipliers of the read's
// plan (price-history/adjustment.ts, multiplierSegments), and the service
// passes the bytes on without making an object per bar. Node would spend
// more time parsing the rows than PostgreSQL spends writing them. The daily
// read is called through daily-bars.ts, the intraday reads by service.ts.

type Fragment = postgres.Fragment;

/**
 * A float8 written as JavaScript writes it (JSON.stringify), so the text is
 * what the service would write from the number. From 1e-4 up to 1e15
 * PostgreSQL's output (with extra_float_digits ≥ 1, set on every connection in
 * db/sql.ts) is the shortest decimal that reads back as the same double, the
 * closest of them to it, written plain, as JavaScript's is: there, no decimal
 * as short as 17 digits lies halfway between two doubles, the one case where
 * the two differ. Everything else, exponents, -0, NaN and ±Infinity, goes
 * through json_number_text (sql/012_price_text.sql).
 */
export function jsonNumber(sql: ISql, x: Fragment): Fragment {
  return sql`case
    when abs(${x}) >= 1e-4::float8 and abs(${x}) < 1e15::float8 then ${x}::text
    when ${x} is null then 'null'
    else json_number_text(${x})
  end`;
}

/** An instant as JavaScript's toISOString writes it: UTC, milliseconds, Z. */
const isoInstant = (sql: ISql, column: Fragment) => sql`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * A field of a bar: its key, what kind of value it is, and its column. A
 * number is written as JavaScript writes it; free text as a JSON string
 * (PostgreSQL's escaping is JSON.stringify's for every string it can store)
 * or a CSV cell (see csvText); dates, instants, ids and booleans never need
 * escaping.
 */
type BarField = readonly [key: string, kind: 'number' | 'text' | 'date' | 'instant' | 'id' | 'boolean', column: string];

const OHLCV: BarField[] = [
  ['openPrice', 'number', 'open_price'],
  ['highPrice', 'number', 'high_price'],
  ['lowPrice', 'number', 'low_price'],
  ['closePrice', 'number', 'close_price'],
  ['volume', 'number', 'volume'],
  ['quoteCurrency', 'text', 'quote_currency'],
  ['quoteUnit', 'text', 'quote_unit'],
];

/** A daily bar's fields: the spec's, in its order. */
const DAILY_BAR: BarField[] = [
  ['barDate', 'date', 'bar_date'],
  ...OHLCV,
  ['stale', 'boolean', 'stale'],
  ['asOf', 'instant', 'as_of'],
  ['source', 'text', 'source'],
];

/** An intraday bar's fields: the spec's, in its order. */
const INTRADAY_BAR: BarField[] = [['barTimestamp', 'instant', 'bar_ts'], ...OHLCV, ['source', 'text', 'source']];

// In CSV, each row also names its instrument.
const CSV_ID: BarField = ['instrumentId', 'id', 'instrument_id'];

/** The header row of a CSV price read. */
export const CSV_COLUMNS = {
  daily: [CSV_ID, ...DAILY_BAR].map(([key]) => key),
  intraday: [CSV_ID, ...INTRADAY_BAR].map(([key]) => key),
};

/** A field's value as text that never needs escaping. */
function plainText(sql: ISql, kind: BarField[1], value: Fragment): Fragment {
  return kind === 'instant' ? isoInstant(sql, value) : sql`${value}::text`;
}

/** The bar's JSON object: its fields in the given order, so equal bars give equal bytes. */
function jsonObject(sql: ISql, fields: BarField[], col: (name: string) => Fragment): Fragment {
  const value = ([, kind, column]: BarField) =>
    kind === 'number'
      ? jsonNumber(sql, col(column))
      : kind === 'text'
        ? sql`to_json(${col(column)})::text`
        : kind === 'boolean'
          ? sql`${col(column)}::text`
          : sql`'"' || ${plainText(sql, kind, col(column))} || '"'`;
  const pairs = fields.map((field, i) => sql`${`${i ? ',' : '{'}"${field[0]}":`}::text || ${value(field)}`);
  return sql`${pairs.reduce((text, pair) => sql`${text} || ${pair}`)} || '}'`;
}

/**
 * A text cell of RFC 4180 CSV. Text starting with =, +, -, @, tab or carriage
 * return is what a spreadsheet would take for a formula: it is written with a
 * leading apostrophe, quoted, so it shows as the text it is. Text holding a
 * comma, quote, CR, LF or # is quoted (# so a reader skipping `#` comment
 * lines, such as pandas' comment='#', never cuts a cell). Quotes are doubled.
 */
function csvText(sql: ISql, value: Fragment): Fragment {
  const quoted = sql`replace(${value}, '"', '""')`;
  return sql`case
    when ${value} ~ '^[-=+@\t\r]' then '"''' || ${quoted} || '"'
    when ${value} ~ '[",\r\n#]' then '"' || ${quoted} || '"'
    else ${value}
  end`;
}

/** The bar's CSV row, ended by CRLF: its instrument, then its fields; an absent number is an empty cell. */
function csvRow(sql: ISql, fields: BarField[], col: (name: string) => Fragment): Fragment {
  const value = ([, kind, column]: BarField) =>
    kind === 'number'
      ? sql`coalesce(nullif(${jsonNumber(sql, col(column))}, 'null'), '')`
      : kind === 'text'
        ? csvText(sql, col(column))
        : plainText(sql, kind, col(column));
  const cells = [CSV_ID, ...fields].map(value);
  return sql`${cells.reduce((row, cell) => sql`${row} || ',' || ${cell}`)} || ${'\r\n'}::text`;
}

/** Each bar's text in `format`: JSON objects joined by commas, or CSV rows. */
function barsText(sql: ISql, format: Format, fields: BarField[], col: (name: string) => Fragment, order: Fragment): Fragment {
  return format === 'json'
    ? sql`string_agg(${jsonObject(sql, fields, col)}, ',' order by ${order})`
    : sql`string_agg(${csvRow(sql, fields, col)}, '' order by ${order})`;
}

/**
 * `value` times the segment's `factor` (null when no segment applies: the
 * value as stored). Two magnitudes within 1e-150..1e150 multiply without
 * leaving the double range, so `*` cannot fail; anything else goes through
 * ieee_product (sql/012_price_text.sql).
 */
export function adjusted(sql: ISql, value: Fragment, factor: 'price' | 'volume'): Fragment {
  const m = sql`s.${sql(factor)}`;
  return sql`case
    when ${m} is null or ${value} is null then ${value}
    when ${within(sql, value)} and ${within(sql, m)} then ${value} * ${m}
    else ieee_product(${value}, ${m})
  end`;
}

const within = (sql: ISql, x: Fragment) => sql`abs(${x}) between 1e-150::float8 and 1e150::float8`;

/**
 * What rounding `value` times the segment's `factor` takes: null for a value
 * written as stored (no segment, a multiplier of exactly 1, or no value);
 * else 10^k, the power of ten that puts its 13th significant digit in the
 * units, when 10^k is an exact double (1e-10 ≤ |product| < 1e13); else 0, for
 * the exact path of roundedValue. Computed beside the product, so the
 * logarithm is taken once per value.
 */
export function roundingScale(sql: ISql, value: Fragment, factor: 'price' | 'volume'): Fragment {
  const m = sql`s.${sql(factor)}`;
  return sql`case
    when ${m} is null or ${m} = 1 or ${value} is null then null
    when ${within(sql, value)} and ${within(sql, m)} and abs(${value} * ${m}) >= 1e-10::float8 and abs(${value} * ${m}) < 1e13::float8
      then power(10::float8, ${SIGNIFICANT_DIGITS - 1} - floor(log(abs(${value} * ${m}))))
    else 0
  end`;
}

/**
 * `x` rounded to 13 significant digits: the shortest decimal that reads back
 * as x (PostgreSQL's float8 text with extra_float_digits 1, JavaScript's
 * String(x)) rounded half away from zero, read back as the nearest double,
 * whose shortest decimal is then the rounded one. With `scale` > 0 that is
 * |x| · scale rounded to an integer and divided by the scale again, in float8:
 * both the product and the shortest decimal lie within 0.008 of |x| · scale's
 * exact value (two half-ulps of a number below 2^44), so the two roundings
 * agree unless |x| · scale is within 0.01 of a half, when the exact path
 * (numeric, about four times slower) decides. Zero and ±Infinity stay as
 * they are.
 */
export function roundedValue(sql: ISql, x: Fragment, scale: Fragment): Fragment {
  const scaled = sql`abs(${x}) * ${scale}`;
  const decimal = sql`${x}::text::numeric`;
  return sql`case
    when ${scale} is null then ${x}
    when ${scale} > 0 and abs(${scaled} - floor(${scaled}) - 0.5::float8) >= 0.01::float8 then sign(${x}) * floor(${scaled} + 0.5::float8) / ${scale}
    when ${x} = 0 or abs(${x}) = 'Infinity'::float8 then ${x}
    else round(${decimal}, ${SIGNIFICANT_DIGITS - 1} - floor(log(abs(${decimal})))::integer)::float8
  end`;
}

const NUMBER_COLUMNS = [
  ['open_price', 'price'],
  ['high_price', 'price'],
  ['low_price', 'price'],
  ['close_price', 'price'],
  ['volume', 'volume'],
] as const;

/** One instrument's bars in a window, as the response text, with what meta needs to know of them. */
export interface DailySeriesText {
  instrumentId: string;
  /** The bars in date order: JSON objects joined by commas, or CSV rows. */
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

const text = (b: Buffer) => b.toString('utf8');
const bool = (b: Buffer) => b[0] === 0x74; // 't'

/**
 * The daily bars of `instrumentIds` in [from, to], adjusted with each
 * instrument's multiplier segments (none: as stored), one row per instrument
 * with bars, in one statement: each series is read whole from one snapshot.
 * With `view`, the bars of that superseded version of its one instrument;
 * with `knownAt`, each bar as known at that instant (dailyBarsAt).
 *
 * The vendor-adjusted spans are read by a second scan of the same instrument
 * within the statement (same snapshot), only for instruments that have such
 * bars in the window.
 *
 * The rows come back raw (postgres.js hands over the bytes as they arrived),
 * and only the small columns are decoded. The inner select is kept apart
 * (offset 0) so each adjusted value is computed once, not once for every
 * reference the JSON expression makes to it.
 */
export async function dailySeriesText(
  sql: ISql,
  format: Format,
  instrumentIds: string[],
  segments: Map<string, MultiplierSegment[]>,
  from: string,
  to: string,
  view?: VersionView,
  knownAt?: Date,
): Promise<DailySeriesText[]> {
  const stored = dailyBarsAt(sql, view, knownAt);
  const flat = [...segments].flatMap(([id, list]) => list.map((s) => ({ id, ...s })));
  const key = sql`greatest(b.bar_date, b.reflects_actions_through)`;
  const join = flat.length
    ? sql`left join unnest(
          ${flat.map((s) => s.id)}::uuid[],
          ${flat.map((s) => s.from ?? '-infinity')}::date[],
          ${flat.map((s) => s.until)}::date[],
          ${flat.map((s) => s.price)}::float8[],
          ${flat.map((s) => s.volume)}::float8[]
        ) as s (instrument_id, from_key, until_key, price, volume)
          on s.instrument_id = b.instrument_id and ${key} >= s.from_key and ${key} < s.until_key`
    : sql``;
  const other = sql`b.instrument_id, b.bar_date, b.quote_currency, b.quote_unit, b.stale, b.as_of, b.source, b.reflects_actions_through, ${key} as key`;
  const where = sql`where b.instrument_id = any (${instrumentIds}::uuid[]) and b.bar_date between ${from}::date and ${to}::date`;
  const list = (items: Fragment[]) => items.reduce((all, item) => sql`${all}, ${item}`);
  // Raw: the stored values. Adjusted: each value times its segment's
  // multiplier and that product's rounding scale, one level down, then the
  // rounded value from those two; each level kept apart (offset 0) so a value
  // is computed once, not once for every reference the level above makes to it.
  const bars = flat.length
    ? sql`(
        select
          u.instrument_id, u.bar_date, u.quote_currency, u.quote_unit, u.stale, u.as_of, u.source, u.reflects_actions_through, u.key,
          ${list(NUMBER_COLUMNS.map(([c]) => sql`${roundedValue(sql, sql`u.${sql(c)}`, sql`u.${sql(`${c}_scale`)}`)} as ${sql(c)}`))}
        from (
          select
            ${other},
            ${list(
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
        select ${other}, ${list(NUMBER_COLUMNS.map(([c]) => sql`b.${sql(c)}`))}
        from ${stored} b
        ${where}
        offset 0
      )`;
  const rows = await timed(
    'daily_series_text',
    sql`
      select
        a.instrument_id::text,
        ${barsText(sql, format, DAILY_BAR, (name) => sql`a.${sql(name)}`, sql`a.bar_date`)} as bars,
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
            from ${stored} v
            where instrument_id = a.instrument_id
              and bar_date between ${from}::date and ${to}::date
              and reflects_actions_through is not null
            group by reflects_actions_through
          ) v
        ) end as vendor_spans,
        ${latestVersion(sql, sql`a.instrument_id`)}::text as latest_version,
        coalesce(
          (select bar_date from daily_bars where instrument_id = a.instrument_id and bar_date >= ${to}::date order by bar_date desc limit 1),
          max(a.bar_date)
        )::text as latest_bar
      from ${bars} a
      group by a.instrument_id
    `.raw(),
  );
  return rows.map(([id, bars, firstBar, sources, stale, hasRaw, hasVendor, minKey, vendorSpans, latestVersion, latestBar]) => ({
    instrumentId: text(id),
    bars,
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

/** One instrument's intraday bars in a window, as the response text. */
export interface IntradayText {
  /** The bars in time order, as parts to be sent one after another: JSON objects joined by commas, or CSV rows (none without bars). */
  bars: Buffer[];
  sources: string[];
  /** The latest `asOf` of the bars (ISO), null without bars. */
  latestAsOf: string | null;
}

/**
 * The bars of one instrument at `interval` whose start is within [from, to],
 * in one statement: as stored (the 1-minute table or its rollup), or with
 * `knownAt`, the 1-minute bars as known at that instant (intradayBarsAt),
 * rolled up at read into the same buckets the stored rollups hold.
 */
export async function intradayText(
  sql: ISql,
  format: Format,
  instrumentId: string,
  interval: Interval,
  from: Date,
  to: Date,
  knownAt?: Date,
): Promise<IntradayText> {
  const bars = knownAt ? intradayBarsAt(sql, knownAt, interval, from, to) : sql`${sql(INTRADAY_TABLES[interval])}`;
  const [[text_, sources, latest]] = await timed(
    knownAt ? `intraday_text_${interval}_known_at` : `intraday_text_${interval}`,
    sql`
      select
        ${barsText(sql, format, INTRADAY_BAR, (name) => sql`${sql(name)}`, sql`bar_ts`)} as bars,
        array_to_json(array_agg(distinct source))::text as sources,
        ${isoInstant(sql, sql`max(as_of)`)} as latest_as_of
      from ${bars} b
      where instrument_id = ${instrumentId}
        and bar_ts between ${from} and ${to}
    `.raw(),
  );
  return {
    bars: text_ ? [text_] : [],
    sources: sources ? (JSON.parse(text(sources)) as string[]) : [],
    latestAsOf: latest ? text(latest) : null,
  };
}

const INTRADAY_NAMES = columnNames(INTRADAY_COLUMNS);

/**
 * The 1-minute bars as known at `knownAt` (sql/019) in [from, until): a bar
 * known then as it stands, else its latest revision known then (revisions
 * stated known at the same instant: the one replaced last). Same columns as
 * intraday_bars; the statement's instrument filter reaches inside.
 *
 * The span is written into both branches, the revisions' join included, as
 * constants, so only the span's chunks are planned and read. The statement's
 * own window filter cannot do that: over the buckets it is a filter on
 * date_bin(bar_ts), which excludes no chunk, and PostgreSQL does not carry a
 * range across the revisions' join. Without the span, a year's 1-hour bars
 * as known at an instant read every chunk of the history, compressed ones
 * decompressed: over HTTP, 3.05 s on 10 years of a coin's minutes (523
 * chunks, 470 compressed) against 1.07 s on one year; with it, 1.07 s on both
 * (medians of 9, two coins, TimescaleDB 2.28.3).
 */
function minuteBarsAt(sql: ISql, knownAt: Date, from: Date, until: Date): Fragment {
  const columns = (alias: string) =>
    identifierList(
      sql,
      INTRADAY_NAMES.map((c) => `${alias}.${c}`),
    );
  const within = (alias: string) => sql`${sql(`${alias}.bar_ts`)} >= ${from} and ${sql(`${alias}.bar_ts`)} < ${until}`;
  return sql`(
    select ${columns('b')}
    from intraday_bars b
    where b.known_at <= ${knownAt} and ${within('b')}
    union all
    select ${columns('r')}
    from (
      select distinct on (r.instrument_id, r.bar_ts) r.*
      from intraday_bar_revisions r
      join intraday_bars b on b.instrument_id = r.instrument_id and b.bar_ts = r.bar_ts and b.known_at > ${knownAt} and ${within('b')}
      where r.known_at <= ${knownAt} and ${within('r')}
      order by r.instrument_id, r.bar_ts, r.known_at desc, r.replaced_seq desc
    ) r
  )`;
}

/**
 * The bars at `interval` starting within [from, to] as known at `knownAt`:
 * the minutes (minuteBarsAt) from `from` to the end of the bucket that starts
 * at `to` or before, bucketed as the stored rollups are (prices/repository.ts,
 * rollupOf).
 */
function intradayBarsAt(sql: ISql, knownAt: Date, interval: Interval, from: Date, to: Date): Fragment {
  const widthMs = INTERVAL_MINUTES[interval] * 60_000;
  const minutes = minuteBarsAt(sql, knownAt, from, new Date(to.getTime() + widthMs));
  return interval === '1min' ? minutes : rollupOf(sql, minutes, interval);
}

const COMMA = Buffer.from(',');

/** Two consecutive windows' texts (`first` the earlier) as the text of the whole window, without copying their bytes. */
export function joinIntradayTexts(format: Format, first: IntradayText, second: IntradayText): IntradayText {
  const separator = format === 'json' && first.bars.length && second.bars.length ? [COMMA] : [];
  const latest = [first.latestAsOf, second.latestAsOf].filter((t) => t !== null).sort();
  return {
    bars: [...first.bars, ...separator, ...second.bars],
    sources: [...new Set([...first.sources, ...second.sources])],
    latestAsOf: latest.at(-1) ?? null,
  };
}
