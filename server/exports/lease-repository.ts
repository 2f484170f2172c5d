import type { ISql, Sql } from '../db/sql.ts';
import { jobColumns, type JobRow } from './repository.ts';
import { deleteJobBytes } from './files-repository.ts';

// The statements of a job's holder (runner.ts, job.ts): taking a job under a
// lease, renewing and giving it back, its plan and progress, its end, and the
// sweep of expired files.

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

/**
 * Marks ready jobs past expires_at expired and deletes their files, in one
 * transaction; returns how many. Cancelled and failed jobs lose theirs when
 * they end (cancelJob's and finishJob's callers), so only expiry is swept.
 */
export async function sweepExpired(sql: Sql): Promise<number> {
  return sql.begin(async (tx) => {
    const expired = await tx<{ id: string }[]>`
      update export_jobs
      set status = 'expired'
      where status = 'ready'
        and expires_at <= now()
      returning id
    `;
    if (!expired.length) return 0;
    await deleteJobBytes(
      tx,
      expired.map((r) => r.id),
    );
    return expired.length;
  });
}
