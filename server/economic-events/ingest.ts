import { z } from 'zod';
import { ingestCounts, type StagedIngestKind } from '../ingest/kind.ts';
import { repeatedStagedKeys } from '../ingest/repository.ts';
import { rejectFirstRow } from '../ingest/row-checks.ts';
import * as repo from './repository.ts';
import { EconomicEventRowSchema, type EconomicEventRow } from './schema.ts';

/**
 * Releases upsert on id (given, or derived from country, name and
 * referencePeriod): a release posted again with its actual filled in, or
 * rescheduled, updates its row. An id twice in one batch is refused, naming
 * the second row, since the batch would otherwise say two things of one release.
 */
export const economicEventIngest: StagedIngestKind<EconomicEventRow> = {
  writes: 'staged',
  label: 'economic events',
  rowSchema: EconomicEventRowSchema,
  resultSchema: z.strictObject(ingestCounts),
  stagingColumns: [
    ['id', 'uuid'],
    ['country', 'text'],
    ['event_class', 'text'],
    ['importance', 'text'],
    ['name', 'text'],
    ['reference_period', 'text'],
    ['scheduled_at', 'timestamptz'],
    ['actual', 'text'],
    ['forecast', 'text'],
    ['previous', 'text'],
    ['source', 'text'],
  ],
  toStagingValues: (r) => [r.id, r.country, r.eventClass, r.importance, r.name, r.referencePeriod, r.scheduledAt, r.actual, r.forecast, r.previous, r.source],
  async apply(tx) {
    await rejectFirstRow(
      repeatedStagedKeys(tx, 'id'),
      'id',
      'the same release id appears twice in this batch (an absent id is derived from country, name and referencePeriod)',
    );
    const { rows, inserted, updated } = await repo.upsertStagedEvents(tx);
    return { rows, inserted, updated, unchanged: rows - inserted - updated };
  },
};
