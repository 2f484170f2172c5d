import type { Sql } from '../db/sql.ts';
import { actionSetsToApply } from '../actions/service.ts';
import {
  buildFactors,
  factorsUsed,
  multiplierSegments,
  priceBasisOf,
  type Factor,
  type MultiplierSegment,
  type NotApplied,
  type SeriesKeys,
} from './adjustment.ts';
import * as repo from './repository.ts';
import * as text from './text-repository.ts';
import type { DailySeriesText } from './text-repository.ts';
import type { Format } from '../core/params.ts';
import type { PointInTime } from '../core/time.ts';

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
  view?: repo.VersionView;
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
export async function planAdjustments(sql: Sql, ids: string[], q: AdjustmentOptions): Promise<Map<string, InstrumentPlan>> {
  const { versions, latest, actions } = await actionSetsToApply(sql, ids, q);
  const superseded = ids.findIndex((_, i) => versions[i] < latest[i]);
  if (superseded >= 0 && ids.length > 1) throw new Error('a superseded version is read for one instrument at a time');
  const view = superseded >= 0 ? await repo.versionView(sql, ids[0], versions[0]) : undefined;
  // Only dividends that can touch the window need a prior close.
  const dividends = [...actions].flatMap(([instrumentId, list]) =>
    list.filter((a) => a.kind === 'cash_dividend' && a.effectiveDate > q.from).map((a) => ({ instrumentId, effectiveDate: a.effectiveDate })),
  );
  const { closes, latestVersions } = await repo.priorCloses(sql, dividends, view);
  // An upload that corrected bars between the versions and the closes made a
  // new version: the closes of the version read then come from its kept bars.
  if (!view) {
    for (const [i, id] of ids.entries()) {
      if (!latestVersions.has(id) || latestVersions.get(id) === latest[i]) continue;
      const own = dividends.filter((d) => d.instrumentId === id);
      const kept = await repo.priorCloses(sql, own, await repo.versionView(sql, id, versions[i]));
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

/**
 * The series of `ids` in the window, each with the bars of the version its
 * plan applies. A plan of a superseded version reads that version's bars; a
 * series whose version moved on after the plan was read (an upload corrected
 * or filled in its bars meanwhile) is read again as the planned version,
 * whose bars are kept as they stood, so the bars always match the version
 * the meta reports.
 */
export async function seriesAsPlanned(
  sql: Sql,
  format: Format,
  ids: string[],
  segments: Map<string, MultiplierSegment[]>,
  window: { from: string; to: string },
  plans: Map<string, InstrumentPlan>,
): Promise<DailySeriesText[]> {
  const view = ids.length === 1 ? plans.get(ids[0])!.view : undefined;
  const read = await text.dailySeriesText(sql, format, ids, segments, window.from, window.to, view);
  const asPlanned = await Promise.all(
    read.map(async (series) => {
      const id = series.instrumentId;
      const { version } = plans.get(id)!;
      if (view || series.latestVersion === version) return series;
      const own = new Map(segments.has(id) ? [[id, segments.get(id)!]] : []);
      const [again] = await text.dailySeriesText(sql, format, [id], own, window.from, window.to, await repo.versionView(sql, id, version));
      return again;
    }),
  );
  // The planned version may have no bars in the window where the latest has some.
  return asPlanned.filter((series) => series !== undefined);
}

/** The multipliers a read applies to each instrument: none for a raw read. */
export function readSegments(q: AdjustmentOptions, plans: Map<string, InstrumentPlan>, ids: string[]): Map<string, MultiplierSegment[]> {
  return new Map(q.adjusted ? ids.map((id) => [id, multiplierSegments(plans.get(id)!.factors)]) : []);
}

/** What a read's bars of one instrument tell of its numbers: the sources' bases, and the factors they applied or already reflected. */
export interface SeriesUse {
  bases: { raw: boolean; vendorAdjusted: boolean };
  applied: Factor[];
  alreadyReflected: Factor[];
}

/** `series` undefined: the instrument has no bars in the window. */
export function seriesUse(q: AdjustmentOptions, plan: InstrumentPlan, series?: { bases: SeriesUse['bases']; keys: SeriesKeys }): SeriesUse {
  if (!series) return { bases: { raw: false, vendorAdjusted: false }, applied: [], alreadyReflected: [] };
  return { bases: series.bases, ...factorsUsed(q.adjusted ? plan.factors : [], series.keys) };
}

/** What meta says of the numbers a read returned for one instrument: their basis and the actions behind it. */
export function priceBasisMeta(q: AdjustmentOptions, use: SeriesUse, plan: InstrumentPlan, readAt: Date) {
  return {
    priceBasis: priceBasisOf(q.adjusted, use.bases),
    adjustedThrough: q.adjusted ? (q.asOf?.instant ?? readAt).toISOString() : null,
    actionsApplied: use.applied.length,
    actionsAlreadyReflected: use.alreadyReflected.length,
    actionsNotApplied: plan.notApplied,
  };
}
