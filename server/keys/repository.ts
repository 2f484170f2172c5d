import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import type { Environment, Scope } from '../core/scopes.ts';

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
function keyOf(sql: ISql, id: string, accountId: string | undefined) {
  return sql`where id = ${id} ${accountId ? sql`and account_id = ${accountId}` : sql``}`;
}

export async function insertKey(
  sql: ISql,
  key: { accountId: string; name: string; environment: Environment; scopes: Scope[]; hash: Buffer; prefix: string },
): Promise<KeyRow> {
  const [row] = await sql<ApiKeyRow[]>`
    insert into api_keys (account_id, name, environment, scopes, key_hash, prefix)
    values (${key.accountId}, ${key.name}, ${key.environment}, ${key.scopes}, ${key.hash}, ${key.prefix})
    returning ${sql(API_KEY_COLUMNS)}
  `;
  return toKeyRow(row);
}

export async function listKeys(sql: ISql, accountId: string | undefined): Promise<KeyRow[]> {
  const rows = await sql<ApiKeyRow[]>`
    select ${sql(API_KEY_COLUMNS)}
    from api_keys
    ${accountId ? sql`where account_id = ${accountId}` : sql``}
    order by created_at, id
  `;
  return rows.map(toKeyRow);
}

export async function keyById(sql: ISql, id: string, accountId: string | undefined): Promise<KeyRow | null> {
  const [row] = await sql<ApiKeyRow[]>`
    select ${sql(API_KEY_COLUMNS)}
    from api_keys
    ${keyOf(sql, id, accountId)}
  `;
  return row ? toKeyRow(row) : null;
}

export async function revokeKey(sql: ISql, id: string, accountId: string | undefined): Promise<KeyRow | null> {
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
export async function insertRolledKey(sql: ISql, id: string, accountId: string | undefined, key: { hash: Buffer; prefix: string }): Promise<KeyRow | null> {
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

export interface ResolvedKey {
  id: string;
  accountId: string;
  environment: Environment;
  revoked: boolean;
  /** Whether an active key was rolled from this one: its replacement. Looked up only for a revoked key; false for an active one. */
  replaced: boolean;
  /** Whether the key holds the route's scope (exact match). */
  hasScope: boolean;
  /** Whether the request was admitted: false when a window was full, and when it was not counted. */
  admitted: boolean;
  /**
   * The account's windows after this request: this one included when it was
   * admitted, as they stand when it was refused; null when it was not counted
   * (the key is revoked or lacks the scope, which costs no quota).
   */
  counts: WindowCounts | null;
  /** Database clock, seconds since the epoch: windows are aligned to it. */
  nowEpoch: number;
}

export interface WindowCounts {
  minuteCount: number;
  dayCount: number;
}

export type WindowLimits = Record<Environment, { perMinute: number; perDay: number }>;

/** One request to admit: its key's hash and the scope its route needs. */
export interface AdmissionRequest {
  hash: Buffer;
  scope: Scope;
}

interface AdmissionRow {
  ord: number;
  id: string;
  account_id: string;
  environment: Environment;
  revoked: boolean;
  replaced: boolean;
  has_scope: boolean;
  admitted: boolean | null;
  minute_count: number | null;
  day_count: number | null;
  now_epoch: number;
}

/**
 * One statement for a batch of requests (server/keys/admission.ts): resolves
 * each key by hash (a probe of the unique index on key_hash), and admits the
 * requests whose key is active and holds the route's scope against both
 * windows of their account, with one upsert of each account's row for the
 * day. Within a batch an account's requests are granted in arrival order, as
 * many as both windows allow; the rest are counted as refused. The row lock
 * makes the check-and-increment atomic across batches and API processes: a
 * second statement on the account's row waits for the first one's commit and
 * then sees its counts. Rows are upserted in key order, so two batches that
 * share accounts cannot deadlock. A rejected key or scope costs no quota.
 * Data-modifying CTEs run exactly once whether or not the outer select reads them.
 * A revoked key's replacement (an active key rolled from it) is looked up in
 * the same statement, so its error can say whether one exists: a CASE runs
 * that subquery only for revoked keys, as a probe of the partial index on
 * rolled_from, and an active key's request pays nothing for it.
 *
 * Returns one entry per request, in order: null for an unknown key.
 */
export async function resolveKeysAndAdmit(sql: ISql, requests: readonly AdmissionRequest[], limits: WindowLimits): Promise<(ResolvedKey | null)[]> {
  const dayLimit = (environment: postgres.Fragment) =>
    sql`case ${environment} when 'live' then ${limits.live.perDay}::int else ${limits.sandbox.perDay}::int end`;
  const minuteLimit = (environment: postgres.Fragment) =>
    sql`case ${environment} when 'live' then ${limits.live.perMinute}::int else ${limits.sandbox.perMinute}::int end`;
  const rows = await timed(
    'resolve_keys_and_admit',
    sql<AdmissionRow[]>`
      with request as (
        select
          r.ord::int,
          k.id,
          k.account_id,
          k.environment,
          k.revoked_at is not null as revoked,
          case
            when k.revoked_at is null then false
            else exists (select from api_keys n where n.rolled_from = k.id and n.revoked_at is null)
          end as replaced,
          r.scope = any (k.scopes) as has_scope
        -- Hashes travel as hex: postgres.js sends an array of Buffers as one bytea.
        from unnest(${requests.map((r) => r.hash.toString('hex'))}::text[], ${requests.map((r) => r.scope)}::text[]) with ordinality as r (hash, scope, ord)
        join api_keys k on k.key_hash = decode(r.hash, 'hex')
      ),
      asking as (
        select ord, account_id, environment, row_number() over (partition by account_id, environment order by ord)::int as rank
        from request
        where not revoked
          and has_scope
      ),
      counted as (
        insert into usage_counters as u (account_id, environment, day, admitted, minute_start, minute_admitted, refused, latest_grant)
        select d.account_id, d.environment, (now() at time zone 'UTC')::date, g.granted, date_trunc('minute', now(), 'UTC'), g.granted, d.asked - g.granted, g.granted
        from (
          select account_id, environment, count(*)::int as asked
          from asking
          group by account_id, environment
        ) d
        cross join lateral (
          select greatest(0, least(d.asked, ${dayLimit(sql`d.environment`)}, ${minuteLimit(sql`d.environment`)})) as granted
        ) g
        order by d.account_id, d.environment
        -- The inserted row carries the batch's demand: asked = admitted + refused.
        on conflict (account_id, environment, day) do update set
          (admitted, minute_start, minute_admitted, refused, latest_grant) = (
            select u.admitted + x.granted, excluded.minute_start, x.minute_before + x.granted, u.refused + x.asked - x.granted, x.granted
            from (
              select y.asked, y.minute_before, greatest(0, least(
                y.asked,
                ${dayLimit(sql`u.environment`)} - u.admitted,
                ${minuteLimit(sql`u.environment`)} - y.minute_before
              )) as granted
              from (
                select
                  excluded.admitted + excluded.refused as asked,
                  case when u.minute_start = excluded.minute_start then u.minute_admitted else 0 end as minute_before
              ) y
            ) x
          )
        returning account_id, environment, admitted, minute_admitted, latest_grant
      )
      select
        r.ord,
        r.id,
        r.account_id,
        r.environment,
        r.revoked,
        r.replaced,
        r.has_scope,
        a.rank <= c.latest_grant as admitted,
        c.minute_admitted - case when a.rank <= c.latest_grant then c.latest_grant - a.rank else 0 end as minute_count,
        c.admitted - case when a.rank <= c.latest_grant then c.latest_grant - a.rank else 0 end as day_count,
        extract(epoch from now())::float8 as now_epoch
      from request r
      left join asking a on a.ord = r.ord
      left join counted c on c.account_id = a.account_id and c.environment = a.environment
    `,
  );
  const resolved: (ResolvedKey | null)[] = requests.map(() => null);
  for (const row of rows) {
    resolved[row.ord - 1] = {
      id: row.id,
      accountId: row.account_id,
      environment: row.environment,
      revoked: row.revoked,
      replaced: row.replaced,
      hasScope: row.has_scope,
      admitted: row.admitted === true,
      counts: row.day_count === null || row.minute_count === null ? null : { minuteCount: row.minute_count, dayCount: row.day_count },
      nowEpoch: row.now_epoch,
    };
  }
  return resolved;
}

export async function recordLastUsed(sql: ISql, ids: string[], times: string[]): Promise<void> {
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
export async function usageByAccount(sql: ISql, accountId: string, sinceDay: string): Promise<UsageDay[]> {
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
