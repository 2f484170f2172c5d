import type { Database } from '../db/database.ts';
import { requireInstrument } from '../instruments/service.ts';
import * as repo from './repository.ts';
import { RETURN_DEFINITION, SOURCE_LEADS_RULE, type SentimentQuery, type SourceLeadsQuery } from './schema.ts';
import { sourcesMeta } from '../core/meta.ts';

/** One instrument's scores, exactly as stored; 404 for an unknown instrument. */
export async function listSentiment(db: Database, instrumentId: string, q: SentimentQuery) {
  const data = await db.run(async (sql) => {
    await requireInstrument(sql, instrumentId);
    return repo.selectScores(sql, instrumentId, q);
  });
  return { data, meta: { asOf: new Date().toISOString(), source: sourcesMeta(new Set(data.map((s) => s.source))), stale: false } };
}

/** The derived leads, with the rule and the return definition they were derived under. */
export async function listSourceLeads(db: Database, q: SourceLeadsQuery) {
  const data = await db.run((sql) => repo.selectLeads(sql, q));
  return {
    data,
    meta: {
      asOf: new Date().toISOString(),
      source: sourcesMeta(new Set(data.map((l) => l.source))),
      stale: false,
      rule: SOURCE_LEADS_RULE,
      returnDefinition: RETURN_DEFINITION,
    },
  };
}
