import { z } from 'zod';
import { ingestCounts, type StagedIngestKind } from '../ingest/kind.ts';
import { repeatedStagedKeys } from '../ingest/repository.ts';
import { rejectFirstRow, rejectUnknownInstruments } from '../ingest/row-checks.ts';
import * as repo from './repository.ts';
import { EarningsReportRowSchema, type EarningsReportRow } from './schema.ts';

/**
 * Reports upsert on (instrumentId, fiscalYear, fiscalPeriod) through their id
 * (given, or derived from that key): a report posted again rescheduled, or
 * now reported, updates its row. Refused, naming the row: an unknown
 * instrument; a key or an id twice in one batch (the batch would say two
 * things of one report); an id stored for another key, or a key stored under
 * another id.
 */
export const earningsIngest: StagedIngestKind<EarningsReportRow> = {
  writes: 'staged',
  label: 'earnings reports',
  rowSchema: EarningsReportRowSchema,
  resultSchema: z.strictObject(ingestCounts),
  stagingColumns: [
    ['id', 'uuid'],
    ['instrument_id', 'uuid'],
    ['fiscal_year', 'int4'],
    ['fiscal_period', 'text'],
    ['report_date', 'date'],
    ['session', 'text'],
    ['status', 'text'],
    ['source', 'text'],
  ],
  toStagingValues: (r) => [r.id, r.instrumentId, r.fiscalYear, r.fiscalPeriod, r.reportDate, r.session, r.status, r.source],
  async apply(tx) {
    await repo.lockEarningsIngest(tx);
    await rejectUnknownInstruments(tx);
    await rejectFirstRow(
      repeatedStagedKeys(tx, 'instrument_id', 'fiscal_year', 'fiscal_period'),
      'fiscalPeriod',
      'the same instrumentId, fiscalYear and fiscalPeriod appear in an earlier row of this batch',
    );
    await rejectFirstRow(repeatedStagedKeys(tx, 'id'), 'id', 'the same id appears in an earlier row of this batch, for another fiscal period');
    await rejectFirstRow(repo.stagedIdsOfAnotherReport(tx), 'id', 'this id is stored for another instrument, fiscalYear or fiscalPeriod');
    await rejectFirstRow(
      repo.stagedReportsUnderAnotherId(tx),
      'id',
      'this instrumentId, fiscalYear and fiscalPeriod are stored under another id (an absent id is derived from them)',
    );
    const { rows, inserted, updated } = await repo.upsertStagedReports(tx);
    return { rows, inserted, updated, unchanged: rows - inserted - updated };
  },
};
