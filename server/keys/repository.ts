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
}

const iso = (d: unknown) => (d instanceof Date ? d.toISOString() : null);

function toKeyRow(r: Record<string, unknown>): KeyRow {
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    name: r.name as string,
    prefix: r.prefix as string,
    environment: r.environment as Environment,
    scopes: r.scopes as string[],
    createdAt: iso(r.created_at)!,
    lastUsedAt: iso(r.last_used_at),
    revokedAt: iso(r.revoked_at),
  };
}

export async function insertKey(
  sql: Sql,
  key: { accountId: string; name: string; environment: Environment; scopes: Scope[]; hash: Buffer; prefix: string },
): Promise<KeyRow> {
  const [row] = await sql`
    insert into api_keys (account_id, name, environment, scopes, key_hash, prefix)
    values (${key.accountId}, ${key.name}, ${key.environment}, ${key.scopes}, ${key.hash}, ${key.prefix})
    returning *
  `;
  return toKeyRow(row);
}

export async function listKeys(sql: Sql, accountId: string | undefined): Promise<KeyRow[]> {
  const rows = await sql`
    select *
    from api_keys
    ${accountId ? sql`where account_id = ${accountId}` : sql``}
    order by created_at, id
  `;
  return rows.map(toKeyRow);
}

export async function revokeKey(sql: Sql, id: string): Promise<KeyRow | null> {
  const [row] = await sql`
    update api_keys
    set revoked_at = coalesce(revoked_at, now())
    where id = ${id}
    returning *
  `;
  return row ? toKeyRow(row) : null;
}

export interface ResolvedKey {
  id: string;
  accountId: string;
  environment: Environment;
  scopes: string[];
  revoked: boolean;
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

/**
 * One round trip per request: resolve the key by hash and, only when it is
 * active and holds the route's scope, admit the request against both windows
 * in a single upsert. The row lock makes the check-and-increment atomic across
 * every API process. A rejected key or scope costs no quota, and a request
 * refused for rate is not admitted (the caller records it as refused).
 * Data-modifying CTEs run exactly once whether or not the outer select reads them.
 */
export async function resolveKeyAndAdmit(sql: Sql, hash: Buffer, scope: Scope, limits: WindowLimits): Promise<ResolvedKey | null> {
  const [row] = await timed(
    'resolve_key_and_admit',
    sql`
      with key as (
        select id, account_id, environment, scopes, revoked_at
        from api_keys
        where key_hash = ${hash}
      ),
      eligible as (
        select
          account_id,
          environment,
          case environment when 'live' then ${limits.live.perMinute}::int else ${limits.sandbox.perMinute}::int end as per_minute,
          case environment when 'live' then ${limits.live.perDay}::int else ${limits.sandbox.perDay}::int end as per_day
        from key
        where revoked_at is null
          and ${scope} = any (scopes)
      ),
      admitted as (
        insert into usage_counters as u (account_id, environment, day, admitted, minute_start, minute_admitted)
        select account_id, environment, (now() at time zone 'UTC')::date, 1, date_trunc('minute', now(), 'UTC'), 1
        from eligible
        on conflict (account_id, environment, day) do update set
          admitted = u.admitted + 1,
          minute_start = excluded.minute_start,
          minute_admitted = case when u.minute_start = excluded.minute_start then u.minute_admitted + 1 else 1 end
        where u.admitted < (select per_day from eligible)
          and (u.minute_start <> excluded.minute_start or u.minute_admitted < (select per_minute from eligible))
        returning admitted, minute_admitted
      )
      select
        key.id,
        key.account_id,
        key.environment,
        key.scopes,
        key.revoked_at is not null as revoked,
        (select minute_admitted from admitted) as minute_count,
        (select admitted from admitted) as day_count,
        extract(epoch from now())::float8 as now_epoch
      from key
    `,
  );
  if (!row) return null;
  return {
    id: row.id as string,
    accountId: row.account_id as string,
    environment: row.environment as Environment,
    scopes: row.scopes as string[],
    revoked: row.revoked as boolean,
    admitted: row.day_count === null ? null : { minuteCount: row.minute_count as number, dayCount: row.day_count as number },
    nowEpoch: row.now_epoch as number,
  };
}

/** Counts a request refused for rate and returns the windows as they stand. */
export async function recordRefused(sql: Sql, accountId: string, environment: Environment): Promise<WindowCounts> {
  const [row] = await timed(
    'record_refused',
    sql`
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
  return { minuteCount: (row?.minute_count as number | undefined) ?? 0, dayCount: (row?.day_count as number | undefined) ?? 0 };
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

export async function usageByAccount(sql: Sql, accountId: string, sinceDay: string) {
  return sql`
    select environment, day, admitted, refused, minute_start, minute_admitted
    from usage_counters
    where account_id = ${accountId}
      and day >= ${sinceDay}::date
    order by environment, day desc
  `;
}
