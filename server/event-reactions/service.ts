import type { Database } from '../db/database.ts';
import { dayOf, requireInstrument } from '../instruments/service.ts';
import * as repo from './repository.ts';
import { reactionAssumptions, type CoverageQuery, type EventReactionsQuery } from './schema.ts';
import { sourcesMeta } from '../core/meta.ts';

/** An instrument's event reactions, eventDate ascending, ties by eventId; an unknown instrument is 404 not_found. */
export async function listEventReactions(db: Database, instrumentId: string, q: EventReactionsQuery) {
  const rows = await db.run(async (sql) => {
    await requireInstrument(sql, instrumentId);
    return repo.selectReactions(sql, { instrumentId, ...q });
  });
  return {
    data: rows.map(({ source: _source, ...reaction }) => reaction),
    meta: {
      asOf: new Date().toISOString(),
      source: sourcesMeta(new Set(rows.map((r) => r.source))),
      stale: false,
      assumptions: reactionAssumptions(),
    },
  };
}

/** Which instruments have enough reactions, best covered first, in one aggregate read. */
export async function eventReactionCoverage(db: Database, q: CoverageQuery) {
  const instruments = await db.run((sql) => repo.selectCoverage(sql, { ...q, day: dayOf(undefined) }));
  return {
    data: {
      instruments,
      assumptions: { eventClasses: q.eventClasses ?? [], minReactions: q.minReactions, minWindowDays: q.minWindowDays ?? null, limit: q.limit },
    },
    meta: { asOf: new Date().toISOString(), source: 'derived from news and adjusted daily closes', stale: false },
  };
}
