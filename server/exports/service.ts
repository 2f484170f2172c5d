import { randomUUID } from 'node:crypto';
import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import { AppError, notFound } from '../core/errors.ts';
import { bindingOf, isCursorId, isCursorInstant, type ListCursors } from '../core/cursor.ts';
import type { ExportLinks } from './links.ts';
import {
  accountUse,
  cancelJob,
  deleteJob,
  insertJob,
  lockAccountExports,
  selectFiles,
  selectJob,
  selectJobPage,
  type FileRow,
  type JobRow,
} from './repository.ts';
import { deleteJobBytes, selectChunks, selectFile } from './files-repository.ts';
import type { ExportRequestInput, NormalisedRequest } from './schema.ts';

export type ExportsConfig = Pick<Config, 'EXPORTS_RUNNING_PER_ACCOUNT' | 'EXPORTS_QUOTA_BYTES'>;

export interface ExportsService {
  db: Database;
  links: ExportLinks;
  cursors: ListCursors;
  config: ExportsConfig;
}

/** Seconds a POST refused for the account's running jobs is told to wait: about how long a small export takes. */
const RUNNING_RETRY_AFTER_S = 30;

/** The request as the job keeps it: ids distinct and sorted, defaults written out, asOf pinned to `acceptedAt` when absent. */
export function normalise(input: ExportRequestInput, acceptedAt: Date): NormalisedRequest {
  return {
    dataset: input.dataset,
    instrumentIds: input.instrumentIds ? [...new Set<string>(input.instrumentIds)].sort() : null,
    from: input.from,
    to: input.to,
    adjusted: input.adjusted ?? false,
    asOf: input.asOf?.input ?? acceptedAt.toISOString(),
    includeBackfilled: input.includeBackfilled ?? false,
    interval: input.interval ?? null,
    format: input.format,
    compression: input.compression ?? 'none',
  };
}

/**
 * Accepts a job for the account, or refuses it: a cut-off after now (its
 * files could change as later bars arrive, so they could not be
 * reproduced), EXPORTS_RUNNING_PER_ACCOUNT jobs already queued or running,
 * or EXPORTS_QUOTA_BYTES already stored. The checks and the insert hold the
 * account's advisory lock, so POSTs at once from any processes are counted
 * exactly.
 */
export async function createExport(s: ExportsService, accountId: string, input: ExportRequestInput, baseUrl: string) {
  const acceptedAt = new Date();
  if (input.asOf && input.asOf.instant.getTime() > acceptedAt.getTime()) {
    throw new AppError('invalid_request', 'invalid body', {
      asOf: [
        `must not be after the time of the request (${acceptedAt.toISOString()}): an export reads bars as known at a past instant, so that it can be repeated`,
      ],
    });
  }
  const request = normalise(input, acceptedAt);
  const row = await s.db.run((sql) =>
    sql.begin(async (tx) => {
      await lockAccountExports(tx, accountId);
      const use = await accountUse(tx, accountId);
      if (use.active >= s.config.EXPORTS_RUNNING_PER_ACCOUNT) {
        throw new AppError(
          'rate_limited',
          `the account has ${use.active} export jobs queued or running, the most it may (EXPORTS_RUNNING_PER_ACCOUNT); retry once one has finished, or cancel one`,
          { concurrentJobs: [`${use.active} queued or running; at most ${s.config.EXPORTS_RUNNING_PER_ACCOUNT}`] },
          { 'Retry-After': String(RUNNING_RETRY_AFTER_S) },
        );
      }
      if (use.bytes >= s.config.EXPORTS_QUOTA_BYTES) {
        const wait = use.nextExpiry ? Math.max(1, Math.ceil((use.nextExpiry.getTime() - acceptedAt.getTime()) / 1000)) : RUNNING_RETRY_AFTER_S;
        throw new AppError(
          'rate_limited',
          'the account stores as many export bytes as its quota allows; delete a finished export (DELETE /v1/exports/{id}) or wait until one expires (Retry-After)',
          { storedBytes: [`${use.bytes} stored; at most ${s.config.EXPORTS_QUOTA_BYTES}`] },
          { 'Retry-After': String(wait) },
        );
      }
      return insertJob(tx, { id: randomUUID(), accountId, request, acceptedAt });
    }),
  );
  return exportView(s, row, [], baseUrl);
}

/** A job as the API shows it: its manifest with signed links once ready. */
async function exportView(s: ExportsService, job: JobRow, files: FileRow[], baseUrl: string) {
  const ready = job.status === 'ready' && job.expiresAt !== null;
  return {
    id: job.id,
    status: job.status,
    request: job.request,
    actionSetVersions: job.actionSetVersions,
    acceptedAt: job.acceptedAt.toISOString(),
    startedAt: job.startedAt?.toISOString() ?? null,
    finishedAt: job.finishedAt?.toISOString() ?? null,
    expiresAt: job.expiresAt?.toISOString() ?? null,
    progress: {
      filesDone: job.filesDone,
      filesTotal: job.filesTotal,
      instrumentsDone: job.instrumentsDone,
      instrumentsTotal: job.instrumentsTotal,
      rowsDone: job.rowsDone,
    },
    bytes: job.bytes,
    error: job.error,
    files: ready
      ? await Promise.all(
          files.map(async (f) => ({
            name: f.name,
            rows: f.rows,
            bytes: f.bytes,
            sha256: f.sha256.toString('hex'),
            // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- `ready` checked expiresAt
            url: `${baseUrl}/v1/exports/${job.id}/files/${f.name}?${await s.links.query(job.id, f.name, job.expiresAt!)}`,
          })),
        )
      : [],
  };
}

export async function readExport(s: ExportsService, accountId: string, id: string, baseUrl: string) {
  const { job, files } = await s.db.run(async (sql) => {
    const job = await selectJob(sql, accountId, id);
    return { job, files: job ? await selectFiles(sql, [job.id]) : [] };
  });
  // Another account's job is absent, not forbidden: its existence is not told.
  if (!job) throw notFound('export');
  return exportView(s, job, files, baseUrl);
}

export async function listExports(s: ExportsService, accountId: string, q: { limit: number; cursor?: string }, baseUrl: string) {
  const binding = bindingOf([]);
  const after = q.cursor
    ? s.cursors.read(q.cursor, 'exports', binding, ([acceptedAt, id]) => (isCursorInstant(acceptedAt) && isCursorId(id) ? { acceptedAt, id } : null))
    : undefined;
  const { rows, files } = await s.db.run(async (sql) => {
    const rows = await selectJobPage(sql, accountId, q.limit + 1, after);
    return {
      rows,
      files: await selectFiles(
        sql,
        rows.slice(0, q.limit).map((r) => r.id),
      ),
    };
  });
  const truncated = rows.length > q.limit;
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  return {
    data: await Promise.all(
      page.map((job) =>
        exportView(
          s,
          job,
          files.filter((f) => f.jobId === job.id),
          baseUrl,
        ),
      ),
    ),
    limit: q.limit,
    truncated,
    nextCursor: truncated && last ? s.cursors.make('exports', binding, [last.key, last.id]) : null,
  };
}

/**
 * Cancels a queued or running job (its runner stops at its next
 * instrument; what it wrote is deleted with the cancel), or deletes a finished
 * one with its files. Returns the job as it stands after: cancelled, or as
 * it was before it was deleted.
 */
export async function deleteExport(s: ExportsService, accountId: string, id: string, baseUrl: string) {
  const outcome = await s.db.run((sql) =>
    sql.begin(async (tx) => {
      const before = await selectJob(tx, accountId, id);
      if (!before) return null;
      // The cancel waits for a chunk its runner is writing (that holds the job's row), so nothing is written after the delete.
      if (await cancelJob(tx, accountId, id)) {
        await deleteJobBytes(tx, [id]);
        return { job: await selectJob(tx, accountId, id), deleted: false };
      }
      // Finished, or finished since `before` was read (a running job can end before the cancel takes its row): deleted as it stood then.
      const deleted = await deleteJob(tx, accountId, id);
      return { job: deleted ?? before, deleted: deleted !== undefined };
    }),
  );
  if (!outcome?.job) throw notFound('export');
  return { job: await exportView(s, outcome.job, [], baseUrl), deleted: outcome.deleted };
}

export interface FileAccess {
  /** The account of the API key, when the request carried one. */
  accountId?: string;
  /** A signed link's query, when the request carried one instead. */
  link?: { expires: string; signature: string };
}

/**
 * A ready job's file, for the account that owns it or for a link this
 * deployment signed for it and that has not expired. A file of another
 * account, of a job not ready, or that does not exist is 404 alike; a link
 * that does not verify or has expired is 403 invalid_signature.
 */
export async function openExportFile(s: ExportsService, access: FileAccess, id: string, name: string) {
  if (access.link) {
    const check = await s.links.check(id, name, access.link.expires, access.link.signature);
    if (check !== 'valid') {
      throw new AppError(
        'invalid_signature',
        check === 'expired'
          ? "the link has expired; the export's files expire with it"
          : "the link's signature does not verify; take the url from the job's manifest unchanged",
        { signature: [check === 'expired' ? 'has expired' : 'does not verify'] },
      );
    }
  }
  const file = await s.db.run((sql) => selectFile(sql, id, name));
  if (!file || file.status !== 'ready' || (!access.link && file.accountId !== access.accountId)) throw notFound('export file');
  return {
    file,
    /** Reads bytes [start, end) of the file, a few chunks per unit of work, handing each piece to `write` before the next read. */
    read: async (start: number, end: number, write: (bytes: Buffer) => Promise<void>) => {
      const where = { jobId: id, name, headBytes: file.headBytes };
      for (let at = start; at < end;) {
        // Two chunks (2 MiB) per read: a slow reader holds no connection while it reads them.
        const chunks = await s.db.run((sql) => selectChunks(sql, where, at, end, 2));
        if (!chunks.length) throw new Error(`export ${id} file ${name} is missing bytes from ${at}`);
        for (const c of chunks) {
          const from = Math.max(at, c.offset) - c.offset;
          const to = Math.min(end, c.offset + c.data.length) - c.offset;
          if (to > from) await write(c.data.subarray(from, to));
          at = c.offset + to;
        }
      }
    },
  };
}
