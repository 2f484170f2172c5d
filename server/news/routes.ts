import { z } from 'zod';
import type { Area } from '../http/area.ts';
import type { Reads } from '../db/database.ts';
import type { ListCursors } from '../core/cursor.ts';
import type { AnyIngestKind } from '../ingest/kind.ts';
import { defineRoute } from '../http/route.ts';
import { newsIngest } from './ingest.ts';
import { NewsEventSchema, NewsMetaSchema, NewsQuerySchema } from './schema.ts';
import { listNews } from './service.ts';
import { InstrumentParamsSchema } from '../core/ids.ts';

const DATE_BOUNDS = 'from and to bound the UTC day of publishedAt, both inclusive.';

export const newsRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id/news',
  operationId: 'getNews',
  tag: 'News and events',
  summary: "An instrument's news, newest first",
  description: `${DATE_BOUNDS} eventClass is the source's own class, matched exactly.`,
  scope: 'news:read',
  params: InstrumentParamsSchema,
  query: NewsQuerySchema,
  response: {
    status: 200,
    description: 'the news, newest publishedAt first, ties by id',
    data: z.array(NewsEventSchema),
    meta: NewsMetaSchema,
  },
  errors: ['not_found'],
});

export const eventsRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id/events',
  operationId: 'getCatalystEvents',
  tag: 'News and events',
  summary: "An instrument's catalyst events (company-confirmed news), newest first",
  description: `Exactly the news the same query returns with isCompanyConfirmed true: one query, with one more predicate. ${DATE_BOUNDS}`,
  scope: 'events:read',
  params: InstrumentParamsSchema,
  query: NewsQuerySchema,
  response: {
    status: 200,
    description: 'the company-confirmed news, newest publishedAt first, ties by id',
    data: z.array(NewsEventSchema),
    meta: NewsMetaSchema,
  },
  errors: ['not_found'],
});

/** What the area's handlers need (the wiring's AppDeps provides it). */
export interface NewsDeps {
  readDb: Reads;
  cursors: ListCursors;
}

export const newsArea: Area<NewsDeps, AnyIngestKind> = {
  routes: [newsRoute, eventsRoute],
  mount(routes, { readDb, cursors }) {
    routes.handle(newsRoute, ({ params, query }) => listNews(readDb, cursors, params.id, query, false));
    routes.handle(eventsRoute, ({ params, query }) => listNews(readDb, cursors, params.id, query, true));
  },
  ingest: { news: newsIngest },
};
