import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { fragmentList } from '../db/sql.ts';
import type { TextFormat } from '../core/params.ts';

// The text of the price reads' bars, written by PostgreSQL: each bar becomes
// its CSV row (daily and intraday) or JSON object (intraday) in SQL, and the
// service passes the bytes on without making an object per bar: Node would
// spend more time parsing the rows than PostgreSQL spends writing them. The
// reads are daily-text-repository.ts and intraday-text-repository.ts. A daily
// JSON answer is written by the service from the packed series instead
// (daily-json.ts), which costs the database a third as much.

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
export const isoInstant = (sql: ISql, column: Fragment) => sql`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * A field of a bar: its key, what kind of value it is, and its column. A
 * number is written as JavaScript writes it; free text as a JSON string
 * (PostgreSQL's escaping is JSON.stringify's for every string it can store)
 * or a CSV cell (see csvText); dates, instants, ids and booleans never need
 * escaping.
 */
export type BarField = readonly [key: string, kind: 'number' | 'text' | 'date' | 'instant' | 'id' | 'boolean', column: string];

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
export const DAILY_BAR: BarField[] = [
  ['barDate', 'date', 'bar_date'],
  ...OHLCV,
  ['stale', 'boolean', 'stale'],
  ['asOf', 'instant', 'as_of'],
  ['source', 'text', 'source'],
];

/** An intraday bar's fields: the spec's, in its order. */
export const INTRADAY_BAR: BarField[] = [['barTimestamp', 'instant', 'bar_ts'], ...OHLCV, ['source', 'text', 'source']];

// In CSV (and the columnar files, bar-columns.ts), each row also names its
// instrument, then the instrument's symbol on the bar's day (symbolCell).
export const ID_FIELD: BarField = ['instrumentId', 'id', 'instrument_id'];

/** The header row of a CSV price read. */
export const CSV_COLUMNS = {
  daily: [ID_FIELD[0], 'symbol', ...DAILY_BAR.map(([key]) => key)],
  intraday: [ID_FIELD[0], 'symbol', ...INTRADAY_BAR.map(([key]) => key)],
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

/**
 * The bar's CSV row, ended by CRLF: its instrument, its symbol cell
 * (symbolCell's) unless `symbol` is null, then its fields; an absent number is
 * an empty cell.
 */
function csvRow(sql: ISql, fields: BarField[], col: (name: string) => Fragment, symbol: Fragment | null): Fragment {
  const value = ([, kind, column]: BarField) =>
    kind === 'number'
      ? sql`coalesce(nullif(${jsonNumber(sql, col(column))}, 'null'), '')`
      : kind === 'text'
        ? csvText(sql, col(column))
        : plainText(sql, kind, col(column));
  const [id, ...rest] = [ID_FIELD, ...fields].map(value);
  const cells = symbol ? [id, symbol, ...rest] : [id, ...rest];
  return sql`${cells.reduce((row, cell) => sql`${row} || ',' || ${cell}`)} || ${'\r\n'}::text`;
}

/**
 * One bar's text in `format`: its JSON object, or its CSV row with the
 * symbol cell `symbol`. A CSV row without one (null) is the form a rollup
 * bar's row is stored in (sql/026), given its symbol at read (withSymbolCell).
 */
export function barText(sql: ISql, format: TextFormat, fields: BarField[], col: (name: string) => Fragment, symbol: Fragment | null): Fragment {
  return format === 'json' ? jsonObject(sql, fields, col) : csvRow(sql, fields, col, symbol);
}

/** A symbol (text, or null for none) as its CSV cell: escaped as any text cell (csvText), empty for none. */
export const symbolCell = (sql: ISql, symbol: Fragment) => sql`coalesce(${csvText(sql, symbol)}, '')`;

/**
 * A CSV row written without its symbol cell (barText with none), with `lead`
 * (its instrument id, a comma and its symbol cell) in place of its id. The
 * id's text is always 36 characters, so the row is cut after them, as bytes:
 * cut as text, PostgreSQL counts characters from the row's start. On a year
 * of stored 1-hour rows (8,760) the statement took 11 to 12 ms cut as text,
 * 7.5 to 8.7 ms cut as bytes, about what the rows as stored take (8.8 to 9.6).
 */
export const withSymbolCell = (sql: ISql, row: Fragment, lead: Fragment) => sql`${lead} || convert_from(substring(convert_to(${row}, 'UTF8') from 37), 'UTF8')`;

/** The bars' texts `bar` (barText's, or as stored) in `order`: JSON objects joined by commas, or CSV rows. */
export function barsText(sql: ISql, format: TextFormat, bar: Fragment, order: Fragment): Fragment {
  return sql`string_agg(${bar}, ${format === 'json' ? ',' : ''}::text order by ${order})`;
}

/**
 * The texts a series' bars are expected to carry (the instrument's quote
 * currency and unit), which packedSeries tests every bar against.
 */
export interface ExpectedTexts {
  currency: Fragment;
  unit: Fragment;
}

/**
 * A series' bars packed in one bytea, sent as base64, for the columnar
 * answers (bar-columns.ts decodes it): the bar count (int4), each bar's
 * `record` (big-endian, as PostgreSQL's send functions write them) in no set
 * order, then [quoteCurrency, quoteUnit, source] as UTF-8 JSON, each
 * `[value]` when every bar of `alias` has it, else `[[key, value], …]` from a
 * second scan of the series' bars (`again`, its rows aliased `s`, `key`
 * naming a bar of them), made only for a series whose texts vary: an
 * aggregate under CASE runs for every row whichever branch is taken.
 *
 * Whether every bar has the same texts is asked of the smallest and largest
 * of each, or, with `expected`, by one test per bar of its currency and unit
 * against those and the series' distinct sources, which the statement lists
 * anyway (PostgreSQL computes identical aggregates once). On a page of 109
 * instruments' year (28,000 bars) the statement took 0.82 times as long that
 * way, where the six text aggregates cost as much as all three columns. A
 * series whose currency or unit is not the expected one is listed by day,
 * as one whose texts vary: the same values, in more bytes.
 */
export function packedSeries(sql: ISql, alias: string, record: Fragment, key: Fragment, again: Fragment, expected?: ExpectedTexts): Fragment {
  const texts = ['quote_currency', 'quote_unit', 'source'];
  const of = (name: string) => sql`${sql(alias)}.${sql(name)}`;
  const sources = sql`array_agg(distinct ${of('source')})`;
  const same = expected
    ? sql`bool_and(${of('quote_currency')} is not distinct from ${expected.currency} and ${of('quote_unit')} is not distinct from ${expected.unit}) and cardinality(${sources}) = 1`
    : texts.map((name) => sql`min(${of(name)}) = max(${of(name)})`).reduce((all, next) => sql`${all} and ${next}`);
  const values = expected ? [expected.currency, expected.unit, sql`(${sources})[1]`] : texts.map((name) => sql`min(${of(name)})`);
  const textColumns = sql`case when ${same} then json_build_array(${fragmentList(
    sql,
    values.map((value) => sql`json_build_array(${value})`),
  )}) else (
    select json_build_array(${fragmentList(
      sql,
      texts.map((name) => sql`json_agg(json_build_array(${key}, s.${sql(name)}))`),
    )})
    ${again}
  ) end`;
  return sql`encode(int4send(count(*)::int4) || string_agg(${record}, ''::bytea) || convert_to(${textColumns}::text, 'UTF8'), 'base64')`;
}

// The reads return raw rows (postgres.js hands over the bytes as they
// arrived); their small columns are decoded with these.
export const text = (b: Buffer) => b.toString('utf8');
export const bool = (b: Buffer) => b[0] === 0x74; // 't'
