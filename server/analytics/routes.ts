import { z } from 'zod';
import type { Area } from '../http/area.ts';
import type { WorkerPool } from '../../workers/pool.ts';
import { defineRoute } from '../http/route.ts';
import { BetaQuerySchema, CorrelationsQuerySchema, OptionPriceSchema, ProbabilitySchema, StrategyEvSchema, TechnicalsQuerySchema } from './schema.ts';
import {
  BetaDataSchema,
  CorrelationsDataSchema,
  OptionPriceDataSchema,
  ProbabilityDataSchema,
  StrategyEvDataSchema,
  TechnicalsDataSchema,
} from './responses.ts';
import * as market from './market-service.ts';
import * as service from './service.ts';
import { InstrumentParamsSchema } from '../core/ids.ts';
import { NoQuerySchema } from '../core/params.ts';
import { freshness, readInstant, SERIES_RULE, SERIES_STALE_REASONS, staleMetaFields } from '../core/freshness.ts';
import { dailySeriesFreshness } from '../prices/freshness.ts';
import type { Reads } from '../db/database.ts';

const TAG = 'Analytics';
const computedMeta = z.strictObject({
  asOf: z.string(),
  source: z.string(),
  stale: z
    .boolean()
    .describe('computed from the request body alone: with no stored input that could be behind, the figures are as fresh as the request, so false'),
  staleReason: z.null().describe('null: nothing stored can make these figures stale'),
});
const barsMeta = z.strictObject({
  asOf: z.string(),
  source: z.string(),
  ...staleMetaFields(SERIES_STALE_REASONS, `an instrument's series is stale at the window's end (asOf, else the time of computing): ${SERIES_RULE}`),
});
// Nothing stored goes into these figures: their freshness is that of an empty set of inputs.
const meta = () => ({ asOf: new Date().toISOString(), source: 'computed', ...freshness<never>() });
/** The figures over stored bars are as fresh as the instruments' series at the window's end. */
async function fromBars(db: Reads, asOf: string, ids: string[], cutoff: { instant: Date } | undefined) {
  const fresh = await db.run((sql) => dailySeriesFreshness(sql, ids, readInstant(cutoff)));
  return { asOf, source: 'computed from adjusted daily bars', ...fresh };
}

export const optionPriceRoute = defineRoute({
  method: 'post',
  path: '/analytics/option-price',
  operationId: 'priceOption',
  tag: TAG,
  summary: 'Black-Scholes-Merton price and Greeks of a European option',
  description:
    'Computed from the body alone, on the request thread: nothing is read or stored, so the same body always gives the same numbers, and meta.asOf is the time of computing. Per share, with a continuous dividend yield and ACT/365F (T = expiryDays / 365); theta per calendar day, vega and rho per percentage point.',
  scope: 'analytics:read',
  query: NoQuerySchema,
  body: OptionPriceSchema,
  response: { status: 200, description: 'the price, the Greeks and the assumptions', data: OptionPriceDataSchema, meta: computedMeta },
  errors: [],
});

export const probabilityRoute = defineRoute({
  method: 'post',
  path: '/analytics/probability',
  operationId: 'probabilityOfTarget',
  tag: TAG,
  summary: 'Probability of finishing beyond, and of touching, a target price',
  description:
    'Computed from the body alone: nothing is read or stored, and meta.asOf is the time of computing. At expiry: the risk-neutral lognormal probability of finishing at or beyond the target (long: at or above, short: at or below). Touch: the driftless first-passage probability of reaching it before expiry, never below the at-expiry figure (assumptions.touchFlooredToExpiry says when that floor binds), and 1 when the target is already reached.',
  scope: 'analytics:read',
  query: NoQuerySchema,
  body: ProbabilitySchema,
  response: { status: 200, description: 'the probabilities and the assumptions', data: ProbabilityDataSchema, meta: computedMeta },
  errors: [],
});

export const strategyEvRoute = defineRoute({
  method: 'post',
  path: '/analytics/strategy-ev',
  operationId: 'strategyExpectedValue',
  tag: TAG,
  summary: 'Expected value, probability of profit and risk of an option structure',
  description:
    'Computed from the body alone, on the worker pool: nothing is read or stored, and meta.asOf is the time of computing. Each leg is priced at its Black-Scholes-Merton fair value; the expected value is that of the present-value P&L under the risk-neutral measure, or the real-world one when drift is given, so a fairly priced structure has EV 0 without a drift. Probability of profit, breakevens, maximum profit and loss come from the expiry P&L. A stock leg, legs of several expiries, or legs that do not form the named structure are 422 unsupported_structure.',
  scope: 'analytics:read',
  query: NoQuerySchema,
  body: StrategyEvSchema,
  response: { status: 200, description: 'the valuation and the assumptions', data: StrategyEvDataSchema, meta: computedMeta },
  errors: ['unsupported_structure'],
});

export const technicalsRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id/technicals',
  operationId: 'getTechnicals',
  tag: TAG,
  summary: 'Technical indicators, patterns and their consensus over a lookback of adjusted daily bars',
  description:
    "Over the daily bars in the calendar days (end − lookbackDays, end], end being the UTC day of asOf (today without it): only bars on or before end, adjusted with the corporate actions known at the window's end, backfilled actions left out, so a read with asOf repeats what could have been computed then; the symbol is the one in force that day. An indicator the bars cannot support is null, its reason and description saying why. A window with no bar to read is 404 (the specification fixes it), details.reason saying which case: no_stored_bars (none is stored in the window) or not_yet_known (bars are stored, none was known at asOf; the message says when the first became known).",
  scope: 'technicals:read',
  params: InstrumentParamsSchema,
  query: TechnicalsQuerySchema,
  response: { status: 200, description: 'the indicators and the assumptions', data: TechnicalsDataSchema, meta: barsMeta },
  errors: ['not_found'],
});

export const correlationsRoute = defineRoute({
  method: 'get',
  path: '/correlations',
  operationId: 'getCorrelations',
  tag: TAG,
  summary: 'Pairwise correlations of daily log returns',
  description:
    "Pearson or Spearman correlation of every pair of 2 to 20 instruments, over the log returns between the dates all usable instruments have closes for, in the calendar days (end − lookbackDays, end], end being the UTC day of asOf (today without it). Closes are adjusted with the corporate actions known at the window's end, backfilled actions left out. An instrument with fewer than 3 returns is listed unusable with its count and reason (no_stored_bars, not_yet_known, insufficient_observations, insufficient_overlap), never zero-padded, and its pairs have a null correlation; unknown ids are listed in unknownInstrumentIds. Fewer than two usable instruments is a 400 invalid_request (the specification fixes it), details naming each unusable instrument's count and reason.",
  scope: 'correlations:read',
  query: CorrelationsQuerySchema,
  response: { status: 200, description: 'each pair and the assumptions', data: CorrelationsDataSchema, meta: barsMeta },
  errors: [],
});

export const betaRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id/beta',
  operationId: 'getBeta',
  tag: TAG,
  summary: 'Beta, alpha and R² of an instrument against a benchmark',
  description:
    "Ordinary least squares of the instrument's daily log returns on the benchmark's, on the dates both have closes for, in the calendar days (end − lookbackDays, end], end being the UTC day of asOf (today without it); closes adjusted with the corporate actions known at the window's end, backfilled actions left out. alpha is per day, not annualised. A figure that cannot be computed is null with reason saying why (no_stored_bars or not_yet_known for a window without a bar, reasonInstrumentId naming whose; fewer than 3 aligned returns; a constant series), never a stand-in 1. An unknown instrument is 404 (the specification fixes it); an unknown benchmarkId, or the instrument itself, is a 400.",
  scope: 'correlations:read',
  params: InstrumentParamsSchema,
  query: BetaQuerySchema,
  response: { status: 200, description: 'the regression and the assumptions', data: BetaDataSchema, meta: barsMeta },
  errors: ['not_found'],
});

/** What the area's handlers need (the wiring's AppDeps provides it). */
export interface AnalyticsDeps {
  readDb: Reads;
  pool: WorkerPool;
}

export const analyticsArea: Area<AnalyticsDeps> = {
  routes: [optionPriceRoute, probabilityRoute, strategyEvRoute, technicalsRoute, correlationsRoute, betaRoute],
  mount(routes, { pool, readDb }) {
    routes.handle(optionPriceRoute, ({ body }) => ({ data: service.optionPrice(body), meta: meta() }));
    routes.handle(probabilityRoute, ({ body }) => ({ data: service.probability(body), meta: meta() }));
    routes.handle(strategyEvRoute, async ({ body }) => ({ data: await service.strategyEv(pool, body), meta: meta() }));

    routes.handle(technicalsRoute, async ({ params, query }) => {
      const data = await pool.withReadSlot('technicals', () => market.technicals(readDb, pool, params.id, query));
      return { data, meta: await fromBars(readDb, data.assumptions.asOf, [params.id], query.asOf) };
    });

    routes.handle(correlationsRoute, async ({ query }) => {
      const data = await pool.withReadSlot('correlations', () => market.correlations(readDb, pool, query));
      return { data, meta: await fromBars(readDb, data.assumptions.asOf, query.instrumentIds, query.asOf) };
    });

    routes.handle(betaRoute, async ({ params, query }) => {
      const data = await pool.withReadSlot('beta', () => market.beta(readDb, pool, params.id, query));
      return { data, meta: await fromBars(readDb, data.assumptions.asOf, [params.id, query.benchmarkId], query.asOf) };
    });
  },
};
