import { timingSafeEqual, createHash } from 'node:crypto';
import type { Request, RequestHandler, Response, Router } from 'express';
import { z } from 'zod';
import type { Database } from '../db/database.ts';
import { defineRoute } from '../http/route.ts';
import { adminRoutes } from '../http/router.ts';
import { ClientGoneError } from '../http/errors.ts';
import * as accounts from '../accounts/service.ts';
import * as keys from '../keys/service.ts';
import * as logins from '../dashboard/service.ts';
import type { PasswordHasher } from '../dashboard/password.ts';
import { encodingOf, formatOf, uploadBytes } from '../ingest/body.ts';
import type { IngestKind } from '../ingest/kind.ts';
import { ingestBody } from '../ingest/service.ts';
import { UploadSlots, type UploadLimits } from '../ingest/uploads.ts';
import { DerivedSchema, type Derived, type DeriveRequest } from '../ingest/derived.ts';
import type { DataChanges } from '../ingest/kind.ts';
import {
  AccountCreateSchema,
  AccountSchema,
  CreatedKeySchema,
  DashboardLoginSchema,
  InvitationCreateSchema,
  InvitationSchema,
  KeyCreateSchema,
  KeyListQuerySchema,
  KeySchema,
  PasswordSetSchema,
  StatusSchema,
  UsageQuerySchema,
  UsageReportSchema,
} from './schema.ts';
import type { StatusReport } from './status.ts';
import { AppError } from '../core/errors.ts';
import { IdParamsSchema, InstrumentIdSchema } from '../core/ids.ts';
import { NoQuerySchema } from '../core/params.ts';

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

const TAG_ACCESS = 'Accounts and keys';

export const statusRoute = defineRoute({
  method: 'get',
  path: '/status',
  operationId: 'getStatus',
  tag: 'Service',
  summary: 'Storage tier, migrations applied, worker pool and version',
  description:
    'Read when asked: the storage tier chosen the first time the migrations ran on the database, and when; ' +
    'the TimescaleDB version (null without the extension); every migration applied; the PostgreSQL server version; ' +
    "the worker pool's threads and queued tasks; this process's uptime and the service version.",
  query: NoQuerySchema,
  response: { status: 200, description: 'the status', data: StatusSchema },
  errors: [],
});

export const createAccountRoute = defineRoute({
  method: 'post',
  path: '/accounts',
  operationId: 'createAccount',
  tag: TAG_ACCESS,
  summary: 'Create an account',
  description:
    'A new account with a new id; names need not be unique. ' +
    'It has no keys until POST /keys makes one, and no dashboard login until POST /accounts/{id}/password or /accounts/{id}/invitations.',
  query: NoQuerySchema,
  body: AccountCreateSchema,
  response: { status: 201, description: 'the account', data: AccountSchema },
  errors: [],
});

export const listAccountsRoute = defineRoute({
  method: 'get',
  path: '/accounts',
  operationId: 'listAccounts',
  tag: TAG_ACCESS,
  summary: 'List accounts',
  description: 'Every account as stored now, with its id, name and creation time; its keys are listed by GET /keys?accountId=…, its requests by GET /usage.',
  query: NoQuerySchema,
  response: { status: 200, description: 'every account, oldest first', data: z.array(AccountSchema) },
  errors: [],
});

export const setPasswordRoute = defineRoute({
  method: 'post',
  path: '/accounts/:id/password',
  operationId: 'setDashboardPassword',
  tag: TAG_ACCESS,
  summary: "Set the account's dashboard login and password",
  description:
    'Replaces any earlier login, password and pending invitation of the account, and ends its dashboard sessions. ' +
    'An invitation (POST /accounts/{id}/invitations) lets the account holder choose the password instead.',
  params: IdParamsSchema,
  query: NoQuerySchema,
  body: PasswordSetSchema,
  response: { status: 200, description: 'the login', data: DashboardLoginSchema },
  errors: ['not_found'],
});

export const createInvitationRoute = defineRoute({
  method: 'post',
  path: '/accounts/:id/invitations',
  operationId: 'createDashboardInvitation',
  tag: TAG_ACCESS,
  summary: 'Invite the account holder to the dashboard: a link that sets the password once',
  description:
    'Replaces a pending invitation of the account. An invitation for the login of a holder who can sign in lets them choose a new password, ' +
    'the current one working until the link is used; one for another login is refused with 400 (`details.login`) while the account has such a holder, ' +
    "so no invitation ends a holder's access: POST /accounts/{id}/password sets a new login and password. " +
    'The link is in this answer only; the service keeps its hash.',
  params: IdParamsSchema,
  query: NoQuerySchema,
  body: InvitationCreateSchema,
  response: { status: 201, description: 'the invitation', data: InvitationSchema },
  errors: ['not_found'],
});

export const createKeyRoute = defineRoute({
  method: 'post',
  path: '/keys',
  operationId: 'createKey',
  tag: TAG_ACCESS,
  summary: 'Create an API key; the full key is in this answer only',
  description:
    'A sandbox (pk_test_) or live (pk_live_) key of the account, granting exactly the scopes listed (a repeated scope counts once). ' +
    "The service keeps only the key's SHA-256 hash and display prefix, so the key cannot be shown again: a lost key is rolled or revoked. " +
    'The key works from its next request. An unknown accountId is 404.',
  query: NoQuerySchema,
  body: KeyCreateSchema,
  response: { status: 201, description: 'the key', data: CreatedKeySchema },
  errors: ['not_found'],
});

export const listKeysRoute = defineRoute({
  method: 'get',
  path: '/keys',
  operationId: 'listKeys',
  tag: TAG_ACCESS,
  summary: 'List keys, without their secrets',
  description:
    'Every key, or those of accountId (none for an unknown account), oldest first: display prefix, environment, scopes, ' +
    'revokedAt and rolledFrom as stored now. lastUsedAt is written at most once a second per key, so it can lag a request by about a second.',
  query: KeyListQuerySchema,
  response: { status: 200, description: 'the keys', data: z.array(KeySchema) },
  errors: [],
});

export const revokeKeyRoute = defineRoute({
  method: 'post',
  path: '/keys/:id/revoke',
  operationId: 'revokeKey',
  tag: TAG_ACCESS,
  summary: 'Revoke a key, effective on its next request',
  description:
    'Every request looks its key up, with no cache, so the next request with it gets 401 revoked_api_key. ' +
    'Revoking a revoked key changes nothing and answers it with its first revokedAt. An unknown id is 404.',
  params: IdParamsSchema,
  query: NoQuerySchema,
  response: { status: 200, description: 'the revoked key', data: KeySchema },
  errors: ['not_found'],
});

export const rollKeyRoute = defineRoute({
  method: 'post',
  path: '/keys/:id/roll',
  operationId: 'rollKey',
  tag: TAG_ACCESS,
  summary: 'Roll a key: a new key with its name, environment and scopes; the full new key is in this answer only',
  description: 'The old key stays active until it is revoked; both keys show lastUsedAt, so traffic can be seen to move before the old one is revoked.',
  params: IdParamsSchema,
  query: NoQuerySchema,
  response: { status: 201, description: 'the new key', data: CreatedKeySchema },
  errors: ['not_found'],
});

export const usageRoute = defineRoute({
  method: 'get',
  path: '/usage',
  operationId: 'getUsage',
  tag: TAG_ACCESS,
  summary: "An account's request counts per environment, by UTC day, and its latest minute",
  description:
    'For each environment, as counted now: the requests admitted, and those refused with 429 for a full rate window, ' +
    'on each UTC day that had any, newest first, over the last `days` days including today; ' +
    'and the requests admitted in the latest minute window. Only live use is billable (`billable`). An unknown accountId is 404.',
  query: UsageQuerySchema,
  response: { status: 200, description: 'the counts', data: UsageReportSchema },
  errors: ['not_found'],
});

/** The admin upload route of one ingest kind. */
function ingestRoute(path: string, kind: IngestKind<unknown>) {
  return defineRoute({
    method: 'post',
    path: `/${path}`,
    operationId: `ingest_${path.replace(/[^A-Za-z0-9]+/g, '_')}`,
    tag: 'Ingest',
    summary: `Upload ${kind.label}`,
    description:
      'One transaction: every row is stored, or none is and the answer names the first bad row. A row already stored with the same values counts as unchanged.',
    query: NoQuerySchema,
    upload: {
      rows: kind.rowSchema,
      description:
        'a JSON array, NDJSON (application/x-ndjson) or CSV (text/csv) of rows, in UTF-8, as is or with Content-Encoding: gzip; each record at most 1 MiB',
    },
    response: {
      status: 200,
      description: 'what was stored, and what was derived again from it',
      data: kind.resultSchema.extend({
        derived: DerivedSchema.optional().describe('present when the upload changed data the service derives from; see POST /derive'),
      }),
    },
    errors: ['request_timeout', 'payload_too_large'],
  });
}

export const deriveRoute = defineRoute({
  method: 'post',
  path: '/derive',
  operationId: 'derive',
  tag: 'Ingest',
  summary: 'Derive again what the service computes from stored data',
  description:
    'Runs every derivation, each idempotent (a second run stores nothing new). ' +
    'Implied-volatility snapshots: one is due for each underlying and day with option quotes and no snapshot, ' +
    'or with a derived snapshot older than a quote recorded since; an ingested snapshot is never replaced. ' +
    'Event reactions: every news item of the instruments is measured again against their adjusted closes, ' +
    'and a reaction whose item no longer yields one is removed. ' +
    "Sentiment source leads: always derived whole, whatever instrumentIds says, since each pools every instrument's scores. " +
    'Uploads run the derivations that read what they changed themselves, after they commit ' +
    '(option uploads: snapshots; daily bars and corporate actions: reactions, and leads when the instruments have scores; ' +
    'news: reactions; sentiment: leads), and answer their counts as `derived`.',
  query: NoQuerySchema,
  body: z.strictObject({ instrumentIds: z.array(InstrumentIdSchema).min(1).max(500).optional().describe('only these instruments; omit for all') }),
  response: { status: 200, description: 'what was derived', data: DerivedSchema },
  errors: [],
});

const ACCESS_ROUTES = [
  statusRoute,
  createAccountRoute,
  listAccountsRoute,
  setPasswordRoute,
  createInvitationRoute,
  createKeyRoute,
  listKeysRoute,
  revokeKeyRoute,
  rollKeyRoute,
  usageRoute,
  deriveRoute,
];

/** Every admin route: the service's own, then each ingest kind's upload. */
export function adminRouteDefinitions(ingestKinds: Record<string, IngestKind<unknown>>) {
  const ingest = Object.fromEntries(Object.entries(ingestKinds).map(([path, kind]) => [path, ingestRoute(path, kind)]));
  return { all: [...ACCESS_ROUTES, ...Object.values(ingest)], ingest };
}

export interface AdminDeps {
  db: Database;
  /** Every derivation (server/wiring/derivations.ts), for the given instruments or all. */
  deriveAll: (request: DeriveRequest) => Promise<Derived>;
  /** The derivations that read what an upload changed. */
  deriveChanged: (changes: DataChanges) => Promise<Derived>;
  status: () => Promise<StatusReport>;
  ingestKinds: Record<string, IngestKind<unknown>>;
  uploads: UploadLimits;
  bodyLimit: string;
  /** Where account holders reach the public listener, for invitation links. */
  publicBaseUrl: string;
  /** How long an invitation link lasts when the request names no `validHours`. */
  invitationHours: number;
  passwords: PasswordHasher;
}

export function adminRouter(deps: AdminDeps): Router {
  const { db } = deps;
  const routes = adminRoutes(deps.bodyLimit);
  const definitions = adminRouteDefinitions(deps.ingestKinds);

  routes.handle(statusRoute, async () => ({ data: await deps.status() }));
  routes.handle(createAccountRoute, async ({ body }) => ({ data: await accounts.createAccount(db, body.name) }));
  routes.handle(listAccountsRoute, async () => ({ data: await accounts.listAccounts(db) }));
  routes.handle(setPasswordRoute, async ({ params, body }) => ({
    data: await logins.setPassword(db, deps.passwords, { accountId: params.id, ...body }),
  }));
  routes.handle(createInvitationRoute, async ({ params, body }) => {
    const validHours = body.validHours ?? deps.invitationHours;
    return { data: await logins.invite(db, { accountId: params.id, login: body.login, validHours }, deps.publicBaseUrl) };
  });
  routes.handle(createKeyRoute, async ({ body }) => ({ data: await keys.createKey(db, body) }));
  routes.handle(listKeysRoute, async ({ query }) => ({ data: await keys.listKeys(db, query.accountId) }));
  routes.handle(revokeKeyRoute, async ({ params }) => ({ data: await keys.revokeKey(db, params.id) }));
  routes.handle(rollKeyRoute, async ({ params }) => ({ data: await keys.rollKey(db, params.id) }));
  routes.handle(usageRoute, async ({ query }) => ({ data: await keys.readUsage(db, query.accountId, query.days) }));
  routes.handle(deriveRoute, async ({ body }) => ({ data: await deps.deriveAll({ instrumentIds: body.instrumentIds }) }));

  const uploads = new UploadSlots(deps.uploads);
  for (const [path, kind] of Object.entries(deps.ingestKinds)) {
    // The route declares an `upload`, not a `body`: the handler streams the request itself into the database (ingest/service.ts).
    routes.handle(definitions.ingest[path], async (_input, res, req) => {
      const format = formatOf(req.get('content-type'));
      const encoding = encodingOf(req.get('content-encoding'));
      const gone = clientGone(req, res);
      const { changes, ...stored } = await uploads.run(req, gone, (body) => ingestBody(db, kind, uploadBytes(body, encoding, format), format, gone));
      return { data: changes ? { ...stored, derived: await deps.deriveChanged(changes) } : stored };
    });
  }
  return routes.build(definitions.all);
}

/**
 * Aborts, with a ClientGoneError, when the request's connection closes before
 * its answer is sent or its body fails to arrive: an upload then stops and
 * rolls back instead of inflating, parsing and writing for no one. The request
 * line already logs such a request as aborted (http/observe.ts).
 */
function clientGone(req: Request, res: Response): AbortSignal {
  const controller = new AbortController();
  const abort = () => {
    if (!res.writableFinished) controller.abort(new ClientGoneError('the client left before its upload was answered'));
  };
  res.once('close', abort);
  req.on('error', abort);
  return controller.signal;
}
