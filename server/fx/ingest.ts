import { z } from 'zod';
import { AppError } from '../core/errors.ts';
import { ingestCounts, type StagedIngestKind } from '../ingest/kind.ts';
import { rejectFirstRow } from '../ingest/row-checks.ts';
import * as repo from './repository.ts';
import { FxRateRowSchema, type FxRateRow } from './schema.ts';

/**
 * FX rates, keyed by (base, quote, rateDate). A row's knowledge time is its
 * asOf, else the instant the upload began. Posting the same rate and source
 * again changes nothing, its knowledge time included; a different rate or
 * source is a correction: the stored row takes it, and the row it replaced is
 * kept with its own asOf (sql/024_fx_rate_revisions.sql), so a read with asOf
 * gives the rate as known then. A row holds exactly what
 * GET /v1/fx/{base}/{quote} returns as `data`, so a read can be posted back.
 *
 * Refused, naming the row's asOf, and nothing stored: a row known before its
 * day begins (00:00 UTC of rateDate), and a correction known before the
 * stored revision it would replace (revisions are posted in the order they
 * became known, so "latest known" is the last written). An asOf in the
 * future is refused by the row schema.
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
    ['as_of_stated', 'bool'],
  ],
  toStagingValues: (r, upload) => [r.base, r.quote, r.rateDate, r.rate, r.source, r.asOf ?? upload.startedAt, r.asOf !== null],
  async apply(tx) {
    await repo.lockFxUploads(tx);
    await rejectFirstRow(repo.repeatedStagedRates(tx), 'rateDate', 'the same base, quote and rateDate appear in an earlier row of this batch');
    const [early] = await repo.stagedKnownBeforeTheirDay(tx);
    if (early) {
      throw asOfRefused(
        early,
        `is before ${early.rate_date}T00:00:00.000Z, the start of rateDate ${early.rate_date} (UTC): no FX rate is known before its day begins`,
      );
    }
    const [behind] = await repo.stagedKnownBeforeStored(tx);
    if (behind) {
      throw asOfRefused(
        behind,
        `is before the stored revision's asOf ${behind.stored_as_of.toISOString()}: a rate may not replace a revision known later than itself; post the revisions of a rate in the order they became known`,
      );
    }
    await repo.keepReplacedRates(tx);
    const { rows, inserted, updated } = await repo.upsertStagedRates(tx);
    return { rows, inserted, updated, unchanged: rows - inserted - updated };
  },
};

/** The 400 naming a staged row's asOf, stated or (absent) the upload's start, and why it is refused. */
function asOfRefused(row: repo.StagedKnowledge, why: string): AppError {
  const asOf = row.as_of.toISOString();
  const message = row.as_of_stated ? `${asOf} ${why}` : `absent, so known from the upload's start, ${asOf}, which ${why}`;
  return new AppError('invalid_request', `row ${row.row_index}: ${message}; nothing was stored`, { [`rows[${row.row_index}].asOf`]: [message] });
}
