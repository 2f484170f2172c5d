import { z } from 'zod';
import type { Area } from '../http/area.ts';
import type { Reads } from '../db/database.ts';
import type { AnyIngestKind } from '../ingest/kind.ts';
import { defineRoute } from '../http/route.ts';
import { sentimentIngest } from './ingest.ts';
import { SentimentMetaSchema, SentimentQuerySchema, SentimentScoreSchema, SourceLeadSchema, SourceLeadsMetaSchema, SourceLeadsQuerySchema } from './schema.ts';
import { listSentiment, listSourceLeads } from './service.ts';
import { InstrumentParamsSchema } from '../core/ids.ts';

export const sentimentRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id/sentiment',
  operationId: 'getSentiment',
  tag: 'Sentiment',
  summary: "An instrument's sentiment scores, exactly as stored",
  description:
    "Each score in its source's own scale (e.g. [-1, 1] or [0, 100]), never rescaled. subjectClass business is about the company itself and may lead the price; market_commentary is about the stock's own trading, follows the price and is never a signal. from and to bound asOfDate, inclusive.",
  scope: 'sentiment:read',
  params: InstrumentParamsSchema,
  query: SentimentQuerySchema,
  response: {
    status: 200,
    description: 'the scores by asOfDate, then source, then subjectClass',
    data: z.array(SentimentScoreSchema),
    meta: SentimentMetaSchema,
  },
  errors: ['not_found'],
});

export const sourceLeadsRoute = defineRoute({
  method: 'get',
  path: '/sentiment/source-leads',
  operationId: 'listSentimentSourceLeads',
  tag: 'Sentiment',
  summary: 'How far each sentiment source leads the price, and whether it may be promoted',
  description:
    'Derived from the stored scores and adjusted daily closes after each sentiment upload or bar change, and on POST /admin/v1/derive; pooled over every instrument per source and subject class. meta.returnDefinition states the correlation measured and meta.rule the verdict.',
  scope: 'sentiment:read',
  query: SourceLeadsQuerySchema,
  response: {
    status: 200,
    description: 'one row per source and subject class with scores, by source, then subjectClass',
    data: z.array(SourceLeadSchema),
    meta: SourceLeadsMetaSchema,
  },
  errors: [],
});

/** What the area's handlers need (the wiring's AppDeps provides it). */
export interface SentimentDeps {
  readDb: Reads;
}

export const sentimentArea: Area<SentimentDeps, AnyIngestKind> = {
  routes: [sentimentRoute, sourceLeadsRoute],
  mount(routes, { readDb }) {
    routes.handle(sentimentRoute, ({ params, query }) => listSentiment(readDb, params.id, query));
    routes.handle(sourceLeadsRoute, ({ query }) => listSourceLeads(readDb, query));
  },
  ingest: { sentiment: sentimentIngest },
};
