import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { countedStagedUpsert, stagedUpsert } from '../ingest/repository.ts';
import type { EconomicEvent, EventClass, Importance } from './schema.ts';
import type { SourceScope } from '../core/freshness.ts';

export interface EventFilter {
  /** Days (UTC) of scheduled_at, inclusive. */
  from?: string;
  to?: string;
  eventClass?: EventClass;
  country?: string;
  importance?: Importance;
  limit: number;
  /** Only the releases after this position of the order (keyset paging). */
  after?: EventKey;
}

/** A release's position in the order: scheduledAt to the microsecond (UTC, as cursor text) and id. */
export interface EventKey {
  scheduledAt: string;
  id: string;
}

interface EventRow {
  id: string;
  country: string;
  event_class: EventClass;
  importance: Importance;
  name: string;
  reference_period: string;
  scheduled_at: Date;
  actual: string | null;
  forecast: string | null;
  previous: string | null;
  source: string;
  scheduled_key: string;
}

function toEconomicEvent(r: EventRow): EconomicEvent {
  return {
    id: r.id,
    country: r.country,
    eventClass: r.event_class,
    importance: r.importance,
    name: r.name,
    referencePeriod: r.reference_period,
    scheduledAt: r.scheduled_at.toISOString(),
    actual: r.actual,
    forecast: r.forecast,
    previous: r.previous,
    source: r.source,
  };
}

/**
 * The matching releases, newest scheduled first, ties by id, at most `limit`
 * of them. Day bounds are turned into instants in SQL, at UTC midnight, so
 * they hold for any session time zone and for the calendar's edges (to =
 * 9999-12-31 ends at 10000-01-01, which a JS Date cannot write as ISO text).
 * A page after a cursor (`after`) starts at the cursor's scheduledAt, a
 * range on economic_events_scheduled_idx. Each row comes with its key.
 */
export async function selectEvents(sql: ISql, f: EventFilter): Promise<{ row: EconomicEvent; key: EventKey }[]> {
  const after = f.after && { at: sql`(${f.after.scheduledAt}::text::timestamp at time zone 'UTC')`, id: f.after.id };
  const rows = await timed(
    'select_economic_events',
    sql<EventRow[]>`
      select id, country, event_class, importance, name, reference_period, scheduled_at, actual, forecast, previous, source,
        to_char(scheduled_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') as scheduled_key
      from economic_events
      where true
        ${after ? sql`and scheduled_at <= ${after.at} and (scheduled_at < ${after.at} or id > ${after.id})` : sql``}
        ${f.from ? sql`and scheduled_at >= ${f.from}::date::timestamp at time zone 'UTC'` : sql``}
        ${f.to ? sql`and scheduled_at < (${f.to}::date + 1)::timestamp at time zone 'UTC'` : sql``}
        ${f.eventClass ? sql`and event_class = ${f.eventClass}` : sql``}
        ${f.country ? sql`and country = ${f.country}` : sql``}
        ${f.importance ? sql`and importance = ${f.importance}` : sql``}
      order by scheduled_at desc, id
      limit ${f.limit}
    `,
  );
  return rows.map((r) => ({ row: toEconomicEvent(r), key: { scheduledAt: r.scheduled_key, id: r.id } }));
}

/** The releases a read's sources are judged on: its filters other than the dates. */
export type EventScope = Pick<EventFilter, 'eventClass' | 'country' | 'importance'>;

/** The instants a release must be scheduled within for a read (economic-events/freshness.ts), both included. */
export interface ReleaseWindow {
  since: Date;
  until: Date;
}

/** The scope's predicates, on the columns of the one economic_events of the query they are put in. */
const inScope = (sql: ISql, f: EventScope) => sql`
  ${f.eventClass ? sql`and event_class = ${f.eventClass}` : sql``}
  ${f.country ? sql`and country = ${f.country}` : sql``}
  ${f.importance ? sql`and importance = ${f.importance}` : sql``}
`;

/**
 * For each of `sources`, in order, whether it has a release within the
 * scope scheduled within the window: a range of economic_events_scheduled_idx
 * (of economic_events_country_scheduled_idx with a country) bounded by the
 * window.
 */
export async function sourcesReleasing(sql: ISql, sources: string[], f: EventScope, w: ReleaseWindow): Promise<boolean[]> {
  const rows = await timed(
    'economic_sources_releasing',
    sql<{ releasing: boolean }[]>`
      select exists (
        select 1
        from economic_events p
        where p.source = s.source
          and p.scheduled_at between ${w.since} and ${w.until}
          ${inScope(sql, f)}
      ) as releasing
      from unnest(${sources}::text[]) with ordinality as s (source, n)
      order by s.n
    `,
  );
  return rows.map((r) => r.releasing);
}

/**
 * The scope of a read without rows: the releases its filters select, of any
 * date. `covered`: there is one; `publishing`: one is scheduled within the
 * window.
 */
export async function scopeReleasing(sql: ISql, f: EventScope, w: ReleaseWindow): Promise<SourceScope> {
  const [row] = await timed(
    'economic_scope_releasing',
    sql<SourceScope[]>`
      select
        exists (select 1 from economic_events where true ${inScope(sql, f)}) as covered,
        exists (select 1 from economic_events where scheduled_at between ${w.since} and ${w.until} ${inScope(sql, f)}) as publishing
    `,
  );
  return row;
}

// Ingest: statements over the `ingest_staging` table of an economic-event
// upload (economic-events/ingest.ts), inside its transaction.

/**
 * Upserts the staged releases on id. A stored release is rewritten (and its
 * updated_at moved) only when a value differs, so posting the same rows again
 * changes nothing and counts them unchanged.
 */
export function upsertStagedEvents(tx: ISql): Promise<{ rows: number; inserted: number; updated: number }> {
  return countedStagedUpsert(
    tx,
    stagedUpsert(tx, {
      table: 'economic_events',
      key: ['id'],
      updated: ['country', 'event_class', 'importance', 'name', 'reference_period', 'scheduled_at', 'actual', 'forecast', 'previous', 'source'],
      setsUpdatedAt: true,
    }),
  );
}
