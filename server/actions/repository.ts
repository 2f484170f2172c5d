import type postgres from 'postgres';
import type { Sql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { latestBarDate } from '../prices/repository.ts';
import { countedStagedUpsert, lockUploads } from '../ingest/repository.ts';
import type { ActionKind, CorporateAction, CoverageCheck, Provenance } from './schema.ts';

export interface ActionSetQuery {
  instrumentIds: string[];
  /**
   * The action-set version to read for each instrument, in the order of
   * instrumentIds: the version the caller reports. Revisions are append-only
   * and a version is bumped in the transaction that appends its revisions, so
   * the set at a version the caller has seen never changes, whatever commits
   * between the caller's statements.
   */
  versions: number[];
  /** Knowledge cut-off: actions whose knowledgeDate is after it are excluded. */
  asOf?: Date;
  includeBackfilled: boolean;
  /** Effective-date bounds (corporate-actions route); absent for adjustment. */
  effectiveFrom?: string;
  effectiveTo?: string;
}

/** Latest version per instrument; 0 for an instrument whose action set never changed. */
export async function actionSetVersions(sql: Sql, instrumentIds: string[]): Promise<Map<string, number>> {
  const rows = await timed(
    'action_set_versions',
    sql<{ instrument_id: string; version: number }[]>`
      select instrument_id, version
      from action_set_versions
      where instrument_id = any (${instrumentIds}::uuid[])
    `,
  );
  const versions = new Map(instrumentIds.map((id) => [id, 0]));
  for (const r of rows) versions.set(r.instrument_id, r.version);
  return versions;
}

interface ActionRevisionRow {
  action_id: string;
  instrument_id: string;
  action_set_version: number;
  kind: ActionKind;
  effective_date: string;
  announcement_date: string | null;
  knowledge_date: Date | null;
  knowledge_provenance: Provenance;
  params: Record<string, unknown>;
  source: string;
  created_at: Date;
}

function toCorporateAction(r: ActionRevisionRow): CorporateAction {
  return {
    id: r.action_id,
    instrumentId: r.instrument_id,
    kind: r.kind,
    effectiveDate: r.effective_date,
    announcementDate: r.announcement_date,
    knowledgeDate: r.knowledge_date ? r.knowledge_date.toISOString() : null,
    knowledgeProvenance: r.knowledge_provenance,
    createdAt: r.created_at.toISOString(),
    params: r.params,
    source: r.source,
    actionSetVersion: r.action_set_version,
  };
}

/**
 * The action set as of each instrument's version: for each action, its
 * latest revision at or below that version. Then the knowledge filter: with a
 * cut-off, only actions whose knowledgeDate is on or before it. Backfilled
 * actions (no knowledge date) cannot be placed in time, so they count only
 * when asked for. Ordered by instrument, effective date and action id.
 */
export async function selectActionSet(sql: Sql, q: ActionSetQuery): Promise<CorporateAction[]> {
  const rows = await sql<ActionRevisionRow[]>`
    select a.action_id, a.instrument_id, a.action_set_version, a.kind, a.effective_date, a.announcement_date,
      a.knowledge_date, a.knowledge_provenance, a.params, a.source, a.created_at
    from (
      select distinct on (r.action_id) r.*
      from unnest(${q.instrumentIds}::uuid[], ${q.versions}::int[]) as v (instrument_id, version)
      join corporate_action_revisions r on r.instrument_id = v.instrument_id and r.action_set_version <= v.version
      order by r.action_id, r.action_set_version desc
    ) a
    where true
      and (
        a.knowledge_date is null and ${q.includeBackfilled}::boolean
        or a.knowledge_date is not null ${q.asOf ? sql`and a.knowledge_date <= ${q.asOf}` : sql``}
      )
      ${q.effectiveFrom ? sql`and a.effective_date >= ${q.effectiveFrom}::date` : sql``}
      ${q.effectiveTo ? sql`and a.effective_date <= ${q.effectiveTo}::date` : sql``}
    order by a.instrument_id, a.effective_date, a.action_id
  `;
  return rows.map(toCorporateAction);
}

/** selectActionSet for price adjustment, by instrument. */
export async function actionsForAdjustment(sql: Sql, q: ActionSetQuery): Promise<Map<string, CorporateAction[]>> {
  const byInstrument = new Map<string, CorporateAction[]>();
  for (const action of await timed('actions_for_adjustment', selectActionSet(sql, q))) {
    const list = byInstrument.get(action.instrumentId) ?? [];
    list.push(action);
    byInstrument.set(action.instrumentId, list);
  }
  return byInstrument;
}

/** The latest coverage check per instrument known at the cut-off. */
export async function latestCoverageChecks(sql: Sql, instrumentIds: string[], asOf?: Date): Promise<Map<string, CoverageCheck>> {
  const rows = await timed(
    'latest_coverage_checks',
    sql<{ instrument_id: string; checked_at: Date; source: string; covered_from: string; actions_found: number }[]>`
      select distinct on (instrument_id) instrument_id, checked_at, source, covered_from, actions_found
      from action_coverage_checks
      where instrument_id = any (${instrumentIds}::uuid[])
        ${asOf ? sql`and checked_at <= ${asOf}` : sql``}
      order by instrument_id, checked_at desc, id desc
    `,
  );
  return new Map(
    rows.map((r) => [r.instrument_id, { checkedAt: r.checked_at.toISOString(), source: r.source, coveredFrom: r.covered_from, actionsFound: r.actions_found }]),
  );
}

// Ingest: statements over the `ingest_staging` table of an action upload
// (actions/ingest.ts), inside its transaction.

// Any constant. Serialises the uploads that write an instrument's daily price
// history, corporate actions and daily bars alike, so two cannot both read
// version N and both write N+1, and a version's last bar date
// (daily_price_versions) is read with no bar upload in flight.
const PRICE_HISTORY_LOCK = 7_311_020_002;

export const lockPriceHistory = (tx: Sql) => lockUploads(tx, PRICE_HISTORY_LOCK);

/**
 * The CTEs `bumped` and `recorded` of a statement that bumps versions: each
 * instrument of `instruments` (a relation of distinct instrument_id with its
 * prior_last_bar_date, the latest bar date stored before the new version)
 * gets its version bumped by one, and the new version is recorded with that
 * date (daily_price_versions). `bumped` holds each instrument's new version.
 * Inside lockPriceHistory.
 */
function versionBumps(tx: Sql, instruments: postgres.Fragment): postgres.Fragment {
  return tx`
    bumped as (
      insert into action_set_versions as v (instrument_id, version, changed_at)
      select instrument_id, 1, now()
      from ${instruments}
      on conflict (instrument_id) do update set version = v.version + 1, changed_at = now()
      returning instrument_id, version
    ),
    recorded as (
      insert into daily_price_versions (instrument_id, version, made_at, prior_last_bar_date)
      select b.instrument_id, b.version, now(), p.prior_last_bar_date
      from bumped b
      join ${instruments} using (instrument_id)
    )
  `;
}

/** Bumps each instrument's version by one, recorded with the latest bar date stored before it (versionBumps). Returns the new versions. */
export async function bumpVersions(tx: Sql, bumps: { instrumentId: string; priorLastBarDate: string | null }[]): Promise<Map<string, number>> {
  const instruments = tx`unnest(${bumps.map((b) => b.instrumentId)}::uuid[], ${bumps.map((b) => b.priorLastBarDate)}::date[]) as p (instrument_id, prior_last_bar_date)`;
  const rows = await tx<{ instrument_id: string; version: number }[]>`
    with ${versionBumps(tx, instruments)}
    select instrument_id, version from bumped
  `;
  return new Map(rows.map((r) => [r.instrument_id, r.version]));
}

/** Staged rows whose action id is stored under another instrument, first first. */
export function stagedActionsOfAnotherInstrument(tx: Sql) {
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
export async function appendStagedRevisions(tx: Sql): Promise<{ rows: number; inserted: number; updated: number; versions: Record<string, number> }> {
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
export function upsertStagedCoverageChecks(tx: Sql) {
  return countedStagedUpsert(
    tx,
    tx`
      insert into action_coverage_checks as c (instrument_id, checked_at, source, covered_from, actions_found)
      select instrument_id, checked_at, source, covered_from, actions_found
      from ingest_staging
      on conflict (instrument_id, checked_at, source) do update set
        covered_from = excluded.covered_from,
        actions_found = excluded.actions_found
      where (c.covered_from, c.actions_found) is distinct from (excluded.covered_from, excluded.actions_found)
      returning (xmax = 0) as inserted
    `,
  );
}
