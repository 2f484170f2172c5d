import type { Database } from '../db/database.ts';
import { requireInstrument } from '../instruments/service.ts';
import * as repo from './repository.ts';
import type { NewsQuery } from './schema.ts';
import { listPage } from '../core/meta.ts';

/**
 * An instrument's news, or (companyConfirmedOnly) its catalyst events, newest
 * published first; one row past `limit` is read to tell whether more matched.
 * An unknown instrument is 404 not_found.
 */
export async function listNews(db: Database, instrumentId: string, q: NewsQuery, companyConfirmedOnly: boolean) {
  const rows = await db.run(async (sql) => {
    await requireInstrument(sql, instrumentId);
    return repo.selectNews(sql, { ...q, instrumentId, companyConfirmedOnly, limit: q.limit + 1 });
  });
  return listPage(rows, q.limit);
}
