import type { Response } from 'express';
import { ClientGoneError } from './errors.ts';

export interface Meta {
  asOf: string;
  source: string;
  stale: boolean;
  [extra: string]: unknown;
}

/** The one success envelope: `{ data, meta }` with asOf, source and stale always present. */
export function sendData(res: Response, data: unknown, meta: Meta, status = 200): void {
  res.status(status).json({ data, meta });
}

/**
 * The same envelope for data already serialised (price bars are written field
 * by field so equal inputs always give equal bytes).
 */
export function sendSerialisedData(res: Response, dataJson: string, meta: Meta): void {
  res.status(200).type('application/json').send(`{"data":${dataJson},"meta":${JSON.stringify(meta)}}`);
}

export interface StreamOptions {
  /** Whenever a write waits for the client, it must accept more within this long or the response is closed. */
  idleTimeoutMs: number;
  /** Called when the response is closed for idleness (log it, count it). */
  onIdleClose(idleMs: number, bytesWritten: number): void;
}

/**
 * The envelope streamed: `produce` writes the data value in chunks and
 * returns the meta, which can only be known at the end. Nothing is sent until
 * the first chunk, so a failure before it still gets a status and an error
 * envelope. Each write waits for the socket to drain, so a slow reader slows
 * the producer instead of growing a buffer; a reader that takes nothing for
 * `idleTimeoutMs` has its connection closed (the producer's write rejects).
 */
export async function streamData(
  res: Response,
  options: StreamOptions,
  produce: (write: (chunk: string) => Promise<void>) => Promise<Meta>,
): Promise<void> {
  let bytes = 0;
  const send = (chunk: string, end: boolean) =>
    new Promise<void>((resolve, reject) => {
      if (res.destroyed) return reject(new ClientGoneError('the client went away'));
      bytes += chunk.length;
      const flushed = end ? (res.end(chunk), res.writableFinished) : res.write(chunk);
      if (flushed) return resolve();
      const waitingSince = performance.now();
      const done = (err?: Error) => {
        clearTimeout(timer);
        res.off(end ? 'finish' : 'drain', onProgress);
        res.off('close', onClose);
        if (err) reject(err);
        else resolve();
      };
      const onProgress = () => done();
      const onClose = () => done(new ClientGoneError('the client went away'));
      const timer = setTimeout(() => {
        const idleMs = Math.round(performance.now() - waitingSince);
        options.onIdleClose(idleMs, bytes);
        res.destroy();
        done(new ClientGoneError(`the client read nothing for ${idleMs} ms`));
      }, options.idleTimeoutMs);
      res.once(end ? 'finish' : 'drain', onProgress);
      res.once('close', onClose);
    });
  let started = false;
  const write = (chunk: string) => {
    if (started) return send(chunk, false);
    started = true;
    res.status(200).type('application/json');
    return send(`{"data":${chunk}`, false);
  };
  const meta = await produce(write);
  if (!started) await write('');
  await send(`,"meta":${JSON.stringify(meta)}}`, true);
}
