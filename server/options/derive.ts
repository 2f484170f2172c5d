import type { AppDeps } from '../area.ts';
import { batchesOf } from '../ingest/body.ts';
import type { IngestResult } from '../ingest/kind.ts';
import { ingestRows } from '../ingest/service.ts';
import { readRawBars } from '../prices/daily-bars.ts';
import { ivSnapshotIngest } from './ingest.ts';
import * as repo from './repository.ts';
import type { SnapshotDay } from './repository.ts';
import { yearsToExpiry } from './service.ts';
import type { IvSnapshotRow } from './schema.ts';
import { VOLATILITY_WINDOW_DAYS, type ChainGreeksInput, type ContractGreeks, type StrikeIv } from '../../workers/contract.ts';

const DAY_MS = 86_400_000;

type Deps = Pick<AppDeps, 'db' | 'macro' | 'pool'>;

/**
 * Derives the implied-volatility snapshots that are due (repo.snapshotDaysToDerive):
 * for each underlying and day with quotes, the contracts listed at the end of
 * that day and quoted on it (UTC), every contract's implied volatility
 * (the provider's, else solved from the mid on the worker pool as the chain
 * read solves it), and
 * the underlying's raw daily bars up to that day, turned into the snapshot's
 * figures by workers/vol-stats.ts. A day without a raw close is skipped: there
 * is nothing to measure the strikes against. Stored through the
 * iv-snapshots ingest, so the counts are its counts.
 */
/** What to derive: the pairs an upload touched, whole underlyings, or (empty) everything due. */
export interface DeriveScope {
  days?: SnapshotDay[];
  instrumentIds?: string[];
}

export async function deriveIvSnapshots(deps: Deps, scope: DeriveScope = {}): Promise<IngestResult & { skippedDays: number }> {
  const due = await deps.db.run((sql) => repo.snapshotDaysToDerive(sql, scope));
  const rows: IvSnapshotRow[] = [];
  for (const { instrumentId, day } of due) {
    const endOfDay = new Date(`${day}T23:59:59.999Z`);
    const { chain, bars } = await deps.db.run(async (sql) => ({
      chain: await repo.chainAt(sql, instrumentId, endOfDay, day, {}),
      bars: await readRawBars(sql, instrumentId, day, VOLATILITY_WINDOW_DAYS + 1),
    }));
    const spot = bars.close.at(-1);
    if (spot === undefined) continue;
    const { rate } = (await deps.macro.riskFreeRate(day)).data;
    // Only that day's quotes: an older quote would be solved against a later close.
    const quoted = chain.filter((c) => c.observed_at && c.observed_at.toISOString().slice(0, 10) === day);
    const toSolve = quoted.filter((c) => c.implied_volatility === null);
    const solved = toSolve.length
      ? await deps.pool.run('chainGreeks', {
          spot: toSolve.map(() => spot),
          rate: toSolve.map(() => rate),
          dividendYield: 0,
          strike: toSolve.map((c) => c.strike),
          timeYears: toSolve.map((c) => yearsToExpiry(c.expiry, c.observed_at!)),
          right: toSolve.map((c) => c.option_right),
          bid: toSolve.map((c) => c.bid),
          ask: toSolve.map((c) => c.ask),
        } satisfies ChainGreeksInput)
      : [];
    const solvedVol = new Map(toSolve.map((c, i) => [c.id, impliedVolOf(solved[i])]));
    const byExpiry = new Map<string, { daysToExpiry: number; contracts: StrikeIv[] }>();
    const sources = new Set<string>();
    for (const c of quoted) {
      sources.add(c.source!);
      let expiry = byExpiry.get(c.expiry);
      if (!expiry) byExpiry.set(c.expiry, (expiry = { daysToExpiry: (Date.parse(c.expiry) - Date.parse(day)) / DAY_MS, contracts: [] }));
      expiry.contracts.push({ strike: c.strike, right: c.option_right, impliedVolatility: c.implied_volatility ?? solvedVol.get(c.id)! });
    }
    const snapshot = await deps.pool.run('volatilitySnapshot', {
      spot,
      expiries: [...byExpiry.values()],
      closes: bars.close,
      highs: bars.high,
      lows: bars.low,
    });
    const expiryOf = new Map([...byExpiry].map(([expiry, e]) => [e.daysToExpiry, expiry]));
    rows.push({
      instrumentId,
      asOfDate: day,
      underlyingPrice: spot,
      atmImpliedVolatility: snapshot.impliedVolatility30d,
      impliedVolatility30d: snapshot.impliedVolatility30d,
      historicalVolatility30d: snapshot.historicalVolatility30d,
      parkinsonHistoricalVolatility30d: snapshot.parkinsonHistoricalVolatility30d,
      putCallIvRatio30d: snapshot.putCallIvRatio30d,
      termStructure: snapshot.termStructure.map((p) => ({ expiry: expiryOf.get(p.daysToExpiry), ...p })),
      source: `derived from ${[...sources].sort().join(', ') || 'no quotes'}`,
    });
  }
  const result = rows.length
    ? await deps.db.run((sql) => ingestRows(sql, ivSnapshotIngest, batchesOf(rows)))
    : { rows: 0, inserted: 0, updated: 0, unchanged: 0 };
  return { ...result, skippedDays: due.length - rows.length };
}

function impliedVolOf(greeks: ContractGreeks): number | null {
  return 'unavailable' in greeks ? null : greeks.impliedVolatility;
}
