import type { Reads } from '../db/database.ts';
import type { ISql } from '../db/sql.ts';
import { requireInstrument } from '../instruments/service.ts';
import { readRawCloses } from '../prices/daily-bars.ts';
import { riskFreeRateLabel, type MacroService } from '../macro/service.ts';
import { expiryInstant, firstReason, isActiveAt, isQuoteStale, rowStaleReason } from './freshness.ts';
import * as repo from './repository.ts';
import type { ChainItem, ChainQuery } from './schema.ts';
import { AppError, notFound } from '../core/errors.ts';
import { sourcesMeta } from '../core/meta.ts';
import type { PointInTime } from '../core/time.ts';
import { DAYS_PER_YEAR, type ChainGreeksInput } from '../../workers/contract.ts';
import type { WorkerPool } from '../../workers/pool.ts';
import { entryOf } from '../core/map-entry.ts';

/**
 * Options are served for these asset classes; any other is `not_optionable`
 * (permanent): the service does not carry options on currencies, coins,
 * futures, metals, funds or bonds.
 */
export const OPTIONABLE_ASSET_CLASSES = ['equity', 'etf', 'index'] as const;

const DAY_MS = 86_400_000;

/** What the options reads need: the replicas or primary, the worker pool the Greeks are solved on, and the risk-free rates they are solved at. */
export interface OptionsDeps {
  readDb: Reads;
  pool: WorkerPool;
  macro: Pick<MacroService, 'riskFreeRatesKnownAt'>;
}

/** The cut-off instant and its UTC day: asOf as given (a date is the end of that day), or now. */
function cutoffOf(asOf: PointInTime | undefined): { at: Date; day: string; input: string } {
  const at = asOf?.instant ?? new Date();
  return { at, day: at.toISOString().slice(0, 10), input: asOf?.input ?? at.toISOString() };
}

/** The refusal for an underlying without a chain at the cut-off, naming the case. */
async function unavailable(sql: ISql, instrument: { id: string; assetClass: string }, day: string): Promise<AppError> {
  if (!(OPTIONABLE_ASSET_CLASSES as readonly string[]).includes(instrument.assetClass)) {
    return new AppError('options_unavailable', `options are not served for ${instrument.assetClass} instruments`, { reason: ['not_optionable'] });
  }
  const { stored, expired } = await repo.storedContractCounts(sql, instrument.id, day);
  const why = !stored
    ? 'no option contract of this underlying has been ingested'
    : expired === stored
      ? `all ${stored} stored contracts had expired before ${day}; read the chain with an asOf before their expiries`
      : `none of its ${stored} stored contracts was listed yet at the cut-off`;
  return new AppError('options_unavailable', why, { reason: ['not_ingested'] });
}

/** meta.source: the sources of the rows, each contract's and its quote's, sorted and comma-separated; `none` without rows. */
const rowSources = (rows: repo.ContractAtCutoff[]) =>
  sourcesMeta(new Set(rows.flatMap((r) => (r.quote ? [r.contract.source, r.quote.source] : [r.contract.source]))));

/**
 * The expiries with at least one contract listed at the cut-off, ascending.
 * The list is as fresh as the quotes that report the chain: stale when no
 * listed contract has a quote at most one session old at the cut-off
 * (`no_quote` when none has any, else `quote_older_than_one_session`).
 */
export async function listExpiries(deps: OptionsDeps, id: string, asOf: PointInTime | undefined) {
  const cutoff = cutoffOf(asOf);
  const chain = await deps.readDb.run(async (sql) => {
    const instrument = await requireInstrument(sql, id);
    const chain = await repo.chainAt(sql, id, cutoff.at, cutoff.day, {});
    if (!chain.length) throw await unavailable(sql, instrument, cutoff.day);
    return chain;
  });
  const quoted = chain.flatMap((r) => (r.quote ? [r.quote] : []));
  const staleReason = !quoted.length ? 'no_quote' : quoted.every((q) => isQuoteStale(q.observedAt, cutoff.at)) ? 'quote_older_than_one_session' : null;
  return {
    data: [...new Set(chain.map((c) => c.contract.expiry))],
    meta: { asOf: cutoff.input, source: rowSources(chain), stale: staleReason !== null, staleReason },
  };
}

/** The chain as it stood at the cut-off, each contract with its latest quote and its Greeks (provider, computed, or why neither). */
export async function readChain(deps: OptionsDeps, id: string, q: ChainQuery) {
  const cutoff = cutoffOf(q.asOf);
  const { rows, closes } = await deps.readDb.run(async (sql) => {
    const instrument = await requireInstrument(sql, id);
    const rows = await repo.chainAt(sql, id, cutoff.at, cutoff.day, q);
    if (!rows.length && !q.expiry && q.strike === undefined && !q.right) throw await unavailable(sql, instrument, cutoff.day);
    return { rows, closes: await closesForQuotes(sql, id, rows) };
  });
  const data = await withGreeks(deps, rows, closes, cutoff.at);
  const coverage = { provider: 0, computed: 0, unavailable: 0 };
  for (const item of data) coverage[item.greeks?.greeksSource ?? 'unavailable']++;
  const reasons = rows.map((r) => rowStaleReason(r.contract, r.quote, cutoff.at));
  const staleContracts = reasons.filter((r) => r !== null).length;
  return {
    data,
    meta: {
      asOf: cutoff.input,
      source: rowSources(rows),
      stale: staleContracts > 0,
      staleReason: firstReason(reasons),
      staleContracts,
      greeksCoverage: coverage,
    },
  };
}

/** One contract at the cut-off, by the chain's rules; 404 when unknown or not yet listed then. */
export async function readContract(deps: OptionsDeps, id: string, asOf: PointInTime | undefined) {
  const cutoff = cutoffOf(asOf);
  const { row, closes } = await deps.readDb.run(async (sql) => {
    const row = await repo.contractAt(sql, id, cutoff.at);
    if (!row || !row.listed) throw notFound(row ? `option contract (not listed yet at ${cutoff.input})` : 'option contract');
    return { row, closes: await closesForQuotes(sql, row.contract.instrumentId, [row]) };
  });
  const [item] = await withGreeks(deps, [row], closes, cutoff.at);
  const staleReason = rowStaleReason(row.contract, row.quote, cutoff.at);
  return { data: item, meta: { asOf: cutoff.input, source: rowSources([row]), stale: staleReason !== null, staleReason } };
}

/** The UTC day a quote was observed on. */
export const quoteDay = (quote: repo.QuoteObservation) => quote.observedAt.toISOString().slice(0, 10);

/**
 * The underlying's spot for each quote without the provider's Greeks: its
 * latest raw close known at the quote's instant (a close is known from its
 * bar's asOf, never before its session ends), by the instant's milliseconds.
 */
function closesForQuotes(sql: ISql, instrumentId: string, rows: repo.ContractAtCutoff[]) {
  const instants = new Map(rows.flatMap(({ quote }) => (quote && !quote.greeks ? [[quote.observedAt.getTime(), quote.observedAt] as const] : [])));
  return readRawCloses(sql, instrumentId, [...instants.values()]);
}

/** Calendar days from an observation to 16:00 New York on the expiry day, when US equity and index options stop trading. */
const daysToExpiry = (expiry: string, at: Date) => (expiryInstant(expiry) - at.getTime()) / DAY_MS;

/** The same in years, ACT/365F as the option-price route counts them. */
export const yearsToExpiry = (expiry: string, at: Date) => daysToExpiry(expiry, at) / DAYS_PER_YEAR;

/**
 * Chain items with their Greeks. Provider Greeks are returned as observed.
 * For the other quoted contracts the inputs are gathered here (the latest raw
 * close known at the quote's instant, the risk-free rate known then, never a
 * later one (MacroService.riskFreeRatesKnownAt), the time from the quote to
 * expiry) and the worker pool solves the implied volatility from the
 * mid and computes the Greeks with the Black–Scholes–Merton code of POST
 * /v1/analytics/option-price, or says which input is missing
 * (workers/option-greeks.ts).
 */
async function withGreeks(
  deps: OptionsDeps,
  rows: repo.ContractAtCutoff[],
  closes: Map<number, { barDate: string; close: number }>,
  readAt: Date,
): Promise<ChainItem[]> {
  const items: ChainItem[] = rows.map((r) => ({ contract: contractOf(r.contract, readAt), quote: quoteOf(r.quote), greeks: null, greeksUnavailable: null }));
  const toCompute: { index: number; contract: repo.OptionContract; quote: repo.QuoteObservation; expiryDays: number }[] = [];
  for (const [index, { contract, quote }] of rows.entries()) {
    const item = items[index];
    if (!quote) {
      item.greeksUnavailable = {
        reason: 'not_supplied_and_not_computable',
        missingInputs: ['quote'],
        detail: 'no quote of this contract was observed at or before the cut-off',
      };
    } else if (quote.greeks) {
      item.greeks = { ...quote.greeks, asOf: quote.observedAt.toISOString(), greeksSource: 'provider' };
    } else {
      toCompute.push({ index, contract, quote, expiryDays: daysToExpiry(contract.expiry, quote.observedAt) });
    }
  }
  if (!toCompute.length) return items;
  const rates = await deps.macro.riskFreeRatesKnownAt(toCompute.map((c) => c.quote.observedAt));
  const rateOf = (c: (typeof toCompute)[number]) => rates.get(c.quote.observedAt.getTime()) ?? null;
  const input: ChainGreeksInput = {
    spot: toCompute.map((c) => closes.get(c.quote.observedAt.getTime())?.close ?? null),
    rate: toCompute.map((c) => rateOf(c)?.rate ?? null),
    dividendYield: 0,
    strike: toCompute.map((c) => c.contract.strike),
    timeYears: toCompute.map((c) => c.expiryDays / DAYS_PER_YEAR),
    right: toCompute.map((c) => c.contract.right),
    bid: toCompute.map((c) => c.quote.bid),
    ask: toCompute.map((c) => c.quote.ask),
  };
  const results = await deps.pool.run('chainGreeks', input);
  for (const [k, result] of results.entries()) {
    const { index, quote, expiryDays } = toCompute[k];
    const item = items[index];
    if ('unavailable' in result) {
      item.greeksUnavailable = result.unavailable;
      continue;
    }
    const spot = entryOf(closes, quote.observedAt.getTime());
    // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- chainGreeks computed Greeks, so it had the rate
    const rate = rateOf(toCompute[k])!;
    item.greeks = {
      delta: result.delta,
      gamma: result.gamma,
      theta: result.theta,
      vega: result.vega,
      rho: result.rho,
      impliedVolatility: result.impliedVolatility,
      asOf: quote.observedAt.toISOString(),
      greeksSource: 'computed',
      model: {
        name: 'black-scholes-merton',
        spotPrice: spot.close,
        riskFreeRate: rate.rate,
        dividendYield: 0,
        spotAsOf: spot.barDate,
        riskFreeRateSource: riskFreeRateLabel(rate),
        riskFreeRateAsOf: rate.date,
        riskFreeRateKnownFrom: rate.knownFrom.toISOString(),
        dividendYieldSource: 'assumed_zero',
        expiryDays,
        timeToExpirationYears: expiryDays / DAYS_PER_YEAR,
        // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- chainGreeks computed Greeks, so it had the bid and the ask
        optionPrice: (quote.bid! + quote.ask!) / 2,
      },
    };
  }
  return items;
}

/** The contract as served at the read's instant: inactive from its expiry on (freshness.ts). */
function contractOf(c: repo.OptionContract, readAt: Date): ChainItem['contract'] {
  return {
    id: c.id,
    instrumentId: c.instrumentId,
    contractSymbol: c.contractSymbol,
    expiry: c.expiry,
    strike: c.strike,
    right: c.right,
    multiplier: c.multiplier,
    isActive: isActiveAt(c, readAt),
    listedAt: c.listedAt?.toISOString() ?? null,
    source: c.source,
  };
}

function quoteOf(q: repo.QuoteObservation | null): ChainItem['quote'] {
  if (!q) return null;
  return {
    bid: q.bid,
    ask: q.ask,
    lastPrice: q.lastPrice,
    volume: q.volume,
    openInterest: q.openInterest,
    asOf: q.observedAt.toISOString(),
    source: q.source,
  };
}
