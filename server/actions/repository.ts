import type { ISql } from '../db/sql.ts';
import { countedStagedUpsert, stagedUpsert } from '../ingest/repository.ts';
import { latestBarDate } from '../price-history/bars-repository.ts';
import { versionBumps } from '../price-history/versions-repository.ts';

// Statements over the `ingest_staging` table of an action upload
// (actions/ingest.ts), inside its transaction. The action set they append to
// is read through price-history/action-set-repository.ts.

/** Staged rows whose action id is stored under another instrument, first first. */
export function stagedActionsOfAnotherInstrument(tx: ISql) {
  return tx<{ row_index: number }[]>`
    select s.row_index
    from ingest_staging s
    join corporate_action_revisions r on r.action_id = s.action_id and r.instrument_id <> s.instrument_id
    order by s.row_index
    limit 1
  `;
}

/**
 * Appends a revision for each staged action that is new or differs from its
 * latest revision, under one new action-set version per instrument touched,
 * recorded with the instrument's latest bar date (daily_price_versions).
 * Inside lockPriceHistory.
 * `versions` maps each bumped instrument to its new version.
 */
export async function appendStagedRevisions(tx: ISql): Promise<{ rows: number; inserted: number; updated: number; versions: Record<string, number> }> {
  const [row] = await tx<{ rows: number; inserted: number; updated: number; appended: number; versions: Record<string, number> }[]>`
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
    ${versionBumps(
      tx,
      tx`(
        select distinct c.instrument_id, ${latestBarDate(tx, tx`c.instrument_id`)}::date as prior_last_bar_date
        from changed c
      ) p`,
    )},
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
  return { rows: row.rows, inserted: row.inserted, updated: row.updated, versions: row.versions };
}

/** Upserts the staged coverage checks; a stored check is rewritten only when a value differs. */
export function upsertStagedCoverageChecks(tx: ISql) {
  return countedStagedUpsert(
    tx,
    stagedUpsert(tx, {
      table: 'action_coverage_checks',
      key: ['instrument_id', 'checked_at', 'source'],
      updated: ['covered_from', 'actions_found'],
      setsUpdatedAt: false,
    }),
  );
}
