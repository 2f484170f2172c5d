import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * scrypt with N = 2^15, r = 8, p = 3: one of the equivalent minimums of the
 * OWASP Password Storage Cheat Sheet (N = 2^17, r = 8, p = 1 is another).
 * This one holds 32 MiB per hash (128 * N * r) rather than 128 MiB, since up
 * to four run at once on libuv's threads; p = 3 buys back the work. One hash
 * took 0.3 s per unit of p here (2 cores, load average 6), so about 0.9 s a
 * sign-in, which the sign-in limits bound.
 */
const PARAMETERS = { N: 2 ** 15, r: 8, p: 3 } as const;
const KEY_LENGTH = 64;
const SALT_BYTES = 16;

/** Room for the largest parameters a stored hash may name (N = 2^17, r = 8). */
const MAX_MEMORY = 256 * 1024 * 1024;

function derive(password: string, salt: Buffer, parameters: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, { ...parameters, maxmem: MAX_MEMORY }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** `scrypt$N$r$p$<salt base64>$<hash base64>`: the parameters travel with the hash, so they can be raised for new passwords later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, PARAMETERS);
  return ['scrypt', PARAMETERS.N, PARAMETERS.r, PARAMETERS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

// Checked against when the login is unknown, so an unknown login costs the
// same time as a wrong password and the answer time tells nothing.
let standIn: Promise<string> | null = null;

/** Whether `password` matches `stored` (compared in constant time); null `stored` checks against a stand-in and answers false. */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = (stored ?? (await (standIn ??= hashPassword(randomBytes(16).toString('base64'))))).split('$');
  const expected = Buffer.from(hash ?? '', 'base64');
  if (scheme !== 'scrypt' || expected.length !== KEY_LENGTH) return false;
  const key = await derive(password, Buffer.from(salt, 'base64'), { N: Number(n), r: Number(r), p: Number(p) });
  return timingSafeEqual(key, expected) && stored !== null;
}
