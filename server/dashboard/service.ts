import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Database } from '../db/database.ts';
import * as accounts from '../accounts/repository.ts';
import { TRUSTED_RANK, type PasswordHasher } from './password.ts';
import * as repo from './repository.ts';
import { AppError, invalidRequest, notFound } from '../core/errors.ts';
import type { Session } from '../core/session.ts';
import { entryOf } from '../core/map-entry.ts';

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
export async function setPassword(
  db: Database,
  passwords: PasswordHasher,
  input: { accountId: string; login: string; password: string },
): Promise<{ accountId: string; login: string }> {
  await requireAccount(db, input.accountId);
  const passwordHash = await passwords.withSlot((hashing) => hashing.hash(input.password), TRUSTED_RANK);
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
  if ('holder' in row) {
    throw invalidRequest(`the account's holder signs in as ${row.holder}: an invitation for another login would end their access`, {
      login: [
        `the account has a holder (${row.holder}), whose password an invitation for another login would replace: invite ${row.holder} to let them choose a new password, or set the new login and password with POST /admin/v1/accounts/{id}/password`,
      ],
    });
  }
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

export interface SignInLimits {
  windowMinutes: number;
  /** Attempts at one login from one address (or one recognised browser). */
  perLoginAddress: number;
  /** Attempts at one login from browsers it does not recognise, all addresses together, before they are spaced out. */
  perLogin: number;
  /** Attempts from one address, all logins together. */
  perAddress: number;
  /** Invitation forms posted from one address. */
  invitationsPerAddress: number;
  /** How long a browser that signed in is recognised. */
  deviceDays: number;
}

/** The message and details of a refused attempt, with Retry-After. */
function tooManyAttempts(refusal: repo.AttemptRefusal, what: string, describe: (subject: string) => [string, string[]]): AppError {
  const retryAfter = String(Math.max(1, Math.ceil(Math.max(...refusal.map((r) => r.retryAfterSeconds)))));
  const details: Record<string, string[]> = {};
  for (const [field, problems] of refusal.map((r) => describe(r.rule.subject))) (details[field] ??= []).push(...problems);
  return new AppError('rate_limited', `too many ${what}; try again in ${retryAfter} seconds`, details, { 'Retry-After': retryAfter });
}

/**
 * Accepts an invitation. Every cheap check comes before the hashing slot, the
 * token's first: a bogus or expired token is a 404 after one indexed lookup,
 * however many arrive at once, and counts against nothing. Then one check at
 * a time from the address (PasswordHasher.oneAtATime), and
 * `invitationsPerAddress` forms naming a pending invitation a window. The
 * hash waits first in line (TRUSTED_RANK): the token is the operator's
 * 256-bit secret.
 */
export async function acceptInvitation(
  db: Database,
  passwords: PasswordHasher,
  input: { token: string; password: string; address: string },
  limits: SignInLimits,
): Promise<{ accountId: string; login: string }> {
  await invitationFor(db, input.token);
  return passwords.oneAtATime({ address: input.address }, async () => {
    const rule = { subject: `invitation:${input.address}`, limit: limits.invitationsPerAddress, spaced: false };
    const admission = await db.run((sql) => repo.admitAttempt(sql, [rule], limits.windowMinutes * 60));
    if (!admission.admitted) {
      throw tooManyAttempts(admission.refusal, 'invitation attempts', () => [
        'address',
        [`${limits.invitationsPerAddress} attempts per ${limits.windowMinutes} minutes reached`],
      ]);
    }
    const passwordHash = await passwords.withSlot((hashing) => hashing.hash(input.password), TRUSTED_RANK);
    const accepted = await db.run((sql) => repo.acceptInvitation(sql, sha256(input.token), passwordHash));
    if (!accepted) throw invitationGone();
    return accepted;
  });
}

/**
 * Checks a sign-in against its limits, then the password; a new session id
 * (and a new token for the browser's mds_device cookie) when both pass.
 *
 * The limits are counted so that nobody else can lock a holder out
 * (docs/dashboard.md#sign-in-limits): per address, per login and address,
 * and, for browsers the login does not recognise, per login with spacing
 * instead of a lockout. A browser that signed in to the login before (its
 * device token) is counted on its own.
 *
 * Every cheap check comes before the hashing slot, so the slot and its queue
 * hold only attempts that passed them: whether the device is recognised (one
 * indexed lookup, and only when a device cookie came), one check at a time
 * from the address or recognised browser (refused with no database work),
 * then the limits, which count the attempt; one over a limit is refused
 * and changes no count. The attempt then waits for the slot by rank: first a
 * recognised browser, then by its address's attempts in the window, so an
 * address new to the window goes before every address of a flood that has
 * made more.
 */
export async function signIn(
  db: Database,
  passwords: PasswordHasher,
  input: { login: string; password: string; address: string; deviceToken: string | null },
  limits: SignInLimits,
  expiry: repo.SessionExpiry,
): Promise<{ sessionId: string; accountId: string; deviceToken: string }> {
  const deviceHash = input.deviceToken ? sha256(input.deviceToken) : null;
  const recognised = deviceHash !== null && (await db.run((sql) => repo.deviceKnows(sql, deviceHash, input.login)));
  const device = recognised ? deviceHash.toString('hex') : null;
  return passwords.oneAtATime(device ? { device } : { address: input.address }, async () => {
    const own = device ? `device:${device}` : `login-address:${input.login} ${input.address}`;
    const byAddress = `address:${input.address}`;
    const rules: repo.AttemptRule[] = [
      { subject: byAddress, limit: limits.perAddress, spaced: false },
      { subject: own, limit: limits.perLoginAddress, spaced: false },
      ...(device ? [] : [{ subject: `login:${input.login}`, limit: limits.perLogin, spaced: true }]),
    ];
    const admission = await db.run((sql) => repo.admitAttempt(sql, rules, limits.windowMinutes * 60));
    if (!admission.admitted) {
      throw tooManyAttempts(admission.refusal, 'sign-in attempts', (subject) =>
        subject.startsWith('address:')
          ? ['address', [`${limits.perAddress} attempts per ${limits.windowMinutes} minutes from this address reached`]]
          : subject.startsWith('login:')
            ? ['login', [`${limits.perLogin} attempts from unrecognised browsers reached; each further one waits longer`]]
            : ['login', [`${limits.perLoginAddress} attempts per ${limits.windowMinutes} minutes at this login from here reached`]],
      );
    }
    const login = await db.run((sql) => repo.loginByName(sql, input.login));
    const rank = device ? TRUSTED_RANK : entryOf(admission.attempts, byAddress);
    // An unknown login is checked against a stand-in hash: it takes as long as a wrong password.
    const matches = await passwords.withSlot((hashing) => hashing.verify(input.password, login?.passwordHash ?? null), rank);
    if (!matches || !login) throw new AppError('invalid_credentials', 'the login or the password is wrong');
    const sessionId = newSecret();
    const deviceToken = newSecret();
    await db.run(async (sql) => {
      await repo.insertSession(sql, sha256(sessionId), login.accountId, expiry);
      await repo.rememberDevice(sql, sha256(deviceToken), deviceHash, login.accountId, input.login, limits.deviceDays);
      await repo.forgetAttempts(sql, [own]);
    });
    return { sessionId, accountId: login.accountId, deviceToken };
  });
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
