import type { Reads } from '../db/database.ts';
import { requireInstrument } from '../instruments/service.ts';
import * as repo from './repository.ts';
import type { NewsQuery } from './schema.ts';
import { listPage } from '../core/meta.ts';
import { newsSilenceWindow } from './freshness.ts';
import { freshness, lookUpSourceSilence } from '../core/freshness.ts';
import { bindingOf, isCursorId, isCursorInstant, type ListCursors } from '../core/cursor.ts';

/**
 * An instrument's news, or (companyConfirmedOnly) its catalyst events, newest
 * published first, ties by id; one row past `limit` is read to tell whether
 * more matched, and then meta.nextCursor is the position after the page's
 * last row. A cursor is bound to its list (news or events) and to the
 * instrument and filters; a malformed or foreign one is a 400 naming it,
 * answered before the instrument is looked up. An unknown instrument is 404
 * not_found.
 */
export async function listNews(db: Reads, cursors: ListCursors, instrumentId: string, q: NewsQuery, companyConfirmedOnly: boolean) {
  const list = companyConfirmedOnly ? 'events' : 'news';
  const binding = bindingOf([instrumentId, q.from, q.to, q.eventClass]);
  const after = q.cursor
    ? cursors.read(q.cursor, list, binding, ([publishedAt, id, ...rest]) =>
        rest.length === 0 && isCursorInstant(publishedAt) && isCursorId(id) ? { publishedAt, id } : null,
      )
    : undefined;
  const readAt = Date.now();
  const { found, fresh } = await db.run(async (sql) => {
    await requireInstrument(sql, instrumentId);
    const found = await repo.selectNews(sql, { ...q, instrumentId, companyConfirmedOnly, limit: q.limit + 1, after });
    const sources = [...new Set(found.slice(0, q.limit).map((f) => f.row.source))];
    const window = newsSilenceWindow(readAt);
    const silence = await lookUpSourceSilence(
      sources,
      (of) => repo.sourcesPublishing(sql, of, window),
      () => repo.scopePublishing(sql, { instrumentId, eventClass: q.eventClass, companyConfirmedOnly }, window),
    );
    const fresh = freshness(silence);
    return { found, fresh };
  });
  return listPage(
    found.map((f) => f.row),
    q.limit,
    (i) => cursors.make(list, binding, [found[i].key.publishedAt, found[i].key.id]),
    fresh,
  );
}
