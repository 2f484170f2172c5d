import { readFileSync } from 'node:fs';
import type { ISql } from '../db/sql.ts';
import { monthlyKnownFrom } from '../macro/risk-free-history.ts';
import { storeHistory, type RiskFreeHistoryRow } from '../macro/risk-free-repository.ts';
import { DEMO_DATA_DIR } from './catalog-files.ts';
import { DateSchema } from '../core/time.ts';

/**
 * The stored risk-free rate history: the real monthly TB3MS series (3-month
 * Treasury bill, secondary market rate, monthly average, percent) of the
 * gretl-data 2022c snapshot of FRED, 1934-01..2022-09, copied unchanged to
 * ./data/fred_tb3ms_monthly.csv (origin and licence in ./data/SOURCES.md).
 * Each month is stored as known from the first instant after it ends
 * (server/macro/risk-free-history.ts), under the snapshot's own `source`.
 */

const TB3MS_FILE = 'fred_tb3ms_monthly.csv';

/** The `source` of the stored rows: the same snapshot as the demo macro series (macro-series.json). */
export const TB3MS_SOURCE = 'gretl-data-2022c/fedstl (FRED)';

const DECIMAL = /^-?\d+(\.\d+)?$/;

/** The file's rows as history rows, ascending by date. */
export function demoRiskFreeRates(): RiskFreeHistoryRow[] {
  const [header, ...lines] = readFileSync(new URL(TB3MS_FILE, DEMO_DATA_DIR), 'utf8').trim().split(/\r?\n/);
  if (header !== 'series,date,value') throw new Error(`${TB3MS_FILE}: unexpected header ${header}`);
  return lines.map((line) => {
    const [series, date, value] = line.split(',');
    if (series !== 'TB3MS' || !DateSchema.safeParse(date).success || !date.endsWith('-01') || !DECIMAL.test(value ?? '')) {
      throw new Error(`${TB3MS_FILE}: bad line ${line}`);
    }
    return { seriesId: 'TB3MS', date, value: Number(value), knownFrom: monthlyKnownFrom(date), source: TB3MS_SOURCE };
  });
}

/**
 * Stores the TB3MS history (idempotent: rows equal to the stored ones are
 * unchanged); the counts. Real data, not a demo stand-in: the service stores
 * it on every start (runtime/lifecycle.ts), and the demo load does too.
 */
export function storeShippedRiskFreeRates(sql: ISql) {
  return storeHistory(sql, demoRiskFreeRates());
}
