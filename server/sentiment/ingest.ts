import { z } from 'zod';
import { ingestCounts, type StagedIngestKind } from '../ingest/kind.ts';
import { repeatedStagedKeys } from '../ingest/repository.ts';
import { rejectFirstRow, rejectUnknownInstruments } from '../ingest/row-checks.ts';
import * as repo from './repository.ts';
import { SentimentRowSchema, type SentimentRow } from './schema.ts';

/**
 * Scores, upserted on (instrument, source, subject class, asOfDate): a score
 * posted again with another value is a correction. Besides the row checks
 * (a score outside its row's scale), the upload refuses, naming the row, an
 * unknown instrument, a key twice in the batch, and a scale other than its
 * source's: one given by an earlier row of the batch, or stored by an earlier
 * upload. The leads pool a source's scores, which only means something on one
 * scale.
 */
export const sentimentIngest: StagedIngestKind<SentimentRow> = {
  writes: 'staged',
  label: 'sentiment scores',
  rowSchema: SentimentRowSchema,
  resultSchema: z.strictObject(ingestCounts),
  stagingColumns: [
    ['instrument_id', 'uuid'],
    ['source', 'text'],
    ['subject_class', 'text'],
    ['as_of_date', 'date'],
    ['score', 'float8'],
    ['scale_min', 'float8'],
    ['scale_max', 'float8'],
    ['is_headline_only', 'bool'],
  ],
  toStagingValues: (r) => [r.instrumentId, r.source, r.subjectClass, r.asOfDate, r.score, r.scale[0], r.scale[1], r.isHeadlineOnly],
  async apply(tx) {
    await rejectUnknownInstruments(tx);
    await rejectFirstRow(
      repeatedStagedKeys(tx, 'instrument_id', 'source', 'subject_class', 'as_of_date'),
      'asOfDate',
      'the same instrument, source, subjectClass and asOfDate appear twice in this batch',
    );
    await rejectFirstRow(
      repo.stagedScalesDifferingInBatch(tx),
      'scale',
      'an earlier row of this batch gives this source another scale; a source has one scale',
    );
    await repo.insertStagedSources(tx);
    const [clash] = await repo.stagedScalesOtherThanStored(tx);
    if (clash) {
      await rejectFirstRow(
        Promise.resolve([clash]),
        'scale',
        `this source's scale is [${clash.scale_min}, ${clash.scale_max}]; a source has one scale (a rescaled feed is a new source)`,
      );
    }
    const { rows, inserted, updated } = await repo.upsertStagedScores(tx);
    return { rows, inserted, updated, unchanged: rows - inserted - updated, ...(inserted + updated ? { changes: { sentiment: true } } : {}) };
  },
};
