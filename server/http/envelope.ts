import type { Response } from 'express';
import { ClientGoneError } from './errors.ts';

export interface Meta {
  asOf: string;
  source: string;
  stale: boolean;
  [extra: string]: unknown;
}

/** meta.source: the sources the data came from, sorted and comma-separated, or 'none' when there is no data. */
export function sourcesMeta(sources: Set<string>): string {
  return sources.size ? [...sources].sort().join(', ') : 'none';
}

/**
 * A page of a list read, with its meta: `rows` were read with a limit of
 * `limit + 1`, so one row more than `limit` says more matched (`truncated`).
 */
export function listPage<T extends { source: string }>(rows: T[], limit: number) {
  const truncated = rows.length > limit;
  const data = truncated ? rows.slice(0, limit) : rows;
  return { data, meta: { asOf: new Date().toISOString(), source: sourcesMeta(new Set(data.map((r) => r.source))), stale: false, limit, truncated } };
}

/** The one success envelope: `{ data, meta }` with asOf, source and stale always present. */
export function sendData(res: Response, data: unknown, meta: Meta, status = 200): void {
  res.status(status).json({ data, meta });
}

/**
 * The same envelope for data already serialised (price bars: PostgreSQL
 * writes them field by field, so equal inputs always give equal bytes).
 */
export function sendSerialisedData(res: Response, dataJson: Buffer, meta: Meta): void {
  res
    .status(200)
    .type('application/json')
    .send(Buffer.concat([DATA_KEY, dataJson, Buffer.from(`,"meta":${JSON.stringify(meta)}}`)]));
}

const DATA_KEY = Buffer.from('{"data":');

/**
 * The envelope streamed: `produce` writes the data value in chunks and
 * returns the meta, which can only be known at the end. Nothing is sent until
 * the first chunk, so a failure before it still gets a status and an error
 * envelope. Each write waits for the socket to drain, so a slow reader slows
 * the producer instead of growing a buffer, and for the next turn of the
 * event loop, so downloads take turns with other requests. A reader that takes nothing at all
 * is closed by the idle timeout every public request has (http/observe.ts),
 * and the producer's next write rejects.
 */
export async function streamData(res: Response, produce: (write: (chunk: Buffer) => Promise<void>) => Promise<Meta>): Promise<void> {
  const send = (chunk: Buffer, end: boolean) =>
    new Promise<void>((resolve, reject) => {
      if (res.destroyed) return reject(new ClientGoneError('the client went away'));
      // One chunk per turn of the event loop even while the socket takes
      // everything: a download filling empty socket buffers (megabytes each)
      // would otherwise render page after page while other requests wait.
      if (end ? (res.end(chunk), false) : res.write(chunk)) return void setImmediate(resolve);
      const progress = end ? 'finish' : 'drain';
      const done = (err?: Error) => {
        res.off(progress, onProgress);
        res.off('close', onClose);
        if (err) reject(err);
        else resolve();
      };
      const onProgress = () => done();
      const onClose = () => done(new ClientGoneError('the client went away'));
      res.once(progress, onProgress);
      res.once('close', onClose);
    });
  let started = false;
  const write = (chunk: Buffer) => {
    if (started) return send(chunk, false);
    started = true;
    res.status(200).type('application/json');
    return send(Buffer.concat([DATA_KEY, chunk]), false);
  };
  const meta = await produce(write);
  if (!started) await write(Buffer.alloc(0));
  await send(Buffer.from(`,"meta":${JSON.stringify(meta)}}`), true);
}
