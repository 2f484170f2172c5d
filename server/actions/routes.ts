import { z } from 'zod';
import type { Area } from '../http/area.ts';
import type { Reads } from '../db/database.ts';
import type { AnyIngestKind } from '../ingest/kind.ts';
import { defineRoute } from '../http/route.ts';
import { corporateActionIngest, coverageCheckIngest } from './ingest.ts';
import { CorporateActionsMetaSchema, CorporateActionsQuerySchema } from './schema.ts';
import { CorporateActionSchema } from '../price-history/schema.ts';
import { listCorporateActions } from './service.ts';
import { InstrumentParamsSchema } from '../core/ids.ts';

export const corporateActionsRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id/corporate-actions',
  operationId: 'getCorporateActions',
  tag: 'Corporate actions',
  summary: "An instrument's corporate actions, as known at a point in time",
  description:
    "The actions effective from from to to, each as its latest revision in the instrument's current action set, or in the set of the version pinned with actionSetVersion (one above the current version is a 400). With asOf, only actions known by the cut-off (knowledgeDate at or before it); backfilled actions, which have no knowledge date, only with includeBackfilled=true. meta.provenance counts the listed actions by provenance, with pitValid false when a backfilled one is among them.",
  scope: 'actions:read',
  params: InstrumentParamsSchema,
  query: CorporateActionsQuerySchema,
  response: { status: 200, description: 'the actions by effective date', data: z.array(CorporateActionSchema), meta: CorporateActionsMetaSchema },
  errors: ['not_found'],
});

/** What the area's handlers need (the wiring's AppDeps provides it). */
export interface ActionsDeps {
  readDb: Reads;
}

export const actionsArea: Area<ActionsDeps, AnyIngestKind> = {
  routes: [corporateActionsRoute],
  mount(routes, { readDb }) {
    routes.handle(corporateActionsRoute, async ({ params, query }) => {
      const { data, meta } = await listCorporateActions(readDb, params.id, query);
      return { data, meta };
    });
  },
  ingest: { 'corporate-actions': corporateActionIngest, 'corporate-actions/coverage-checks': coverageCheckIngest },
};
