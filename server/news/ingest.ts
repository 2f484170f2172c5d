import { z } from 'zod';
import { ingestCounts, type StagedIngestKind, type UploadResult } from '../ingest/kind.ts';
import { repeatedStagedKeys } from '../ingest/repository.ts';
import { rejectFirstRow, rejectUnknownInstruments } from '../ingest/row-checks.ts';
import * as repo from './repository.ts';
import { NewsRowSchema, type NewsRow } from './schema.ts';

/**
 * News upserts on id (given, or derived from instrumentId, source and url):
 * an item posted again with a corrected headline, class or confirmation
 * updates its row. Refused, naming the row: an unknown instrument, an id twice
 * in one batch (the batch would say two things of one item), and an id stored
 * under another instrument (an item is about one instrument; its reaction is
 * that instrument's). Instruments whose news changed are reported, so their
 * event reactions are derived again.
 */
export const newsIngest: StagedIngestKind<NewsRow> = {
  writes: 'staged',
  label: 'news',
  rowSchema: NewsRowSchema,
  resultSchema: z.strictObject(ingestCounts),
  stagingColumns: [
    ['id', 'uuid'],
    ['instrument_id', 'uuid'],
    ['event_class', 'text'],
    ['headline', 'text'],
    ['source', 'text'],
    ['url', 'text'],
    ['published_at', 'timestamptz'],
    ['is_company_confirmed', 'bool'],
  ],
  toStagingValues: (r) => [r.id, r.instrumentId, r.eventClass, r.headline, r.source, r.url, r.publishedAt, r.isCompanyConfirmed],
  async apply(tx): Promise<UploadResult> {
    await rejectUnknownInstruments(tx);
    await rejectFirstRow(
      repeatedStagedKeys(tx, 'id'),
      'id',
      'the same news id appears twice in this batch (an absent id is derived from instrumentId, source and url)',
    );
    await rejectFirstRow(repo.stagedNewsOfAnotherInstrument(tx), 'instrumentId', 'this news id belongs to another instrument');
    const { rows, inserted, updated, instrumentIds } = await repo.upsertStagedNews(tx);
    return { rows, inserted, updated, unchanged: rows - inserted - updated, ...(instrumentIds.length ? { changes: { news: instrumentIds } } : {}) };
  },
};
