import { readFileSync } from 'node:fs';
import { DEMO_DATA_DIR } from './catalog-files.ts';
import { newYorkTimeToUtc } from '../core/new-york-time.ts';

/**
 * Daily USD/CHF closes from the bundled 30-minute readings
 * (data/usdchf_30min_1996_2001.csv, UTC timestamps, CHF per USD; origin and
 * licence in data/SOURCES.md).
 *
 * The rule is the FX market's daily close, the New York 17:00 cut-off: the
 * close of day D is the last reading in (17:00 New York on D−1, 17:00 New York
 * on D], with New York's daylight saving time taken from the time-zone
 * database (Intl), so the cut-off is 21:00 UTC in summer and 22:00 UTC in
 * winter. A close must be a reading of the last hour before the cut-off (at or
 * after 16:00 New York): a window whose last reading is earlier, such as
 * Christmas Day's one reading from 17:30 the evening before, gives no rate for
 * the day, because that reading is not the day's close. Rows are emitted for
 * Monday to Friday only; the readings of a Saturday or Sunday window (Friday
 * 17:00 to Sunday 17:00 New York) are dropped and counted. Each row's asOf is
 * the cut-off instant itself.
 */

export const FX_CLOSE_SOURCE = 'r-cran-timeseries/USDCHF (New York 17:00 close)';
const FILE = 'usdchf_30min_1996_2001.csv';
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

export interface FxReading {
  /** UTC instant, ms since the epoch. */
  at: number;
  value: number;
}

export interface DemoFxRate {
  base: 'USD';
  quote: 'CHF';
  rateDate: string;
  rate: number;
  source: string;
  asOf: string;
}

export interface DailyCloses {
  rates: DemoFxRate[];
  /** Readings in a Saturday or Sunday window, not used. */
  weekendReadings: number;
  /** Weekdays whose window has readings but none at or after 16:00 New York: no rate. */
  daysWithoutClose: string[];
}

/** 17:00 New York on the day, as a UTC instant (ms): 21:00 UTC under daylight saving time, 22:00 UTC otherwise. */
export const newYorkCutoff = (date: string): number => newYorkTimeToUtc(date, '17:00');

const nextDay = (date: string) => new Date(Date.parse(`${date}T00:00:00Z`) + DAY_MS).toISOString().slice(0, 10);
const isWeekend = (date: string) => [0, 6].includes(new Date(`${date}T00:00:00Z`).getUTCDay());

/** Daily closes of readings sorted by time; see the module comment for the rule. */
export function dailyCloses(readings: readonly FxReading[]): DailyCloses {
  const rates: DemoFxRate[] = [];
  const daysWithoutClose: string[] = [];
  let weekendReadings = 0;
  if (!readings.length) return { rates, weekendReadings, daysWithoutClose };
  // The window of the first reading: its UTC day's, or one of the two days before.
  let day = new Date(readings[0].at - 2 * DAY_MS).toISOString().slice(0, 10);
  let cutoff = newYorkCutoff(day);
  let last: FxReading | null = null;
  const close = () => {
    if (!last) return;
    if (isWeekend(day)) return;
    if (last.at < cutoff - HOUR_MS) return void daysWithoutClose.push(day);
    rates.push({ base: 'USD', quote: 'CHF', rateDate: day, rate: last.value, source: FX_CLOSE_SOURCE, asOf: new Date(cutoff).toISOString() });
  };
  for (const reading of readings) {
    if (last && reading.at <= last.at) throw new Error(`readings out of order at ${new Date(reading.at).toISOString()}`);
    while (reading.at > cutoff) {
      close();
      last = null;
      day = nextDay(day);
      cutoff = newYorkCutoff(day);
    }
    last = reading;
    if (isWeekend(day)) weekendReadings++;
  }
  close();
  return { rates, weekendReadings, daysWithoutClose };
}

/** The bundled file's readings, in file order (ascending time). */
export function usdChfReadings(dir: URL = DEMO_DATA_DIR): FxReading[] {
  const [header, ...lines] = readFileSync(new URL(FILE, dir), 'utf8').trim().split('\n');
  if (header.trim() !== 'time,USDCHF') throw new Error(`${FILE}: unexpected header ${header}`);
  return lines.map((line, i) => {
    const [time, value] = line.trim().split(',');
    const reading = { at: Date.parse(time), value: Number(value) };
    if (!Number.isFinite(reading.at) || !(reading.value > 0)) throw new Error(`${FILE} line ${i + 2}: not a reading: ${line}`);
    return reading;
  });
}

/** The demo's daily USD/CHF rates, ingest-ready. */
export const demoFxRates = (): DemoFxRate[] => dailyCloses(usdChfReadings()).rates;
