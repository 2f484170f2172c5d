import type { Area } from '../http/area.ts';
import type { Reads } from '../db/database.ts';
import type { AnyIngestKind } from '../ingest/kind.ts';
import { defineRoute } from '../http/route.ts';
import { fxRateIngest } from './ingest.ts';
import { FxPairParamsSchema, FxRateMetaSchema, FxRateQuerySchema, FxRateSchema } from './schema.ts';
import { getFxRate } from './service.ts';

export const fxRateRoute = defineRoute({
  method: 'get',
  path: '/fx/:base/:quote',
  operationId: 'getFxRate',
  tag: 'FX',
  summary: 'The FX rate of a currency pair on a date',
  description:
    '`rate` is units of `quote` per one unit of `base`. Codes are 3 letters, any case. When only the inverse pair is stored, the rate is 1 / the stored rate and `meta.derivation` says so. A date with no stored rate in either direction is 404, never interpolated or carried forward. With `asOf`, the rate as known at that instant (a correction known later is left out, and the inverse rule applies to what was known then); a date whose rates were all first known after `asOf` is 404 with `details.asOf` saying so.',
  scope: 'fx:read',
  params: FxPairParamsSchema,
  query: FxRateQuerySchema,
  response: { status: 200, description: 'the rate on that date', data: FxRateSchema, meta: FxRateMetaSchema },
  errors: ['not_found'],
});

/** What the area's handlers need (the wiring's AppDeps provides it). */
export interface FxDeps {
  readDb: Reads;
}

export const fxArea: Area<FxDeps, AnyIngestKind> = {
  routes: [fxRateRoute],
  mount(routes, { readDb }) {
    routes.handle(fxRateRoute, ({ params, query }) => getFxRate(readDb, params.base, params.quote, query.date, query.asOf));
  },
  ingest: { fx: fxRateIngest },
};
