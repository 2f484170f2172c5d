import type { ISql, Sql } from '../db/sql.ts';
import { errorCode } from '../core/errors.ts';
import { entryOf } from '../core/map-entry.ts';

const UNIQUE_VIOLATION = '23505';

const isUniqueViolation = (err: unknown) => errorCode(err) === UNIQUE_VIOLATION;

/**
 * Sets the account's login and password, replacing any earlier ones and
 * dropping a pending invitation; null when another account holds `login`.
 */
export async function upsertPassword(sql: ISql, accountId: string, login: string, passwordHash: string): Promise<{ login: string } | null> {
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
): Promise<{ login: string; expiresAt: string } | { holder: string } | null> {
  try {
    return (await sql.begin(async (tx) => {
      const [earlier] = await tx<{ login: string; holder: boolean }[]>`
        select login, password_hash is not null as holder from dashboard_logins where account_id = ${accountId} for update
      `;
      // A holder who can sign in keeps their login: an invitation for another one is refused, not a replacement.
      if (earlier?.holder && earlier.login !== login) return { holder: earlier.login };
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
      if (earlier !== undefined && earlier.login !== row.login) await deleteSessionsOfAccount(tx, accountId);
      return { login: row.login, expiresAt: row.expires_at.toISOString() };
    })) as { login: string; expiresAt: string } | { holder: string };
  } catch (err) {
    if (isUniqueViolation(err)) return null;
    throw err;
  }
}

/** The login an unexpired invitation is for. */
export async function invitationLogin(sql: ISql, tokenHash: Buffer): Promise<string | null> {
  const [row] = await sql<{ login: string }[]>`
    select login
    from dashboard_logins
    where invitation_hash = ${tokenHash}
      and invitation_expires_at > now()
  `;
  return row?.login ?? null;
}

/** Sets the password of an unexpired invitation and uses the invitation up; null when there is none. */
export async function acceptInvitation(sql: ISql, tokenHash: Buffer, passwordHash: string): Promise<{ accountId: string; login: string } | null> {
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

export async function loginByName(sql: ISql, login: string): Promise<{ accountId: string; passwordHash: string | null } | null> {
  const [row] = await sql<{ account_id: string; password_hash: string | null }[]>`
    select account_id, password_hash
    from dashboard_logins
    where login = ${login}
  `;
  return row ? { accountId: row.account_id, passwordHash: row.password_hash } : null;
}

/** How one subject's attempts are limited. */
export interface AttemptRule {
  subject: string;
  /** Attempts admitted before the rule refuses (`spaced` false) or spaces them out (`spaced` true). */
  limit: number;
  /**
   * Past the limit, the next attempt is admitted only 2^k seconds after the
   * previous one (k counting the attempts past the limit, from 0), at most
   * half a window apart, so a guesser who keeps the pace is never forgotten:
   * a ceiling that slows guessing without ever shutting the door.
   */
  spaced: boolean;
}

/** The rules that refused an attempt, each with the seconds until it would admit one. */
export type AttemptRefusal = { rule: AttemptRule; retryAfterSeconds: number }[];

/** An attempt counted against every rule, with each subject's count including it; or the rules that refused it, with no count changed. */
export type Admission = { admitted: true; attempts: Map<string, number> } | { admitted: false; refusal: AttemptRefusal };

/**
 * Counts one attempt against every rule, or against none when any refuses it:
 * a refused attempt changes no count, so hammering a door that is shut does
 * not keep it shut longer. A subject's count is forgotten once `windowSeconds`
 * pass without an attempt it admitted. The rows are locked (created empty
 * first, so a subject's first attempts are locked too), so concurrent
 * attempts in any process are counted one after another, and the counts
 * returned are exact.
 */
export async function admitAttempt(sql: Sql, rules: AttemptRule[], windowSeconds: number): Promise<Admission> {
  const subjects = rules.map((r) => r.subject).sort();
  return (await sql.begin(async (tx) => {
    await tx`
      delete from dashboard_sign_in_attempts
      where last_attempt_at < now() - make_interval(secs => ${windowSeconds})
    `;
    await tx`
      insert into dashboard_sign_in_attempts (subject, attempts, last_attempt_at)
      select subject, 0, now()
      from unnest(${subjects}::text[]) as s (subject)
      on conflict (subject) do nothing
    `;
    const rows = await tx<{ subject: string; attempts: number; since_last: number }[]>`
      select subject, attempts, extract(epoch from now() - last_attempt_at)::float8 as since_last
      from dashboard_sign_in_attempts
      where subject = any(${subjects}::text[])
      order by subject
      for update
    `;
    const bySubject = new Map(rows.map((r) => [r.subject, r]));
    const refusal = rules.flatMap((rule) => {
      // Every subject has a row: the insert above wrote any missing one, in this transaction.
      const { attempts, since_last: sinceLast } = entryOf(bySubject, rule.subject);
      if (attempts < rule.limit) return [];
      const wait = rule.spaced ? Math.min(2 ** (attempts - rule.limit), windowSeconds / 2) : windowSeconds;
      return sinceLast >= wait ? [] : [{ rule, retryAfterSeconds: wait - sinceLast }];
    });
    if (refusal.length) return { admitted: false, refusal };
    await tx`
      update dashboard_sign_in_attempts
      set attempts = attempts + 1, last_attempt_at = now()
      where subject = any(${subjects}::text[])
    `;
    return { admitted: true, attempts: new Map(rows.map((r) => [r.subject, r.attempts + 1])) };
  })) as Admission;
}

/** Forgets the counts of `subjects` (a holder's own, after a sign-in that worked). */
export async function forgetAttempts(sql: ISql, subjects: string[]): Promise<void> {
  await sql`
    delete from dashboard_sign_in_attempts
    where subject = any(${subjects}::text[])
  `;
}

/** Whether the device token (its hash) names an unexpired device of `login`. */
export async function deviceKnows(sql: ISql, tokenHash: Buffer, login: string): Promise<boolean> {
  const [row] = await sql<{ known: boolean }[]>`
    select true as known
    from dashboard_devices
    where token_hash = ${tokenHash}
      and login = ${login}
      and expires_at > now()
  `;
  return row !== undefined;
}

/**
 * Records a browser that signed in: its new token replaces the one it
 * presented (if any), and the account's expired devices are deleted.
 */
export async function rememberDevice(sql: ISql, tokenHash: Buffer, replaced: Buffer | null, accountId: string, login: string, days: number): Promise<void> {
  await sql`
    delete from dashboard_devices
    where account_id = ${accountId}
      and (expires_at <= now() or token_hash = ${replaced ?? Buffer.alloc(0)})
  `;
  await sql`
    insert into dashboard_devices (token_hash, account_id, login, expires_at)
    values (${tokenHash}, ${accountId}, ${login}, now() + make_interval(days => ${days}))
  `;
}

/** A new session, after deleting the account's sessions that have expired. */
export async function insertSession(sql: ISql, idHash: Buffer, accountId: string, expiry: SessionExpiry): Promise<void> {
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

function expired(sql: ISql, expiry: SessionExpiry) {
  return sql`(last_seen_at <= now() - make_interval(mins => ${expiry.idleMinutes}) or created_at <= now() - make_interval(hours => ${expiry.maxHours}))`;
}

/** The session's account, marking it seen now; null when there is no such session or it has expired. */
export async function touchSession(sql: ISql, idHash: Buffer, expiry: SessionExpiry): Promise<{ accountId: string; accountName: string } | null> {
  const [row] = await sql<{ account_id: string; name: string }[]>`
    update dashboard_sessions
    set last_seen_at = now()
    where id_hash = ${idHash}
      and not ${expired(sql, expiry)}
    returning account_id, (select name from accounts where id = account_id) as name
  `;
  return row ? { accountId: row.account_id, accountName: row.name } : null;
}

export async function deleteSession(sql: ISql, idHash: Buffer): Promise<void> {
  await sql`
    delete from dashboard_sessions
    where id_hash = ${idHash}
  `;
}

/** Ends the account's sessions and forgets its browsers: after a new password or login, every browser signs in afresh. */
export async function deleteSessionsOfAccount(sql: ISql, accountId: string): Promise<void> {
  await sql`
    delete from dashboard_sessions
    where account_id = ${accountId}
  `;
  await sql`
    delete from dashboard_devices
    where account_id = ${accountId}
  `;
}
