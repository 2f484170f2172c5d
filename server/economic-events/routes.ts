import { z } from 'zod';
import type { Area } from '../http/area.ts';
import type { Reads } from '../db/database.ts';
import type { ListCursors } from '../core/cursor.ts';
import type { AnyIngestKind } from '../ingest/kind.ts';
import { defineRoute } from '../http/route.ts';
import { economicEventIngest } from './ingest.ts';
import { EconomicEventSchema, EconomicEventsMetaSchema, EconomicEventsQuerySchema } from './schema.ts';
import { listEconomicEvents } from './service.ts';

export const economicEventsRoute = defineRoute({
  method: 'get',
  path: '/economic-events',
  operationId: 'listEconomicEvents',
  tag: 'Economic calendar',
  summary: 'Scheduled macro releases, newest first',
  description:
    'Filters narrow by the UTC day of scheduledAt, eventClass, country and importance. actual, forecast and previous are the provider strings exactly as ingested, or null.',
  scope: 'events:read',
  query: EconomicEventsQuerySchema,
  response: {
    status: 200,
    description: 'the releases, newest scheduledAt first, ties by id',
    data: z.array(EconomicEventSchema),
    meta: EconomicEventsMetaSchema,
  },
  errors: [],
});

/** What the area's handlers need (the wiring's AppDeps provides it). */
export interface EconomicEventsDeps {
  readDb: Reads;
  cursors: ListCursors;
}

export const economicEventsArea: Area<EconomicEventsDeps, AnyIngestKind> = {
  routes: [economicEventsRoute],
  mount(routes, { readDb, cursors }) {
    routes.handle(economicEventsRoute, ({ query }) => listEconomicEvents(readDb, cursors, query));
  },
  ingest: { 'economic-events': economicEventIngest },
};
