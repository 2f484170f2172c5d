import { createHash } from 'node:crypto';
import type { FiscalPeriod, Session, Status } from '../earnings/schema.ts';
import { demoDailyBars, demoInstrumentId, demoInstruments } from './catalog.ts';
import { SYNTHETIC_SOURCE } from './synthetic-intraday.ts';
import type { InstrumentId } from '../core/ids.ts';
import { entryOf } from '../core/map-entry.ts';

/**
 * A synthetic earnings calendar for the demo. Our sources hold no earnings
 * dates, so every demo equity with daily bars (the 30 Dow members, MSFT
 * among them, and GOOGL) gets a quarterly report for each fiscal quarter
 * whose report date falls within its bars, all `reported`, and then one
 * more, its next report after its last bar, `scheduled`. Equities without
 * bars (GOOG-C, GM-2010, AA-2016), the index, the ETF, crypto and FX get
 * none. Every row has `source: 'synthetic-demo'`; the same catalog always
 * gives the same rows.
 *
 * The rules:
 * - fiscal years end in December, except those in FISCAL_YEAR_END_MONTH; a
 *   fiscal year is named by the calendar year it ends in, and its quarters
 *   Q1..Q4 end 9, 6, 3 and 0 months before its last month;
 * - a report comes 21 to 35 days after its quarter's last day (the offset a
 *   hash of the instrument's id and the period picks), moved to the Monday
 *   after when that falls on a weekend, so every report date is a weekday;
 * - each instrument reports habitually before the open or after the close
 *   (picked by a hash of its id); one reported row in 20 is during market
 *   hours instead, and a scheduled row whose hash is odd is `unknown`: its
 *   date announced, its session not yet.
 */

export interface SyntheticEarningsReport {
  instrumentId: InstrumentId;
  reportDate: string;
  session: Session;
  fiscalPeriod: FiscalPeriod;
  fiscalYear: number;
  status: Status;
  source: typeof SYNTHETIC_SOURCE;
}

/** Fiscal year-end months (1..12), by instruments.json key, of the demo equities that do not end theirs in December, as each company's filings state. */
export const FISCAL_YEAR_END_MONTH: Readonly<Record<string, number>> = {
  MSFT: 6,
  'dow:PG': 6,
  'dow:DIS': 9,
  'dow:HWP': 10,
  'dow:WMT': 1,
  'dow:HD': 1,
};

export const REPORT_LAG_DAYS = { min: 21, max: 35 } as const;

const QUARTERS = ['Q1', 'Q2', 'Q3', 'Q4'] as const;
const DAY_MS = 86_400_000;

/** A uint32 from the text: the first 4 bytes of its SHA-1. */
function draw(text: string): number {
  return createHash('sha1').update(text, 'utf8').digest().readUInt32BE(0);
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The last day of month `monthIndex` (months since year 0, January = 0), as ms since the epoch. */
function monthEnd(monthIndex: number): number {
  return Date.UTC(Math.floor(monthIndex / 12), (monthIndex % 12) + 1, 0);
}

/** The report date of the quarter ending on `quarterEnd`: 21..35 days later, off a weekend. */
function reportDay(quarterEnd: number, key: string): string {
  const lag = REPORT_LAG_DAYS.min + (draw(`lag:${key}`) % (REPORT_LAG_DAYS.max - REPORT_LAG_DAYS.min + 1));
  const day = quarterEnd + lag * DAY_MS;
  const weekday = new Date(day).getUTCDay();
  return isoDay(day + (weekday === 6 ? 2 : weekday === 0 ? 1 : 0) * DAY_MS);
}

/** First and last bar date of each instrument with demo bars. */
function barRanges(): Map<string, { first: string; last: string }> {
  const ranges = new Map<string, { first: string; last: string }>();
  for (const { instrumentId, barDate } of demoDailyBars()) {
    const r = ranges.get(instrumentId);
    if (!r) ranges.set(instrumentId, { first: barDate, last: barDate });
    else {
      if (barDate < r.first) r.first = barDate;
      if (barDate > r.last) r.last = barDate;
    }
  }
  return ranges;
}

/** The equities that get earnings: those with daily bars, in instruments.json order. */
function equitiesWithBars(ranges: Map<string, unknown>): InstrumentId[] {
  return demoInstruments()
    .filter((i) => i.assetClass === 'equity' && ranges.has(i.id))
    .map((i) => i.id);
}

export function syntheticEarnings(): SyntheticEarningsReport[] {
  const ranges = barRanges();
  const rows: SyntheticEarningsReport[] = [];
  const endMonths = new Map(Object.entries(FISCAL_YEAR_END_MONTH).map(([key, month]) => [demoInstrumentId(key), month]));
  for (const instrumentId of equitiesWithBars(ranges)) {
    const { first, last } = entryOf(ranges, instrumentId);
    const endMonth = endMonths.get(instrumentId) ?? 12;
    const habitual: Session = draw(`session:${instrumentId}`) % 2 ? 'amc' : 'bmo';
    // From the fiscal year before the first bar's year, quarter by quarter, until the first report after the last bar.
    for (let fiscalYear = Number(first.slice(0, 4)) - 1; ; fiscalYear++) {
      let scheduled = false;
      for (const [q, fiscalPeriod] of QUARTERS.entries()) {
        const quarterEnd = monthEnd(fiscalYear * 12 + (endMonth - 1) - 3 * (3 - q));
        const period = `${instrumentId}:${fiscalYear}:${fiscalPeriod}`;
        const reportDate = reportDay(quarterEnd, period);
        if (reportDate < first) continue;
        const h = draw(`kind:${period}`);
        scheduled = reportDate > last;
        const session: Session = scheduled ? (h % 2 ? 'unknown' : habitual) : h % 20 === 0 ? 'dmh' : habitual;
        rows.push({ instrumentId, reportDate, session, fiscalPeriod, fiscalYear, status: scheduled ? 'scheduled' : 'reported', source: SYNTHETIC_SOURCE });
        if (scheduled) break;
      }
      if (scheduled) break;
    }
  }
  return rows;
}
