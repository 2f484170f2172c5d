import type { Area } from '../http/area.ts';
import type { Reads } from '../db/database.ts';
import { defineRoute } from '../http/route.ts';
import { BulkImpliedVolatilityQuerySchema, BulkImpliedVolatilitySchema } from './schema.ts';
import { bulkImpliedVolatility } from './service.ts';

export const bulkImpliedVolatilityRoute = defineRoute({
  method: 'get',
  path: '/instruments/implied-volatility',
  operationId: 'getBulkImpliedVolatility',
  tag: 'Options',
  summary: 'The newest 30-day implied-volatility snapshot of up to 500 instruments',
  description:
    'The one answer without the `{ data, meta }` envelope: `{ instruments, assumptions }` at top level. An instrument counts only when its newest snapshot is dated on or after today (UTC; asOf when given) minus maxAgeDays; one without a fresh snapshot, and an id naming no instrument, is absent (the latter also listed in assumptions.unknownInstrumentIds). Each row carries its own asOfDate.',
  scope: 'options:read',
  query: BulkImpliedVolatilityQuerySchema,
  response: { status: 200, description: 'the fresh snapshots, in the order asked, and the assumptions of the read', body: BulkImpliedVolatilitySchema },
  errors: [],
});

/** What the area's handlers need (the wiring's AppDeps provides it). */
export interface ImpliedVolatilityDeps {
  readDb: Reads;
}

export const impliedVolatilityArea: Area<ImpliedVolatilityDeps> = {
  routes: [bulkImpliedVolatilityRoute],
  mount(routes, { readDb }) {
    // The spec exempts this answer from the envelope: the route declares its whole `body` (http/route.ts, BodyResponse).
    routes.handle(bulkImpliedVolatilityRoute, ({ query }) => bulkImpliedVolatility(readDb, query));
  },
};
