import { fredMonthlyRows } from './macro-series.ts';
import type { EventClass, Importance } from '../economic-events/schema.ts';
import { newYorkTimeToUtc } from '../core/new-york-time.ts';

/**
 * The demo economic calendar: the monthly releases 2018-01..2022-09 of the
 * five FRED series in ./data/fred_monthly_demo.csv as calendar rows, plus the
 * releases of those series scheduled for January 2027. The figures are the
 * file's real values, formatted as calendars print them. The file has no
 * release dates, so scheduledAt follows fixed rules (below, and in
 * ./data/SOURCES.md) and every row is labelled `synthetic-demo`. The same file
 * always gives the same rows.
 */

export const DEMO_EVENTS_SOURCE = 'synthetic-demo';
export const FIRST_PERIOD = '2018-01';
export const LAST_PERIOD = '2022-09';
/** The reference month of the scheduled rows: released in January 2027. */
export const SCHEDULED_PERIOD = '2026-12';

export interface DemoEconomicEvent {
  country: string;
  eventClass: EventClass;
  importance: Importance;
  name: string;
  referencePeriod: string;
  scheduledAt: string;
  actual: string | null;
  forecast: null;
  previous: string | null;
  source: typeof DEMO_EVENTS_SOURCE;
}

/** Observations of one series by month (`yyyy-mm`), as the file writes them. */
type Observations = Map<string, string>;

interface SeriesRule {
  series: string;
  name: string;
  eventClass: EventClass;
  importance: Importance;
  /** The figure for `period` as calendars print it. */
  actual(values: Observations, period: string): string;
  /** The release day of `period`'s figure, and its New York wall-clock time. */
  release(period: string): { day: string; newYorkTime: string };
}

const RULES: SeriesRule[] = [
  {
    series: 'UNRATE',
    name: 'Unemployment Rate',
    eventClass: 'employment',
    importance: 'high',
    actual: (v, p) => `${withDecimals(value(v, p), 1)}%`,
    release: employmentSituation,
  },
  {
    series: 'PAYEMS',
    name: 'Nonfarm Payrolls',
    eventClass: 'employment',
    importance: 'high',
    // The level is in thousands; calendars print the month's change: "263K".
    actual: (v, p) => `${Number(value(v, p)) - Number(value(v, previousMonth(p)))}K`,
    release: employmentSituation,
  },
  {
    series: 'CPIAUCSL',
    name: 'CPI m/m',
    eventClass: 'inflation',
    importance: 'high',
    actual: (v, p) => monthOnMonthPercent(value(v, previousMonth(p)), value(v, p)),
    release: consumerPrices,
  },
  {
    series: 'CPILFESL',
    name: 'Core CPI m/m',
    eventClass: 'inflation',
    importance: 'high',
    actual: (v, p) => monthOnMonthPercent(value(v, previousMonth(p)), value(v, p)),
    release: consumerPrices,
  },
  {
    series: 'FEDFUNDS',
    name: 'Effective Federal Funds Rate (monthly average)',
    eventClass: 'central_bank',
    importance: 'low',
    actual: (v, p) => `${withDecimals(value(v, p), 2)}%`,
    release: (p) => ({ day: firstWeekdayFrom(nextMonth(p), 1), newYorkTime: '16:15' }),
  },
];

/** The Employment Situation (unemployment rate, payrolls): the first Friday of the next month, 08:30 New York. */
function employmentSituation(period: string) {
  const month = nextMonth(period);
  const firstDow = dayOfWeek(`${month}-01`);
  return { day: `${month}-${pad2(1 + ((5 - firstDow + 7) % 7))}`, newYorkTime: '08:30' };
}

/** CPI and core CPI: the 13th of the next month, or the next weekday after it, 08:30 New York. */
function consumerPrices(period: string) {
  return { day: firstWeekdayFrom(nextMonth(period), 13), newYorkTime: '08:30' };
}

/** The day `day` of `month` (`yyyy-mm`), or the Monday after it when it falls on a weekend. */
function firstWeekdayFrom(month: string, day: number): string {
  const dow = dayOfWeek(`${month}-${pad2(day)}`);
  return `${month}-${pad2(day + (dow === 6 ? 2 : dow === 0 ? 1 : 0))}`;
}

const pad2 = (n: number) => String(n).padStart(2, '0');

/** 0 = Sunday .. 6 = Saturday. */
const dayOfWeek = (day: string) => new Date(`${day}T00:00:00Z`).getUTCDay();

function nextMonth(period: string): string {
  const [y, m] = period.split('-').map(Number);
  return m === 12 ? `${y + 1}-01` : `${y}-${pad2(m + 1)}`;
}

function previousMonth(period: string): string {
  const [y, m] = period.split('-').map(Number);
  return m === 1 ? `${y - 1}-12` : `${y}-${pad2(m - 1)}`;
}

function value(values: Observations, period: string): string {
  const v = values.get(period);
  if (v === undefined) throw new Error(`the FRED snapshot has no observation for ${period}`);
  return v;
}

const DECIMAL = /^(-?\d+)(?:\.(\d+))?$/;

/** A decimal text written with exactly `places` decimals ("1.3" → "1.30"); refuses to round one that has more. */
function withDecimals(text: string, places: number): string {
  const m = DECIMAL.exec(text);
  if (!m || (m[2] ?? '').length > places) throw new Error(`the FRED snapshot: ${text} does not fit ${places} decimals`);
  return `${m[1]}.${(m[2] ?? '').padEnd(places, '0')}`;
}

/** A decimal text with at most three decimals (a CPI index level), in thousandths, exactly. */
function thousandths(text: string): number {
  const m = DECIMAL.exec(text);
  if (!m || m[1].startsWith('-') || (m[2] ?? '').length > 3) throw new Error(`the FRED snapshot: ${text} is not an index level with at most 3 decimals`);
  return Number(m[1]) * 1000 + Number((m[2] ?? '').padEnd(3, '0'));
}

/**
 * The percent change between two index levels rounded to one decimal, half
 * away from zero, as BLS publishes it ("0.4%", "-0.1%", "0.0%"). Computed in
 * integers (levels in thousandths, the change in tenths of a percent), so no
 * binary fraction decides a rounding.
 */
function monthOnMonthPercent(before: string, after: string): string {
  const a = thousandths(before);
  const change = 1000 * (thousandths(after) - a); // tenths of a percent, times a
  const tenths = Math.floor((2 * Math.abs(change) + a) / (2 * a));
  return `${change < 0 && tenths > 0 ? '-' : ''}${Math.floor(tenths / 10)}.${tenths % 10}%`;
}

function readObservations(): Map<string, Observations> {
  const bySeries = new Map<string, Observations>();
  for (const { series, date, value } of fredMonthlyRows()) {
    let values = bySeries.get(series);
    if (!values) bySeries.set(series, (values = new Map()));
    values.set(date.slice(0, 7), value);
  }
  return bySeries;
}

function periods(from: string, to: string): string[] {
  const out: string[] = [];
  for (let p = from; p <= to; p = nextMonth(p)) out.push(p);
  return out;
}

/** The demo calendar rows in admin ingest shape (no id: each is derived from country, name and referencePeriod). */
export function demoEconomicEvents(): DemoEconomicEvent[] {
  const observations = readObservations();
  const rows: DemoEconomicEvent[] = [];
  for (const rule of RULES) {
    const values = observations.get(rule.series);
    if (!values) throw new Error(`the FRED snapshot has no ${rule.series} series`);
    const row = (referencePeriod: string, actual: string | null, previous: string | null): DemoEconomicEvent => {
      const { day, newYorkTime } = rule.release(referencePeriod);
      return {
        country: 'US',
        eventClass: rule.eventClass,
        importance: rule.importance,
        name: rule.name,
        referencePeriod,
        scheduledAt: new Date(newYorkTimeToUtc(day, newYorkTime)).toISOString(),
        actual,
        forecast: null,
        previous,
        source: DEMO_EVENTS_SOURCE,
      };
    };
    for (const p of periods(FIRST_PERIOD, LAST_PERIOD)) rows.push(row(p, rule.actual(values, p), rule.actual(values, previousMonth(p))));
    rows.push(row(SCHEDULED_PERIOD, null, null));
  }
  return rows;
}
