import { dayNumber } from '../core/day-numbers.ts';

// The symbols of a price read's bars as runs: one per stretch of days under
// one symbol (instruments/repository.ts, symbolRuns). Symbols change rarely,
// so a series carries a run or two, not a symbol per bar: the CSV text gets
// its symbol cells in SQL, and the columnar files and the bulk read's meta
// take these runs (symbol-runs-repository.ts).

/** The symbol an instrument carried from `from` to `to` (dates, inclusive); null where it had none. */
export interface SymbolRun {
  symbol: string | null;
  from: string;
  to: string;
}

/**
 * The symbol of each bar, as a column of the columnar files (bar-columns.ts),
 * from `runs` covering the read's window and the bars' `days` (days since
 * 1970-01-01, ascending, asked for only when the window holds more than one
 * run): one value for every bar when one run holds them all, else one per
 * bar; null for a day no run holds.
 */
export function symbolsOfDays(runs: SymbolRun[], days: () => ArrayLike<number>): (string | null)[] {
  if (runs.length <= 1) return [runs[0]?.symbol ?? null];
  const d = days();
  const n = d.length;
  const spans = runs.map((run) => ({ symbol: run.symbol, from: dayNumber(run.from), to: dayNumber(run.to) }));
  const whole = n ? spans.find((s) => s.from <= d[0] && d[n - 1] <= s.to) : undefined;
  if (whole) return [whole.symbol];
  const out = new Array<string | null>(n);
  let r = 0;
  for (let i = 0; i < n; i++) {
    while (r < spans.length && spans[r].to < d[i]) r++;
    out[i] = r < spans.length && spans[r].from <= d[i] ? spans[r].symbol : null;
  }
  return out;
}
