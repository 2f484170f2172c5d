import type { Database } from '../db/database.ts';
import type { Sql } from '../db/sql.ts';
import { requireInstrument } from '../instruments/service.ts';
import * as repo from './repository.ts';
import { zeroProvenanceCounts, type CorporateAction, type CorporateActionsQuery, type CoverageCheck, type Provenance } from './schema.ts';
import { invalidRequest } from '../core/errors.ts';
import { sourcesMeta } from '../core/meta.ts';
import type { PointInTime } from '../core/time.ts';

/** The action-set version a read uses: the pinned one, refused when the instrument has not reached it, else the latest. */
function versionToRead(pinned: number | undefined, latest: number): number {
  if (pinned !== undefined && pinned > latest) {
    throw invalidRequest(`actionSetVersion ${pinned} does not exist for this instrument`, {
      actionSetVersion: [`the latest version is ${latest}`],
    });
  }
  return pinned ?? latest;
}

/** Provenance counts as meta reports them: a figure is point-in-time valid when no backfilled action went into it. */
export function provenanceMeta(counts: Record<Provenance, number>) {
  return { ...counts, pitValid: counts.backfilled === 0 };
}

export async function listCorporateActions(db: Database, id: string, q: CorporateActionsQuery) {
  const { version, data } = await db.run(async (sql) => {
    await requireInstrument(sql, id);
    const [latest] = (await repo.actionSetVersions(sql, [id])).values();
    const version = versionToRead(q.actionSetVersion, latest);
    const data = await repo.selectActionSet(sql, {
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

/**
 * The action sets a price read applies: each instrument's version (the
 * pinned one, or the latest), and, when `adjusted`, its actions at exactly
 * that version known at the cut-off, so a read applies the set it reports
 * even when the set changes between the two statements.
 */
export async function actionSetsToApply(
  sql: Sql,
  ids: string[],
  q: { adjusted: boolean; actionSetVersion?: number; asOf?: PointInTime; includeBackfilled: boolean },
): Promise<{ versions: number[]; latest: number[]; actions: Map<string, CorporateAction[]> }> {
  const latest = await repo.actionSetVersions(sql, ids);
  const versions = ids.map((id) => versionToRead(q.actionSetVersion, latest.get(id)!));
  const actions = q.adjusted
    ? await repo.actionsForAdjustment(sql, { instrumentIds: ids, versions, asOf: q.asOf?.instant, includeBackfilled: q.includeBackfilled })
    : new Map<string, CorporateAction[]>();
  return { versions, latest: ids.map((id) => latest.get(id)!), actions };
}

export type CoverageGap = 'none' | 'never_checked' | 'starts_after_series';

export const latestCoverageChecks = repo.latestCoverageChecks;

// A daily bar upload takes part in the versions too (prices/ingest.ts).
export const { lockPriceHistory, bumpVersions, actionSetVersions } = repo;

/** What meta says of an instrument's action coverage, given its latest check and the first bar the read returned. */
export function actionCoverage(check: CoverageCheck | undefined, firstBarDate: string) {
  if (!check) {
    return {
      checked: false,
      lastCheckedAt: null,
      source: null,
      coveredFrom: null,
      actionsFound: null,
      coversSeries: false,
      gap: 'never_checked' as CoverageGap,
    };
  }
  const coversSeries = check.coveredFrom <= firstBarDate;
  return {
    checked: true,
    lastCheckedAt: check.checkedAt,
    source: check.source,
    coveredFrom: check.coveredFrom,
    actionsFound: check.actionsFound,
    coversSeries,
    gap: (coversSeries ? 'none' : 'starts_after_series') as CoverageGap,
  };
}
