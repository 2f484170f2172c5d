import { hash, randomBytes } from 'node:crypto';
import type { Database } from '../db/database.ts';
import * as accounts from '../accounts/repository.ts';
import type { Admissions } from './admission.ts';
import * as repo from './repository.ts';
import { KEY_PREFIX, type Environment, type Scope } from '../core/scopes.ts';
import type { AuthContext } from '../core/auth-context.ts';
import { AppError, notFound } from '../core/errors.ts';

// 32 random bytes = 256 bits of secret, base64url-encoded to 43 characters.
const KEY_PATTERN = /^pk_(test|live)_[A-Za-z0-9_-]{43}$/;
const DISPLAY_PREFIX_LENGTH = 12;

export function hashApiKey(key: string): Buffer {
  return hash('sha256', key, 'buffer');
}

export function generateApiKey(environment: Environment): { key: string; hash: Buffer; prefix: string } {
  const key = KEY_PREFIX[environment] + randomBytes(32).toString('base64url');
  return { key, hash: hashApiKey(key), prefix: key.slice(0, DISPLAY_PREFIX_LENGTH) };
}

export async function createKey(db: Database, input: { accountId: string; environment: Environment; scopes: Scope[]; name: string }) {
  const generated = generateApiKey(input.environment);
  const row = await db.run(async (sql) => {
    if (!(await accounts.accountExists(sql, input.accountId))) throw notFound('account');
    return repo.insertKey(sql, {
      ...input,
      scopes: [...new Set(input.scopes)],
      hash: generated.hash,
      prefix: generated.prefix,
    });
  });
  return createdKey(row, generated.key);
}

// The full key leaves the service exactly once, in what createKey or rollKey returns.
function createdKey(row: repo.KeyRow, key: string) {
  const { id, prefix, environment, scopes, name, createdAt, rolledFrom } = row;
  return { id, key, prefix, environment, scopes, name, createdAt, rolledFrom };
}

export type CreatedKey = ReturnType<typeof createdKey>;

/**
 * Every function below takes an optional `accountId`: the admin API and the
 * CLI act for the operator and pass none; the dashboard passes its signed-in
 * account, and a key of any other account is then `not_found`.
 */
export const listKeys = (db: Database, accountId?: string) => db.run((sql) => repo.listKeys(sql, accountId));

export async function getKey(db: Database, id: string, accountId?: string) {
  const row = await db.run((sql) => repo.keyById(sql, id, accountId));
  if (!row) throw notFound('key');
  return row;
}

export async function revokeKey(db: Database, id: string, accountId?: string) {
  const row = await db.run((sql) => repo.revokeKey(sql, id, accountId));
  if (!row) throw notFound('key');
  return row;
}

/**
 * Rolling a key: a new key with the old one's name, environment and scopes,
 * naming the old one as `rolledFrom`. The old key stays active until it is
 * revoked, so traffic can move over while both keys' lastUsedAt are watched.
 */
export async function rollKey(db: Database, id: string, accountId?: string): Promise<CreatedKey> {
  const old = await getKey(db, id, accountId);
  if (old.revokedAt) throw new AppError('invalid_request', 'a revoked key cannot be rolled', { id: ['the key is revoked'] });
  const generated = generateApiKey(old.environment);
  const row = await db.run((sql) => repo.insertRolledKey(sql, id, accountId, generated));
  // Revoked between the two statements.
  if (!row) throw new AppError('invalid_request', 'a revoked key cannot be rolled', { id: ['the key is revoked'] });
  return createdKey(row, generated.key);
}

/**
 * An account's requests admitted and refused per UTC day over the last
 * `days` days (today included), and the latest minute window, per
 * environment; only live usage is billable.
 */
export async function readUsage(db: Database, accountId: string, days: number) {
  const sinceDay = new Date(Date.now() - (days - 1) * 86_400_000).toISOString().slice(0, 10);
  const rows = await db.run(async (sql) => {
    if (!(await accounts.accountExists(sql, accountId))) throw notFound('account');
    return repo.usageByAccount(sql, accountId, sinceDay);
  });
  const windowOf = (environment: Environment) => {
    const own = rows.filter((r) => r.environment === environment);
    return {
      days: own.map((r) => ({ day: r.day, admitted: r.admitted, refused: r.refused })),
      latestMinute: own[0] ? { minuteStart: own[0].minuteStart, admitted: own[0].minuteAdmitted } : null,
    };
  };
  return { accountId, billable: ['live'], usage: { sandbox: windowOf('sandbox'), live: windowOf('live') } };
}

export type { WindowLimits } from './repository.ts';

/** `Bearer <key>` → the key; anything else is "missing or unparseable". */
export function parseBearer(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}

/**
 * Resolves the key against the database on every call (no cache: revocation is
 * effective on the next request), checks the scope, then the quota windows.
 */
export async function authorize(admissions: Admissions, authorization: string | undefined, scope: Scope): Promise<AuthContext> {
  const key = parseBearer(authorization);
  if (key === null) {
    throw new AppError('missing_api_key', 'send the API key as "Authorization: Bearer <key>"', {
      authorization: ['missing or not of the form "Bearer <key>"'],
    });
  }
  // A token that cannot be a key of ours is unknown without asking the database.
  const resolved = KEY_PATTERN.test(key) ? await admissions.admit(hashApiKey(key), scope) : null;
  if (!resolved) throw new AppError('invalid_api_key', 'the API key is not recognised');
  if (resolved.revoked) {
    // Its replacement is a key rolled from it that is still active (repository.resolveKeysAndAdmit).
    throw new AppError(
      'revoked_api_key',
      resolved.replaced ? 'the API key has been revoked; use its replacement' : 'the API key has been revoked, and no active key replaces it',
    );
  }
  if (!resolved.hasScope || resolved.counts === null) {
    throw new AppError('insufficient_scope', `this route needs the ${scope} scope`, { scope: [`requires ${scope}`] });
  }
  const limit = admissions.limits[resolved.environment];
  const now = resolved.nowEpoch;
  const counts = resolved.counts;
  const minuteLeft = limit.perMinute - counts.minuteCount;
  const dayLeft = limit.perDay - counts.dayCount;
  const minuteReset = 60 - (now % 60);
  const dayReset = 86_400 - (now % 86_400);
  if (!resolved.admitted) {
    // The window that refused: the minute's when it is full, else the day's.
    const [name, windowLimit, reset] = minuteLeft <= 0 || dayLeft > 0 ? ['minute', limit.perMinute, minuteReset] : ['day', limit.perDay, dayReset];
    const retryAfter = String(Math.max(1, Math.ceil(reset)));
    throw new AppError(
      'rate_limited',
      `${resolved.environment} ${name} allowance of ${windowLimit} requests is used up`,
      { [resolved.environment]: [`${name} limit ${windowLimit} reached`] },
      {
        'Retry-After': retryAfter,
        'RateLimit-Limit': String(windowLimit),
        'RateLimit-Remaining': '0',
        'RateLimit-Reset': retryAfter,
      },
    );
  }
  // Headers describe the window closest to its limit (the minute's on a tie).
  const dayTighter = dayLeft < minuteLeft;
  const rateLimit = {
    limit: dayTighter ? limit.perDay : limit.perMinute,
    remaining: Math.max(0, dayTighter ? dayLeft : minuteLeft),
    resetSeconds: Math.max(1, Math.ceil(dayTighter ? dayReset : minuteReset)),
  };
  return { keyId: resolved.id, accountId: resolved.accountId, environment: resolved.environment, rateLimit };
}

/**
 * lastUsedAt is written in batches (at most one write per flush interval), so
 * a busy key costs one UPDATE per second rather than one per request.
 */
export class LastUsedRecorder {
  /** Key id → the time of its latest request (ms since the epoch). */
  private pending = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  private readonly db: Database;
  private readonly intervalMs: number;

  constructor(db: Database, intervalMs = 1000) {
    this.db = db;
    this.intervalMs = intervalMs;
  }

  record(keyId: string, at = Date.now()): void {
    this.pending.set(keyId, at);
    this.timer ??= setTimeout(() => void this.flush(), this.intervalMs).unref();
  }

  async flush(): Promise<void> {
    this.timer = null;
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.db.run((sql) =>
        repo.recordLastUsed(
          sql,
          [...batch.keys()],
          [...batch.values()].map((ms) => new Date(ms).toISOString()),
        ),
      );
    } catch {
      // The database is away: keep the newest times for the next flush.
      for (const [id, at] of batch) if (!this.pending.has(id)) this.pending.set(id, at);
      this.timer ??= setTimeout(() => void this.flush(), this.intervalMs).unref();
    }
  }
}
