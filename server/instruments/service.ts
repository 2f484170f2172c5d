import type { Reads } from '../db/database.ts';
import type { ISql } from '../db/sql.ts';
import * as repo from './repository.ts';
import type { Instrument } from './schema.ts';
import { notFound } from '../core/errors.ts';
import { isDate, type PointInTime } from '../core/time.ts';
import { bindingOf, isCursorId, type ListCursors } from '../core/cursor.ts';

/** The UTC day a cut-off falls on; symbology is mapped by day. */
export function dayOf(asOf: PointInTime | undefined, now = new Date()): string {
  return (asOf?.instant ?? now).toISOString().slice(0, 10);
}

export interface SearchPage {
  data: Instrument[];
  /** The UTC day whose symbols were matched: the asOf day, or the day a cursor keeps, or today. */
  day: string;
  limit: number;
  truncated: boolean;
  nextCursor: string | null;
}

/** A key value of a search cursor: the symbol text, with nothing PostgreSQL text cannot hold (NUL, a lone surrogate) or a control character. */
const isCursorSymbol = (s: string | undefined): s is string =>
  s !== undefined && s.length >= 1 && s.length <= 64 && [...s].every((c) => c.charCodeAt(0) >= 0x20 && !/\p{Cs}/u.test(c));
// A float4 as PostgreSQL writes it: 0.4, 1, 0.33333334, 1e-05.
const FLOAT_TEXT = /^-?\d+(\.\d+)?(e[-+]\d+)?$/;

/**
 * A page of the search (text or reverse lookup), best first; one row past
 * `limit` is read to tell whether more matched, and then `nextCursor` is the
 * position after the page's last row. A cursor is bound to the mode, the
 * text or broker code, assetClass and asOf; without asOf it also keeps the
 * day whose symbols the first page matched, so that every page ranks the same
 * symbols even across midnight (UTC). A malformed or foreign cursor is a 400
 * naming it.
 */
export async function searchInstruments(
  db: Reads,
  cursors: ListCursors,
  q: { query?: string; brokerCode?: string; broker?: string; assetClass?: string; asOf?: PointInTime; limit: number; cursor?: string },
  vendorBroker: string,
): Promise<SearchPage> {
  const { query } = q;
  const text = query !== undefined;
  const binding = bindingOf([text ? 'search' : 'reverse_lookup', q.query, q.broker, q.brokerCode, q.assetClass, q.asOf?.instant.toISOString()]);
  const position = q.cursor
    ? cursors.read(q.cursor, 'instruments', binding, (k) => {
        const [day, ...rest] = k;
        if (!isDate(day)) return null;
        if (text) {
          const [rank, inactive, score, symbol, id, ...extra] = rest;
          if (extra.length || !['0', '1', '2'].includes(rank) || !['0', '1'].includes(inactive) || !FLOAT_TEXT.test(score ?? '')) return null;
          if (!isCursorSymbol(symbol) || !isCursorId(id)) return null;
          return { day, search: { rank: Number(rank), inactive: inactive === '1', score, symbol, id } };
        }
        const [inactive, id, ...extra] = rest;
        if (extra.length || !['0', '1'].includes(inactive) || !isCursorId(id)) return null;
        return { day, reverse: { inactive: inactive === '1', id } };
      })
    : undefined;
  // The asOf day, or the day the first page was read for.
  const day = q.asOf ? dayOf(q.asOf) : (position?.day ?? dayOf(undefined));
  const limit = q.limit + 1;
  const bit = (b: boolean) => (b ? '1' : '0');
  const found: { row: Instrument; key: string[] }[] = text
    ? (await db.run((sql) => repo.searchPage(sql, { text: query, day, assetClass: q.assetClass, limit, vendorBroker, after: position?.search }))).map(
        ({ row, key }) => ({ row, key: [day, String(key.rank), bit(key.inactive), key.score, key.symbol, key.id] }),
      )
    : (
        await db.run((sql) =>
          // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- the route's schema requires broker and brokerCode when query is absent
          repo.brokerCodePage(sql, { broker: q.broker!, code: q.brokerCode!, day, assetClass: q.assetClass, limit, vendorBroker, after: position?.reverse }),
        )
      ).map(({ row, key }) => ({ row, key: [day, bit(key.inactive), key.id] }));
  const truncated = found.length > q.limit;
  const data = found.slice(0, q.limit);
  return {
    data: data.map((f) => f.row),
    day,
    limit: q.limit,
    truncated,
    nextCursor: truncated ? cursors.make('instruments', binding, data[data.length - 1].key) : null,
  };
}

export const getInstruments = (db: Reads, ids: string[], vendorBroker: string) => db.run((sql) => repo.findByIds(sql, ids, dayOf(undefined), vendorBroker));

export async function getInstrument(db: Reads, id: string, vendorBroker: string): Promise<Instrument> {
  const [instrument] = await db.run((sql) => repo.findByIds(sql, [id], dayOf(undefined), vendorBroker));
  if (!instrument) throw notFound('instrument');
  return instrument;
}

/** Resolves an instrument for a data route, or 404 not_found (inside the caller's unit of work). */
export async function requireInstrument(sql: ISql, id: string, asOf?: PointInTime) {
  const header = await repo.findInstrumentHeader(sql, id, dayOf(asOf));
  if (!header) throw notFound('instrument');
  return header;
}
