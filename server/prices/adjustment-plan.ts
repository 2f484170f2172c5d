import type { Sql } from '../db/sql.ts';
import type { PointInTime } from '../http/params.ts';
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

export interface AdjustmentOptions {
  from: string;
  to: string;
  adjusted: boolean;
  asOf?: PointInTime;
  includeBackfilled: boolean;
  actionSetVersion?: number;
}

export interface InstrumentPlan {
  version: number;
  factors: Factor[];
  notApplied: NotApplied[];
}

/**
 * Everything needed to adjust each instrument's bars, fetched in three
 * queries whatever the instrument count: the versions, the actions at exactly
 * those versions (so a read applies the set it reports, even when an action
 * set changes between the two), then the closes before the dividends that
 * touch the window.
 */
export async function planAdjustments(sql: Sql, ids: string[], q: AdjustmentOptions): Promise<Map<string, InstrumentPlan>> {
  const { versions, actions } = await actionSetsToApply(sql, ids, q);
  // Only dividends that can touch the window need a prior close.
  const dividends = [...actions].flatMap(([instrumentId, list]) =>
    list.filter((a) => a.kind === 'cash_dividend' && a.effectiveDate > q.from).map((a) => ({ instrumentId, effectiveDate: a.effectiveDate })),
  );
  const closes = await repo.priorCloses(sql, dividends);
  const plans = new Map<string, InstrumentPlan>();
  ids.forEach((id, i) => {
    const { factors, notApplied } = buildFactors(
      (actions.get(id) ?? []).filter((a) => a.effectiveDate > q.from),
      closes.get(id) ?? [],
    );
    plans.set(id, { version: versions[i], factors, notApplied });
  });
  return plans;
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
