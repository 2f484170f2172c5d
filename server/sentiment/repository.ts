import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { countedStagedUpsert, stagedUpsert } from '../ingest/repository.ts';
import { lagReason, leadReason, type SentimentScore, type SourceLead, type SubjectClass } from './schema.ts';
import type { SourceScope } from '../core/freshness.ts';

interface ScoreRow {
  instrument_id: string;
  as_of_date: string;
  score: number;
  scale_min: number;
  scale_max: number;
  subject_class: SubjectClass;
  is_headline_only: boolean;
  source: string;
}

export interface ScoreFilter {
  /** asOfDate bounds, inclusive. */
  from?: string;
  to?: string;
  subjectClass?: SubjectClass;
  source?: string;
}

/** One instrument's scores, by asOfDate, then source, then subject class (the primary key's order). */
export async function selectScores(sql: ISql, instrumentId: string, f: ScoreFilter): Promise<SentimentScore[]> {
  const rows = await timed(
    'select_sentiment_scores',
    sql<ScoreRow[]>`
      select s.instrument_id, s.as_of_date, s.score, o.scale_min, o.scale_max, s.subject_class, s.is_headline_only, s.source
      from sentiment_scores s
      join sentiment_sources o on o.source = s.source
      where s.instrument_id = ${instrumentId}
        ${f.from ? sql`and s.as_of_date >= ${f.from}` : sql``}
        ${f.to ? sql`and s.as_of_date <= ${f.to}` : sql``}
        ${f.subjectClass ? sql`and s.subject_class = ${f.subjectClass}` : sql``}
        ${f.source ? sql`and s.source = ${f.source}` : sql``}
      order by s.as_of_date, s.source, s.subject_class
    `,
  );
  return rows.map((r) => ({
    instrumentId: r.instrument_id,
    asOfDate: r.as_of_date,
    score: r.score,
    scale: [r.scale_min, r.scale_max],
    subjectClass: r.subject_class,
    isHeadlineOnly: r.is_headline_only,
    source: r.source,
  }));
}

/** The days a source must have scored in for a read (sentiment/freshness.ts), both included. */
export interface ScoringWindow {
  since: string;
  until: string;
}

/** Whether the source `s.source` of the enclosing query scored the instrument, of the subject class when given, within the window. */
const scoredWithin = (sql: ISql, instrumentId: string, subjectClass: SubjectClass | undefined, w: ScoringWindow) => sql`
  exists (
    select 1
    from sentiment_scores p
    where p.instrument_id = ${instrumentId}
      and p.source = s.source
      and p.as_of_date between ${w.since}::date and ${w.until}::date
      ${subjectClass ? sql`and p.subject_class = ${subjectClass}` : sql``}
  )
`;

/** For each of `sources`, in order, whether it scored the instrument (of `subjectClass` when given) within the window: one probe of the primary key each. */
export async function sourcesScoring(
  sql: ISql,
  instrumentId: string,
  sources: string[],
  subjectClass: SubjectClass | undefined,
  w: ScoringWindow,
): Promise<boolean[]> {
  const rows = await timed(
    'sentiment_sources_scoring',
    sql<{ scoring: boolean }[]>`
      select ${scoredWithin(sql, instrumentId, subjectClass, w)} as scoring
      from unnest(${sources}::text[]) with ordinality as s (source, n)
      order by s.n
    `,
  );
  return rows.map((r) => r.scoring);
}

/**
 * The scope of a read without rows: the instrument's scores, of the read's
 * source and subject class when given. `covered`: there is one; `publishing`:
 * one is dated within the window. Both stop at the first row they find.
 */
export async function scopeScoring(sql: ISql, instrumentId: string, f: Pick<ScoreFilter, 'source' | 'subjectClass'>, w: ScoringWindow): Promise<SourceScope> {
  const scope = sql`
    from sentiment_scores
    where instrument_id = ${instrumentId}
      ${f.source ? sql`and source = ${f.source}` : sql``}
      ${f.subjectClass ? sql`and subject_class = ${f.subjectClass}` : sql``}
  `;
  const [row] = await timed(
    'sentiment_scope_scoring',
    sql<SourceScope[]>`
      select
        exists (select 1 ${scope}) as covered,
        exists (select 1 ${scope} and as_of_date between ${w.since}::date and ${w.until}::date) as publishing
    `,
  );
  return row;
}

// Ingest: statements over the `ingest_staging` table of a sentiment upload
// (sentiment/ingest.ts), inside its transaction.

/** The first staged row whose scale differs from an earlier row's of the same source. */
export function stagedScalesDifferingInBatch(tx: ISql) {
  return tx<{ row_index: number }[]>`
    select row_index
    from (
      select row_index, scale_min, scale_max,
        first_value(scale_min) over w as first_min,
        first_value(scale_max) over w as first_max
      from ingest_staging
      window w as (partition by source order by row_index)
    ) s
    where (scale_min, scale_max) is distinct from (first_min, first_max)
    order by row_index
    limit 1
  `;
}

/**
 * Records the scale of each staged source not stored yet. Run after
 * stagedScalesDifferingInBatch, so each source has one staged scale. A source
 * another upload is recording at the same moment waits for it, and
 * stagedScalesOtherThanStored then sees the scale that upload stored.
 */
export async function insertStagedSources(tx: ISql): Promise<void> {
  await tx`
    insert into sentiment_sources (source, scale_min, scale_max)
    select distinct source, scale_min, scale_max
    from ingest_staging
    on conflict (source) do nothing
  `;
}

/** The first staged row whose scale differs from its source's stored one, with that scale. */
export function stagedScalesOtherThanStored(tx: ISql) {
  return tx<{ row_index: number; scale_min: number; scale_max: number }[]>`
    select s.row_index, o.scale_min, o.scale_max
    from ingest_staging s
    join sentiment_sources o on o.source = s.source
    where (s.scale_min, s.scale_max) is distinct from (o.scale_min, o.scale_max)
    order by s.row_index
    limit 1
  `;
}

/** Upserts the staged scores on their key; a stored score is rewritten only when a value differs. */
export function upsertStagedScores(tx: ISql) {
  return countedStagedUpsert(
    tx,
    stagedUpsert(tx, {
      table: 'sentiment_scores',
      key: ['instrument_id', 'as_of_date', 'source', 'subject_class'],
      updated: ['score', 'is_headline_only'],
      setsUpdatedAt: true,
    }),
  );
}

// Source leads (sentiment/derive.ts).

/** Whether any of `instrumentIds` has a score: only then do its adjusted closes feed the leads. */
export async function anyScoresOf(sql: ISql, instrumentIds: string[]): Promise<boolean> {
  const [row] = await sql<{ found: boolean }[]>`
    select exists (select 1 from sentiment_scores where instrument_id = any (${instrumentIds}::uuid[])) as found
  `;
  return row.found;
}

/** Serialises derivations of the leads: each reads every score and rewrites every lead, so the last to start writes last. */
export async function lockSourceLeads(tx: ISql): Promise<void> {
  await tx`select pg_advisory_xact_lock(hashtext('sentiment_source_leads'))`;
}

export interface ScoreSeriesRow {
  instrument_id: string;
  source: string;
  subject_class: SubjectClass;
  /** Days since 1970-01-01 and the scores, in one order, not necessarily by date. */
  days: number[];
  scores: number[];
}

/**
 * Every stored score, one row per (instrument, source, subject class). The
 * aggregates carry no ORDER BY (PostgreSQL 15 would sort each group once per
 * ordered aggregate); both consume the group's rows in the same order, so
 * they stay aligned, and the caller sorts each series by day.
 */
export function selectScoreSeries(sql: ISql) {
  return timed(
    'select_sentiment_score_series',
    sql<ScoreSeriesRow[]>`
      select instrument_id, source, subject_class,
        array_agg(as_of_date - date '1970-01-01') as days,
        array_agg(score) as scores
      from sentiment_scores
      group by instrument_id, source, subject_class
      order by source, subject_class, instrument_id
    `,
  );
}

/**
 * Each scored instrument's first and last score day, as the relation
 * (instrument_id, first_day, last_day) whose span of sessions the leads read
 * (prices/daily-bars.ts, readSessionSpan).
 */
export function scoredDays(sql: ISql): postgres.Fragment {
  return sql`
    select instrument_id, min(as_of_date) as first_day, max(as_of_date) as last_day
    from sentiment_scores
    group by instrument_id
  `;
}

export interface LeadRow {
  source: string;
  subject_class: SubjectClass;
  best_lag_days: number | null;
  peak_correlation: number | null;
  sample_size: number | null;
  is_promotion_eligible: boolean;
  correlations: (number | null)[];
  sample_sizes: number[];
  instruments: number;
  first_as_of_date: string;
  last_as_of_date: string;
}

const LEAD_VALUES = [
  'best_lag_days',
  'peak_correlation',
  'sample_size',
  'is_promotion_eligible',
  'correlations',
  'sample_sizes',
  'instruments',
  'first_as_of_date',
  'last_as_of_date',
] as const;

const LEAD_COLUMNS: (keyof LeadRow)[] = ['source', 'subject_class', ...LEAD_VALUES];

/** Upserts the derived leads on (source, subject class); a stored lead is rewritten only when a value differs. */
export async function upsertLeads(tx: ISql, rows: LeadRow[]): Promise<{ inserted: number; updated: number }> {
  if (!rows.length) return { inserted: 0, updated: 0 };
  // No alias for the table: postgres.js reads `as` before a helper as a select list.
  const stored = LEAD_VALUES.map((c, i) => (i ? tx`, sentiment_source_leads.${tx(c)}` : tx`sentiment_source_leads.${tx(c)}`));
  const excluded = LEAD_VALUES.map((c, i) => (i ? tx`, excluded.${tx(c)}` : tx`excluded.${tx(c)}`));
  const assignments = LEAD_VALUES.map((c) => tx`${tx(c)} = excluded.${tx(c)},`);
  const result = await tx<{ inserted: boolean }[]>`
    insert into sentiment_source_leads ${tx(rows, LEAD_COLUMNS)}
    on conflict (source, subject_class) do update set
      ${assignments}
      updated_at = now()
    where (${stored}) is distinct from (${excluded})
    returning (xmax = 0) as inserted
  `;
  const inserted = result.filter((r) => r.inserted).length;
  return { inserted, updated: result.length - inserted };
}

/** Deletes the leads of (source, subject class) pairs not in `kept`; the count deleted. */
export async function deleteLeadsExcept(tx: ISql, kept: { source: string; subjectClass: string }[]): Promise<number> {
  const result = await tx`
    delete from sentiment_source_leads l
    where not exists (
      select 1
      from unnest(${kept.map((k) => k.source)}::text[], ${kept.map((k) => k.subjectClass)}::text[]) as k (source, subject_class)
      where k.source = l.source and k.subject_class = l.subject_class
    )
  `;
  return result.count;
}

export interface LeadFilter {
  source?: string;
  subjectClass?: SubjectClass;
}

/** The stored leads, by source, then subject class. */
export async function selectLeads(sql: ISql, f: LeadFilter): Promise<SourceLead[]> {
  const rows = await timed(
    'select_sentiment_source_leads',
    sql<LeadRow[]>`
      select source, subject_class, ${sql([...LEAD_VALUES])}
      from sentiment_source_leads
      where true
        ${f.source ? sql`and source = ${f.source}` : sql``}
        ${f.subjectClass ? sql`and subject_class = ${f.subjectClass}` : sql``}
      order by source, subject_class
    `,
  );
  return rows.map((r) => {
    // The reasons follow from the stored figures (schema.ts), so they are not stored. The driver reads a NULL
    // element of a double precision[] as NaN, and the worker never stores NaN: NaN here is a null correlation.
    const correlationByLag = r.correlations.map((stored, lagDays) => {
      const correlation = stored === null || Number.isNaN(stored) ? null : stored;
      const sampleSize = r.sample_sizes[lagDays];
      return { lagDays, correlation, sampleSize, reason: lagReason(correlation, sampleSize) };
    });
    return {
      source: r.source,
      subjectClass: r.subject_class,
      bestLagDays: r.best_lag_days,
      peakCorrelation: r.peak_correlation,
      sampleSize: r.sample_size,
      reason: leadReason(correlationByLag),
      isPromotionEligible: r.is_promotion_eligible,
      correlationByLag,
      instruments: r.instruments,
      firstAsOfDate: r.first_as_of_date,
      lastAsOfDate: r.last_as_of_date,
    };
  });
}
