import type { Database } from '../db/database.ts';
import { requireInstrument } from '../instruments/service.ts';
import { sourcesMeta } from '../core/meta.ts';
import { versionToRead } from '../price-history/action-set.ts';
import { selectActionSet } from '../price-history/action-set-repository.ts';
import { provenanceMeta } from '../price-history/read-meta.ts';
import { zeroProvenanceCounts } from '../price-history/schema.ts';
import { actionSetVersions } from '../price-history/versions-repository.ts';
import type { CorporateActionsQuery } from './schema.ts';

export async function listCorporateActions(db: Database, id: string, q: CorporateActionsQuery) {
  const { version, data } = await db.run(async (sql) => {
    await requireInstrument(sql, id);
    const [latest] = (await actionSetVersions(sql, [id])).values();
    const version = versionToRead(q.actionSetVersion, latest);
    const data = await selectActionSet(sql, {
      instrumentIds: [id],
      versions: [version],
      asOf: q.asOf?.instant,
      includeBackfilled: q.includeBackfilled,
      effectiveFrom: q.from,
      effectiveTo: q.to,
    });
    return { version, data };
  });
  const counts = zeroProvenanceCounts();
  const sources = new Set<string>();
  for (const action of data) {
    counts[action.knowledgeProvenance]++;
    sources.add(action.source);
  }
  return {
    data,
    meta: {
      asOf: q.asOf?.input ?? new Date().toISOString(),
      source: sourcesMeta(sources),
      stale: false,
      actionSetVersion: version,
      includeBackfilled: q.includeBackfilled,
      provenance: provenanceMeta(counts),
    },
  };
}
