import type { ISql } from '../db/sql.ts';
import { invalidRequest } from '../core/errors.ts';
import type { PointInTime } from '../core/time.ts';
import { actionsForAdjustment } from './action-set-repository.ts';
import type { CorporateAction } from './schema.ts';
import { actionSetVersions } from './versions-repository.ts';
import { entryOf } from '../core/map-entry.ts';

/** The action-set version a read uses: the pinned one, refused when the instrument has not reached it, else the latest. */
export function versionToRead(pinned: number | undefined, latest: number): number {
  if (pinned !== undefined && pinned > latest) {
    throw invalidRequest(`actionSetVersion ${pinned} does not exist for this instrument`, {
      actionSetVersion: [`the latest version is ${latest}`],
    });
  }
  return pinned ?? latest;
}

/**
 * The action sets a price read applies: each instrument's version (the
 * pinned one, or the latest), and, when `adjusted`, its actions at exactly
 * that version known at the cut-off, so a read applies the set it reports
 * even when the set changes between the two statements.
 */
export async function actionSetsToApply(
  sql: ISql,
  ids: string[],
  q: { adjusted: boolean; actionSetVersion?: number; asOf?: PointInTime; includeBackfilled: boolean },
): Promise<{ versions: number[]; latest: number[]; actions: Map<string, CorporateAction[]> }> {
  const latest = await actionSetVersions(sql, ids);
  const versions = ids.map((id) => versionToRead(q.actionSetVersion, entryOf(latest, id)));
  const actions = q.adjusted
    ? await actionsForAdjustment(sql, { instrumentIds: ids, versions, asOf: q.asOf?.instant, includeBackfilled: q.includeBackfilled })
    : new Map<string, CorporateAction[]>();
  return { versions, latest: ids.map((id) => entryOf(latest, id)), actions };
}
