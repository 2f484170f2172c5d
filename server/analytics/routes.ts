import { z } from 'zod';
import type { Area } from '../area.ts';
import { sendData } from '../http/envelope.ts';
import { IdParamsSchema, NoQuerySchema } from '../http/params.ts';
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

const TAG = 'Analytics';
const computedMeta = z.strictObject({ asOf: z.string(), source: z.string(), stale: z.boolean() });
const meta = () => ({ asOf: new Date().toISOString(), source: 'computed', stale: false });
const fromBars = (asOf: string) => ({ asOf, source: 'computed from adjusted daily bars', stale: false });

export const optionPriceRoute = defineRoute({
  method: 'post',
  path: '/analytics/option-price',
  operationId: 'priceOption',
  tag: TAG,
  summary: 'Black-Scholes-Merton price and Greeks of a European option',
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
  scope: 'technicals:read',
  params: IdParamsSchema,
  query: TechnicalsQuerySchema,
  response: { status: 200, description: 'the indicators and the assumptions', data: TechnicalsDataSchema, meta: computedMeta },
  errors: ['not_found'],
});

export const correlationsRoute = defineRoute({
  method: 'get',
  path: '/correlations',
  operationId: 'getCorrelations',
  tag: TAG,
  summary: 'Pairwise correlations of daily log returns',
  scope: 'correlations:read',
  query: CorrelationsQuerySchema,
  response: { status: 200, description: 'each pair and the assumptions', data: CorrelationsDataSchema, meta: computedMeta },
  errors: [],
});

export const betaRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id/beta',
  operationId: 'getBeta',
  tag: TAG,
  summary: 'Beta, alpha and R² of an instrument against a benchmark',
  scope: 'correlations:read',
  params: IdParamsSchema,
  query: BetaQuerySchema,
  response: { status: 200, description: 'the regression and the assumptions', data: BetaDataSchema, meta: computedMeta },
  errors: ['not_found'],
});

export const analyticsArea: Area = {
  routes: [optionPriceRoute, probabilityRoute, strategyEvRoute, technicalsRoute, correlationsRoute, betaRoute],
  mount(routes, { pool, readDb }) {
    routes.handle(optionPriceRoute, ({ body }, res) => {
      sendData(res, service.optionPrice(body), meta());
    });
    routes.handle(probabilityRoute, ({ body }, res) => {
      sendData(res, service.probability(body), meta());
    });
    routes.handle(strategyEvRoute, async ({ body }, res) => {
      sendData(res, await service.strategyEv(pool, body), meta());
    });

    routes.handle(technicalsRoute, async ({ params, query }, res) => {
      const data = await pool.withReadSlot('technicals', () => market.technicals(readDb, pool, params.id, query));
      sendData(res, data, fromBars(data.assumptions.asOf));
    });

    routes.handle(correlationsRoute, async ({ query }, res) => {
      const data = await pool.withReadSlot('correlations', () => market.correlations(readDb, pool, query));
      sendData(res, data, fromBars(data.assumptions.asOf));
    });

    routes.handle(betaRoute, async ({ params, query }, res) => {
      const data = await pool.withReadSlot('beta', () => market.beta(readDb, pool, params.id, query));
      sendData(res, data, fromBars(data.assumptions.asOf));
    });
  },
};
