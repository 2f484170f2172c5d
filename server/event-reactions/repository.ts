import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { effectiveSymbol } from '../instruments/repository.ts';
import type { Coverage, EventReaction } from './schema.ts';

// Any constant: serialises reaction derivations. Each reads the news and bars
// after taking it, so of two runs (after two uploads) the later one reads what
// the earlier stored and what both uploads committed; without it, a run that
// read the news before an upload committed could delete the reaction another
// run had just derived for the new item.
const REACTION_DERIVATION_LOCK = 7_311_020_010;

export async function lockReactionDerivation(tx: ISql): Promise<void> {
  await tx`select pg_advisory_xact_lock(${REACTION_DERIVATION_LOCK})`;
}

/** Instruments with news or stored reactions, of `instrumentIds` or all, in id order. */
export async function instrumentsToDerive(sql: ISql, instrumentIds?: string[]): Promise<string[]> {
  const scoped = instrumentIds ? sql`where instrument_id = any (${instrumentIds}::uuid[])` : sql``;
  const rows = await timed(
    'reaction_instruments',
    sql<{ instrument_id: string }[]>`
      select instrument_id from news ${scoped}
      union
      select instrument_id from event_reactions ${scoped}
      order by instrument_id
    `,
  );
  return rows.map((r) => r.instrument_id);
}

export interface NewsToPlace {
  id: string;
  instrument_id: string;
  event_class: string;
  published_at: Date;
}

/** Every news item of these instruments. */
export function newsToPlace(sql: ISql, instrumentIds: string[]): Promise<NewsToPlace[]> {
  return timed(
    'reaction_news',
    sql<NewsToPlace[]>`
      select id, instrument_id, event_class, published_at
      from news
      where instrument_id = any (${instrumentIds}::uuid[])
    `,
  );
}

/** A derived reaction as stored. */
export interface ReactionRow extends Omit<EventReaction, 'eventId'> {
  eventId: string;
  instrumentId: string;
}

/**
 * Makes the stored reactions of `instrumentIds` exactly `rows`, in one
 * statement: upserts each row (rewritten only when a value differs, so a run
 * on unchanged data writes nothing) and deletes the reactions of their news
 * items that `rows` leaves out. Both parts see the same snapshot, and a row
 * deleted is never one upserted. The rows go in as one array per column, so
 * the statement has twelve parameters whatever their count (a VALUES list
 * would reach PostgreSQL's 65,535 at 5,461 rows). The booleans go through
 * sql.array: postgres.js types a plain array by its first element, and would
 * declare an array of booleans a boolean.
 */
export async function storeReactions(sql: ISql, instrumentIds: string[], rows: ReactionRow[]): Promise<{ inserted: number; updated: number; removed: number }> {
  const column = <T>(pick: (r: ReactionRow) => T) => rows.map(pick);
  const [counts] = await timed(
    'store_event_reactions',
    sql<{ inserted: number; updated: number; removed: number }[]>`
      with derived as (
        select *
        from unnest(
          ${column((r) => r.eventId)}::uuid[],
          ${column((r) => r.instrumentId)}::uuid[],
          ${column((r) => r.eventClass)}::text[],
          ${column((r) => r.publishedAt)}::timestamptz[],
          ${column((r) => r.eventDate)}::date[],
          ${column((r) => r.previousSessionDate)}::date[],
          ${column((r) => r.previousClose)}::float8[],
          ${column((r) => r.sessionClose)}::float8[],
          ${column((r) => r.reactionPct)}::float8[],
          ${column((r) => r.absMovePct)}::float8[],
          ${sql.array(column((r) => r.isCorporateAdjusted))}::bool[],
          ${column((r) => r.actionSetVersion)}::int[]
        ) as d (event_id, instrument_id, event_class, published_at, event_date, previous_session_date, previous_close,
          session_close, reaction_pct, abs_move_pct, is_corporate_adjusted, action_set_version)
      ),
      upserted as (
        insert into event_reactions as r (event_id, instrument_id, event_class, published_at, event_date, previous_session_date,
          previous_close, session_close, reaction_pct, abs_move_pct, is_corporate_adjusted, action_set_version)
        select event_id, instrument_id, event_class, published_at, event_date, previous_session_date,
          previous_close, session_close, reaction_pct, abs_move_pct, is_corporate_adjusted, action_set_version
        from derived
        on conflict (event_id) do update set
          instrument_id = excluded.instrument_id,
          event_class = excluded.event_class,
          published_at = excluded.published_at,
          event_date = excluded.event_date,
          previous_session_date = excluded.previous_session_date,
          previous_close = excluded.previous_close,
          session_close = excluded.session_close,
          reaction_pct = excluded.reaction_pct,
          abs_move_pct = excluded.abs_move_pct,
          is_corporate_adjusted = excluded.is_corporate_adjusted,
          action_set_version = excluded.action_set_version,
          updated_at = now()
        where (r.instrument_id, r.event_class, r.published_at, r.event_date, r.previous_session_date, r.previous_close,
            r.session_close, r.reaction_pct, r.abs_move_pct, r.is_corporate_adjusted, r.action_set_version)
          is distinct from
          (excluded.instrument_id, excluded.event_class, excluded.published_at, excluded.event_date, excluded.previous_session_date,
            excluded.previous_close, excluded.session_close, excluded.reaction_pct, excluded.abs_move_pct,
            excluded.is_corporate_adjusted, excluded.action_set_version)
        returning (xmax = 0) as inserted
      ),
      removed as (
        delete from event_reactions r
        where r.instrument_id = any (${instrumentIds}::uuid[])
          and not exists (select 1 from derived d where d.event_id = r.event_id)
        returning 1
      )
      select
        (select count(*)::int from upserted where inserted) as inserted,
        (select count(*)::int from upserted where not inserted) as updated,
        (select count(*)::int from removed) as removed
    `,
  );
  return counts;
}

export interface ReactionFilter {
  instrumentId: string;
  eventClass?: string;
  /** eventDate bounds, inclusive. */
  from?: string;
  to?: string;
}

interface StoredReaction {
  event_id: string;
  event_class: string;
  published_at: Date;
  event_date: string;
  previous_session_date: string;
  previous_close: number;
  session_close: number;
  reaction_pct: number;
  abs_move_pct: number;
  is_corporate_adjusted: boolean;
  action_set_version: number | null;
  source: string;
}

/** An instrument's reactions, eventDate ascending, ties by eventId, each with its news item's source. */
export async function selectReactions(sql: ISql, f: ReactionFilter): Promise<(EventReaction & { source: string })[]> {
  const rows = await timed(
    'select_event_reactions',
    sql<StoredReaction[]>`
      select r.event_id, r.event_class, r.published_at, r.event_date, r.previous_session_date, r.previous_close, r.session_close,
        r.reaction_pct, r.abs_move_pct, r.is_corporate_adjusted, r.action_set_version, n.source
      from event_reactions r
      join news n on n.id = r.event_id
      where r.instrument_id = ${f.instrumentId}
        ${f.eventClass ? sql`and r.event_class = ${f.eventClass}` : sql``}
        ${f.from ? sql`and r.event_date >= ${f.from}::date` : sql``}
        ${f.to ? sql`and r.event_date <= ${f.to}::date` : sql``}
      order by r.event_date, r.event_id
    `,
  );
  return rows.map((r) => ({
    eventId: r.event_id,
    eventClass: r.event_class,
    publishedAt: r.published_at.toISOString(),
    eventDate: r.event_date,
    previousSessionDate: r.previous_session_date,
    previousClose: r.previous_close,
    sessionClose: r.session_close,
    reactionPct: r.reaction_pct,
    absMovePct: r.abs_move_pct,
    isCorporateAdjusted: r.is_corporate_adjusted,
    actionSetVersion: r.action_set_version,
    source: r.source,
  }));
}

/** The sources of the news items behind the reactions of `instrumentIds` (of `eventClasses`, when given). */
export async function coverageSources(sql: ISql, instrumentIds: string[], eventClasses?: string[]): Promise<string[]> {
  if (!instrumentIds.length) return [];
  const rows = await timed(
    'event_reaction_coverage_sources',
    sql<{ source: string }[]>`
      select distinct n.source
      from event_reactions r
      join news n on n.id = r.event_id
      where r.instrument_id = any(${instrumentIds}::uuid[])
        ${eventClasses ? sql`and r.event_class = any(${eventClasses}::text[])` : sql``}
    `,
  );
  return rows.map((r) => r.source);
}

export interface CoverageFilter {
  /** Absent: every class. */
  eventClasses?: string[];
  minReactions: number;
  minWindowDays?: number;
  limit: number;
  /** The day whose symbol is current (today, UTC). */
  day: string;
}

/**
 * The coverage read, one aggregate statement: the reactions grouped by
 * instrument (count, first and last event date) and filtered on the
 * aggregates, then the current symbol of each instrument that passes
 * (effectiveSymbol, as the instrument reads decide it; none, no row), best
 * covered first. Exported for the plan test.
 */
export function coverageStatement(sql: ISql, f: CoverageFilter) {
  return sql<Coverage['instruments']>`
    select i.id as "instrumentId", e.symbol, c.reaction_count as "reactionCount", c.first_event_date as "firstEventDate",
      c.last_event_date as "lastEventDate", c.window_days as "observationWindowDays"
    from (
      select instrument_id, count(*)::int as reaction_count, min(event_date) as first_event_date, max(event_date) as last_event_date,
        max(event_date) - min(event_date) as window_days
      from event_reactions
      ${f.eventClasses ? sql`where event_class = any (${f.eventClasses}::text[])` : sql``}
      group by instrument_id
      having count(*) >= ${f.minReactions}
        ${f.minWindowDays !== undefined ? sql`and max(event_date) - min(event_date) >= ${f.minWindowDays}` : sql``}
    ) c
    join instruments i on i.id = c.instrument_id
    ${effectiveSymbol(sql, f.day)}
    where e.symbol is not null
    order by c.reaction_count desc, c.window_days desc, e.symbol collate "C", i.id
    limit ${f.limit}
  `;
}

export async function selectCoverage(sql: ISql, f: CoverageFilter): Promise<Coverage['instruments']> {
  return timed('event_reaction_coverage', coverageStatement(sql, f));
}
