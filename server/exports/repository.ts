import type { ISql, Sql } from '../db/sql.ts';
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

const jobColumns = (sql: ISql) => sql`
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

/** The deployment's link signing key (sql/027), read from the primary. */
export async function selectLinkKey(sql: ISql): Promise<Buffer> {
  const [row] = await sql<{ secret: Buffer }[]>`
    select secret
    from export_link_key
  `;
  if (!row) throw new Error('export_link_key has no row: sql/027_export_jobs.sql makes it, and nothing deletes it');
  return row.secret;
}

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

/** Deletes a finished job of the account with its files and chunks. */
export async function deleteJob(sql: ISql, accountId: string, id: string): Promise<boolean> {
  const rows = await sql`
    delete from export_jobs
    where id = ${id}
      and account_id = ${accountId}
      and status in ('ready', 'failed', 'cancelled', 'expired')
    returning id
  `;
  return rows.length > 0;
}

/**
 * Takes the oldest job a runner may start: queued, or running under a lease
 * that ran out (its process died or stalled). The advisory lock serialises
 * the takes of every process, so the count of jobs running under a live
 * lease is exact when it is compared with `maxRunning`; SKIP LOCKED passes
 * over a job whose row another transaction holds (a cancel, a chunk write of
 * its last holder). `token` is new for each take: a process that lost its
 * lease can no longer write as the job's holder.
 */
export async function claimJob(sql: Sql, token: string, leaseMs: number, maxRunning: number): Promise<JobRow | undefined> {
  return sql.begin(async (tx) => {
    await tx`
      select pg_advisory_xact_lock(41, 0)
    `;
    const [row] = await tx<JobRow[]>`
      with running as (
        select count(*) as n
        from export_jobs
        where status = 'running'
          and leased_until > now()
      ),
      next as (
        select id as next_id
        from export_jobs
        where status = 'queued'
          or (status = 'running' and leased_until <= now())
        order by accepted_at, id
        limit 1
        for update skip locked
      )
      update export_jobs
      set status = 'running',
        leased_by = ${token},
        leased_until = now() + ${leaseMs} * interval '1 millisecond',
        attempts = attempts + 1,
        started_at = now()
      from next, running
      where export_jobs.id = next.next_id
        and running.n < ${maxRunning}
      returning ${jobColumns(tx)}
    `;
    return row;
  });
}

/** Renews the lease; false when the job is no longer this holder's (cancelled, deleted, or taken after the lease ran out). */
export async function renewLease(sql: ISql, id: string, token: string, leaseMs: number): Promise<boolean> {
  const rows = await sql`
    update export_jobs
    set leased_until = now() + ${leaseMs} * interval '1 millisecond'
    where id = ${id}
      and leased_by = ${token}
      and status = 'running'
    returning id
  `;
  return rows.length > 0;
}

/**
 * Locks the job's row for the caller's transaction if `token` still holds
 * it; false otherwise. A take (claimJob) waits for that transaction, so what
 * a holder writes under the lock is never mixed with what the next holder
 * writes.
 */
export async function holdsJob(sql: ISql, id: string, token: string): Promise<boolean> {
  const rows = await sql`
    select id
    from export_jobs
    where id = ${id}
      and leased_by = ${token}
      and status = 'running'
    for no key update
  `;
  return rows.length > 0;
}

/** Names of the job's finished files. */
export async function finishedFileNames(sql: ISql, id: string): Promise<Set<string>> {
  const rows = await sql<{ name: string }[]>`
    select name
    from export_files
    where job_id = ${id}
  `;
  return new Set(rows.map((r) => r.name));
}

/** Deletes the chunks of the job's files that were never finished (a holder died while writing them). */
export async function deleteUnfinishedChunks(sql: ISql, id: string): Promise<void> {
  await sql`
    delete from export_chunks c
    where c.job_id = ${id}
      and not exists (
        select 1
        from export_files f
        where f.job_id = c.job_id
          and f.name = c.name
      )
  `;
}

export async function deleteChunksOf(sql: ISql, id: string, name: string): Promise<void> {
  await sql`
    delete from export_chunks
    where job_id = ${id}
      and name = ${name}
  `;
}

export async function insertChunk(sql: ISql, chunk: { jobId: string; name: string; seq: number; bodyOffset: number; data: Buffer }): Promise<void> {
  await sql`
    insert into export_chunks (job_id, name, seq, body_offset, data)
    values (${chunk.jobId}, ${chunk.name}, ${chunk.seq}, ${chunk.bodyOffset}, ${chunk.data})
  `;
}

/** Records a finished file and the job's progress with it. */
export async function insertFile(sql: ISql, id: string, file: FileRow & { ordinal: number }): Promise<void> {
  await sql`
    insert into export_files (job_id, name, ordinal, rows, bytes, head_bytes, sha256)
    values (${id}, ${file.name}, ${file.ordinal}, ${file.rows}, ${file.bytes}, ${file.headBytes}, ${file.sha256})
  `;
  await sql`
    update export_jobs
    set files_done = files_done + 1,
      bytes = bytes + ${file.bytes}
    where id = ${id}
  `;
}

export async function setPlan(sql: ISql, id: string, token: string, plan: { filesTotal: number; instrumentsTotal: number }): Promise<void> {
  await sql`
    update export_jobs
    set files_total = ${plan.filesTotal},
      instruments_total = ${plan.instrumentsTotal}
    where id = ${id}
      and leased_by = ${token}
  `;
}

/** Progress as the holder counts it: rows of the finished files and of the file being written, instruments of that file. */
export async function setProgress(sql: ISql, id: string, token: string, progress: { instrumentsDone: number; rowsDone: number }): Promise<void> {
  await sql`
    update export_jobs
    set instruments_done = ${progress.instrumentsDone},
      rows_done = ${progress.rowsDone}
    where id = ${id}
      and leased_by = ${token}
  `;
}

export async function setActionSetVersions(sql: ISql, id: string, token: string, versions: Record<string, number>): Promise<void> {
  await sql`
    update export_jobs
    set action_set_versions = coalesce(action_set_versions, '{}'::jsonb) || ${sql.json(versions)}
    where id = ${id}
      and leased_by = ${token}
  `;
}

/** Ends the job as its holder: ready (with when its files expire) or failed (with why). */
export async function finishJob(
  sql: ISql,
  id: string,
  token: string,
  end: { status: 'ready' | 'failed'; ttlHours: number; error: string | null },
): Promise<boolean> {
  const rows = await sql`
    update export_jobs
    set status = ${end.status},
      finished_at = now(),
      expires_at = case when ${end.status} = 'ready' then now() + ${end.ttlHours} * interval '1 hour' end,
      error = ${end.error},
      leased_by = null,
      leased_until = null
    where id = ${id}
      and leased_by = ${token}
      and status = 'running'
    returning id
  `;
  return rows.length > 0;
}

/** Gives the job back at once (a process stopping), so that another process takes it without waiting for the lease to run out. */
export async function releaseLease(sql: ISql, id: string, token: string): Promise<void> {
  await sql`
    update export_jobs
    set leased_until = now()
    where id = ${id}
      and leased_by = ${token}
      and status = 'running'
  `;
}

/** Deletes a job's files and chunks and stops counting their bytes against the quota (the job's row stays, as its status says why). */
export async function deleteJobBytes(sql: ISql, id: string): Promise<void> {
  await sql`
    delete from export_chunks
    where job_id = ${id}
  `;
  await sql`
    delete from export_files
    where job_id = ${id}
  `;
  await sql`
    update export_jobs
    set bytes = 0
    where id = ${id}
  `;
}

/**
 * Marks ready jobs past expires_at expired and deletes their files, in one
 * transaction; returns how many. Cancelled and failed jobs lose theirs when
 * they end (cancelJob's and finishJob's callers), so only expiry is swept.
 */
export async function sweepExpired(sql: Sql): Promise<number> {
  return sql.begin(async (tx) => {
    const expired = await tx<{ id: string }[]>`
      update export_jobs
      set status = 'expired',
        bytes = 0
      where status = 'ready'
        and expires_at <= now()
      returning id
    `;
    if (!expired.length) return 0;
    const ids = expired.map((r) => r.id);
    await tx`
      delete from export_chunks
      where job_id = any(${ids}::uuid[])
    `;
    await tx`
      delete from export_files
      where job_id = any(${ids}::uuid[])
    `;
    return ids.length;
  });
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

/** A file of a job, with what decides who may read it. */
export async function selectFile(
  sql: ISql,
  id: string,
  name: string,
): Promise<(FileRow & { accountId: string; status: ExportStatus; expiresAt: Date | null }) | undefined> {
  const [row] = await sql<(FileRow & { accountId: string; status: ExportStatus; expiresAt: Date | null })[]>`
    select
      j.account_id as "accountId",
      j.status,
      j.expires_at as "expiresAt",
      f.name,
      f.rows::float8 as rows,
      f.bytes::float8 as bytes,
      f.head_bytes as "headBytes",
      f.sha256
    from export_files f
    join export_jobs j on j.id = f.job_id
    where f.job_id = ${id}
      and f.name = ${name}
  `;
  return row;
}

/**
 * The chunks of a file that hold bytes from `start` (inclusive) to `end`
 * (exclusive) of the file, in order, at most `limit` of them, each with its
 * offset in the file. Chunk 0 is the head (head_bytes long) at offset 0; the
 * others follow it at head_bytes + body_offset.
 */
export async function selectChunks(
  sql: ISql,
  file: { jobId: string; name: string; headBytes: number },
  start: number,
  end: number,
  limit: number,
): Promise<{ offset: number; data: Buffer }[]> {
  return sql<{ offset: number; data: Buffer }[]>`
    select
      (case when seq = 0 then 0 else ${file.headBytes} + body_offset end)::float8 as "offset",
      data
    from export_chunks
    where job_id = ${file.jobId}
      and name = ${file.name}
      and (case when seq = 0 then 0 else ${file.headBytes} + body_offset end) < ${end}
      and (case when seq = 0 then 0 else ${file.headBytes} + body_offset end) + octet_length(data) > ${start}
    order by seq
    limit ${limit}
  `;
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
