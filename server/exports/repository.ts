import type { ISql } from '../db/sql.ts';
import type { ExportStatus, NormalisedRequest } from './schema.ts';

/** A job as the service reads it, mapped once from its row. */
export interface JobRow {
  id: string;
  accountId: string;
  status: ExportStatus;
  request: NormalisedRequest;
  actionSetVersions: Record<string, number> | null;
  acceptedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  expiresAt: Date | null;
  filesTotal: number | null;
  filesDone: number;
  instrumentsTotal: number | null;
  instrumentsDone: number;
  rowsDone: number;
  bytes: number;
  error: string | null;
}

export interface FileRow {
  name: string;
  rows: number;
  bytes: number;
  headBytes: number;
  sha256: Buffer;
}

/** The columns of a JobRow, for the statements that return jobs. */
export const jobColumns = (sql: ISql) => sql`
  id,
  account_id as "accountId",
  status,
  request,
  action_set_versions as "actionSetVersions",
  accepted_at as "acceptedAt",
  started_at as "startedAt",
  finished_at as "finishedAt",
  expires_at as "expiresAt",
  files_total as "filesTotal",
  files_done as "filesDone",
  instruments_total as "instrumentsTotal",
  instruments_done as "instrumentsDone",
  rows_done::float8 as "rowsDone",
  bytes::float8 as "bytes",
  error
`;

/**
 * Serialises an account's job admissions (its transaction's end releases
 * it), so that two POSTs at once cannot both pass the per-account limit or
 * the quota. The key is the account's id hashed into advisory lock space 41.
 */
export async function lockAccountExports(sql: ISql, accountId: string): Promise<void> {
  await sql`
    select pg_advisory_xact_lock(41, hashtext(${accountId}))
  `;
}

/** What an account holds: jobs queued or running, bytes stored, and when its next stored bytes expire. */
export async function accountUse(sql: ISql, accountId: string): Promise<{ active: number; bytes: number; nextExpiry: Date | null }> {
  const [row] = await sql<{ active: number; bytes: number; nextExpiry: Date | null }[]>`
    select
      count(*) filter (where status in ('queued', 'running'))::int as active,
      coalesce(sum(bytes), 0)::float8 as bytes,
      min(expires_at) filter (where status = 'ready') as "nextExpiry"
    from export_jobs
    where account_id = ${accountId}
  `;
  return row;
}

export async function insertJob(sql: ISql, job: { id: string; accountId: string; request: NormalisedRequest; acceptedAt: Date }): Promise<JobRow> {
  const [row] = await sql<JobRow[]>`
    insert into export_jobs (id, account_id, status, request, accepted_at)
    values (${job.id}, ${job.accountId}, 'queued', ${sql.json(job.request)}, ${job.acceptedAt})
    returning ${jobColumns(sql)}
  `;
  return row;
}

export async function selectJob(sql: ISql, accountId: string, id: string): Promise<JobRow | undefined> {
  const [row] = await sql<JobRow[]>`
    select ${jobColumns(sql)}
    from export_jobs
    where id = ${id}
      and account_id = ${accountId}
  `;
  return row;
}

/** An account's jobs, newest first, after the cursor's position when given; `limit` rows at most. */
export async function selectJobPage(
  sql: ISql,
  accountId: string,
  limit: number,
  after: { acceptedAt: string; id: string } | undefined,
): Promise<(JobRow & { key: string })[]> {
  return sql<(JobRow & { key: string })[]>`
    select
      ${jobColumns(sql)},
      to_char(accepted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') as key
    from export_jobs
    where account_id = ${accountId}
      ${after ? sql`and (accepted_at, id) < (${after.acceptedAt}::timestamp at time zone 'UTC', ${after.id}::uuid)` : sql``}
    order by accepted_at desc, id desc
    limit ${limit}
  `;
}

/** The manifests of `jobIds`, each in file order. */
export async function selectFiles(sql: ISql, jobIds: string[]): Promise<(FileRow & { jobId: string })[]> {
  if (!jobIds.length) return [];
  return sql<(FileRow & { jobId: string })[]>`
    select
      job_id as "jobId",
      name,
      rows::float8 as rows,
      bytes::float8 as bytes,
      head_bytes as "headBytes",
      sha256
    from export_files
    where job_id = any(${jobIds}::uuid[])
    order by job_id, ordinal
  `;
}

/** Cancels a queued or running job of the account; its runner sees it at its next heartbeat or chunk. */
export async function cancelJob(sql: ISql, accountId: string, id: string): Promise<boolean> {
  const rows = await sql`
    update export_jobs
    set status = 'cancelled',
      finished_at = now(),
      leased_by = null,
      leased_until = null
    where id = ${id}
      and account_id = ${accountId}
      and status in ('queued', 'running')
    returning id
  `;
  return rows.length > 0;
}

/** Deletes a finished job of the account with its files and chunks; the job as it stood then, or undefined when none was deleted. */
export async function deleteJob(sql: ISql, accountId: string, id: string): Promise<JobRow | undefined> {
  const [row] = await sql<JobRow[]>`
    delete from export_jobs
    where id = ${id}
      and account_id = ${accountId}
      and status in ('ready', 'failed', 'cancelled', 'expired')
    returning ${jobColumns(sql)}
  `;
  return row;
}

/** Jobs by status, and the age of the oldest queued job in seconds (0 when none waits). */
export async function sampleJobs(sql: ISql): Promise<{ counts: Record<string, number>; oldestQueuedSeconds: number }> {
  const rows = await sql<{ status: string; n: number; oldest: number | null }[]>`
    select
      status,
      count(*)::int as n,
      extract(epoch from now() - min(accepted_at))::float8 as oldest
    from export_jobs
    group by status
  `;
  return {
    counts: Object.fromEntries(rows.map((r) => [r.status, r.n])),
    oldestQueuedSeconds: rows.find((r) => r.status === 'queued')?.oldest ?? 0,
  };
}

/**
 * The instruments an export reads, in id order: with `ids`, those of them
 * that exist; without, every instrument stored by `storedBy` (the job's
 * acceptance, so that an instrument added while the job waits or runs, or
 * before a process that died is replaced, does not change it); of
 * `assetClasses` when given.
 */
export async function exportInstruments(sql: ISql, q: { ids: string[] | null; storedBy: Date; assetClasses: readonly string[] | null }): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select id
    from instruments
    where ${q.ids ? sql`id = any(${q.ids}::uuid[])` : sql`created_at <= ${q.storedBy}`}
      ${q.assetClasses ? sql`and asset_class = any(${q.assetClasses as string[]})` : sql``}
    order by id
  `;
  return rows.map((r) => r.id);
}
