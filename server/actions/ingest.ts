import { z } from 'zod';
import { ingestCounts, type StagedIngestKind, type UploadResult } from '../ingest/kind.ts';
import { repeatedStagedKeys } from '../ingest/repository.ts';
import { rejectFirstRow, rejectUnknownInstruments } from '../ingest/row-checks.ts';
import { lockPriceHistory } from '../price-history/versions-repository.ts';
import * as repo from './repository.ts';
import { CorporateActionRowSchema, CoverageCheckRowSchema, type CorporateActionRow, type CoverageCheckRow } from './schema.ts';

/**
 * New actions and corrections append revisions; nothing is updated in place.
 * Each instrument whose set changed gets exactly one new version per batch,
 * and every changed action of that instrument is recorded under it. A batch
 * that changes nothing bumps nothing (idempotent).
 */
export const corporateActionIngest: StagedIngestKind<CorporateActionRow> = {
  writes: 'staged',
  label: 'corporate actions',
  rowSchema: CorporateActionRowSchema,
  resultSchema: z.strictObject({
    ...ingestCounts,
    actionSetVersions: z.record(z.string(), z.int().min(1)).describe('instrument id → its new action-set version, for each instrument whose actions changed'),
  }),
  stagingColumns: [
    ['action_id', 'uuid'],
    ['instrument_id', 'uuid'],
    ['kind', 'text'],
    ['effective_date', 'date'],
    ['announcement_date', 'date'],
    ['knowledge_date', 'timestamptz'],
    ['knowledge_provenance', 'text'],
    ['params', 'jsonb'],
    ['source', 'text'],
  ],
  toStagingValues: (r) => [
    r.id,
    r.instrumentId,
    r.kind,
    r.effectiveDate,
    r.announcementDate,
    r.knowledgeDate,
    r.knowledgeProvenance,
    JSON.stringify(r.params),
    r.source,
  ],
  async apply(tx): Promise<UploadResult> {
    await lockPriceHistory(tx);
    await rejectUnknownInstruments(tx);
    await rejectFirstRow(repeatedStagedKeys(tx, 'action_id'), 'id', 'the same action appears twice in this batch');
    await rejectFirstRow(repo.stagedActionsOfAnotherInstrument(tx), 'instrumentId', 'this action id belongs to another instrument');
    const { rows, inserted, updated, versions } = await repo.appendStagedRevisions(tx);
    const bumped = Object.keys(versions);
    return {
      rows,
      inserted,
      updated,
      unchanged: rows - inserted - updated,
      actionSetVersions: versions,
      ...(bumped.length ? { changes: { adjustedCloses: bumped } } : {}),
    };
  },
};

export const coverageCheckIngest: StagedIngestKind<CoverageCheckRow> = {
  writes: 'staged',
  label: 'action coverage checks',
  rowSchema: CoverageCheckRowSchema,
  resultSchema: z.strictObject(ingestCounts),
  stagingColumns: [
    ['instrument_id', 'uuid'],
    ['checked_at', 'timestamptz'],
    ['source', 'text'],
    ['covered_from', 'date'],
    ['actions_found', 'int4'],
  ],
  toStagingValues: (r) => [r.instrumentId, r.checkedAt, r.source, r.coveredFrom, r.actionsFound],
  async apply(tx) {
    await rejectUnknownInstruments(tx);
    const { rows, inserted, updated } = await repo.upsertStagedCoverageChecks(tx);
    return { rows, inserted, updated, unchanged: rows - inserted - updated };
  },
};
