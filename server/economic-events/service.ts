import type { Reads } from '../db/database.ts';
import * as repo from './repository.ts';
import type { EconomicEventsQuery } from './schema.ts';
import { listPage } from '../core/meta.ts';
import { calendarFreshness } from './freshness.ts';
import { bindingOf, decodeCursor, encodeCursor, isCursorId, isCursorInstant } from '../core/cursor.ts';

/**
 * The calendar, newest scheduled release first, ties by id; one row past
 * `limit` is read to tell whether more matched, and then meta.nextCursor is
 * the position after the page's last row. A cursor is bound to the filters;
 * a malformed or foreign one is a 400 naming it.
 */
export async function listEconomicEvents(db: Reads, q: EconomicEventsQuery) {
  const binding = bindingOf([q.from, q.to, q.eventClass, q.country, q.importance]);
  const after = q.cursor
    ? decodeCursor(q.cursor, 'economic-events', binding, ([scheduledAt, id, ...rest]) =>
        rest.length === 0 && isCursorInstant(scheduledAt) && isCursorId(id) ? { scheduledAt, id } : null,
      )
    : undefined;
  const found = await db.run((sql) => repo.selectEvents(sql, { ...q, limit: q.limit + 1, after }));
  return listPage(
    found.map((f) => f.row),
    q.limit,
    (i) => encodeCursor('economic-events', binding, [found[i].key.scheduledAt, found[i].key.id]),
    calendarFreshness(
      found.slice(0, q.limit).map((f) => f.row),
      Date.now(),
    ),
  );
}
