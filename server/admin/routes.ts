import { timingSafeEqual, createHash } from 'node:crypto';
import express, { type RequestHandler, type Router } from 'express';
import { z } from 'zod';
import type { Database } from '../db/database.ts';
import { AppError } from '../http/errors.ts';
import { parse } from '../http/validate.ts';
import { routePrefix } from '../http/observe.ts';
import { IdParamsSchema, UuidSchema } from '../http/params.ts';
import * as accounts from '../accounts/service.ts';
import * as keys from '../keys/service.ts';
import { ENVIRONMENTS, SCOPES } from '../keys/scopes.ts';
import { formatOf } from '../ingest/body.ts';
import type { IngestKind } from '../ingest/kind.ts';
import { ingestBody } from '../ingest/service.ts';
import { UploadSlots, type UploadLimits } from '../ingest/uploads.ts';
import type { StatusReport } from './status.ts';

const AccountCreateSchema = z.strictObject({ name: z.string().trim().min(1).max(200).describe('account display name') });

const KeyCreateSchema = z.strictObject({
  accountId: UuidSchema,
  environment: z.enum(ENVIRONMENTS).describe('sandbox keys start pk_test_, live keys pk_live_'),
  scopes: z.array(z.enum(SCOPES, { error: `each scope must be one of ${SCOPES.join(', ')}` })).min(1, 'grant at least one scope'),
  name: z.string().trim().min(1).max(200).describe('what the key is for'),
});

const KeyListSchema = z.strictObject({ accountId: UuidSchema.optional() });
const UsageSchema = z.strictObject({
  accountId: UuidSchema,
  days: z.coerce.number().int().min(1).max(400).default(30).describe('day windows to report'),
});

function sha256(s: string) {
  return createHash('sha256').update(s).digest();
}

/** Admin bearer token check; hashes first so the comparison is constant-time whatever the lengths. */
export function requireAdminToken(token: string): RequestHandler {
  const expected = sha256(token);
  return (req, _res, next) => {
    const presented = keys.parseBearer(req.get('authorization'));
    if (presented === null) throw new AppError('missing_api_key', 'send the admin token as "Authorization: Bearer <ADMIN_TOKEN>"');
    if (!timingSafeEqual(sha256(presented), expected)) throw new AppError('invalid_api_key', 'the admin token is not recognised');
    next();
  };
}

export interface AdminDeps {
  db: Database;
  status: () => Promise<StatusReport>;
  ingestKinds: Record<string, IngestKind<unknown>>;
  uploads: UploadLimits;
  /** Routes an area adds beyond plain ingest (e.g. coverage checks). */
  extraRoutes?: (router: Router) => void;
}

export function adminRouter(deps: AdminDeps): Router {
  const router = express.Router();
  router.use(routePrefix('/admin/v1'));
  const json = express.json({ limit: '1mb' });
  const { db } = deps;

  router.get('/status', async (_req, res) => {
    res.json({ data: await deps.status() });
  });

  router.post('/accounts', json, async (req, res) => {
    const body = parse(AccountCreateSchema, req.body, 'body');
    res.status(201).json({ data: await accounts.createAccount(db, body.name) });
  });

  router.get('/accounts', async (_req, res) => {
    res.json({ data: await accounts.listAccounts(db) });
  });

  router.post('/keys', json, async (req, res) => {
    const body = parse(KeyCreateSchema, req.body, 'body');
    res.status(201).json({ data: await keys.createKey(db, body) });
  });

  router.get('/keys', async (req, res) => {
    const query = parse(KeyListSchema, req.query);
    res.json({ data: await keys.listKeys(db, query.accountId) });
  });

  router.post('/keys/:id/revoke', async (req, res) => {
    const { id } = parse(IdParamsSchema, req.params, 'params');
    res.json({ data: await keys.revokeKey(db, id) });
  });

  router.get('/usage', async (req, res) => {
    const query = parse(UsageSchema, req.query);
    res.json({ data: await keys.readUsage(db, query.accountId, query.days) });
  });

  const uploads = new UploadSlots(deps.uploads);
  for (const [path, kind] of Object.entries(deps.ingestKinds)) {
    router.post(`/${path}`, async (req, res) => {
      const format = formatOf(req.get('content-type'));
      res.json({ data: await uploads.run(req, (body) => ingestBody(db, kind, body, format)) });
    });
  }
  deps.extraRoutes?.(router);
  return router;
}
