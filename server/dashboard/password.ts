import { randomBytes, timingSafeEqual } from 'node:crypto';
import { Piscina } from 'piscina';
import { passwordHashes, passwordHashesRefused, passwordHashesRunning } from '../observability/metrics.ts';
import { AppError } from '../core/errors.ts';
import { PermitRefused, Semaphore } from '../core/semaphore.ts';

/**
 * scrypt with N = 2^15, r = 8, p = 3: one of the equivalent minimums of the
 * OWASP Password Storage Cheat Sheet (N = 2^17, r = 8, p = 1 is another).
 * This one holds 32 MiB per hash (128 * N * r) rather than 128 MiB; p = 3
 * buys back the work. One hash takes 0.23 s on one idle core here (2 cores),
 * and took up to 0.9 s under load.
 */
const PARAMETERS = { N: 2 ** 15, r: 8, p: 3 } as const;
const KEY_LENGTH = 64;
const SALT_BYTES = 16;

/** Room for the largest parameters a stored hash may name (N = 2^17, r = 8). */
const MAX_MEMORY = 256 * 1024 * 1024;

/** Hashing inside a slot (PasswordHasher.withSlot). */
export interface Hashing {
  hash(password: string): Promise<string>;
  /** Whether `password` matches `stored` (compared in constant time); null `stored` checks against a stand-in and answers false. */
  verify(password: string, stored: string | null): Promise<boolean>;
}

/**
 * A check's place in the queue for a hashing slot, lower first. TRUSTED_RANK
 * is for the operator, an invitation's holder and a browser the login
 * recognises; any other sign-in ranks by the attempts its address has made in
 * the window, this one included: 1 for an address new to the window, more
 * for each attempt a flooding address makes.
 */
export type HashRank = number;
export const TRUSTED_RANK: HashRank = 0;

/** Where a check comes from, for PasswordHasher.oneAtATime: a browser the login recognises (its device token's hash), or else an address. */
export type CheckSource = { address: string } | { device: string };

export interface PasswordHasherOptions {
  /** Hashes that run at once, each on a thread of its own. */
  threads: number;
  /** Checks allowed to wait for a thread; past it, an arrival ranked before the worst waiter takes its place, and any other is refused. */
  maxWaiting: number;
  /** How long a check may wait for a thread before it is refused. */
  waitMs: number;
  /** Added to the threads' nice value, so request handling and the database win the CPU. */
  niceIncrement: number;
}

/**
 * Hashes and checks dashboard passwords on threads of their own: at most
 * `threads` checks hold a slot at once, a few more wait up to `waitMs`, and
 * the rest are refused at once with 503 overloaded and Retry-After. The
 * waiters are served by rank (HashRank), not by arrival: under a flood from
 * many addresses, each under its limits, a browser the login recognises and
 * a holder at an address new to the window still get the next slot, and a
 * flooding address that has made many attempts is the one refused. The
 * hashes run synchronously on those threads (workers/password-hash.cjs),
 * never on libuv's thread pool, which compression and file reads use: with
 * crypto's asynchronous scrypt, 8 concurrent sign-in posts made a gzip price
 * read take 5.4 s instead of 0.1 s.
 */
export class PasswordHasher {
  private readonly threads: Piscina;
  private readonly slots: Semaphore;
  /** The sources (CheckSource, as `address:…` or `device:…`) with a check between its limits and the end of its hash. */
  private readonly checking = new Set<string>();
  // Checked against when the login is unknown, so an unknown login costs the
  // same time as a wrong password and the answer time tells nothing.
  private standIn: Promise<string> | null = null;

  private readonly options: PasswordHasherOptions;

  constructor(options: PasswordHasherOptions) {
    this.options = options;
    this.slots = new Semaphore(options.threads, options.maxWaiting);
    this.threads = new Piscina({
      filename: new URL('../../workers/password-hash.cjs', import.meta.url).href,
      minThreads: 0,
      maxThreads: options.threads,
      // Sign-ins are rare: a thread that is not needed leaves after this long.
      idleTimeout: 30_000,
      niceIncrement: options.niceIncrement,
    });
  }

  /**
   * Runs `work` (an attempt's limits, then its hash) as the only check under
   * way from `source`; a second from the same source, while the first waits
   * for a slot or runs, is refused at once with 429 rate_limited and
   * Retry-After: 1 (a hash takes 0.23 to 0.9 s), before the limits are read.
   * So one address, however many connections it opens, holds at most one
   * place among the slots and their queue; filling them takes as many
   * addresses, each ranked by its own attempts. A 429 rather than 503: the
   * refusal is about this client's own concurrency, and comes whatever the
   * service's load. The sources are this process's, as the slots are.
   */
  async oneAtATime<T>(source: CheckSource, work: () => Promise<T>): Promise<T> {
    const [field, key, who] = 'device' in source ? ['device', `device:${source.device}`, 'browser'] : ['address', `address:${source.address}`, 'address'];
    if (this.checking.has(key)) {
      throw new AppError(
        'rate_limited',
        `another password check from this ${who} is under way; try again in 1 second`,
        { [field]: [`at most 1 password check at a time from one ${who}; another from this ${who} is being checked`] },
        { 'Retry-After': '1' },
      );
    }
    this.checking.add(key);
    try {
      return await work();
    } finally {
      this.checking.delete(key);
    }
  }

  /**
   * Runs `work` holding a hashing slot, waiting for it by `rank`; the slot is
   * given back when `work` ends. Taken last, after every cheaper check, so
   * the slot and its queue hold only attempts that passed them, and `work` is
   * the hash alone.
   */
  async withSlot<T>(work: (hashing: Hashing) => Promise<T>, rank: HashRank): Promise<T> {
    try {
      await this.slots.acquire(this.options.waitMs, rank);
    } catch (err) {
      if (!(err instanceof PermitRefused)) throw err;
      passwordHashesRefused.inc();
      throw new AppError('overloaded', 'too many passwords are being checked at once; retry shortly', {}, { 'Retry-After': '1' });
    }
    try {
      return await work({ hash: (password) => this.hash(password), verify: (password, stored) => this.verify(password, stored) });
    } finally {
      this.slots.release();
    }
  }

  /** Checks waiting for a hashing slot now. */
  get waiting(): number {
    return this.slots.waiting;
  }

  /** `scrypt$N$r$p$<salt base64>$<hash base64>`: the parameters travel with the hash, so they can be raised for new passwords later. */
  private async hash(password: string): Promise<string> {
    const salt = randomBytes(SALT_BYTES);
    const key = await this.derive(password, salt, PARAMETERS);
    return ['scrypt', PARAMETERS.N, PARAMETERS.r, PARAMETERS.p, salt.toString('base64'), key.toString('base64')].join('$');
  }

  private async verify(password: string, stored: string | null): Promise<boolean> {
    const standIn = (this.standIn ??= this.hash(randomBytes(16).toString('base64')));
    const [scheme, n, r, p, salt, hash] = (stored ?? (await standIn)).split('$');
    const expected = Buffer.from(hash ?? '', 'base64');
    if (scheme !== 'scrypt' || expected.length !== KEY_LENGTH) return false;
    const key = await this.derive(password, Buffer.from(salt, 'base64'), { N: Number(n), r: Number(r), p: Number(p) });
    return timingSafeEqual(key, expected) && stored !== null;
  }

  destroy(): Promise<void> {
    return this.threads.destroy();
  }

  private async derive(password: string, salt: Buffer, parameters: { N: number; r: number; p: number }): Promise<Buffer> {
    const end = passwordHashes.startTimer();
    passwordHashesRunning.inc();
    try {
      const key: Uint8Array = await this.threads.run({ password: password.normalize('NFKC'), salt, keyLength: KEY_LENGTH, ...parameters, maxmem: MAX_MEMORY });
      end({ outcome: 'ok' });
      return Buffer.from(key.buffer, key.byteOffset, key.byteLength);
    } catch (err) {
      end({ outcome: 'error' });
      throw err;
    } finally {
      passwordHashesRunning.dec();
    }
  }
}
