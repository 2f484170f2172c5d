import type { Sql } from '../db/sql.ts';

const UNIQUE_VIOLATION = '23505';

const isUniqueViolation = (err: unknown) => (err as { code?: unknown })?.code === UNIQUE_VIOLATION;

/**
 * Sets the account's login and password, replacing any earlier ones and
 * dropping a pending invitation; null when another account holds `login`.
 */
export async function upsertPassword(sql: Sql, accountId: string, login: string, passwordHash: string): Promise<{ login: string } | null> {
  try {
    const [row] = await sql<{ login: string }[]>`
      insert into dashboard_logins (account_id, login, password_hash)
      values (${accountId}, ${login}, ${passwordHash})
      on conflict (account_id) do update set
        login = excluded.login,
        password_hash = excluded.password_hash,
        invitation_hash = null,
        invitation_expires_at = null,
        updated_at = now()
      returning login
    `;
    return row;
  } catch (err) {
    if (isUniqueViolation(err)) return null;
    throw err;
  }
}

/**
 * Stores an invitation (the hash of its token) valid for `validHours`,
 * replacing an earlier one. For the account's current login, its password
 * keeps working until the invitation is accepted; for another login, the
 * account's login and password are replaced and its sessions deleted at once.
 * Null when another account holds `login`.
 */
export async function upsertInvitation(
  sql: Sql,
  accountId: string,
  login: string,
  tokenHash: Buffer,
  validHours: number,
): Promise<{ login: string; expiresAt: string } | null> {
  try {
    return (await sql.begin(async (tx) => {
      const [earlier] = await tx<{ login: string }[]>`select login from dashboard_logins where account_id = ${accountId} for update`;
      const [row] = await tx<{ login: string; expires_at: Date }[]>`
        insert into dashboard_logins as l (account_id, login, invitation_hash, invitation_expires_at)
        values (${accountId}, ${login}, ${tokenHash}, now() + make_interval(hours => ${validHours}))
        on conflict (account_id) do update set
          login = excluded.login,
          password_hash = case when l.login = excluded.login then l.password_hash end,
          invitation_hash = excluded.invitation_hash,
          invitation_expires_at = excluded.invitation_expires_at,
          updated_at = now()
        returning login, invitation_expires_at as expires_at
      `;
      // A replaced login's sessions end in the same transaction.
      if (earlier !== undefined && earlier.login !== row.login) await deleteSessionsOfAccount(tx as unknown as Sql, accountId);
      return { login: row.login, expiresAt: row.expires_at.toISOString() };
    })) as { login: string; expiresAt: string };
  } catch (err) {
    if (isUniqueViolation(err)) return null;
    throw err;
  }
}

/** The login an unexpired invitation is for. */
export async function invitationLogin(sql: Sql, tokenHash: Buffer): Promise<string | null> {
  const [row] = await sql<{ login: string }[]>`
    select login
    from dashboard_logins
    where invitation_hash = ${tokenHash}
      and invitation_expires_at > now()
  `;
  return row?.login ?? null;
}

/** Sets the password of an unexpired invitation and uses the invitation up; null when there is none. */
export async function acceptInvitation(sql: Sql, tokenHash: Buffer, passwordHash: string): Promise<{ accountId: string; login: string } | null> {
  const [row] = await sql<{ account_id: string; login: string }[]>`
    update dashboard_logins
    set password_hash = ${passwordHash},
      invitation_hash = null,
      invitation_expires_at = null,
      updated_at = now()
    where invitation_hash = ${tokenHash}
      and invitation_expires_at > now()
    returning account_id, login
  `;
  return row ? { accountId: row.account_id, login: row.login } : null;
}

export async function loginByName(sql: Sql, login: string): Promise<{ accountId: string; passwordHash: string | null } | null> {
  const [row] = await sql<{ account_id: string; password_hash: string | null }[]>`
    select account_id, password_hash
    from dashboard_logins
    where login = ${login}
  `;
  return row ? { accountId: row.account_id, passwordHash: row.password_hash } : null;
}

export interface AttemptWindow {
  subject: string;
  attempts: number;
  /** Seconds until the window ends. */
  resetSeconds: number;
}

/**
 * Counts one sign-in attempt against each subject in the current fixed window
 * of `windowMinutes` (aligned to the database clock), in one upsert: the row
 * lock makes the increment atomic across processes, as for the API's
 * windows. Windows that have ended are deleted first, so the table holds at
 * most the subjects seen in one window.
 */
export async function countAttempts(sql: Sql, subjects: string[], windowMinutes: number): Promise<AttemptWindow[]> {
  const windowSeconds = windowMinutes * 60;
  await sql`
    delete from dashboard_sign_in_attempts
    where window_start < now() - make_interval(secs => ${windowSeconds})
  `;
  const rows = await sql<{ subject: string; attempts: number; reset_seconds: number }[]>`
    insert into dashboard_sign_in_attempts as a (subject, window_start, attempts)
    select subject, to_timestamp(floor(extract(epoch from now()) / ${windowSeconds}) * ${windowSeconds}), 1
    from unnest(${subjects}::text[]) as s (subject)
    on conflict (subject) do update set
      attempts = case when a.window_start = excluded.window_start then a.attempts + 1 else 1 end,
      window_start = excluded.window_start
    returning subject, attempts, extract(epoch from window_start + make_interval(secs => ${windowSeconds}) - now())::float8 as reset_seconds
  `;
  return rows.map((r) => ({ subject: r.subject, attempts: r.attempts, resetSeconds: r.reset_seconds }));
}

/** A new session, after deleting the account's sessions that have expired. */
export async function insertSession(sql: Sql, idHash: Buffer, accountId: string, expiry: SessionExpiry): Promise<void> {
  await sql`
    delete from dashboard_sessions
    where account_id = ${accountId}
      and ${expired(sql, expiry)}
  `;
  await sql`
    insert into dashboard_sessions (id_hash, account_id)
    values (${idHash}, ${accountId})
  `;
}

export interface SessionExpiry {
  idleMinutes: number;
  maxHours: number;
}

function expired(sql: Sql, expiry: SessionExpiry) {
  return sql`(last_seen_at <= now() - make_interval(mins => ${expiry.idleMinutes}) or created_at <= now() - make_interval(hours => ${expiry.maxHours}))`;
}

/** The session's account, marking it seen now; null when there is no such session or it has expired. */
export async function touchSession(sql: Sql, idHash: Buffer, expiry: SessionExpiry): Promise<{ accountId: string; accountName: string } | null> {
  const [row] = await sql<{ account_id: string; name: string }[]>`
    update dashboard_sessions
    set last_seen_at = now()
    where id_hash = ${idHash}
      and not ${expired(sql, expiry)}
    returning account_id, (select name from accounts where id = account_id) as name
  `;
  return row ? { accountId: row.account_id, accountName: row.name } : null;
}

export async function deleteSession(sql: Sql, idHash: Buffer): Promise<void> {
  await sql`
    delete from dashboard_sessions
    where id_hash = ${idHash}
  `;
}

export async function deleteSessionsOfAccount(sql: Sql, accountId: string): Promise<void> {
  await sql`
    delete from dashboard_sessions
    where account_id = ${accountId}
  `;
}
