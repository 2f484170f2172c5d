import { z } from 'zod';
import { ingestCounts, rejectFirstRow, rejectUnknownInstruments, type IngestKind, type IngestResult } from '../admin/ingest.ts';
import { CorporateActionRowSchema, CoverageCheckRowSchema, type CorporateActionRow, type CoverageCheckRow } from './schema.ts';

// Any constant: serialises action ingests so two batches cannot both read
// version N and both write N+1.
const ACTION_INGEST_LOCK = 7_311_020_002;

/**
 * New actions and corrections append revisions; nothing is updated in place.
 * Each instrument whose set changed gets exactly one new version per batch,
 * and every changed action of that instrument is recorded under it. A batch
 * that changes nothing bumps nothing (idempotent).
 */
export const corporateActionIngest: IngestKind<CorporateActionRow> = {
  label: 'corporate actions',
  rowSchema: CorporateActionRowSchema,
  resultSchema: z.strictObject({ ...ingestCounts, actionSetVersions: z.record(z.string(), z.int()).describe('instrument id → its new action-set version, for each instrument whose actions changed') }),
  stagingColumns: `action_id uuid, instrument_id uuid, kind text, effective_date date, announcement_date date,
    knowledge_date timestamptz, knowledge_provenance text, params jsonb, source text`,
  toStagingValues: (r) => [
    r.id, r.instrumentId.toLowerCase(), r.kind, r.effectiveDate, r.announcementDate, r.knowledgeDate,
    r.knowledgeProvenance, JSON.stringify(r.params), r.source,
  ],
  async apply(tx): Promise<IngestResult> {
    await tx`select pg_advisory_xact_lock(${ACTION_INGEST_LOCK})`;
    await rejectUnknownInstruments(tx);
    await rejectFirstRow(
      tx`
        select row_index
        from (select row_index, row_number() over (partition by action_id order by row_index) as k from ingest_staging) d
        where k > 1
        order by row_index
        limit 1
      `,
      'id',
      'the same action appears twice in this batch',
    );
    await rejectFirstRow(
      tx`
        select s.row_index
        from ingest_staging s
        join corporate_action_revisions r on r.action_id = s.action_id and r.instrument_id <> s.instrument_id
        order by s.row_index
        limit 1
      `,
      'instrumentId',
      'this action id belongs to another instrument',
    );
    const [row] = await tx`
      with changed as (
        select s.*, l.created_at as original_created_at, l.action_id is null as is_new
        from ingest_staging s
        left join lateral (
          select *
          from corporate_action_revisions r
          where r.action_id = s.action_id
          order by r.action_set_version desc
          limit 1
        ) l on true
        where l.action_id is null
           or (l.kind, l.effective_date, l.announcement_date, l.knowledge_date, l.knowledge_provenance, l.params, l.source)
              is distinct from
              (s.kind, s.effective_date, s.announcement_date, s.knowledge_date, s.knowledge_provenance, s.params, s.source)
      ),
      bumped as (
        insert into action_set_versions as v (instrument_id, version, changed_at)
        select distinct instrument_id, 1, now()
        from changed
        on conflict (instrument_id) do update set version = v.version + 1, changed_at = now()
        returning instrument_id, version
      ),
      appended as (
        insert into corporate_action_revisions (action_id, instrument_id, action_set_version, kind, effective_date,
          announcement_date, knowledge_date, knowledge_provenance, params, source, created_at)
        select c.action_id, c.instrument_id, b.version, c.kind, c.effective_date, c.announcement_date,
          c.knowledge_date, c.knowledge_provenance, c.params, c.source, coalesce(c.original_created_at, now())
        from changed c
        join bumped b using (instrument_id)
        returning action_id
      )
      select
        (select count(*)::int from ingest_staging) as rows,
        (select count(*)::int from changed where is_new) as inserted,
        (select count(*)::int from changed where not is_new) as updated,
        (select count(*)::int from appended) as appended,
        (select coalesce(jsonb_object_agg(instrument_id, version), '{}'::jsonb) from bumped) as versions
    `;
    return {
      rows: row.rows as number,
      inserted: row.inserted as number,
      updated: row.updated as number,
      unchanged: (row.rows as number) - (row.inserted as number) - (row.updated as number),
      actionSetVersions: row.versions as Record<string, number>,
    };
  },
};

export const coverageCheckIngest: IngestKind<CoverageCheckRow> = {
  label: 'action coverage checks',
  rowSchema: CoverageCheckRowSchema,
  resultSchema: z.strictObject(ingestCounts),
  stagingColumns: 'instrument_id uuid, checked_at timestamptz, source text, covered_from date, actions_found integer',
  toStagingValues: (r) => [r.instrumentId.toLowerCase(), r.checkedAt, r.source, r.coveredFrom, r.actionsFound],
  async apply(tx) {
    await rejectUnknownInstruments(tx);
    const [row] = await tx`
      with upserted as (
        insert into action_coverage_checks as c (instrument_id, checked_at, source, covered_from, actions_found)
        select instrument_id, checked_at, source, covered_from, actions_found
        from ingest_staging
        on conflict (instrument_id, checked_at, source) do update set
          covered_from = excluded.covered_from,
          actions_found = excluded.actions_found
        where (c.covered_from, c.actions_found) is distinct from (excluded.covered_from, excluded.actions_found)
        returning (xmax = 0) as inserted
      )
      select
        (select count(*)::int from ingest_staging) as rows,
        count(*) filter (where inserted)::int as inserted,
        count(*) filter (where not inserted)::int as updated
      from upserted
    `;
    return { rows: row.rows, inserted: row.inserted, updated: row.updated, unchanged: row.rows - row.inserted - row.updated };
  },
};
