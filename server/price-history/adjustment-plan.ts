import type { ISql } from '../db/sql.ts';
import type { PointInTime } from '../core/time.ts';
import { actionSetsToApply } from './action-set.ts';
import { buildFactors, multiplierSegments, type Factor, type MultiplierSegment, type NotApplied } from './adjustment.ts';
import { priorCloses } from './bars-repository.ts';
import { versionView, type VersionView } from './versions-repository.ts';
import { entryOf } from '../core/map-entry.ts';

export interface AdjustmentOptions {
  from: string;
  to: string;
  adjusted: boolean;
  asOf?: PointInTime;
  includeBackfilled: boolean;
  actionSetVersion?: number;
}

export interface InstrumentPlan {
  /** The version read. */
  version: number;
  /** A superseded version's bars (version < latest); undefined: the stored bars. */
  view?: VersionView;
  factors: Factor[];
  notApplied: NotApplied[];
}

/**
 * Everything needed to adjust each instrument's bars, fetched in three
 * queries whatever the instrument count: the versions, the actions at exactly
 * those versions (so a read applies the set it reports, even when an action
 * set changes between the two), then the closes before the dividends that
 * touch the window. A version pinned below the latest (one instrument: only
 * the single-instrument read pins) also reads which bars that version covers,
 * and its prior closes come from its own bars, as do those of a version that
 * an upload superseded while the plan was read.
 */
export async function planAdjustments(sql: ISql, ids: string[], q: AdjustmentOptions): Promise<Map<string, InstrumentPlan>> {
  const { versions, latest, actions } = await actionSetsToApply(sql, ids, q);
  const superseded = ids.findIndex((_, i) => versions[i] < latest[i]);
  if (superseded >= 0 && ids.length > 1) throw new Error('a superseded version is read for one instrument at a time');
  const view = superseded >= 0 ? await versionView(sql, ids[0], versions[0]) : undefined;
  // Only dividends that can touch the window need a prior close.
  const dividends = [...actions].flatMap(([instrumentId, list]) =>
    list.filter((a) => a.kind === 'cash_dividend' && a.effectiveDate > q.from).map((a) => ({ instrumentId, effectiveDate: a.effectiveDate })),
  );
  const knownAt = q.asOf?.instant;
  const { closes, latestVersions } = await priorCloses(sql, dividends, view, knownAt);
  // An upload that corrected bars between the versions and the closes made a
  // new version: the closes of the version read then come from its kept bars.
  if (!view) {
    for (const [i, id] of ids.entries()) {
      if (!latestVersions.has(id) || latestVersions.get(id) === latest[i]) continue;
      const own = dividends.filter((d) => d.instrumentId === id);
      const kept = await priorCloses(sql, own, await versionView(sql, id, versions[i]), knownAt);
      closes.set(id, kept.closes.get(id) ?? []);
    }
  }
  const plans = new Map<string, InstrumentPlan>();
  ids.forEach((id, i) => {
    const { factors, notApplied } = buildFactors(
      (actions.get(id) ?? []).filter((a) => a.effectiveDate > q.from),
      closes.get(id) ?? [],
    );
    plans.set(id, { version: versions[i], view, factors, notApplied });
  });
  return plans;
}

/** The multipliers a read applies to each instrument: none for a raw read. */
export function readSegments(q: AdjustmentOptions, plans: Map<string, InstrumentPlan>, ids: string[]): Map<string, MultiplierSegment[]> {
  return new Map(q.adjusted ? ids.map((id) => [id, multiplierSegments(entryOf(plans, id).factors)]) : []);
}
