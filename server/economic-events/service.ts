import type { Reads } from '../db/database.ts';
import * as repo from './repository.ts';
import type { EconomicEventsQuery } from './schema.ts';
import { listPage } from '../core/meta.ts';
import { calendarFreshness, releaseWindow } from './freshness.ts';
import { lookUpSourceSilence } from '../core/freshness.ts';
import { bindingOf, isCursorId, isCursorInstant, type ListCursors } from '../core/cursor.ts';

/**
 * The calendar, newest scheduled release first, ties by id; one row past
 * `limit` is read to tell whether more matched, and then meta.nextCursor is
 * the position after the page's last row. A cursor is bound to the filters;
 * a malformed or foreign one is a 400 naming it.
 */
export async function listEconomicEvents(db: Reads, cursors: ListCursors, q: EconomicEventsQuery) {
  const binding = bindingOf([q.from, q.to, q.eventClass, q.country, q.importance]);
  const after = q.cursor
    ? cursors.read(q.cursor, 'economic-events', binding, ([scheduledAt, id, ...rest]) =>
        rest.length === 0 && isCursorInstant(scheduledAt) && isCursorId(id) ? { scheduledAt, id } : null,
      )
    : undefined;
  const readAt = Date.now();
  const window = releaseWindow(readAt);
  const { found, fresh } = await db.run(async (sql) => {
    const found = await repo.selectEvents(sql, { ...q, limit: q.limit + 1, after });
    const page = found.slice(0, q.limit).map((f) => f.row);
    const sources = [...new Set(page.map((r) => r.source))];
    const silence = await lookUpSourceSilence(
      sources,
      (of) => repo.sourcesReleasing(sql, of, q, window),
      () => repo.scopeReleasing(sql, q, window),
    );
    const fresh = calendarFreshness(page, readAt, silence);
    return { found, fresh };
  });
  return listPage(
    found.map((f) => f.row),
    q.limit,
    (i) => cursors.make('economic-events', binding, [found[i].key.scheduledAt, found[i].key.id]),
    fresh,
  );
}
