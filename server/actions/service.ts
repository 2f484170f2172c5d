import type { Reads } from '../db/database.ts';
import { requireInstrument } from '../instruments/service.ts';
import { sourcesMeta } from '../core/meta.ts';
import { versionToRead } from '../price-history/action-set.ts';
import { latestCoverageChecks, selectActionSet } from '../price-history/action-set-repository.ts';
import { ACTIONS_CHECK_MAX_AGE_DAYS, freshness, readInstant } from '../core/freshness.ts';
import { provenanceMeta } from '../price-history/read-meta.ts';
import { zeroProvenanceCounts } from '../price-history/schema.ts';
import { actionSetVersions } from '../price-history/versions-repository.ts';
import type { CorporateActionsQuery } from './schema.ts';

/**
 * An instrument's corporate actions are fresh while its action history was
 * checked against a source (action coverage) within ACTIONS_CHECK_MAX_AGE_DAYS
 * before the read's instant: an unchecked history, or one not checked for a
 * month, may lack an action announced since (docs/api.md, "Freshness").
 */
export function actionsFreshness(check: { checkedAt: string } | undefined, instant: number) {
  return freshness<'actions_never_checked' | 'actions_check_old'>(
    check === undefined ? 'actions_never_checked' : Date.parse(check.checkedAt) < instant - ACTIONS_CHECK_MAX_AGE_DAYS * 86_400_000 && 'actions_check_old',
  );
}

export async function listCorporateActions(db: Reads, id: string, q: CorporateActionsQuery) {
  const readAt = new Date();
  const { version, data, check } = await db.run(async (sql) => {
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
    const check = (await latestCoverageChecks(sql, [id], q.asOf?.instant)).get(id);
    return { version, data, check };
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
      asOf: q.asOf?.input ?? readAt.toISOString(),
      source: sourcesMeta(sources),
      ...actionsFreshness(check, readInstant(q.asOf, readAt)),
      actionSetVersion: version,
      includeBackfilled: q.includeBackfilled,
      provenance: provenanceMeta(counts),
    },
  };
}
