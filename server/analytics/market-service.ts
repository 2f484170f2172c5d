import type { Reads } from '../db/database.ts';
import { requireInstrument } from '../instruments/service.ts';
import { existingInstruments } from '../instruments/repository.ts';
import { readAdjustedSeries, readStoredBars } from '../prices/daily-bars.ts';
import { plural } from '../core/params.ts';
import type { ISql } from '../db/sql.ts';
import { move, type WorkerPool } from '../../workers/pool.ts';
import { dayToDate } from '../core/day-numbers.ts';
import { type EmptyWindowReason, lookbackWindow } from './series.ts';
import { AppError } from '../core/errors.ts';
import type { PointInTime } from '../core/time.ts';
import {
  BETA_MIN_OBSERVATIONS,
  CORRELATION_MIN_OBSERVATIONS,
  type BetaReason,
  type CorrelationInstrument,
  type CorrelationMatrixResult,
} from '../../workers/contract.ts';
import { entryOf } from '../core/map-entry.ts';

const PRICE_ASSUMPTIONS = {
  prices: 'daily closes adjusted for splits, stock dividends and cash dividends known at the window end (backfilled actions excluded)',
};

const NULL_CORRELATION =
  'null, never 0, when either instrument is unusable in the window (reason unusable_instrument; instruments[].reason says why) or either aligned return series is constant (reason constant_returns)';

export async function technicals(db: Reads, pool: WorkerPool, id: string, q: { lookbackDays: number; asOf?: PointInTime }) {
  const window = lookbackWindow(q.lookbackDays, q.asOf);
  const { instrument, series } = await db.run(async (sql) => {
    const instrument = await requireInstrument(sql, id, q.asOf);
    const series = entryOf(await readAdjustedSeries(sql, [id], { from: window.from, to: window.to, asOf: q.asOf, fields: 'ohlcv' }), id);
    if (series.close.length === 0) throw emptyWindowError(entryOf(await emptyWindows(sql, [id], window, q.asOf), id), window, q.asOf);
    return { instrument, series };
  });
  const { open, high, low, close, volume, dates } = series;
  const result = await pool.run('technicals', move({ open, high, low, close, volume }));
  const barsUsed = dates.length;
  const patterns = result.chartPatterns.patterns.map((p) => ({ ...p, startDate: dayToDate(dates[p.startIndex]), endDate: dayToDate(dates[p.endIndex]) }));
  return {
    ...result,
    chartPatterns: { ...result.chartPatterns, patterns },
    timestamp: new Date().toISOString(),
    dataPoints: result.dataPoints,
    symbol: instrument.symbol,
    assumptions: {
      lookbackDays: q.lookbackDays,
      barsUsed,
      asOf: q.asOf?.input ?? window.to,
      windowStart: window.from,
      windowEnd: window.to,
      firstBarDate: series.firstDate,
      lastBarDate: series.lastDate,
      actionSetVersion: series.actionSetVersion,
      ...PRICE_ASSUMPTIONS,
    },
  };
}

export async function correlations(
  db: Reads,
  pool: WorkerPool,
  q: { instrumentIds: string[]; lookbackDays: number; method: 'pearson' | 'spearman'; asOf?: PointInTime },
) {
  const window = lookbackWindow(q.lookbackDays, q.asOf);
  const { ids, unknown, series, empty } = await db.run(async (sql) => {
    const known = await existingInstruments(sql, q.instrumentIds);
    const ids = q.instrumentIds.filter((id) => known.has(id));
    const unknown = q.instrumentIds.filter((id) => !known.has(id));
    const series = await readAdjustedSeries(sql, ids, { from: window.from, to: window.to, asOf: q.asOf, fields: 'close' });
    const withoutBars = ids.filter((id) => entryOf(series, id).dates.length === 0);
    return { ids, unknown, series, empty: await emptyWindows(sql, withoutBars, window, q.asOf) };
  });
  const result = await pool.run(
    'correlations',
    move({ series: ids.map((id) => ({ dates: entryOf(series, id).dates, close: entryOf(series, id).close })), method: q.method }),
  );
  // An instrument without a bar in the window says whether none is stored there or none was known at asOf, rather than counting 0 returns.
  const instruments = result.instruments.map((i): { instrumentId: string; observations: number; usable: boolean; reason: InstrumentReason } => {
    const instrumentId = ids[i.index];
    return { instrumentId, observations: i.observations, usable: i.usable, reason: empty.get(instrumentId)?.reason ?? i.reason };
  });
  // The spec fixes this case: fewer than two instruments with usable data is invalid_request.
  if (result.usableIndices.length < 2) {
    const details: Record<string, string[]> = { instrumentIds: ['fewer than two instruments have enough overlapping bars in the window'] };
    for (const i of instruments) if (!i.usable) details[i.instrumentId] = [`${i.observations} return observations (${i.reason})`];
    for (const id of unknown) details[id] = ['unknown instrument'];
    throw new AppError('invalid_request', 'a correlation needs at least two instruments with usable data', details);
  }
  return {
    pairs: allPairs(ids, result),
    instruments,
    unknownInstrumentIds: unknown,
    assumptions: {
      method: q.method,
      lookbackDays: q.lookbackDays,
      alignedObservations: result.alignedObservations,
      returnType: 'log',
      alignment: 'closes aligned on the dates every usable instrument shares; log returns between consecutive common dates',
      minimumObservations: CORRELATION_MIN_OBSERVATIONS,
      nullCorrelation: NULL_CORRELATION,
      asOf: q.asOf?.input ?? window.to,
      windowStart: window.from,
      windowEnd: window.to,
      firstCommonDate: result.firstDate === null ? null : dayToDate(result.firstDate),
      lastCommonDate: result.lastDate === null ? null : dayToDate(result.lastDate),
      ...PRICE_ASSUMPTIONS,
    },
  };
}

/** Why a correlated instrument is not usable: its window read no bar (EmptyWindowReason), or the worker's reason. */
type InstrumentReason = CorrelationInstrument['reason'] | EmptyWindowReason;

interface EmptyWindow {
  reason: EmptyWindowReason;
  /** not_yet_known: the bars stored in the window, and when the first of them became known. */
  stored: { bars: number; firstKnown: Date } | null;
}

/**
 * Why each of `ids`, whose window read no bar, has none: `not_yet_known`,
 * bars are stored in the window but none was known at asOf (a history loaded
 * later with later knowledge times, say); else `no_stored_bars`. A read
 * without asOf reads every stored bar, so its empty window holds none: no
 * query then, nor for no ids.
 */
async function emptyWindows(sql: ISql, ids: string[], window: { from: string; to: string }, asOf: PointInTime | undefined): Promise<Map<string, EmptyWindow>> {
  const stored = asOf && ids.length ? await readStoredBars(sql, ids, window.from, window.to) : new Map<string, { bars: number; firstKnown: Date }>();
  return new Map(
    ids.map((id) => {
      const s = stored.get(id);
      // Stored and known at asOf, yet not read: stored after the read's statement, so none was stored when it ran.
      return [id, s && asOf && s.firstKnown > asOf.instant ? { reason: 'not_yet_known', stored: s } : { reason: 'no_stored_bars', stored: null }];
    }),
  );
}

/**
 * The 404 the specification fixes for a technicals window with no bar to
 * read, saying which case it is (`details.reason`): `no_stored_bars` or
 * `not_yet_known`, with when the first of the stored bars became known.
 */
function emptyWindowError(empty: EmptyWindow, window: { from: string; to: string }, asOf: PointInTime | undefined): AppError {
  if (!empty.stored || !asOf) {
    return new AppError('not_found', `no stored bars for this instrument between ${window.from} and ${window.to}`, {
      lookbackDays: [`the window ${window.from}..${window.to} holds no bars`],
      reason: ['no_stored_bars'],
    });
  }
  const first = empty.stored.firstKnown.toISOString();
  return new AppError(
    'not_found',
    `${plural(empty.stored.bars, 'bar')} stored for this instrument between ${window.from} and ${window.to}, none known at asOf ${asOf.input}; the first became known at ${first}`,
    {
      asOf: [`${asOf.input} is before any bar of the window ${window.from}..${window.to} was known: the first became known at ${first}`],
      reason: ['not_yet_known'],
    },
  );
}

/**
 * Every pair of known instruments, in input order. A pair with an unusable
 * instrument is listed with a null correlation rather than dropped, so a
 * client sees each pair it asked for and why it has no figure.
 */
function allPairs(ids: string[], result: CorrelationMatrixResult) {
  const computed = new Map(result.pairs.map((p) => [`${p.a},${p.b}`, p.correlation]));
  const pairs: { assetA: string; assetB: string; correlation: number | null; reason: 'unusable_instrument' | 'constant_returns' | null }[] = [];
  for (let a = 0; a < ids.length; a++) {
    for (let b = a + 1; b < ids.length; b++) {
      const usable = result.instruments[a].usable && result.instruments[b].usable;
      const correlation = usable ? (computed.get(`${a},${b}`) ?? null) : null;
      const reason = !usable ? 'unusable_instrument' : correlation === null ? 'constant_returns' : null;
      pairs.push({ assetA: ids[a], assetB: ids[b], correlation, reason });
    }
  }
  return pairs;
}

export async function beta(db: Reads, pool: WorkerPool, id: string, q: { benchmarkId: string; lookbackDays: number; asOf?: PointInTime }) {
  const window = lookbackWindow(q.lookbackDays, q.asOf);
  const { series, empty } = await db.run(async (sql) => {
    await requireInstrument(sql, id);
    if (!(await existingInstruments(sql, [q.benchmarkId])).has(q.benchmarkId)) {
      throw new AppError('invalid_request', 'unknown benchmark instrument', { benchmarkId: ['unknown instrument'] });
    }
    if (q.benchmarkId === id) throw new AppError('invalid_request', 'an instrument is its own benchmark', { benchmarkId: ['must differ from the instrument'] });
    const series = await readAdjustedSeries(sql, [id, q.benchmarkId], { from: window.from, to: window.to, asOf: q.asOf, fields: 'close' });
    const withoutBars = [id, q.benchmarkId].filter((i) => entryOf(series, i).dates.length === 0);
    return { series, empty: await emptyWindows(sql, withoutBars, window, q.asOf) };
  });
  const subject = entryOf(series, id);
  const benchmark = entryOf(series, q.benchmarkId);
  const result = await pool.run(
    'beta',
    move({ subject: { dates: subject.dates, close: subject.close }, benchmark: { dates: benchmark.dates, close: benchmark.close } }),
  );
  // A window without a bar says why (the instrument's before the benchmark's) rather than insufficient_overlap.
  const emptyOne = [id, q.benchmarkId].find((i) => empty.has(i));
  const reason: BetaReason | EmptyWindowReason | null = emptyOne ? entryOf(empty, emptyOne).reason : result.reason;
  const reasonInstrumentId = emptyOne ?? (result.reason === 'zero_subject_variance' ? id : result.reason === 'zero_benchmark_variance' ? q.benchmarkId : null);
  return {
    instrumentId: id,
    benchmarkId: q.benchmarkId,
    beta: result.beta,
    alpha: result.alpha,
    rSquared: result.rSquared,
    observations: result.observations,
    reason,
    reasonInstrumentId,
    assumptions: {
      lookbackDays: q.lookbackDays,
      returnType: 'log',
      alignedObservations: result.observations,
      regression: "OLS of the instrument's daily log returns on the benchmark's, with intercept",
      alphaUnit: 'daily log return (intercept)',
      minimumObservations: BETA_MIN_OBSERVATIONS,
      asOf: q.asOf?.input ?? window.to,
      windowStart: window.from,
      windowEnd: window.to,
      ...PRICE_ASSUMPTIONS,
    },
  };
}
