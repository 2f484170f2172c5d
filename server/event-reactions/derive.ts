import type { ISql } from '../db/sql.ts';
import type { DeriveDeps } from '../ingest/derived.ts';
import { readAdjustedSeries } from '../prices/daily-bars.ts';
import * as repo from './repository.ts';
import type { DerivedReactions } from './schema.ts';
import { barsWindow, isPlaceable, placeEvent, SessionClock, utcDayOf } from './session.ts';
import { entryOf } from '../core/map-entry.ts';

// Instruments derived together, in one transaction: one news read, one bars
// read (readAdjustedSeries, a packed row per instrument) and one store. The
// bars read spans the days of all the batch's news: for 100 instruments with
// 20 years of news, 100 × 20 × 252 = 504,000 closes, 4 MB as float8.
const BATCH = 100;

/**
 * Derives the event reactions of the given instruments, or of every
 * instrument with news or stored reactions: each news item placed in its
 * session (./session.ts) against the instrument's adjusted daily closes
 * (readAdjustedSeries: actions known now, backfilled actions left out, as the
 * analytics read them). Idempotent: a reaction is rewritten only when a value
 * changed, and one whose news item no longer yields a reaction (a bar
 * corrected away, a publication time moved) is removed.
 */
export async function deriveEventReactions(deps: Pick<DeriveDeps, 'db'>, scope: { instrumentIds?: string[] } = {}): Promise<DerivedReactions> {
  const instrumentIds = await deps.db.run((sql) => repo.instrumentsToDerive(sql, scope.instrumentIds));
  const total: DerivedReactions = { instruments: instrumentIds.length, rows: 0, inserted: 0, updated: 0, unchanged: 0, removed: 0 };
  const clock = new SessionClock();
  for (let i = 0; i < instrumentIds.length; i += BATCH) {
    const batch = instrumentIds.slice(i, i + BATCH);
    const { rows, inserted, updated, removed } = await deps.db.run((sql) =>
      sql.begin(async (tx) => {
        await repo.lockReactionDerivation(tx);
        const rows = await reactionsOf(tx, batch, clock);
        return { rows: rows.length, ...(await repo.storeReactions(tx, batch, rows)) };
      }),
    );
    total.rows += rows;
    total.inserted += inserted;
    total.updated += updated;
    total.unchanged += rows - inserted - updated;
    total.removed += removed;
  }
  return total;
}

/** The reactions of a batch's news items, from one read of their instruments' adjusted closes. */
async function reactionsOf(sql: ISql, instrumentIds: string[], clock: SessionClock): Promise<repo.ReactionRow[]> {
  const news = (await repo.newsToPlace(sql, instrumentIds)).filter((n) => isPlaceable(n.published_at.getTime()));
  if (!news.length) return [];
  let firstDay = Infinity;
  let lastDay = -Infinity;
  for (const n of news) {
    const day = utcDayOf(n.published_at.getTime());
    firstDay = Math.min(firstDay, day);
    lastDay = Math.max(lastDay, day);
  }
  const withNews = [...new Set(news.map((n) => n.instrument_id))];
  const series = await readAdjustedSeries(sql, withNews, { ...barsWindow(firstDay, lastDay), fields: 'close', multipliers: true });
  return news.flatMap((n) => {
    const placed = placeEvent(entryOf(series, n.instrument_id), n.published_at.getTime(), clock);
    if (!placed) return [];
    return [{ eventId: n.id, instrumentId: n.instrument_id, eventClass: n.event_class, publishedAt: n.published_at.toISOString(), ...placed }];
  });
}
