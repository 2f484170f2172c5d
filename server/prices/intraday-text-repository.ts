import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import type { TextFormat } from '../core/params.ts';
import { barsText, barText, INTRADAY_BAR, isoInstant, text } from './bar-text-sql.ts';
import { intradayBarsAt } from './intraday-bars-at-repository.ts';
import { INTRADAY_TABLES, ROLLUP_TEXT_COLUMNS, type Interval } from './repository.ts';

// The intraday reads whose response text PostgreSQL writes (bar-text-sql.ts),
// called by service.ts.

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
 * rolled up at read into the same buckets the stored rollups hold. With
 * `storedText` (a rollup table read without `knownAt`), each bar's text is
 * the one stored with it, else it is written here from the numbers.
 */
export async function intradayText(
  sql: ISql,
  format: TextFormat,
  instrumentId: string,
  interval: Interval,
  from: Date,
  to: Date,
  knownAt: Date | undefined,
  storedText = false,
): Promise<IntradayText> {
  const bars = knownAt ? intradayBarsAt(sql, knownAt, interval, from, to) : sql`${sql(INTRADAY_TABLES[interval])}`;
  const written = barText(sql, format, INTRADAY_BAR, (name) => sql`${sql(name)}`);
  // A row stored without its text (sql/026) has it written here.
  const bar = storedText ? sql`coalesce(${sql(ROLLUP_TEXT_COLUMNS[format])}, ${written})` : written;
  const [[text_, sources, latest]] = await timed(
    knownAt ? `intraday_text_${interval}_known_at` : storedText ? `intraday_stored_text_${interval}` : `intraday_text_${interval}`,
    sql`
      select
        ${barsText(sql, format, bar, sql`bar_ts`)} as bars,
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

const COMMA = Buffer.from(',');

/** Two consecutive windows' texts (`first` the earlier) as the text of the whole window, without copying their bytes. */
export function joinIntradayTexts(format: TextFormat, first: IntradayText, second: IntradayText): IntradayText {
  const separator = format === 'json' && first.bars.length && second.bars.length ? [COMMA] : [];
  const latest = [first.latestAsOf, second.latestAsOf].filter((t) => t !== null).sort();
  return {
    bars: [...first.bars, ...separator, ...second.bars],
    sources: [...new Set([...first.sources, ...second.sources])],
    latestAsOf: latest.at(-1) ?? null,
  };
}
