import type { Area } from '../area.ts';
import { defineRoute } from '../http/route.ts';
import { MacroSeriesMetaSchema, MacroSeriesParamsSchema, MacroSeriesQuerySchema, MacroSeriesSchema, RiskFreeMetaSchema, RiskFreeRateSchema } from './schema.ts';
import { NoQuerySchema } from '../core/params.ts';

export const macroSeriesRoute = defineRoute({
  method: 'get',
  path: '/macro/series/:seriesId',
  operationId: 'getMacroSeries',
  tag: 'Macro',
  summary: 'A macro series from FRED, served from storage while fresh',
  description:
    'Only the 28 allowlisted series are served; any other id is refused before storage or FRED is asked. A copy past its freshness window is refreshed from FRED first; when FRED cannot be asked (no key) or fails, the stored copy is served with meta.stale true, and with nothing stored the answer is 503 upstream_unavailable.',
  scope: 'macro:read',
  params: MacroSeriesParamsSchema,
  query: MacroSeriesQuerySchema,
  response: { status: 200, description: 'the series with its observations in the range', data: MacroSeriesSchema, meta: MacroSeriesMetaSchema },
  errors: ['upstream_unavailable'],
});

export const riskFreeRateRoute = defineRoute({
  method: 'get',
  path: '/rates/risk-free',
  operationId: 'getRiskFreeRate',
  tag: 'Macro',
  summary: 'The current annualised risk-free rate (3-month Treasury, DGS3MO) as a decimal',
  description:
    'source fred: the latest DGS3MO observation of a fresh copy. source fallback: FRED has no key or did not answer, and meta.fallback says which stand-in was used: the last stored observation, or the hard-coded rate.',
  scope: 'macro:read',
  query: NoQuerySchema,
  response: { status: 200, description: 'the rate', data: RiskFreeRateSchema, meta: RiskFreeMetaSchema },
  errors: [],
});

export const macroArea: Area = {
  routes: [macroSeriesRoute, riskFreeRateRoute],
  mount(routes, { macro }) {
    routes.handle(macroSeriesRoute, ({ params, query }) => macro.readSeries(params.seriesId, query));
    routes.handle(riskFreeRateRoute, (_input) => macro.riskFreeRate());
  },
};
