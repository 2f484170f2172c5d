import type { Request } from 'express';
import { z } from 'zod';
import type { Area } from '../http/area.ts';
import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import type { ListCursors } from '../core/cursor.ts';
import { NoQuerySchema } from '../core/params.ts';
import { freshness } from '../core/freshness.ts';
import { defineRoute } from '../http/route.ts';
import { sendFileBytes } from '../http/file-body.ts';
import { contentTypeOf, FILE_MEDIA_TYPES } from './file-kinds.ts';
import type { PricesDeps } from '../prices/routes.ts';
import type { Logger } from '../observability/logger.ts';
import { ExportLinks } from './links.ts';
import { selectSigningKey } from '../db/signing-keys.ts';
import {
  ExportFileParamsSchema,
  ExportFileQuerySchema,
  ExportJobSchema,
  ExportListMetaSchema,
  ExportListQuerySchema,
  ExportMetaSchema,
  ExportParamsSchema,
  ExportRequestSchema,
} from './schema.ts';
import * as service from './service.ts';

const TAG = 'Exports';

export const createExportRoute = defineRoute({
  method: 'post',
  path: '/exports',
  operationId: 'createExport',
  tag: TAG,
  summary: 'Start an export job',
  description:
    'Validates the request as the bulk read does, pins asOf to the instant of acceptance when absent, and queues the job; any serving process runs it. An account has at most EXPORTS_RUNNING_PER_ACCOUNT jobs queued or running and stores at most EXPORTS_QUOTA_BYTES of files: beyond either, 429 rate_limited with Retry-After (details.concurrentJobs or details.storedBytes).',
  scope: 'prices:read',
  query: NoQuerySchema,
  body: ExportRequestSchema,
  response: {
    status: 202,
    description: 'the job, queued',
    headers: { Location: "the job's URL, /v1/exports/{id}" },
    data: ExportJobSchema,
    meta: ExportMetaSchema,
  },
  errors: [],
});

export const listExportsRoute = defineRoute({
  method: 'get',
  path: '/exports',
  operationId: 'listExports',
  tag: TAG,
  summary: "The account's export jobs, newest first",
  description: 'Every job of the key’s account that has not been deleted, newest first, a page at a time (meta.nextCursor).',
  scope: 'prices:read',
  query: ExportListQuerySchema,
  response: { status: 200, description: 'the jobs', data: z.array(ExportJobSchema), meta: ExportListMetaSchema },
  errors: [],
});

export const readExportRoute = defineRoute({
  method: 'get',
  path: '/exports/:id',
  operationId: 'getExport',
  tag: TAG,
  summary: 'An export job: status, progress and, once ready, its manifest',
  description: "Another account's job is 404, as a job that does not exist. The manifest's links are signed and work without the API key until expiresAt.",
  scope: 'prices:read',
  params: ExportParamsSchema,
  query: NoQuerySchema,
  response: { status: 200, description: 'the job', data: ExportJobSchema, meta: ExportMetaSchema },
  errors: ['not_found'],
});

export const deleteExportRoute = defineRoute({
  method: 'delete',
  path: '/exports/:id',
  operationId: 'deleteExport',
  tag: TAG,
  summary: 'Cancel a queued or running export, or delete a finished one and its files',
  description:
    'A queued or running job is cancelled (status cancelled; what it wrote is deleted by the sweep); a finished one (ready, failed, cancelled, expired) is deleted with its files, and a later read of it is 404.',
  scope: 'prices:read',
  params: ExportParamsSchema,
  query: NoQuerySchema,
  response: {
    status: 200,
    description: 'the job as cancelled, or as it was when it was deleted',
    data: z.strictObject({ job: ExportJobSchema, deleted: z.boolean().describe('true: the job and its files are gone; false: it was cancelled') }),
    meta: ExportMetaSchema,
  },
  errors: ['not_found'],
});

export const exportFileRoute = defineRoute({
  method: 'get',
  path: '/exports/:id/files/:name',
  operationId: 'getExportFile',
  tag: TAG,
  summary: "An export file's bytes, whole or a range",
  description:
    "With the API key of the job's account, or with the manifest's signed link (expires and signature) and no key. ETag is the file's SHA-256; one byte range is served as 206 (resume a cut download with Range, or curl -C -), a range past the end is 416. A compressed CSV is its compressed bytes (application/zstd, application/gzip), not a content coding.",
  scope: 'prices:read',
  signedLinks: true,
  params: ExportFileParamsSchema,
  query: ExportFileQuerySchema,
  response: {
    status: 200,
    description: 'the file',
    file: FILE_MEDIA_TYPES,
  },
  errors: ['not_found', 'invalid_signature', 'range_not_satisfiable'],
});

/** What the area's handlers need (the wiring's AppDeps provides it). */
export interface ExportsDeps {
  db: Database;
  cursors: ListCursors;
  config: Pick<Config, 'EXPORTS_RUNNING_PER_ACCOUNT' | 'EXPORTS_QUOTA_BYTES' | 'EXPORTS_DOWNLOADS_PER_ACCOUNT' | 'EXPORTS_DOWNLOADS_MAX' | 'PUBLIC_BASE_URL'>;
  logger: Logger;
  downloadSlots: PricesDeps['downloadSlots'];
}

// A job is read from the primary as it stands: its freshness is that of an empty set of stale inputs.
const meta = () => ({ asOf: new Date().toISOString(), source: 'mds-exports' as const, ...freshness<never>() });

export const exportsArea: Area<ExportsDeps> = {
  routes: [createExportRoute, listExportsRoute, readExportRoute, deleteExportRoute, exportFileRoute],
  mount(routes, { db, cursors, config, logger, downloadSlots }) {
    // Open downloads, each reading 2 MiB per unit of work from the primary: counted per account and in all, as the bulk reads are.
    const fileSlots = downloadSlots('/v1/exports/:id/files/:name', { perAccount: config.EXPORTS_DOWNLOADS_PER_ACCOUNT, total: config.EXPORTS_DOWNLOADS_MAX });
    const s: service.ExportsService = { db, cursors, config, links: new ExportLinks(() => db.run((sql) => selectSigningKey(sql, 'export_link_key'))) };
    // The manifest's links name the origin clients reach: PUBLIC_BASE_URL, else the one this request came to.
    const baseOf = (req: Request) => config.PUBLIC_BASE_URL ?? `${req.protocol}://${req.get('host') ?? 'localhost'}`;
    // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- a scoped route's scope check ran before the handler and set the key's auth
    const accountOf = (res: { locals: { auth?: { accountId: string } } }) => res.locals.auth!.accountId;

    routes.handle(createExportRoute, async ({ body }, res, req) => {
      const data = await service.createExport(s, accountOf(res), body, baseOf(req));
      res.setHeader('Location', `/v1/exports/${data.id}`);
      return { data, meta: meta() };
    });
    routes.handle(listExportsRoute, async ({ query }, res, req) => {
      const { data, ...page } = await service.listExports(s, accountOf(res), query, baseOf(req));
      return { data, meta: { ...meta(), ...page } };
    });
    routes.handle(readExportRoute, async ({ params }, res, req) => ({
      data: await service.readExport(s, accountOf(res), params.id, baseOf(req)),
      meta: meta(),
    }));
    routes.handle(deleteExportRoute, async ({ params }, res, req) => ({
      data: await service.deleteExport(s, accountOf(res), params.id, baseOf(req)),
      meta: meta(),
    }));
    routes.handle(exportFileRoute, async ({ params, query }, res, req) => {
      const link = query.signature !== undefined ? { expires: query.expires ?? '0', signature: query.signature } : undefined;
      const { file, read } = await service.openExportFile(s, link ? { link } : { accountId: accountOf(res) }, params.id, params.name);
      // A download by signed link carries no key, so it counts against the job's account, as one by key does.
      const slot = await fileSlots.admit(file.accountId, () => {
        logger.info(
          { requestId: res.locals.requestId, route: '/v1/exports/:id/files/:name' },
          'download cut: its slot went to an account with fewer downloads open',
        );
        res.destroy();
      });
      try {
        return await sendFileBytes(
          req,
          res,
          { size: file.bytes, etag: `"${file.sha256.toString('hex')}"`, contentType: contentTypeOf(file.name), read },
          file.name,
          slot,
        );
      } finally {
        slot.release();
      }
    });
  },
};
