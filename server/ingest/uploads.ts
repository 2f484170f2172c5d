import type { Readable } from 'node:stream';
import { AppError } from '../core/errors.ts';
import { PermitRefused, Semaphore } from '../core/semaphore.ts';

export interface UploadLimits {
  /** Uploads running at once; more wait for a slot. */
  maxConcurrent: number;
  /** How long an upload may wait for a slot before it gets 503 overloaded. */
  waitTimeoutMs: number;
  /** Uploads allowed to wait at once; one more gets 503 at once. */
  maxWaiting: number;
  /** An upload that sends nothing for this long is aborted (408) and nothing is stored. */
  idleTimeoutMs: number;
}

/**
 * Admission for uploads sent by a client (the admin upload routes pass the
 * request, a Readable, and a signal that aborts when its client leaves). Each
 * upload is one transaction on a pooled connection for as long as its client
 * sends, so only `maxConcurrent` run at once and the rest of the pool stays
 * free for reads; the others wait for a slot within a deadline. A client that
 * stops sending is cut off after `idleTimeoutMs` rather than holding its
 * transaction open, and one that leaves stops its upload (the upload checks
 * the signal too, for a body already received).
 */
export class UploadSlots {
  private readonly slots: Semaphore;

  private readonly limits: UploadLimits;

  constructor(limits: UploadLimits) {
    this.limits = limits;
    this.slots = new Semaphore(limits.maxConcurrent, limits.maxWaiting);
  }

  async run<T>(body: Readable, signal: AbortSignal, upload: (body: AsyncIterable<Buffer>) => Promise<T>): Promise<T> {
    try {
      await this.slots.acquire(this.limits.waitTimeoutMs);
    } catch (err) {
      if (!(err instanceof PermitRefused)) throw err;
      throw new AppError(
        'overloaded',
        `${this.limits.maxConcurrent} uploads are running, the most allowed at once, and no slot freed in time; retry shortly`,
        {},
        { 'Retry-After': '5' },
      );
    }
    try {
      // A client that left while its upload waited (at most waitTimeoutMs) has it stopped here.
      signal.throwIfAborted();
      return await upload(whileSending(body, this.limits.idleTimeoutMs, signal));
    } finally {
      this.slots.release();
    }
  }
}

/**
 * The body's chunks; throws request_timeout (and stops reading) when none
 * arrives for `idleMs`, and the signal's reason once it aborts. A read that
 * fails because the client left (ECONNRESET, which would read as the
 * database's connection failing) throws the signal's reason too.
 */
async function* whileSending(body: Readable, idleMs: number, signal: AbortSignal): AsyncGenerator<Buffer> {
  const chunks = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  for (;;) {
    signal.throwIfAborted();
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new AppError('request_timeout', `the upload sent nothing for ${idleMs} ms; nothing was stored`, { body: [`no data for ${idleMs} ms`] }));
      }, idleMs);
      onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    const next = chunks.next();
    try {
      const { done, value } = await Promise.race([next, stopped]);
      if (done) return;
      yield value;
    } catch (err) {
      next.catch(() => {}); // the body is abandoned; its pending read may still reject
      body.pause();
      throw signal.aborted ? signal.reason : err;
    } finally {
      clearTimeout(timer);
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }
}
