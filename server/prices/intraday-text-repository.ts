import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import type { TextFormat } from '../core/params.ts';
import type { DailyBarsFormat } from './daily-text-repository.ts';
import { symbolRuns } from '../instruments/repository.ts';
import { barsText, barText, INTRADAY_BAR, isoInstant, packedSeries, symbolCell, text, withSymbolCell } from './bar-text-sql.ts';
import { intradayBarsAt } from './intraday-bars-at-repository.ts';
import { INTRADAY_TABLES, ROLLUP_TEXT_COLUMNS, type Interval } from './repository.ts';

// The intraday reads whose response text PostgreSQL writes (bar-text-sql.ts),
// or whose bars it packs for the columnar answers, called by service.ts.

type Fragment = postgres.Fragment;

/** One instrument's intraday bars in a window, as the response text. */
export interface IntradayText {
  /**
   * The bars in time order, as parts to be sent one after another: JSON
   * objects joined by commas, or CSV rows (none without bars); or packed
   * (packedIntradayBars), a part per statement.
   */
  bars: Buffer[];
  sources: string[];
  /** The latest `asOf` of the bars (ISO), null without bars. */
  latestAsOf: string | null;
}

const NUMBER_COLUMNS = ['open_price', 'high_price', 'low_price', 'close_price', 'volume'];

/**
 * An intraday series' bars packed for the columnar answers (packedSeries;
 * bar-columns.ts, unpackIntraday), as a daily series is (packedBars): each
 * record the bar's start as stored (timestamptz_send: microseconds since
 * 2000-01-01 UTC, int8) and its open, high, low, close and volume (float8,
 * NaN where the source has none); texts that vary listed by the bar's start
 * (ISO). PostgreSQL writing each bar's JSON object and the service parsing
 * it again cost both sides more than the bytes of the doubles.
 */
function packedIntradayBars(sql: ISql, again: Fragment): Fragment {
  const record = [sql`timestamptz_send(b.bar_ts)`, ...NUMBER_COLUMNS.map((name) => sql`float8send(coalesce(b.${sql(name)}, 'NaN'::float8))`)].reduce(
    (all, next) => sql`${all} || ${next}`,
  );
  return packedSeries(sql, 'b', record, isoInstant(sql, sql`s.bar_ts`), again);
}

/**
 * The bars of one instrument at `interval` whose start is within [from, to],
 * in one statement: as stored (the 1-minute table or its rollup), or with
 * `knownAt`, the 1-minute bars as known at that instant (intradayBarsAt),
 * rolled up at read into the same buckets the stored rollups hold. With
 * `storedText` (a rollup table read without `knownAt`), each bar's text is
 * the one stored with it, else it is written here from the numbers.
 *
 * A CSV row carries the instrument's symbol on the bar's UTC day (the days
 * the window is given in): the statement reads the symbols over the
 * window's days as runs (symbolRuns) and each bar takes its run's cell. A
 * stored CSV row is stored without it (symbols change after bars are
 * stored) and is given it here (withSymbolCell). The other formats leave
 * symbols to the caller (symbol-runs-repository.ts).
 *
 * A stored rollup read in JSON over whole UTC days (every read the routes
 * make) joins the days' stored texts instead (rollupDaysJson). Packed, the
 * bars are packed from their numbers (packedIntradayBars).
 */
export async function intradayText(
  sql: ISql,
  format: DailyBarsFormat,
  instrumentId: string,
  interval: Interval,
  from: Date,
  to: Date,
  knownAt: Date | undefined,
  storedText = false,
): Promise<IntradayText> {
  if (storedText && format === 'json' && wholeUtcDays(from, to)) return rollupDaysJson(sql, instrumentId, interval, from, to);
  const bars = knownAt ? intradayBarsAt(sql, knownAt, interval, from, to) : sql`${sql(INTRADAY_TABLES[interval])}`;
  const window = (alias: string) => sql`${sql(alias)}.instrument_id = ${instrumentId} and ${sql(alias)}.bar_ts between ${from} and ${to}`;
  const barsColumn = (textFormat: TextFormat) => {
    const written = barText(sql, textFormat, INTRADAY_BAR, (name) => sql`b.${sql(name)}`, sql`r.cell`);
    const storedColumn = sql`b.${sql(ROLLUP_TEXT_COLUMNS[textFormat])}`;
    const stored = textFormat === 'csv' ? withSymbolCell(sql, storedColumn, sql`r.lead`) : storedColumn;
    // A row stored without its text (sql/026) has it written here.
    return barsText(sql, textFormat, storedText ? sql`coalesce(${stored}, ${written})` : written, sql`b.bar_ts`);
  };
  const utcDay = (t: Date) => t.toISOString().slice(0, 10);
  // A run's days as instants, so each bar is compared as stored, not converted to its day; its cell
  // (and a stored row's lead, withSymbolCell) written once per run (offset 0 keeps the planner from
  // moving them into the join, where they were written per bar: a year of 1-hour bars took twice as long).
  const onRun = sql`
    join (
      select
        from_day::timestamp at time zone 'UTC' as from_ts,
        until_day::timestamp at time zone 'UTC' as until_ts,
        ${symbolCell(sql, sql`symbol`)} as cell,
        ${instrumentId}::uuid::text || ',' || ${symbolCell(sql, sql`symbol`)} as lead
      from (${symbolRuns(sql, sql`array[${instrumentId}::uuid]`, utcDay(from), utcDay(to))}) runs
      offset 0
    ) r on b.bar_ts >= r.from_ts and b.bar_ts < r.until_ts
  `;
  const statement = format === 'packed' ? 'intraday_packed' : storedText && !knownAt ? 'intraday_stored_text' : 'intraday_text';
  const [[text_, sources, latest]] = await timed(
    knownAt ? `${statement}_${interval}_known_at` : `${statement}_${interval}`,
    sql`
      select
        ${format === 'packed' ? packedIntradayBars(sql, sql`from ${bars} s where ${window('s')}`) : barsColumn(format)} as bars,
        array_to_json(array_agg(distinct b.source))::text as sources,
        ${isoInstant(sql, sql`max(b.as_of)`)} as latest_as_of
      from ${bars} b
      ${format === 'csv' ? onRun : sql``}
      where ${window('b')}
    `.raw(),
  );
  return {
    bars: text_ ? [format === 'packed' ? Buffer.from(text_.toString('latin1'), 'base64') : text_] : [],
    sources: sources ? (JSON.parse(text(sources)) as string[]) : [],
    latestAsOf: latest ? text(latest) : null,
  };
}

const COMMA = Buffer.from(',');
const DAY_MS = 86_400_000;

/** Whether [from, to] is whole UTC days: from a midnight to the last millisecond of a day. */
const wholeUtcDays = (from: Date, to: Date) => from.getTime() % DAY_MS === 0 && (to.getTime() + 1) % DAY_MS === 0;

/**
 * The JSON text of a rollup's bars over the whole UTC days from `from` to
 * `to`, from intraday_rollup_days (sql/028): one row per day, its bars'
 * objects already joined, which the ingest path writes with the rollup rows.
 * The parts are the days' texts with commas between; the sources are the
 * days' together, the latest asOf the latest of theirs.
 */
async function rollupDaysJson(sql: ISql, instrumentId: string, interval: Interval, from: Date, to: Date): Promise<IntradayText> {
  const day = (t: Date) => t.toISOString().slice(0, 10);
  const rows = await timed(
    `intraday_rollup_days_${interval}`,
    sql`
      select bars_json, sources, ${isoInstant(sql, sql`latest_as_of`)}
      from intraday_rollup_days
      where instrument_id = ${instrumentId} and rollup = ${interval} and day between ${day(from)}::date and ${day(to)}::date
      order by day
    `.raw(),
  );
  const bars: Buffer[] = [];
  const sources = new Set<string>();
  let latestAsOf: string | null = null;
  // Consecutive days mostly share their sources: each distinct text is parsed once in a row.
  let daySources: Buffer | null = null;
  for (const [json, dayJsonSources, dayLatest] of rows) {
    if (bars.length) bars.push(COMMA);
    bars.push(json);
    if (!daySources?.equals(dayJsonSources)) {
      for (const source of JSON.parse(text(dayJsonSources)) as string[]) sources.add(source);
      daySources = dayJsonSources;
    }
    // ISO instants of years 0 to 9999 order as their text does.
    const latest = text(dayLatest);
    if (latestAsOf === null || latest > latestAsOf) latestAsOf = latest;
  }
  return { bars: bars.length ? [Buffer.concat(bars)] : [], sources: [...sources], latestAsOf };
}

/** Two consecutive windows' texts (`first` the earlier) as the text of the whole window, without copying their bytes. */
export function joinIntradayTexts(format: DailyBarsFormat, first: IntradayText, second: IntradayText): IntradayText {
  const separator = format === 'json' && first.bars.length && second.bars.length ? [COMMA] : [];
  const latest = [first.latestAsOf, second.latestAsOf].filter((t) => t !== null).sort();
  return {
    bars: [...first.bars, ...separator, ...second.bars],
    sources: [...new Set([...first.sources, ...second.sources])],
    latestAsOf: latest.at(-1) ?? null,
  };
}
