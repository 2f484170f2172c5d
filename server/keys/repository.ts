import type { Sql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import type { Environment, Scope } from './scopes.ts';

export interface KeyRow {
  id: string;
  accountId: string;
  name: string;
  prefix: string;
  environment: Environment;
  scopes: string[];
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  /** The key this one replaced, when it was made by rolling that key. */
  rolledFrom: string | null;
}

interface ApiKeyRow {
  id: string;
  account_id: string;
  name: string;
  prefix: string;
  environment: Environment;
  scopes: string[];
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
  rolled_from: string | null;
}

/** The columns of ApiKeyRow: never key_hash, which stays in the database. */
const API_KEY_COLUMNS = ['id', 'account_id', 'name', 'prefix', 'environment', 'scopes', 'created_at', 'last_used_at', 'revoked_at', 'rolled_from'];

function toKeyRow(r: ApiKeyRow): KeyRow {
  return {
    id: r.id,
    accountId: r.account_id,
    name: r.name,
    prefix: r.prefix,
    environment: r.environment,
    scopes: r.scopes,
    createdAt: r.created_at.toISOString(),
    lastUsedAt: r.last_used_at?.toISOString() ?? null,
    revokedAt: r.revoked_at?.toISOString() ?? null,
    rolledFrom: r.rolled_from,
  };
}

/**
 * `where id = … [and account_id = …]`: with an account, a key of another
 * account is not found, exactly as a key that does not exist (the
 * dashboard's ownership rule lives in the query, not in its callers).
 */
function keyOf(sql: Sql, id: string, accountId: string | undefined) {
  return sql`where id = ${id} ${accountId ? sql`and account_id = ${accountId}` : sql``}`;
}

export async function insertKey(
  sql: Sql,
  key: { accountId: string; name: string; environment: Environment; scopes: Scope[]; hash: Buffer; prefix: string },
): Promise<KeyRow> {
  const [row] = await sql<ApiKeyRow[]>`
    insert into api_keys (account_id, name, environment, scopes, key_hash, prefix)
    values (${key.accountId}, ${key.name}, ${key.environment}, ${key.scopes}, ${key.hash}, ${key.prefix})
    returning ${sql(API_KEY_COLUMNS)}
  `;
  return toKeyRow(row);
}

export async function listKeys(sql: Sql, accountId: string | undefined): Promise<KeyRow[]> {
  const rows = await sql<ApiKeyRow[]>`
    select ${sql(API_KEY_COLUMNS)}
    from api_keys
    ${accountId ? sql`where account_id = ${accountId}` : sql``}
    order by created_at, id
  `;
  return rows.map(toKeyRow);
}

export async function keyById(sql: Sql, id: string, accountId: string | undefined): Promise<KeyRow | null> {
  const [row] = await sql<ApiKeyRow[]>`
    select ${sql(API_KEY_COLUMNS)}
    from api_keys
    ${keyOf(sql, id, accountId)}
  `;
  return row ? toKeyRow(row) : null;
}

export async function revokeKey(sql: Sql, id: string, accountId: string | undefined): Promise<KeyRow | null> {
  const [row] = await sql<ApiKeyRow[]>`
    update api_keys
    set revoked_at = coalesce(revoked_at, now())
    ${keyOf(sql, id, accountId)}
    returning ${sql(API_KEY_COLUMNS)}
  `;
  return row ? toKeyRow(row) : null;
}

/**
 * A new key with the name, environment and scopes of active key `id`, in one
 * statement; null when `id` is not an active key (of `accountId`, when given).
 */
export async function insertRolledKey(sql: Sql, id: string, accountId: string | undefined, key: { hash: Buffer; prefix: string }): Promise<KeyRow | null> {
  const [row] = await sql<ApiKeyRow[]>`
    insert into api_keys (account_id, name, environment, scopes, key_hash, prefix, rolled_from)
    select account_id, name, environment, scopes, ${key.hash}, ${key.prefix}, id
    from api_keys
    ${keyOf(sql, id, accountId)}
      and revoked_at is null
    returning ${sql(API_KEY_COLUMNS)}
  `;
  return row ? toKeyRow(row) : null;
}

/**
 * The key lookup every request makes: one probe of the unique index on
 * key_hash. bench/bare-server.ts runs this same statement as the one-lookup
 * baseline of the platform-overhead benchmark.
 */
export function keyByHash(sql: Sql, hash: Buffer) {
  return sql<{ id: string; account_id: string; environment: Environment; scopes: string[]; revoked_at: Date | null }[]>`
    select id, account_id, environment, scopes, revoked_at
    from api_keys
    where key_hash = ${hash}
  `;
}

export interface ResolvedKey {
  id: string;
  accountId: string;
  environment: Environment;
  revoked: boolean;
  /** Whether the key holds the route's scope (exact match). */
  hasScope: boolean;
  /**
   * Requests admitted in the current minute and UTC day, this one included;
   * null when the request was not counted (the key is revoked, lacks the
   * scope, or a window is full).
   */
  admitted: WindowCounts | null;
  /** Database clock, seconds since the epoch: windows are aligned to it. */
  nowEpoch: number;
}

export interface WindowCounts {
  minuteCount: number;
  dayCount: number;
}

export type WindowLimits = Record<Environment, { perMinute: number; perDay: number }>;

interface ResolvedKeyRow {
  id: string;
  account_id: string;
  environment: Environment;
  revoked: boolean;
  has_scope: boolean;
  minute_count: number | null;
  day_count: number | null;
  now_epoch: number;
}

/**
 * One round trip per request: resolve the key by hash and, only when it is
 * active and holds the route's scope, admit the request against both windows
 * in a single upsert of the account's row for the day. The row lock makes the
 * check-and-increment atomic across every API process: a second request of
 * the account waits for the first one's commit, then its WHERE sees the
 * first one's count. A rejected key or scope costs no quota, and a request
 * refused for rate is not admitted (the caller records it as refused).
 * Data-modifying CTEs run exactly once whether or not the outer select reads them.
 *
 * One row per account and day is not what limits an account's rate: on 2
 * cores this statement alone ran 7,000 to 9,000 times a second for one
 * account (pgbench, 10 clients; 10,000 to 16,000 spread over ten accounts),
 * while the whole service answered 1,100 to 2,300 requests a second, and as
 * many for one account as for ten (the platform-overhead benchmark measures
 * both).
 */
export async function resolveKeyAndAdmit(sql: Sql, hash: Buffer, scope: Scope, limits: WindowLimits): Promise<ResolvedKey | null> {
  const [row] = await timed(
    'resolve_key_and_admit',
    sql<ResolvedKeyRow[]>`
      with key as (
        ${keyByHash(sql, hash)}
      ),
      admitted as (
        insert into usage_counters as u (account_id, environment, day, admitted, minute_start, minute_admitted)
        select account_id, environment, (now() at time zone 'UTC')::date, 1, date_trunc('minute', now(), 'UTC'), 1
        from key
        where revoked_at is null
          and ${scope} = any (scopes)
        on conflict (account_id, environment, day) do update set
          admitted = u.admitted + 1,
          minute_start = excluded.minute_start,
          minute_admitted = case when u.minute_start = excluded.minute_start then u.minute_admitted + 1 else 1 end
        where u.admitted < case u.environment when 'live' then ${limits.live.perDay}::int else ${limits.sandbox.perDay}::int end
          and (
            u.minute_start <> excluded.minute_start
            or u.minute_admitted < case u.environment when 'live' then ${limits.live.perMinute}::int else ${limits.sandbox.perMinute}::int end
          )
        returning admitted, minute_admitted
      )
      select
        key.id,
        key.account_id,
        key.environment,
        key.revoked_at is not null as revoked,
        ${scope} = any (key.scopes) as has_scope,
        admitted.minute_admitted as minute_count,
        admitted.admitted as day_count,
        extract(epoch from now())::float8 as now_epoch
      from key
      left join admitted on true
    `,
  );
  if (!row) return null;
  return {
    id: row.id,
    accountId: row.account_id,
    environment: row.environment,
    revoked: row.revoked,
    hasScope: row.has_scope,
    admitted: row.day_count === null || row.minute_count === null ? null : { minuteCount: row.minute_count, dayCount: row.day_count },
    nowEpoch: row.now_epoch,
  };
}

/** Counts a request refused for rate and returns the windows as they stand. */
export async function recordRefused(sql: Sql, accountId: string, environment: Environment): Promise<WindowCounts> {
  const [row] = await timed(
    'record_refused',
    sql<{ day_count: number; minute_count: number }[]>`
      update usage_counters
      set refused = refused + 1
      where account_id = ${accountId}
        and environment = ${environment}
        and day = (now() at time zone 'UTC')::date
      returning
        admitted as day_count,
        case when minute_start = date_trunc('minute', now(), 'UTC') then minute_admitted else 0 end as minute_count
    `,
  );
  return { minuteCount: row?.minute_count ?? 0, dayCount: row?.day_count ?? 0 };
}

export async function recordLastUsed(sql: Sql, ids: string[], times: string[]): Promise<void> {
  await timed(
    'record_last_used',
    sql`
      update api_keys as k
      set last_used_at = greatest(k.last_used_at, u.used_at)
      from unnest(${ids}::uuid[], ${times}::timestamptz[]) as u (id, used_at)
      where k.id = u.id
    `,
  );
}

export interface UsageDay {
  environment: Environment;
  day: string;
  admitted: number;
  refused: number;
  /** The minute window as of the day's last admitted request. */
  minuteStart: string;
  minuteAdmitted: number;
}

/** The account's usage counters from `sinceDay` on, per environment, newest day first. */
export async function usageByAccount(sql: Sql, accountId: string, sinceDay: string): Promise<UsageDay[]> {
  const rows = await sql<{ environment: Environment; day: string; admitted: number; refused: number; minute_start: Date; minute_admitted: number }[]>`
    select environment, day, admitted, refused, minute_start, minute_admitted
    from usage_counters
    where account_id = ${accountId}
      and day >= ${sinceDay}::date
    order by environment, day desc
  `;
  return rows.map((r) => ({
    environment: r.environment,
    day: r.day,
    admitted: r.admitted,
    refused: r.refused,
    minuteStart: r.minute_start.toISOString(),
    minuteAdmitted: r.minute_admitted,
  }));
}
