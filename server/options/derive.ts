import { batchesOf } from '../ingest/body.ts';
import type { DeriveDeps } from '../ingest/derived.ts';
import type { IngestResult, RawBarDays } from '../ingest/kind.ts';
import { ingestRows } from '../ingest/service.ts';
import { readRawBars } from '../prices/daily-bars.ts';
import type { DailyColumns } from '../prices/packed-columns.ts';
import type { ISql } from '../db/sql.ts';
import type { InstrumentId } from '../core/ids.ts';
import { dayNumber } from '../core/day-numbers.ts';
import { ivSnapshotIngest } from './ingest.ts';
import * as repo from './repository.ts';
import type { SnapshotDay } from './repository.ts';
import { quoteDay, yearsToExpiry } from './service.ts';
import type { IvSnapshotRow } from './schema.ts';
import { VOLATILITY_WINDOW_DAYS, type ChainGreeksInput, type ContractGreeks, type StrikeIv } from '../../workers/contract.ts';
import { entryOf } from '../core/map-entry.ts';

const DAY_MS = 86_400_000;

/** What to derive: the pairs an upload touched, whole underlyings, or (empty) everything due. */
export interface DeriveScope {
  days?: SnapshotDay[];
  instrumentIds?: string[];
}

/**
 * Derives the implied-volatility snapshots that are due (repo.snapshotDaysToDerive):
 * for each underlying and day with quotes, the contracts listed at the end of
 * that day and quoted on it (UTC), every contract's implied volatility
 * (the provider's, else solved from the mid on the worker pool as the chain
 * read solves it, at the risk-free rate known at the quote's instant), and
 * the underlying's raw daily bars up to that day as known at its end, turned into the snapshot's
 * figures by workers/vol-stats.ts. A day without a raw
 * close is skipped: there is nothing to measure the strikes against. Stored
 * through the iv-snapshots ingest, so the counts are its counts.
 */
export async function deriveIvSnapshots(deps: DeriveDeps, scope: DeriveScope = {}): Promise<DerivedSnapshots> {
  const due = await deps.db.run((sql) => repo.snapshotDaysToDerive(sql, scope));
  const rows: IvSnapshotRow[] = [];
  for (const { instrumentId, day } of due) {
    const row = await snapshotOf(deps, instrumentId, day, await deps.db.run((sql) => barWindow(sql, instrumentId, day)));
    if (row) rows.push(row);
  }
  return storeSnapshots(deps, rows, due.length);
}

/**
 * Derives again the snapshots whose window of raw bars may hold daily bars an
 * upload wrote: for each instrument, the days with quotes from its first bar
 * date on (an ingested snapshot aside) whose bars, as known at the day's end,
 * reach a date between its first and last bar date. The windows only move
 * forward: once a day's window is full ({@link VOLATILITY_WINDOW_DAYS} + 1
 * bars) and starts after the last bar date, so does every later day's (no bar
 * is ever removed, and a later day's end knows every bar an earlier one
 * knew), so the search stops there. A snapshot whose figures come out the
 * same is stored unchanged.
 */
export async function deriveIvSnapshotsOverBars(deps: DeriveDeps, barDays: RawBarDays[]): Promise<DerivedSnapshots> {
  const rows: IvSnapshotRow[] = [];
  let reached = 0;
  // One statement finds where each instrument's quotes start; most bar uploads end there, under no quote.
  const quotedFrom = await deps.db.run((sql) =>
    repo.firstQuoteDays(
      sql,
      barDays.map((b) => ({ instrumentId: b.instrumentId, day: b.from })),
    ),
  );
  for (const { instrumentId, from, to } of barDays) {
    const [first, last] = [dayNumber(from), dayNumber(to)];
    pages: for (let page = quotedFrom.get(instrumentId) ?? null; page !== null;) {
      const start: string = page;
      const quoted = await deps.db.run((sql) => repo.derivableQuoteDays(sql, instrumentId, start));
      for (const day of quoted.days) {
        const bars = await deps.db.run((sql) => barWindow(sql, instrumentId, day));
        if (bars.dates.length === VOLATILITY_WINDOW_DAYS + 1 && bars.dates[0] > last) break pages;
        if (!bars.dates.some((d) => d >= first && d <= last)) continue;
        reached++;
        const row = await snapshotOf(deps, instrumentId, day, bars);
        if (row) rows.push(row);
      }
      page = quoted.next;
    }
  }
  return storeSnapshots(deps, rows, reached);
}

type DerivedSnapshots = IngestResult & { skippedDays: number };

/** The underlying's raw bars a snapshot of `day` reads: the last {@link VOLATILITY_WINDOW_DAYS} + 1 dated on or before it, as known at its end. */
function barWindow(sql: ISql, instrumentId: string, day: string): Promise<DailyColumns> {
  return readRawBars(sql, instrumentId, day, VOLATILITY_WINDOW_DAYS + 1, endOfDay(day));
}

const endOfDay = (day: string) => new Date(`${day}T23:59:59.999Z`);

/** The snapshot of one underlying and day from its bars (see deriveIvSnapshots); undefined without a raw close. */
async function snapshotOf(deps: DeriveDeps, instrumentId: InstrumentId, day: string, bars: DailyColumns): Promise<IvSnapshotRow | undefined> {
  const spot = bars.close.at(-1);
  if (spot === undefined) return undefined;
  const chain = await deps.db.run((sql) => repo.chainAt(sql, instrumentId, endOfDay(day), day, {}));
  // Only that day's quotes: an older quote would be solved against a later close.
  const quoted = chain.flatMap(({ contract, quote }) => (quote && quoteDay(quote) === day ? [{ contract, quote }] : []));
  const toSolve = quoted.filter((c) => !c.quote.greeks);
  // Each quote is solved at the rate known at its own instant (none known: no volatility), never a later one.
  const rates = await deps.macro.riskFreeRatesKnownAt(toSolve.map((c) => c.quote.observedAt));
  const solved = toSolve.length
    ? await deps.pool.run('chainGreeks', {
        spot: toSolve.map(() => spot),
        rate: toSolve.map((c) => rates.get(c.quote.observedAt.getTime())?.rate ?? null),
        dividendYield: 0,
        strike: toSolve.map((c) => c.contract.strike),
        timeYears: toSolve.map((c) => yearsToExpiry(c.contract.expiry, c.quote.observedAt)),
        right: toSolve.map((c) => c.contract.right),
        bid: toSolve.map((c) => c.quote.bid),
        ask: toSolve.map((c) => c.quote.ask),
      } satisfies ChainGreeksInput)
    : [];
  const solvedVol = new Map(toSolve.map((c, i) => [c.contract.id, impliedVolOf(solved[i])]));
  const byExpiry = new Map<string, { daysToExpiry: number; contracts: StrikeIv[] }>();
  const sources = new Set<string>();
  for (const { contract, quote } of quoted) {
    sources.add(quote.source);
    let expiry = byExpiry.get(contract.expiry);
    if (!expiry) byExpiry.set(contract.expiry, (expiry = { daysToExpiry: (Date.parse(contract.expiry) - Date.parse(day)) / DAY_MS, contracts: [] }));
    expiry.contracts.push({
      strike: contract.strike,
      right: contract.right,
      impliedVolatility: quote.greeks?.impliedVolatility ?? entryOf(solvedVol, contract.id),
    });
  }
  const snapshot = await deps.pool.run('volatilitySnapshot', {
    spot,
    expiries: [...byExpiry.values()],
    closes: bars.close,
    highs: bars.high,
    lows: bars.low,
  });
  const expiryOf = new Map([...byExpiry].map(([expiry, e]) => [e.daysToExpiry, expiry]));
  return {
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
  };
}

/** Stores the snapshots through the iv-snapshots ingest; of the `reached` days, those without a row were skipped. */
async function storeSnapshots(deps: DeriveDeps, rows: IvSnapshotRow[], reached: number): Promise<DerivedSnapshots> {
  const result = rows.length
    ? await deps.db.run((sql) => ingestRows(sql, ivSnapshotIngest, batchesOf(rows)))
    : { rows: 0, inserted: 0, updated: 0, unchanged: 0 };
  return { ...result, skippedDays: reached - rows.length };
}

function impliedVolOf(greeks: ContractGreeks): number | null {
  return 'unavailable' in greeks ? null : greeks.impliedVolatility;
}
