import type { Database } from '../db/database.ts';
import type { ISql } from '../db/sql.ts';
import * as repo from './repository.ts';
import type { Instrument } from './schema.ts';
import { notFound } from '../core/errors.ts';
import type { PointInTime } from '../core/time.ts';

/** The UTC day a cut-off falls on; symbology is mapped by day. */
export function dayOf(asOf: PointInTime | undefined, now = new Date()): string {
  return (asOf?.instant ?? now).toISOString().slice(0, 10);
}

export async function searchInstruments(
  db: Database,
  q: { query?: string; brokerCode?: string; broker?: string; assetClass?: string; asOf?: PointInTime; limit: number },
  vendorBroker: string,
): Promise<Instrument[]> {
  const day = dayOf(q.asOf);
  return db.run((sql) =>
    q.query !== undefined
      ? repo.searchInstruments(sql, { text: q.query, day, assetClass: q.assetClass, limit: q.limit, vendorBroker })
      : repo.findByBrokerCode(sql, { broker: q.broker!, code: q.brokerCode!, day, assetClass: q.assetClass, limit: q.limit, vendorBroker }),
  );
}

export const getInstruments = (db: Database, ids: string[], vendorBroker: string) => db.run((sql) => repo.findByIds(sql, ids, dayOf(undefined), vendorBroker));

export async function getInstrument(db: Database, id: string, vendorBroker: string): Promise<Instrument> {
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
