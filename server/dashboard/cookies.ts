import type { Request, Response } from 'express';

/** The signed-in session's id (its SHA-256 is the session row's key). */
export const SESSION_COOKIE = 'mds_session';
/** Before sign-in: the secret the sign-in and invitation forms' CSRF token is derived from. */
export const FORM_COOKIE = 'mds_form';
/** A browser that signed in: its sign-ins are counted apart from everyone else's (service.ts, signIn). */
export const DEVICE_COOKIE = 'mds_device';

/** Our secrets are 32 random bytes in base64url; any other cookie value is ignored. */
const SECRET_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** The value of cookie `name` when it has the shape of one of our secrets, else null. */
export function cookieOf(req: Request, name: string): string | null {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) {
      const value = part.slice(at + 1).trim();
      return SECRET_SHAPE.test(value) ? value : null;
    }
  }
  return null;
}

/**
 * Sets (or with `value` null, clears) a dashboard cookie: HttpOnly (no script
 * reads it), SameSite=Strict (no other site's page sends it), Path=/account,
 * and Secure when `secure`. No Max-Age unless `maxAgeSeconds` is given: the
 * server decides when a session ends, and the browser drops the cookie when
 * it closes; only the device cookie outlives the browser session.
 */
export function setCookie(res: Response, name: string, value: string | null, secure: boolean, maxAgeSeconds?: number): void {
  const lifetime = value === null ? ['Max-Age=0'] : maxAgeSeconds ? [`Max-Age=${maxAgeSeconds}`] : [];
  res.append('Set-Cookie', [`${name}=${value ?? ''}`, 'Path=/account', 'HttpOnly', 'SameSite=Strict', ...(secure ? ['Secure'] : []), ...lifetime].join('; '));
}
