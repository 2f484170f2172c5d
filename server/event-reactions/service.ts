import type { Reads } from '../db/database.ts';
import { dayOf, requireInstrument } from '../instruments/service.ts';
import * as repo from './repository.ts';
import { reactionAssumptions, type CoverageQuery, type EventReactionsQuery } from './schema.ts';
import { sourcesMeta } from '../core/meta.ts';
import { dailySeriesFreshness } from '../prices/freshness.ts';
import { readBarSources } from '../prices/daily-bars.ts';

/** An instrument's event reactions, eventDate ascending, ties by eventId; an unknown instrument is 404 not_found. */
export async function listEventReactions(db: Reads, instrumentId: string, q: EventReactionsQuery) {
  const readAt = new Date();
  const { rows, closeSources, fresh } = await db.run(async (sql) => {
    await requireInstrument(sql, instrumentId);
    const rows = await repo.selectReactions(sql, { instrumentId, ...q });
    const days = [...new Set(rows.flatMap((r) => [r.previousSessionDate, r.eventDate]))];
    const [closeSources, fresh] = await Promise.all([readBarSources(sql, instrumentId, days), dailySeriesFreshness(sql, [instrumentId], readAt.getTime())]);
    return { rows, closeSources, fresh };
  });
  return {
    data: rows.map(({ source: _source, ...reaction }) => reaction),
    meta: {
      asOf: readAt.toISOString(),
      // The rows come from the news items (their publishers) and the closes (their sources).
      source: sourcesMeta(new Set([...rows.map((r) => r.source), ...closeSources])),
      ...fresh,
      assumptions: reactionAssumptions(),
    },
  };
}

/** Which instruments have enough reactions, best covered first, in one aggregate read. */
export async function eventReactionCoverage(db: Reads, q: CoverageQuery) {
  const readAt = new Date();
  const { instruments, sources, fresh } = await db.run(async (sql) => {
    const instruments = await repo.selectCoverage(sql, { ...q, day: dayOf(undefined, readAt) });
    const ids = instruments.map((i) => i.instrumentId);
    const [sources, fresh] = await Promise.all([repo.coverageSources(sql, ids, q.eventClasses), dailySeriesFreshness(sql, ids, readAt.getTime())]);
    return { instruments, sources, fresh };
  });
  return {
    data: {
      instruments,
      assumptions: { eventClasses: q.eventClasses ?? [], minReactions: q.minReactions, minWindowDays: q.minWindowDays ?? null, limit: q.limit },
    },
    meta: { asOf: readAt.toISOString(), source: sourcesMeta(new Set(sources)), ...fresh },
  };
}
