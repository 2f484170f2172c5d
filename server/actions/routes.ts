import type { Area } from '../app.ts';
import { sendData } from '../http/envelope.ts';
import { IdParamsSchema } from '../http/params.ts';
import { parse } from '../http/validate.ts';
import { corporateActionIngest, coverageCheckIngest } from './ingest.ts';
import { CorporateActionsQuerySchema } from './schema.ts';
import { listCorporateActions } from './service.ts';

export const actionsArea: Area = {
  routes(router, { readDb }) {
    router.get('/instruments/:id/corporate-actions', 'actions:read', async (req, res) => {
      const { id } = parse(IdParamsSchema, req.params, 'params');
      const q = parse(CorporateActionsQuerySchema, req.query);
      const { data, meta } = await listCorporateActions(readDb, id, q);
      sendData(res, data, meta);
    });
  },
  ingest: { 'corporate-actions': corporateActionIngest, 'corporate-actions/coverage-checks': coverageCheckIngest },
};
