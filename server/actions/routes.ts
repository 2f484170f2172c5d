import type { Area } from '../area.ts';
import type { Database } from '../db/database.ts';
import { sendData } from '../http/envelope.ts';
import { UuidSchema } from '../http/params.ts';
import { defineRoute } from '../http/route.ts';
import { requireInstrument } from '../instruments/service.ts';
import { PROVENANCES, type Provenance } from '../prices/adjustment.ts';
import { actionSetVersions, selectActionSet } from '../prices/repository.ts';
import { versionToRead } from '../prices/service.ts';
import { z } from 'zod';
import { corporateActionIngest, coverageCheckIngest } from './ingest.ts';
import { CorporateActionSchema, CorporateActionsMetaSchema, CorporateActionsQuerySchema } from './schema.ts';

type ActionsQuery = z.infer<typeof CorporateActionsQuerySchema>;

async function listCorporateActions(db: Database, id: string, q: ActionsQuery) {
  const { version, rows } = await db.run(async (sql) => {
    await requireInstrument(sql, id);
    const [latest] = (await actionSetVersions(sql, [id])).values();
    const version = versionToRead(q.actionSetVersion, latest);
    const rows = await selectActionSet(sql, {
      instrumentIds: [id],
      versions: [version],
      asOf: q.asOf?.instant,
      includeBackfilled: q.includeBackfilled,
      effectiveFrom: q.from,
      effectiveTo: q.to,
    });
    return { version, rows };
  });
  const counts = Object.fromEntries(PROVENANCES.map((p) => [p, 0])) as Record<Provenance, number>;
  const sources = new Set<string>();
  const data = rows.map((r) => {
    counts[r.knowledge_provenance as Provenance]++;
    sources.add(r.source as string);
    return {
      id: r.action_id as string,
      instrumentId: r.instrument_id as string,
      kind: r.kind as string,
      effectiveDate: r.effective_date as string,
      announcementDate: (r.announcement_date as string | null) ?? null,
      knowledgeDate: r.knowledge_date ? (r.knowledge_date as Date).toISOString() : null,
      knowledgeProvenance: r.knowledge_provenance as Provenance,
      createdAt: (r.created_at as Date).toISOString(),
      params: r.params as Record<string, unknown>,
      source: r.source as string,
      actionSetVersion: r.action_set_version as number,
    };
  });
  return {
    data,
    meta: {
      asOf: q.asOf?.input ?? new Date().toISOString(),
      source: sources.size ? [...sources].sort().join(', ') : 'none',
      stale: false,
      actionSetVersion: version,
      includeBackfilled: q.includeBackfilled,
      provenance: { ...counts, pitValid: counts.backfilled === 0 },
    },
  };
}

export const corporateActionsRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id/corporate-actions',
  operationId: 'getCorporateActions',
  tag: 'Corporate actions',
  summary: "An instrument's corporate actions, as known at a point in time",
  scope: 'actions:read',
  params: z.strictObject({ id: UuidSchema }),
  query: CorporateActionsQuerySchema,
  response: { status: 200, description: 'the actions by effective date', data: z.array(CorporateActionSchema), meta: CorporateActionsMetaSchema },
  errors: ['not_found'],
});

export const actionsArea: Area = {
  routes: [corporateActionsRoute],
  mount(routes, { readDb }) {
    routes.handle(corporateActionsRoute, async ({ params, query }, res) => {
      const { data, meta } = await listCorporateActions(readDb, params.id.toLowerCase(), query);
      sendData(res, data, meta);
    });
  },
  ingest: { 'corporate-actions': corporateActionIngest, 'corporate-actions/coverage-checks': coverageCheckIngest },
};
