import { z } from 'zod';
import type { Area } from '../area.ts';
import { sendData } from '../http/envelope.ts';
import { IdParamsSchema } from '../http/params.ts';
import { defineRoute } from '../http/route.ts';
import { corporateActionIngest, coverageCheckIngest } from './ingest.ts';
import { CorporateActionSchema, CorporateActionsMetaSchema, CorporateActionsQuerySchema } from './schema.ts';
import { listCorporateActions } from './service.ts';

export const corporateActionsRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id/corporate-actions',
  operationId: 'getCorporateActions',
  tag: 'Corporate actions',
  summary: "An instrument's corporate actions, as known at a point in time",
  scope: 'actions:read',
  params: IdParamsSchema,
  query: CorporateActionsQuerySchema,
  response: { status: 200, description: 'the actions by effective date', data: z.array(CorporateActionSchema), meta: CorporateActionsMetaSchema },
  errors: ['not_found'],
});

export const actionsArea: Area = {
  routes: [corporateActionsRoute],
  mount(routes, { readDb }) {
    routes.handle(corporateActionsRoute, async ({ params, query }, res) => {
      const { data, meta } = await listCorporateActions(readDb, params.id, query);
      sendData(res, data, meta);
    });
  },
  ingest: { 'corporate-actions': corporateActionIngest, 'corporate-actions/coverage-checks': coverageCheckIngest },
};
