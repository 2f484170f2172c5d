import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { symbolRuns } from '../instruments/repository.ts';
import type { SymbolRun } from './symbol-runs.ts';

/**
 * The symbols of `ids` over the days from `from` to `to`, as runs in date
 * order (symbolRuns), for the reads that carry symbols beside their bars'
 * text rather than in it: the columnar files and the bulk read's meta. One
 * statement for every instrument of a read, whatever its bars.
 */
export async function readSymbolRuns(sql: ISql, ids: string[], from: string, to: string): Promise<Map<string, SymbolRun[]>> {
  const rows = await timed(
    'symbol_runs',
    sql<{ instrumentId: string; symbol: string | null; from: string; to: string }[]>`
      select r.instrument_id::text as "instrumentId", r.symbol, r.from_day::text as "from", (r.until_day - 1)::text as "to"
      from (${symbolRuns(sql, sql`${ids}::uuid[]`, from, to)}) r
      order by r.instrument_id, r.from_day
    `,
  );
  const runs = new Map<string, SymbolRun[]>();
  for (const { instrumentId, ...run } of rows) {
    const list = runs.get(instrumentId);
    if (list) list.push(run);
    else runs.set(instrumentId, [run]);
  }
  return runs;
}
