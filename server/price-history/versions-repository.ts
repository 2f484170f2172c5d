import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { lockUploads } from '../ingest/repository.ts';

// Each instrument's version (action_set_versions) counts the changes to its
// price history: an upload that changes its corporate actions, or corrects or
// fills in its daily bars, makes one new version, recorded with the latest bar
// date stored before it (daily_price_versions), so a version's bars can be
// rebuilt later (bars-repository.ts, dailyBarsAt).

// Any constant. Serialises the uploads that write an instrument's daily price
// history, corporate actions and daily bars alike, so two cannot both read
// version N and both write N+1, and a version's last bar date
// (daily_price_versions) is read with no bar upload in flight.
const PRICE_HISTORY_LOCK = 7_311_020_002;

export const lockPriceHistory = (tx: ISql) => lockUploads(tx, PRICE_HISTORY_LOCK);

/** Latest version per instrument; 0 for an instrument whose action set never changed. */
export async function actionSetVersions(sql: ISql, instrumentIds: string[]): Promise<Map<string, number>> {
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

/** The latest action-set version of the instrument `instrumentId` names (0 before its first), as the statement's snapshot has it. */
export function latestVersion(sql: ISql, instrumentId: postgres.Fragment): postgres.Fragment {
  return sql`coalesce((select version from action_set_versions where instrument_id = ${instrumentId}), 0)`;
}

/**
 * The CTEs `bumped` and `recorded` of a statement that bumps versions: each
 * instrument of `instruments` (a relation of distinct instrument_id with its
 * prior_last_bar_date, the latest bar date stored before the new version)
 * gets its version bumped by one, and the new version is recorded with that
 * date (daily_price_versions). `bumped` holds each instrument's new version.
 * Inside lockPriceHistory.
 */
export function versionBumps(tx: ISql, instruments: postgres.Fragment): postgres.Fragment {
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
export async function bumpVersions(tx: ISql, bumps: { instrumentId: string; priorLastBarDate: string | null }[]): Promise<Map<string, number>> {
  const instruments = tx`unnest(${bumps.map((b) => b.instrumentId)}::uuid[], ${bumps.map((b) => b.priorLastBarDate)}::date[]) as p (instrument_id, prior_last_bar_date)`;
  const rows = await tx<{ instrument_id: string; version: number }[]>`
    with ${versionBumps(tx, instruments)}
    select instrument_id, version from bumped
  `;
  return new Map(rows.map((r) => [r.instrument_id, r.version]));
}

/**
 * A superseded version of one instrument's daily bars (sql/015): the version
 * read, and the last bar date it covers (null for a version made before
 * revisions were kept: not capped).
 */
export interface VersionView {
  instrumentId: string;
  version: number;
  lastBarDate: string | null;
}

/** Version `version` of one instrument, to be read as superseded: its last bar date is recorded on the version after it. */
export async function versionView(sql: ISql, instrumentId: string, version: number): Promise<VersionView> {
  const [row] = await timed(
    'daily_version_view',
    sql<{ prior_last_bar_date: string | null }[]>`
      select prior_last_bar_date::text
      from daily_price_versions
      where instrument_id = ${instrumentId} and version = ${version + 1}
    `,
  );
  return { instrumentId, version, lastBarDate: row?.prior_last_bar_date ?? null };
}
