import { matchesAny } from './envelope.ts';
import type { Request, Response } from 'express';
import { AppError } from '../core/errors.ts';
import { ClientGoneError } from './errors.ts';

declare const fileSent: unique symbol;

/** What a handler of a file route returns once sendFileBytes has answered (http/route.ts, FileResponse); the router checks it. */
export interface FileSent {
  readonly [fileSent]: true;
}

const FILE_SENT = Object.freeze({}) as FileSent;

export const isFileSent = (value: unknown): value is FileSent => value === FILE_SENT;

export interface StoredBytes {
  size: number;
  /** A strong validator of the bytes (quoted). */
  etag: string;
  contentType: string;
  /** Reads bytes [start, end) and hands them to `write` in order, awaiting each. */
  read(start: number, end: number, write: (bytes: Buffer) => Promise<void>): Promise<void>;
}

/**
 * The one range a `Range` header asks for, as [start, end) within `size`;
 * null to answer the whole (no header, a unit other than bytes, several
 * ranges, or a header that does not parse: RFC 9110 §14.2 lets a server
 * ignore them); 'unsatisfiable' when it starts at or past the end.
 */
export function rangeOf(header: string | undefined, size: number): [number, number] | null | 'unsatisfiable' {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    // A suffix: the last n bytes.
    const n = Number(m[2]);
    if (n === 0) return 'unsatisfiable';
    return [Math.max(0, size - n), size];
  }
  const start = Number(m[1]);
  if (start >= size) return 'unsatisfiable';
  const last = m[2] === '' ? size - 1 : Number(m[2]);
  if (last < start) return null;
  return [start, Math.min(last, size - 1) + 1];
}

/**
 * Sends stored bytes with `ETag`, `Accept-Ranges: bytes`, and one range when
 * asked: 206 with `Content-Range`, or 416 (the error envelope, with
 * `Content-Range` giving the size) for a range past the end. `If-Range` with
 * any other validator than the ETag sends the whole, as the bytes changed.
 * `If-None-Match` naming the ETag is 304. The answer is never compressed in
 * transit (`no-transform`): a range counts the bytes as stored. Writes wait
 * for the socket to drain, so memory holds one piece at a time; `slot` hears
 * when the download waits for its client and when it stops waiting
 * (stream-slots.ts).
 */
export async function sendFileBytes(
  req: Request,
  res: Response,
  bytes: StoredBytes,
  filename: string,
  slot?: { blocked(waiting: boolean): void },
): Promise<FileSent> {
  res.setHeader('ETag', bytes.etag);
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('Cache-Control', 'private, no-transform');
  if (matchesAny(req.headers['if-none-match'], bytes.etag)) {
    res.status(304).end();
    return FILE_SENT;
  }
  const ifRange = req.headers['if-range'];
  const range = ifRange !== undefined && ifRange !== bytes.etag ? null : rangeOf(req.headers.range, bytes.size);
  if (range === 'unsatisfiable') {
    throw new AppError(
      'range_not_satisfiable',
      `the file has ${bytes.size} bytes; the range starts past its end`,
      { range: [`must start before byte ${bytes.size}`] },
      {
        'Content-Range': `bytes */${bytes.size}`,
      },
    );
  }
  const [start, end] = range ?? [0, bytes.size];
  res.status(range ? 206 : 200);
  res.setHeader('Content-Type', bytes.contentType);
  res.setHeader('Content-Disposition', `attachment; filename="${filename}"`);
  res.setHeader('Content-Length', String(end - start));
  if (range) res.setHeader('Content-Range', `bytes ${start}-${end - 1}/${bytes.size}`);
  if (req.method === 'HEAD') {
    res.end();
    return FILE_SENT;
  }
  await bytes.read(start, end, async (piece) => {
    if (res.destroyed) throw new ClientGoneError('the client went away during a file download');
    if (res.write(piece)) return;
    slot?.blocked(true);
    await drainedOrClosed(res);
    slot?.blocked(false);
  });
  res.end();
  return FILE_SENT;
}

/**
 * Resolves when `res` drains or closes, whichever comes first, and leaves no
 * listener behind: a race of two `once` waits would leave the loser's (and
 * its error listener), one pair per wait, and a 50 MB file waits dozens of
 * times.
 */
function drainedOrClosed(res: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
