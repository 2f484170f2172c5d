import type { Area } from '../http/area.ts';
import type { MacroService } from './service.ts';
import { defineRoute } from '../http/route.ts';
import {
  MacroSeriesMetaSchema,
  MacroSeriesParamsSchema,
  MacroSeriesQuerySchema,
  MacroSeriesSchema,
  RiskFreeMetaSchema,
  RiskFreeQuerySchema,
  RiskFreeRateSchema,
} from './schema.ts';

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
  summary: 'The annualised 3-month Treasury rate as a decimal: the current one (DGS3MO), or the one known at asOf',
  description:
    'Without asOf: source fred is the latest DGS3MO observation of a fresh copy; source fallback means FRED has no key or did not answer, and meta.fallback says which stand-in was used: the last stored observation, or the hard-coded rate. ' +
    'With asOf: the rate known at that instant, from the stored history only, never a later one: the observation (TB3MS monthly averages, known from the first instant after their month; DGS3MO daily observations, known from the end of their UTC day) with the latest known-from instant at or before asOf, a tie going to DGS3MO; the hard-coded TB3MS 2022-09 only when it is more recent than anything stored. meta.stale says a newer observation of that series was due by then. 404 not_found when nothing was known at asOf.',
  scope: 'macro:read',
  query: RiskFreeQuerySchema,
  response: { status: 200, description: 'the rate', data: RiskFreeRateSchema, meta: RiskFreeMetaSchema },
  errors: ['not_found'],
});

/** What the area's handlers need (the wiring's AppDeps provides it). */
export interface MacroDeps {
  macro: Pick<MacroService, 'readSeries' | 'riskFreeRate' | 'riskFreeRateAt'>;
}

export const macroArea: Area<MacroDeps> = {
  routes: [macroSeriesRoute, riskFreeRateRoute],
  mount(routes, { macro }) {
    routes.handle(macroSeriesRoute, ({ params, query }) => macro.readSeries(params.seriesId, query));
    routes.handle(riskFreeRateRoute, ({ query }) => (query.asOf ? macro.riskFreeRateAt(query.asOf) : macro.riskFreeRate()));
  },
};
