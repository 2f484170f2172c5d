import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { countedStagedUpsert, lockUploads, stagedUpsert } from '../ingest/repository.ts';
import { effectiveSymbol } from '../instruments/repository.ts';
import type { EarningsReport } from './schema.ts';
import type { SourceScope } from '../core/freshness.ts';

export interface ReportFilter {
  /** Days of report_date, inclusive; absent for no bound. */
  from?: string;
  to?: string;
  instrumentId?: string;
}

/**
 * The reports in the window, earliest report_date first; ties by the symbol
 * (nulls last), then instrument id, fiscal year and fiscal period, so the
 * order is total. One statement: each row's symbol is resolved as of its own
 * report_date by a lateral probe of the instrument's symbol history
 * (instruments/repository.ts, effectiveSymbol).
 */
export async function selectReports(sql: ISql, f: ReportFilter): Promise<EarningsReport[]> {
  return timed(
    'select_earnings_reports',
    sql<EarningsReport[]>`
      select r.instrument_id as "instrumentId", e.symbol, i.display_name as "displayName", r.report_date as "reportDate", r.session,
        r.fiscal_period as "fiscalPeriod", r.fiscal_year as "fiscalYear", r.status, r.source
      from earnings_reports r
      join instruments i on i.id = r.instrument_id
      ${effectiveSymbol(sql, sql`r.report_date`)}
      where true
        ${f.instrumentId ? sql`and r.instrument_id = ${f.instrumentId}` : sql``}
        ${f.from ? sql`and r.report_date >= ${f.from}::date` : sql``}
        ${f.to ? sql`and r.report_date <= ${f.to}::date` : sql``}
      order by r.report_date, e.symbol nulls last, r.instrument_id, r.fiscal_year, r.fiscal_period
    `,
  );
}

/** The report dates a source must have within for a read (earnings/freshness.ts), both days included. */
export interface ReportDateWindow {
  since: string;
  until: string;
}

/**
 * For each of `sources`, in order, whether it has a report, of any
 * instrument, dated within the window: a range of
 * earnings_reports_report_date_idx bounded by the window.
 */
export async function sourcesReporting(sql: ISql, sources: string[], w: ReportDateWindow): Promise<boolean[]> {
  const rows = await timed(
    'earnings_sources_reporting',
    sql<{ reporting: boolean }[]>`
      select exists (
        select 1
        from earnings_reports p
        where p.source = s.source
          and p.report_date between ${w.since}::date and ${w.until}::date
      ) as reporting
      from unnest(${sources}::text[]) with ordinality as s (source, n)
      order by s.n
    `,
  );
  return rows.map((r) => r.reporting);
}

/**
 * The scope of a read without rows: the sources of the instrument's reports,
 * or every source when no instrument narrows the read. `covered`: there is
 * one; `publishing`: one of them has a report, of any instrument, dated within
 * the window.
 */
export async function scopeReporting(sql: ISql, instrumentId: string | undefined, w: ReportDateWindow): Promise<SourceScope> {
  const [row] = await timed(
    'earnings_scope_reporting',
    sql<SourceScope[]>`
      select
        exists (
          select 1
          from earnings_reports
          ${instrumentId ? sql`where instrument_id = ${instrumentId}` : sql``}
        ) as covered,
        exists (
          select 1
          from earnings_reports p
          where p.report_date between ${w.since}::date and ${w.until}::date
            ${instrumentId ? sql`and p.source in (select source from earnings_reports where instrument_id = ${instrumentId})` : sql``}
        ) as publishing
    `,
  );
  return row;
}

// Ingest: statements over the `ingest_staging` table of an earnings upload
// (earnings/ingest.ts), inside its transaction.

// Any constant: serialises earnings ingests, so two batches cannot both find
// a key absent and insert it under two different ids.
const EARNINGS_INGEST_LOCK = 7_311_020_009;

export const lockEarningsIngest = (tx: ISql) => lockUploads(tx, EARNINGS_INGEST_LOCK);

/** The first staged row whose id is stored for another instrument or fiscal period. */
export function stagedIdsOfAnotherReport(tx: ISql) {
  return tx<{ row_index: number }[]>`
    select s.row_index
    from ingest_staging s
    join earnings_reports r on r.id = s.id
    where (r.instrument_id, r.fiscal_year, r.fiscal_period) <> (s.instrument_id, s.fiscal_year, s.fiscal_period)
    order by s.row_index
    limit 1
  `;
}

/** The first staged row whose instrument and fiscal period are stored under another id. */
export function stagedReportsUnderAnotherId(tx: ISql) {
  return tx<{ row_index: number }[]>`
    select s.row_index
    from ingest_staging s
    join earnings_reports r on (r.instrument_id, r.fiscal_year, r.fiscal_period) = (s.instrument_id, s.fiscal_year, s.fiscal_period)
    where r.id <> s.id
    order by s.row_index
    limit 1
  `;
}

/**
 * Upserts the staged reports on id (which the checks before it have tied to
 * the natural key). A stored report is rewritten, and its updated_at moved,
 * only when its date, session, status or source differs, so posting the same
 * rows again counts them unchanged.
 */
export function upsertStagedReports(tx: ISql): Promise<{ rows: number; inserted: number; updated: number }> {
  return countedStagedUpsert(
    tx,
    stagedUpsert(tx, {
      table: 'earnings_reports',
      key: ['id'],
      kept: ['instrument_id', 'fiscal_year', 'fiscal_period'],
      updated: ['report_date', 'session', 'status', 'source'],
      setsUpdatedAt: true,
    }),
  );
}
