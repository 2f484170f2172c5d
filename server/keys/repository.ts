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
  /** Counts after this request; null when the request was not admitted to counting (revoked or out of scope). */
  minuteCount: number | null;
  dayCount: number | null;
  /** Database clock, seconds since the epoch: windows are aligned to it. */
  nowEpoch: number;
}

/**
 * One round trip per request: resolve the key by hash and, only when it is
 * active and holds the route's scope, count the request in both windows.
 * A rejected key or scope therefore costs no quota. Data-modifying CTEs run
 * exactly once whether or not the outer select reads them.
 */
export async function resolveKeyAndCount(sql: Sql, hash: Buffer, scope: Scope): Promise<ResolvedKey | null> {
  const [row] = await timed(
    'resolve_key_and_count',
    sql`
      with key as (
        select id, account_id, environment, scopes, revoked_at
        from api_keys
        where key_hash = ${hash}
      ),
      admitted as (
        select account_id, environment
        from key
        where revoked_at is null
          and ${scope} = any (scopes)
      ),
      counted as (
        insert into usage_counters as u (account_id, environment, window_kind, window_start, request_count)
        select admitted.account_id, admitted.environment, w.kind, w.start, 1
        from admitted
        cross join (
          values
            ('minute', date_trunc('minute', now(), 'UTC')),
            ('day', date_trunc('day', now(), 'UTC'))
        ) as w (kind, start)
        on conflict (account_id, environment, window_kind, window_start)
        do update set request_count = u.request_count + 1
        returning window_kind, request_count
      )
      select
        key.id,
        key.account_id,
        key.environment,
        key.scopes,
        key.revoked_at is not null as revoked,
        (select request_count from counted where window_kind = 'minute') as minute_count,
        (select request_count from counted where window_kind = 'day') as day_count,
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
    minuteCount: (row.minute_count as number | null) ?? null,
    dayCount: (row.day_count as number | null) ?? null,
    nowEpoch: row.now_epoch as number,
  };
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

export async function usageByAccount(sql: Sql, accountId: string, since: Date) {
  return sql`
    select environment, window_kind, window_start, request_count
    from usage_counters
    where account_id = ${accountId}
      and window_start >= ${since}
    order by environment, window_kind, window_start desc
  `;
}

/** Minute windows are only needed while they can still limit; day windows are kept as usage history. */
export async function pruneMinuteCounters(sql: Sql): Promise<void> {
  await sql`
    delete from usage_counters
    where window_kind = 'minute'
      and window_start < now() - interval '2 days'
  `;
}
