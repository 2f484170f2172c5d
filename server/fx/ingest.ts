import { z } from 'zod';
import { ingestCounts, type StagedIngestKind } from '../ingest/kind.ts';
import { rejectFirstRow } from '../ingest/service.ts';
import * as repo from './repository.ts';
import { FxRateRowSchema, type FxRateRow } from './schema.ts';

/**
 * FX rates, keyed by (base, quote, rateDate). Posting the same rate and source
 * again changes nothing; a different rate or source corrects the stored row
 * in place (repository.ts, upsertStagedRates). A row holds exactly what
 * GET /v1/fx/{base}/{quote} returns as `data`, so a read can be posted back.
 */
export const fxRateIngest: StagedIngestKind<FxRateRow> = {
  writes: 'staged',
  label: 'FX rates',
  rowSchema: FxRateRowSchema,
  resultSchema: z.strictObject(ingestCounts),
  stagingColumns: [
    ['base', 'text'],
    ['quote', 'text'],
    ['rate_date', 'date'],
    ['rate', 'float8'],
    ['source', 'text'],
    ['as_of', 'timestamptz'],
  ],
  toStagingValues: (r) => [r.base, r.quote, r.rateDate, r.rate, r.source, r.asOf],
  async apply(tx) {
    await rejectFirstRow(repo.repeatedStagedRates(tx), 'rateDate', 'the same base, quote and rateDate appear in an earlier row of this batch');
    const { rows, inserted, updated } = await repo.upsertStagedRates(tx);
    return { rows, inserted, updated, unchanged: rows - inserted - updated };
  },
};
