import type { z } from 'zod';
import type { ISql } from '../db/sql.ts';
import type { DeriveDeps } from '../ingest/derived.ts';
import { dayToDate } from '../core/day-numbers.ts';
import { readAdjustedSeries, readSessionSpan } from '../prices/daily-bars.ts';
import { dateOrder, inOrder } from '../prices/packed-columns.ts';
import * as repo from './repository.ts';
import type { DerivedLeadsSchema, SubjectClass } from './schema.ts';
import { MAX_LAG_DAYS, type SourceLeadsInput } from '../../workers/contract.ts';
import { entryOf } from '../core/map-entry.ts';

export type DerivedLeads = z.infer<typeof DerivedLeadsSchema>;

/** Whether the leads read the adjusted closes of any of these instruments (they read those of every instrument with a score). */
export function leadsReadClosesOf(deps: Pick<DeriveDeps, 'db'>, instrumentIds: string[]): Promise<boolean> {
  return deps.db.run((sql) => repo.anyScoresOf(sql, instrumentIds));
}

/**
 * Derives the source leads of every (source, subject class) with scores,
 * from all stored scores and the adjusted daily closes of the instruments they
 * score (workers/source-leads.ts on the worker pool, which states the
 * definitions), and stores them. Always whole: a lead pools every
 * instrument's scores, so there is no narrower run. Idempotent: a lead is
 * rewritten only when a value differs, and the leads of pairs with no score
 * left are removed.
 *
 * One transaction under an advisory lock, from the read of the scores to the
 * last write: two derivations at once would otherwise let the one that read
 * older scores write last.
 */
export function deriveSourceLeads(deps: Pick<DeriveDeps, 'db' | 'pool'>): Promise<DerivedLeads> {
  return deps.db.run((sql) =>
    sql.begin(async (tx) => {
      await repo.lockSourceLeads(tx);
      const series = await repo.selectScoreSeries(tx);
      const { input, groups } = await leadsInput(tx, series);
      const leads = await deps.pool.run('sourceLeads', input);
      // Every group has a score (a series is never empty), so its first and last day are known.
      const rows = leads.map((lead, g): repo.LeadRow => ({
        source: groups[g].source,
        subject_class: groups[g].subjectClass,
        best_lag_days: lead.bestLagDays,
        peak_correlation: lead.peakCorrelation,
        sample_size: lead.sampleSize,
        is_promotion_eligible: lead.isPromotionEligible,
        correlations: lead.correlationByLag.map((c) => c.correlation),
        sample_sizes: lead.correlationByLag.map((c) => c.sampleSize),
        instruments: lead.instruments,
        // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- every group has a score, so its first day is known
        first_as_of_date: dayToDate(lead.firstDay!),
        // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- every group has a score, so its last day is known
        last_as_of_date: dayToDate(lead.lastDay!),
      }));
      const { inserted, updated } = await repo.upsertLeads(tx, rows);
      const removed = await repo.deleteLeadsExcept(tx, groups);
      return { rows: rows.length, inserted, updated, unchanged: rows.length - inserted - updated, removed };
    }),
  );
}

/**
 * The worker's input: every score series sorted by day, and the adjusted
 * closes of the instruments they score, from the session before the earliest
 * score's to the 10th after the latest's (readSessionSpan over repo.scoredDays).
 */
async function leadsInput(tx: ISql, series: repo.ScoreSeriesRow[]) {
  const groups: { source: string; subjectClass: SubjectClass }[] = [];
  const groupIndex = new Map<string, number>();
  const instrumentIndex = new Map<string, number>();
  const seriesGroup = new Int32Array(series.length);
  const seriesInstrument = new Int32Array(series.length);
  const seriesOffsets = new Int32Array(series.length + 1);
  for (const [k, s] of series.entries()) {
    const key = JSON.stringify([s.source, s.subject_class]);
    if (!groupIndex.has(key)) {
      groupIndex.set(key, groups.length);
      groups.push({ source: s.source, subjectClass: s.subject_class });
    }
    if (!instrumentIndex.has(s.instrument_id)) instrumentIndex.set(s.instrument_id, instrumentIndex.size);
    seriesGroup[k] = entryOf(groupIndex, key);
    seriesInstrument[k] = entryOf(instrumentIndex, s.instrument_id);
    seriesOffsets[k + 1] = seriesOffsets[k] + s.days.length;
  }
  const scoreDays = new Int32Array(seriesOffsets[series.length]);
  const scores = new Float64Array(scoreDays.length);
  for (const [k, s] of series.entries()) {
    const days = Int32Array.from(s.days);
    const order = dateOrder(days);
    scoreDays.set(inOrder(days, order), seriesOffsets[k]);
    scores.set(inOrder(Float64Array.from(s.scores), order), seriesOffsets[k]);
  }

  const ids = [...instrumentIndex.keys()];
  const span = await readSessionSpan(tx, repo.scoredDays(tx), MAX_LAG_DAYS);
  const adjusted = span && ids.length ? await readAdjustedSeries(tx, ids, { ...span, fields: 'close' }) : new Map();
  const barOffsets = new Int32Array(ids.length + 1);
  ids.forEach((id, i) => (barOffsets[i + 1] = barOffsets[i] + (adjusted.get(id)?.dates.length ?? 0)));
  const barDays = new Int32Array(barOffsets[ids.length]);
  const closes = new Float64Array(barDays.length);
  ids.forEach((id, i) => {
    const s = adjusted.get(id);
    if (!s) return;
    barDays.set(s.dates, barOffsets[i]);
    closes.set(s.close, barOffsets[i]);
  });

  const input: SourceLeadsInput = {
    groups: groups.map((g) => ({ subjectClass: g.subjectClass })),
    seriesInstrument,
    seriesGroup,
    seriesOffsets,
    scoreDays,
    scores,
    barOffsets,
    barDays,
    closes,
  };
  return { input, groups };
}
