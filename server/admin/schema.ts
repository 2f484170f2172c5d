import { z } from 'zod';
import * as logins from '../dashboard/service.ts';
import { ENVIRONMENTS, SCOPES } from '../core/scopes.ts';
import { UuidSchema } from '../core/ids.ts';

// The admin API's request and response schemas (its routes are in routes.ts).

export const AccountCreateSchema = z.strictObject({ name: z.string().trim().min(1).max(200).describe('account display name') });

export const KeyCreateSchema = z.strictObject({
  accountId: UuidSchema,
  environment: z.enum(ENVIRONMENTS).describe('sandbox keys start pk_test_, live keys pk_live_'),
  scopes: z.array(z.enum(SCOPES, { error: `each scope must be one of ${SCOPES.join(', ')}` })).min(1, 'grant at least one scope'),
  name: z.string().trim().min(1).max(200).describe('what the key is for'),
});

export const PasswordSetSchema = z.strictObject({ login: logins.LoginSchema, password: logins.PasswordSchema });
export const InvitationCreateSchema = z.strictObject({
  login: logins.LoginSchema,
  validHours: z.int().min(1).max(720).optional().describe('how long the link can be used, once (default DASHBOARD_INVITATION_HOURS)'),
});

export const KeyListQuerySchema = z.strictObject({ accountId: UuidSchema.optional() });
export const UsageQuerySchema = z.strictObject({
  accountId: UuidSchema,
  days: z.coerce.number().int().min(1).max(400).default(30).describe('day windows to report'),
});

export const AccountSchema = z.strictObject({ id: z.string(), name: z.string(), createdAt: z.string() });
export const KeySchema = z.strictObject({
  id: z.string(),
  accountId: z.string(),
  name: z.string(),
  prefix: z.string().describe('the first characters of the key, for telling keys apart'),
  environment: z.enum(ENVIRONMENTS),
  scopes: z.array(z.enum(SCOPES)),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
  rolledFrom: z.string().nullable().describe('the key this one replaced, when it was made by rolling that key'),
});
export const CreatedKeySchema = z.strictObject({
  id: z.string(),
  key: z.string().describe('the full key: shown here only, once; the service keeps its hash'),
  prefix: z.string(),
  environment: z.enum(ENVIRONMENTS),
  scopes: z.array(z.enum(SCOPES)),
  name: z.string(),
  createdAt: z.string(),
  rolledFrom: z.string().nullable().describe('the key this one replaced, when it was made by rolling that key'),
});
export const DashboardLoginSchema = z.strictObject({ accountId: z.string(), login: z.string() });
export const InvitationSchema = z.strictObject({
  accountId: z.string(),
  login: z.string(),
  url: z.string().describe('the link to hand to the account holder: it sets the password once; shown here only'),
  expiresAt: z.string(),
});
const UsageWindowSchema = z.strictObject({
  days: z.array(z.strictObject({ day: z.string(), admitted: z.int().min(0), refused: z.int().min(0) })),
  latestMinute: z.strictObject({ minuteStart: z.string(), admitted: z.int().min(0) }).nullable(),
});
export const UsageReportSchema = z.strictObject({
  accountId: z.string(),
  billable: z.array(z.enum(ENVIRONMENTS)),
  usage: z.strictObject(Object.fromEntries(ENVIRONMENTS.map((e) => [e, UsageWindowSchema])) as Record<(typeof ENVIRONMENTS)[number], typeof UsageWindowSchema>),
});
export const StatusSchema = z.strictObject({
  storageTier: z.string(),
  timescaledbVersion: z.string().nullable(),
  tierDetectedAt: z.string(),
  migrations: z.array(z.strictObject({ version: z.int().min(1), name: z.string(), appliedAt: z.string() })),
  database: z.strictObject({ serverVersion: z.string() }),
  workerPool: z.strictObject({ threads: z.int().min(0), queueDepth: z.int().min(0) }),
  uptimeSeconds: z.int().min(0),
  version: z.string(),
});
