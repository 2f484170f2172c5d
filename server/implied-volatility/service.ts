import type { Reads } from '../db/database.ts';
import * as repo from './repository.ts';
import type { BulkImpliedVolatility, BulkImpliedVolatilityQuery } from './schema.ts';

/**
 * The newest fresh snapshot of each requested instrument. "Today" is the UTC
 * day, or asOf when given; an instrument whose newest snapshot is older than
 * today − maxAgeDays, that has none, or that does not exist is absent.
 */
export async function bulkImpliedVolatility(db: Reads, q: BulkImpliedVolatilityQuery): Promise<BulkImpliedVolatility> {
  const requested = await db.run((sql) =>
    repo.latestSnapshots(sql, {
      instrumentIds: q.instrumentIds,
      end: q.asOf ?? new Date().toISOString().slice(0, 10),
      capAtEnd: q.asOf !== undefined,
      maxAgeDays: q.maxAgeDays,
      includeTermStructure: q.includeTermStructure,
    }),
  );
  const instruments = requested.flatMap((r) => r.snapshot ?? []);
  return {
    instruments,
    assumptions: {
      maxAgeDays: q.maxAgeDays,
      requestedInstruments: q.instrumentIds.length,
      returnedInstruments: instruments.length,
      includeTermStructure: q.includeTermStructure,
      asOf: q.asOf ?? null,
      unknownInstrumentIds: requested.filter((r) => !r.known).map((r) => r.instrumentId),
    },
  };
}
