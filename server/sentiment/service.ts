import type { Reads } from '../db/database.ts';
import { requireInstrument } from '../instruments/service.ts';
import * as repo from './repository.ts';
import { RETURN_DEFINITION, SOURCE_LEADS_RULE, type SentimentQuery, type SourceLeadsQuery } from './schema.ts';
import { sourcesMeta } from '../core/meta.ts';
import { leadsFreshness, scoringWindow } from './freshness.ts';
import { freshness, lookUpSourceSilence } from '../core/freshness.ts';

/** One instrument's scores, exactly as stored; 404 for an unknown instrument. */
export async function listSentiment(db: Reads, instrumentId: string, q: SentimentQuery) {
  const readAt = new Date();
  const window = scoringWindow(readAt.getTime());
  const { data, fresh } = await db.run(async (sql) => {
    await requireInstrument(sql, instrumentId);
    const data = await repo.selectScores(sql, instrumentId, q);
    const sources = [...new Set(data.map((s) => s.source))];
    const silence = await lookUpSourceSilence(
      sources,
      (of) => repo.sourcesScoring(sql, instrumentId, of, q.subjectClass, window),
      () => repo.scopeScoring(sql, instrumentId, q, window),
    );
    const fresh = freshness(silence);
    return { data, fresh };
  });
  return { data, meta: { asOf: readAt.toISOString(), source: sourcesMeta(new Set(data.map((s) => s.source))), ...fresh } };
}

/** The derived leads, with the rule and the return definition they were derived under. */
export async function listSourceLeads(db: Reads, q: SourceLeadsQuery) {
  const data = await db.run((sql) => repo.selectLeads(sql, q));
  return {
    data,
    meta: {
      asOf: new Date().toISOString(),
      source: sourcesMeta(new Set(data.map((l) => l.source))),
      ...leadsFreshness(
        data.map((l) => l.lastAsOfDate),
        Date.now(),
      ),
      rule: SOURCE_LEADS_RULE,
      returnDefinition: RETURN_DEFINITION,
    },
  };
}
