import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Database } from '../db/database.ts';
import { AppError, notFound } from '../http/errors.ts';
import * as accounts from '../accounts/repository.ts';
import { hashPassword, verifyPassword } from './password.ts';
import * as repo from './repository.ts';

export const LoginSchema = z
  .string()
  .trim()
  .toLowerCase()
  .min(1)
  .max(200)
  .describe('the name the account holder signs in with, e.g. an e-mail address; case is ignored');
export const PasswordSchema = z.string().min(12, 'at least 12 characters').max(200, 'at most 200 characters').describe('the dashboard password');

const sha256 = (s: string) => hash('sha256', s, 'buffer');

/** 32 random bytes, base64url: a session id, a form cookie's secret, or an invitation link's token. */
export const newSecret = () => randomBytes(32).toString('base64url');

const loginTaken = (login: string) =>
  new AppError('invalid_request', `another account already uses the login ${login}`, { login: ['already used by another account'] });

async function requireAccount(db: Database, accountId: string): Promise<void> {
  if (!(await db.run((sql) => accounts.accountExists(sql, accountId)))) throw notFound('account');
}

/**
 * The operator sets an account's dashboard login and password (CLI
 * `accounts set-password`, POST /admin/v1/accounts/{id}/password). The
 * account's open sessions end.
 */
export async function setPassword(db: Database, input: { accountId: string; login: string; password: string }): Promise<{ accountId: string; login: string }> {
  await requireAccount(db, input.accountId);
  const passwordHash = await hashPassword(input.password);
  const row = await db.run(async (sql) => {
    const set = await repo.upsertPassword(sql, input.accountId, input.login, passwordHash);
    if (set) await repo.deleteSessionsOfAccount(sql, input.accountId);
    return set;
  });
  if (!row) throw loginTaken(input.login);
  return { accountId: input.accountId, login: row.login };
}

/**
 * The operator invites an account holder (CLI `accounts invite`, POST
 * /admin/v1/accounts/{id}/invitations): a link that sets the password once,
 * within `validHours`. The token leaves the service here only; the database
 * keeps its hash, so the operator never learns the password. An invitation
 * for another login than the account's replaces that login, its password
 * and its sessions at once.
 */
export async function invite(db: Database, input: { accountId: string; login: string; validHours: number }, publicBaseUrl: string) {
  await requireAccount(db, input.accountId);
  const token = newSecret();
  const row = await db.run((sql) => repo.upsertInvitation(sql, input.accountId, input.login, sha256(token), input.validHours));
  if (!row) throw loginTaken(input.login);
  // In the query string, which no log line carries (http/observe.ts logs the path only).
  return { accountId: input.accountId, login: row.login, url: `${publicBaseUrl}/account/invitation?token=${token}`, expiresAt: row.expiresAt };
}

const invitationGone = () => notFound('invitation (it was used, has expired, or never existed)');

/** The login an invitation is for, to show on its page. */
export async function invitationFor(db: Database, token: string): Promise<string> {
  const login = await db.run((sql) => repo.invitationLogin(sql, sha256(token)));
  if (!login) throw invitationGone();
  return login;
}

export async function acceptInvitation(db: Database, token: string, password: string): Promise<{ accountId: string; login: string }> {
  const passwordHash = await hashPassword(password);
  const accepted = await db.run((sql) => repo.acceptInvitation(sql, sha256(token), passwordHash));
  if (!accepted) throw invitationGone();
  return accepted;
}

export interface SignInLimits {
  windowMinutes: number;
  perLogin: number;
  perAddress: number;
}

/**
 * Checks a sign-in against its limits, then the password; a new session id
 * when both pass. Every attempt counts, and one over either limit is refused
 * before any password work, with the seconds until its window ends.
 */
export async function signIn(
  db: Database,
  input: { login: string; password: string; address: string },
  limits: SignInLimits,
  expiry: repo.SessionExpiry,
): Promise<{ sessionId: string; accountId: string }> {
  const byLogin = `login:${input.login}`;
  const windows = await db.run((sql) => repo.countAttempts(sql, [byLogin, `address:${input.address}`], limits.windowMinutes));
  const over = windows.filter((w) => w.attempts > (w.subject === byLogin ? limits.perLogin : limits.perAddress));
  if (over.length) {
    const retryAfter = String(Math.max(1, Math.ceil(Math.max(...over.map((w) => w.resetSeconds)))));
    const details = Object.fromEntries(
      over.map((w) =>
        w.subject === byLogin
          ? ['login', [`${limits.perLogin} attempts per ${limits.windowMinutes} minutes reached`]]
          : ['address', [`${limits.perAddress} attempts per ${limits.windowMinutes} minutes reached`]],
      ),
    );
    throw new AppError('rate_limited', `too many sign-in attempts; try again in ${retryAfter} seconds`, details, { 'Retry-After': retryAfter });
  }
  const login = await db.run((sql) => repo.loginByName(sql, input.login));
  // An unknown login is checked against a stand-in hash: it takes as long as a wrong password.
  if (!(await verifyPassword(input.password, login?.passwordHash ?? null)) || !login) {
    throw new AppError('invalid_credentials', 'the login or the password is wrong');
  }
  const sessionId = newSecret();
  await db.run((sql) => repo.insertSession(sql, sha256(sessionId), login.accountId, expiry));
  return { sessionId, accountId: login.accountId };
}

export interface Session {
  accountId: string;
  accountName: string;
  /** The token every state-changing request of this session carries. */
  csrfToken: string;
}

/** The signed-in session a cookie names, seen now; null when it does not exist, has expired or was ended. */
export async function resumeSession(db: Database, sessionId: string, expiry: repo.SessionExpiry): Promise<Session | null> {
  const row = await db.run((sql) => repo.touchSession(sql, sha256(sessionId), expiry));
  return row ? { ...row, csrfToken: csrfTokenOf(sessionId) } : null;
}

export const signOut = (db: Database, sessionId: string) => db.run((sql) => repo.deleteSession(sql, sha256(sessionId)));

/**
 * The CSRF token of a cookie's secret (the session id once signed in, the
 * form cookie before): an HMAC of a fixed label under the secret. It is as
 * unguessable as the secret, needs no storage, and cannot be turned back into
 * it (pages carry the token, never the secret). Another site can neither read
 * the cookie nor make the browser send it (SameSite=Strict), so it cannot
 * produce the token.
 */
export function csrfTokenOf(secret: string): string {
  return createHmac('sha256', secret).update('dashboard csrf').digest('base64url');
}

/** Whether `presented` is `expected`, compared in constant time. */
export function csrfTokenMatches(expected: string, presented: unknown): boolean {
  if (typeof presented !== 'string') return false;
  return timingSafeEqual(sha256(presented), sha256(expected));
}
