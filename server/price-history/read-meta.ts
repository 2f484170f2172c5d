import type { AdjustmentOptions, InstrumentPlan } from './adjustment-plan.ts';
import { factorsUsed, priceBasisOf, type Factor, type SeriesKeys } from './adjustment.ts';
import type { CoverageCheck, Provenance } from './schema.ts';

// What a read's meta says of the price history behind its numbers: the basis
// of the bars and the actions applied, by provenance, and whether the action
// history was checked against a source.

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

/** Provenance counts as meta reports them: a figure is point-in-time valid when no backfilled action went into it. */
export function provenanceMeta(counts: Record<Provenance, number>) {
  return { ...counts, pitValid: counts.backfilled === 0 };
}

export type CoverageGap = 'none' | 'never_checked' | 'starts_after_series';

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
