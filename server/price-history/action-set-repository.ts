import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import type { ActionKind, CorporateAction, CoverageCheck, Provenance } from './schema.ts';

// The corporate actions of a price history: each instrument's action set at a
// version (corporate_action_revisions, written by the actions upload,
// actions/repository.ts), and the checks of its action history against a
// source (action_coverage_checks).

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
export async function selectActionSet(sql: ISql, q: ActionSetQuery): Promise<CorporateAction[]> {
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
export async function actionsForAdjustment(sql: ISql, q: ActionSetQuery): Promise<Map<string, CorporateAction[]>> {
  const byInstrument = new Map<string, CorporateAction[]>();
  for (const action of await timed('actions_for_adjustment', selectActionSet(sql, q))) {
    const list = byInstrument.get(action.instrumentId) ?? [];
    list.push(action);
    byInstrument.set(action.instrumentId, list);
  }
  return byInstrument;
}

/** The latest coverage check per instrument known at the cut-off. */
export async function latestCoverageChecks(sql: ISql, instrumentIds: string[], asOf?: Date): Promise<Map<string, CoverageCheck>> {
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
