import { z } from 'zod';
import type { Area } from '../http/area.ts';
import type { Reads } from '../db/database.ts';
import { defineRoute } from '../http/route.ts';
import { CoverageMetaSchema, CoverageQuerySchema, CoverageSchema, EventReactionSchema, EventReactionsMetaSchema, EventReactionsQuerySchema } from './schema.ts';
import { eventReactionCoverage, listEventReactions } from './service.ts';
import { InstrumentParamsSchema } from '../core/ids.ts';

export const eventReactionsRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id/event-reactions',
  operationId: 'getEventReactions',
  tag: 'News and events',
  summary: "How an instrument's price moved on each of its news items",
  description:
    'Derived from the stored news and adjusted daily closes (after each upload that changes them, and on POST /admin/v1/derive). ' +
    'Each news item falls in the first session (a day with a daily bar) whose 16:00 America/New_York close is at or after publishedAt: ' +
    'published before or during a session, that session; after its close, at a weekend or on a holiday, the next. ' +
    "reactionPct = 100 × (the session's adjusted close / the previous bar's − 1). " +
    'An item the bars cannot place has no row, never a zero move: no bar on or after its session, none before, or a session more than ' +
    '7 calendar days after the New York day of publication or after the previous bar (longer than any US market closure since 1990, so missing data). ' +
    'from and to bound eventDate.',
  scope: 'events:read',
  params: InstrumentParamsSchema,
  query: EventReactionsQuerySchema,
  response: {
    status: 200,
    description: 'the reactions, eventDate ascending, ties by eventId',
    data: z.array(EventReactionSchema),
    meta: EventReactionsMetaSchema,
  },
  errors: ['not_found'],
});

export const eventReactionCoverageRoute = defineRoute({
  method: 'get',
  path: '/instruments/event-reaction-coverage',
  operationId: 'getEventReactionCoverage',
  tag: 'News and events',
  summary: 'Which instruments have enough measured event reactions',
  description:
    'One aggregate over the derived reactions: per instrument, the reactions to news of the given classes, their first and last eventDate ' +
    'and the calendar days between. Only instruments with a current symbol are listed.',
  scope: 'events:read',
  query: CoverageQuerySchema,
  response: { status: 200, description: 'the instruments, best covered first, and the request as understood', data: CoverageSchema, meta: CoverageMetaSchema },
  errors: [],
});

/** What the area's handlers need (the wiring's AppDeps provides it). */
export interface EventReactionsDeps {
  readDb: Reads;
}

export const eventReactionsArea: Area<EventReactionsDeps> = {
  routes: [eventReactionsRoute, eventReactionCoverageRoute],
  mount(routes, { readDb }) {
    routes.handle(eventReactionsRoute, ({ params, query }) => listEventReactions(readDb, params.id, query));
    routes.handle(eventReactionCoverageRoute, ({ query }) => eventReactionCoverage(readDb, query));
  },
};
