import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { stagedUpsert } from '../ingest/repository.ts';
import type { NewsEvent } from './schema.ts';
import type { SourceScope } from '../core/freshness.ts';

export interface NewsFilter {
  instrumentId: string;
  /** UTC days of published_at, inclusive. */
  from?: string;
  to?: string;
  eventClass?: string;
  /** Catalyst events: only what the company itself confirmed. */
  companyConfirmedOnly: boolean;
  limit: number;
  /** Only the rows after this position of the order (keyset paging). */
  after?: NewsKey;
}

/** A row's position in the order: publishedAt to the microsecond (UTC, as instantKey text) and id. */
export interface NewsKey {
  publishedAt: string;
  id: string;
}

interface NewsRowStored {
  id: string;
  instrument_id: string;
  event_class: string;
  headline: string;
  source: string;
  url: string;
  published_at: Date;
  is_company_confirmed: boolean;
  created_at: Date;
  published_key: string;
}

function toNewsEvent(r: NewsRowStored): NewsEvent {
  return {
    id: r.id,
    instrumentId: r.instrument_id,
    eventClass: r.event_class,
    headline: r.headline,
    source: r.source,
    url: r.url,
    publishedAt: r.published_at.toISOString(),
    isCompanyConfirmed: r.is_company_confirmed,
    createdAt: r.created_at.toISOString(),
  };
}

/**
 * An instrument's news, newest published first, ties by id, at most `limit`.
 * The one query behind both the news and the events read: catalyst events are
 * this query with one more predicate, so they are the company-confirmed news
 * by construction. Day bounds become instants in SQL at UTC midnight, as the
 * economic calendar's do (a `to` of 9999-12-31 ends at 10000-01-01, which a JS
 * Date cannot write as ISO text). Walks news_instrument_published_idx; a
 * page after a cursor (`after`) starts its walk at the cursor's publishedAt.
 * Each row comes with its key, the position a cursor after it holds. The
 * key's text is sent as text and cast in SQL: a timestamp parameter would go
 * through a JS Date and lose its microseconds.
 */
export async function selectNews(sql: ISql, f: NewsFilter): Promise<{ row: NewsEvent; key: NewsKey }[]> {
  const after = f.after && { at: sql`(${f.after.publishedAt}::text::timestamp at time zone 'UTC')`, id: f.after.id };
  const rows = await timed(
    f.companyConfirmedOnly ? 'select_events' : 'select_news',
    sql<NewsRowStored[]>`
      select id, instrument_id, event_class, headline, source, url, published_at, is_company_confirmed, created_at,
        to_char(published_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') as published_key
      from news
      where instrument_id = ${f.instrumentId}
        ${after ? sql`and published_at <= ${after.at} and (published_at < ${after.at} or id > ${after.id})` : sql``}
        ${f.from ? sql`and published_at >= ${f.from}::date::timestamp at time zone 'UTC'` : sql``}
        ${f.to ? sql`and published_at < (${f.to}::date + 1)::timestamp at time zone 'UTC'` : sql``}
        ${f.eventClass ? sql`and event_class = ${f.eventClass}` : sql``}
        ${f.companyConfirmedOnly ? sql`and is_company_confirmed` : sql``}
      order by published_at desc, id
      limit ${f.limit}
    `,
  );
  return rows.map((r) => ({ row: toNewsEvent(r), key: { publishedAt: r.published_key, id: r.id } }));
}

/** The read's window for its sources (news/freshness.ts): published from `since` to `until`, both included, and stored by `until`. */
export interface NewsSilenceWindow {
  since: Date;
  until: Date;
}

/** Whether the source `s.source` of the enclosing query published within the window. */
const publishedWithin = (sql: ISql, w: NewsSilenceWindow) => sql`
  exists (
    select 1
    from news p
    where p.source = s.source
      and p.published_at between ${w.since} and ${w.until}
      and p.created_at <= ${w.until}
  )
`;

/**
 * For each of `sources`, in order, whether it published an item, on any
 * instrument, within the window. One range of news_source_published_idx per
 * source.
 */
export async function sourcesPublishing(sql: ISql, sources: string[], w: NewsSilenceWindow): Promise<boolean[]> {
  const rows = await timed(
    'news_sources_publishing',
    sql<{ publishing: boolean }[]>`
      select ${publishedWithin(sql, w)} as publishing
      from unnest(${sources}::text[]) with ordinality as s (source, n)
      order by s.n
    `,
  );
  return rows.map((r) => r.publishing);
}

/**
 * The sources a read without rows covers: those that ever published the
 * instrument's news (of `eventClass`, company-confirmed only for events),
 * stored by the window's end. `covered`: there is one; `publishing`: one of
 * them published, on any instrument, within the window.
 */
export async function scopePublishing(
  sql: ISql,
  f: Pick<NewsFilter, 'instrumentId' | 'eventClass' | 'companyConfirmedOnly'>,
  w: NewsSilenceWindow,
): Promise<SourceScope> {
  const [row] = await timed(
    'news_scope_publishing',
    sql<SourceScope[]>`
      with scope as (
        select distinct source
        from news
        where instrument_id = ${f.instrumentId}
          and created_at <= ${w.until}
          ${f.eventClass ? sql`and event_class = ${f.eventClass}` : sql``}
          ${f.companyConfirmedOnly ? sql`and is_company_confirmed` : sql``}
      )
      select
        exists (select 1 from scope) as covered,
        exists (select 1 from scope s where ${publishedWithin(sql, w)}) as publishing
    `,
  );
  return row;
}

// Ingest: statements over the `ingest_staging` table of a news upload
// (news/ingest.ts), inside its transaction.

/** The first staged row whose id is stored under another instrument, if any. */
export function stagedNewsOfAnotherInstrument(tx: ISql) {
  return tx<{ row_index: number }[]>`
    select s.row_index
    from ingest_staging s
    join news n on n.id = s.id and n.instrument_id <> s.instrument_id
    order by s.row_index
    limit 1
  `;
}

/**
 * Upserts the staged news on id. A stored item is rewritten (and its
 * updated_at moved) only when a value differs, so posting the same rows again
 * changes nothing and counts them unchanged; created_at keeps the first
 * receipt. `instrumentIds` are the instruments whose news changed.
 */
export async function upsertStagedNews(tx: ISql): Promise<{ rows: number; inserted: number; updated: number; instrumentIds: string[] }> {
  const upsert = stagedUpsert(tx, {
    table: 'news',
    key: ['id'],
    kept: ['instrument_id'],
    updated: ['event_class', 'headline', 'source', 'url', 'published_at', 'is_company_confirmed'],
    setsUpdatedAt: true,
    returning: ['instrument_id'],
  });
  const [row] = await tx<{ rows: number; inserted: number; updated: number; instrument_ids: string[] }[]>`
    with upserted as (${upsert})
    select
      (select count(*)::int from ingest_staging) as rows,
      count(*) filter (where inserted)::int as inserted,
      count(*) filter (where not inserted)::int as updated,
      coalesce(array_agg(distinct instrument_id::text), '{}') as instrument_ids
    from upserted
  `;
  return { rows: row.rows, inserted: row.inserted, updated: row.updated, instrumentIds: row.instrument_ids };
}
