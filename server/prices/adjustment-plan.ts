import type { Sql } from '../db/sql.ts';
import type { PointInTime } from '../http/params.ts';
import { actionSetsToApply } from '../actions/service.ts';
import { buildFactors, priceBasisOf, type BarAdjuster, type Factor, type NotApplied } from './adjustment.ts';
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

/** What meta says of the numbers a read returned for one instrument: their basis and the actions behind it. */
export function priceBasisMeta(q: AdjustmentOptions, adjuster: BarAdjuster, plan: InstrumentPlan, readAt: Date) {
  return {
    priceBasis: priceBasisOf(q.adjusted, adjuster.bases),
    adjustedThrough: q.adjusted ? (q.asOf?.instant ?? readAt).toISOString() : null,
    actionsApplied: adjuster.applied.size,
    actionsAlreadyReflected: adjuster.alreadyReflected.size,
    actionsNotApplied: plan.notApplied,
  };
}
