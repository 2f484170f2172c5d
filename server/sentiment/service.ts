import type { Reads } from '../db/database.ts';
import { requireInstrument } from '../instruments/service.ts';
import * as repo from './repository.ts';
import { RETURN_DEFINITION, SOURCE_LEADS_RULE, type SentimentQuery, type SourceLeadsQuery } from './schema.ts';
import { sourcesMeta } from '../core/meta.ts';
import { daysBefore, freshness, SOURCE_SILENCE_DAYS } from '../core/freshness.ts';

/** One instrument's scores, exactly as stored; 404 for an unknown instrument. */
export async function listSentiment(db: Reads, instrumentId: string, q: SentimentQuery) {
  const readAt = new Date();
  const sources = new Set<string>();
  const { data, latest } = await db.run(async (sql) => {
    await requireInstrument(sql, instrumentId);
    const data = await repo.selectScores(sql, instrumentId, q);
    for (const s of data) sources.add(s.source);
    return { data, latest: await repo.latestScoreDates(sql, instrumentId, [...sources]) };
  });
  return { data, meta: { asOf: readAt.toISOString(), source: sourcesMeta(sources), ...sentimentFreshness([...latest.values()], readAt.getTime()) } };
}

/**
 * Scores are fresh while each source of the returned rows has scored the
 * instrument within SOURCE_SILENCE_DAYS before the UTC day of the read; the
 * leads, while each returned lead's source and class has a score that recent
 * (its lastAsOfDate). Older: the source has stopped (docs/api.md, "Freshness").
 */
export function sentimentFreshness(latestDates: string[], readAt: number) {
  const since = daysBefore(readAt, SOURCE_SILENCE_DAYS);
  return freshness<'source_silent'>(latestDates.some((d) => d < since) && 'source_silent');
}

/** The derived leads, with the rule and the return definition they were derived under. */
export async function listSourceLeads(db: Reads, q: SourceLeadsQuery) {
  const data = await db.run((sql) => repo.selectLeads(sql, q));
  return {
    data,
    meta: {
      asOf: new Date().toISOString(),
      source: sourcesMeta(new Set(data.map((l) => l.source))),
      ...sentimentFreshness(
        data.map((l) => l.lastAsOfDate),
        Date.now(),
      ),
      rule: SOURCE_LEADS_RULE,
      returnDefinition: RETURN_DEFINITION,
    },
  };
}
