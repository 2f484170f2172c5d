import type { Request, Response } from 'express';
import { createHash } from 'node:crypto';
import type { Meta } from '../core/meta.ts';
import { servedAsOf } from '../db/read-scope.ts';
import { ClientGoneError } from './errors.ts';

declare const written: unique symbol;

/**
 * What a handler returns once it has written its answer itself, through
 * sendFramed or streamFramed: only they make one, once they have ended the
 * answer, and only a route whose response the router cannot write
 * (http/route.ts, FramedResponse) may return it. The router checks that the
 * handler returned it (isWritten).
 */
export interface Written {
  readonly [written]: true;
}

const WRITTEN = Object.freeze({}) as Written;

/**
 * Whether a handler's value is the Written that sendFramed and streamFramed
 * return. Not `res.writableEnded`: the compression in front of the response
 * ends it only once the compressor has flushed, after the handler returns.
 */
export const isWritten = (value: unknown): value is Written => value === WRITTEN;

/**
 * How a body frames data that is already text (price bars, written field by
 * field, so equal inputs always give equal bytes): the JSON
 * envelope around an array or an object, or CSV's header row before the rows
 * and the `#meta` row after them.
 */
export interface Framing {
  type: string;
  open: Buffer;
  close(meta: Meta): Buffer;
}

/** `{"data":[…],"meta":{…}}` or `{"data":{…},"meta":{…}}` around the data's items. */
export function jsonFraming(data: 'array' | 'object'): Framing {
  const [open, close] = data === 'array' ? ['[', ']'] : ['{', '}'];
  return {
    type: 'application/json',
    open: Buffer.from(`{"data":${open}`),
    close: (meta) => Buffer.from(`${close},"meta":${JSON.stringify(meta)}}`),
  };
}

const CRLF = '\r\n';
const csvQuoted = (text: string) => `"${text.replaceAll('"', '""')}"`;

/**
 * RFC 4180 CSV: the header row, the rows (each ended by CRLF), then the
 * meta row: `#meta` in the first cell, the envelope's meta as JSON in the
 * second, the others empty, so every row has the header's number of cells.
 * The meta can only be known once the rows are read, so it comes last; a
 * reader that skips `#` lines (pandas: comment='#') reads the bars alone.
 */
export function csvFraming(columns: readonly string[]): Framing {
  return {
    type: 'text/csv; charset=utf-8',
    open: Buffer.from(columns.join(',') + CRLF),
    close: (meta) => Buffer.from(`#meta,${csvQuoted(JSON.stringify(meta))}${','.repeat(columns.length - 2)}${CRLF}`),
  };
}

/**
 * What a client may do with a price read it holds. Most reads can change (a
 * bar corrected, a bar appended, an action added): keep it and reuse it only
 * after the service confirms its ETag (a 304). A read whose bytes can never
 * change (a pinned version of a past window, prices/service.ts) may be reused
 * for a year without asking. Both `private`: a shared cache would answer
 * without the key check every request must make, and would hand a keyed
 * answer to requests without a key (docs/api.md, "Caching").
 */
export const REVALIDATE = 'private, no-cache';
export const IMMUTABLE = 'private, max-age=31536000, immutable';

/**
 * A body made from items that are all at hand by something other than text
 * framing: the columnar price answers (prices/bar-files.ts), which encode
 * the items (the bars' JSON text) with the meta into a file's bytes.
 */
export interface Encoding {
  type: string;
  body(items: Buffer[], meta: Meta): Promise<Buffer[]>;
}

/**
 * A framed body whose items are all at hand, with its validator: the ETag is
 * a SHA-256 of the answer's bytes, so it changes exactly when they do, and
 * If-None-Match naming it gets 304 with no body. Strong when the bytes are
 * all the answer depends on; weak when the meta carries the time of reading
 * (`readAt`, left out of the hash), so two reads of the same bars at
 * different moments match. The tag names the bytes before content coding:
 * identity, zstd, br and gzip answers share it (every answer is private and
 * whole, never a range, so no cache splices one coding's bytes into
 * another's).
 */
export async function sendFramed(
  req: Request,
  res: Response,
  framing: Framing | Encoding,
  answer: { items: Buffer[]; meta: Meta; readAt: string | null; immutable: boolean },
): Promise<Written> {
  const { items } = answer;
  // The instant the answer holds: earlier than the service's reading time when a replica behind the primary served it (db/read-scope.ts).
  const meta = { ...answer.meta, asOf: servedAsOf(answer.meta.asOf) };
  // The time of reading, as the answer states it.
  const readAt = answer.readAt !== null && answer.meta.asOf === answer.readAt ? meta.asOf : answer.readAt;
  const parts = 'body' in framing ? await framing.body(items, meta) : [framing.open, ...items, framing.close(meta)];
  const hash = createHash('sha256');
  // The time of reading is text in the meta only: the last part of a text
  // answer; inside a columnar file's metadata, whose other values are binary.
  const metaParts = 'body' in framing ? parts.length : 1;
  parts.forEach((part, i) => hash.update(readAt === null || i < parts.length - metaParts ? part : without(part, readAt)));
  const etag = `${readAt === null ? '' : 'W/'}"${hash.digest('base64url').slice(0, 32)}"`;
  // A 304 carries the headers the 200 would (RFC 9110, 15.4.5), Vary included (http/compression.ts).
  res.set({ ETag: etag, 'Cache-Control': answer.immutable ? IMMUTABLE : REVALIDATE });
  if (matchesAny(req.headers['if-none-match'], etag)) {
    res.status(304).end();
    return WRITTEN;
  }
  // The parts are written as they are, not joined: a year of 1-hour bars is
  // 1.9 MB, and a copy of it costs a millisecond and garbage to collect. With
  // Content-Length set, compression still sees the size (http/compression.ts).
  res
    .status(200)
    .type(framing.type)
    .set('Content-Length', String(parts.reduce((n, part) => n + part.length, 0)));
  for (const part of parts.slice(0, -1)) res.write(part);
  res.end(parts.at(-1));
  return WRITTEN;
}

/** `bytes` with every occurrence of `text` (as UTF-8) taken out. */
function without(bytes: Buffer, text: string): Buffer {
  const needle = Buffer.from(text);
  const kept: Buffer[] = [];
  let from = 0;
  for (let at = bytes.indexOf(needle); at !== -1; at = bytes.indexOf(needle, from)) {
    kept.push(bytes.subarray(from, at));
    from = at + needle.length;
  }
  kept.push(bytes.subarray(from));
  return kept.length === 1 ? bytes : Buffer.concat(kept);
}

/** Whether an If-None-Match header names `etag`, by the weak comparison (RFC 9110, 13.1.2). */
export function matchesAny(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return header.trim() === '*' || header.split(',').some((tag) => opaque(tag) === opaque(etag));
}

/**
 * A framed body streamed: `produce` writes the items in chunks and returns
 * the meta, which can only be known at the end. Nothing is sent until the
 * first chunk, so a failure before it still gets a status and an error
 * envelope. Each write waits for the response to take it (the socket, or the
 * compression stream in front of it, to drain), so a slow reader slows the
 * producer instead of growing a buffer, and for the next turn of the event
 * loop, so downloads take turns with other requests. `slot` hears when the
 * response waits for its client and when it stops waiting (stream-slots.ts).
 * A reader that takes nothing at all is closed by the idle timeout every
 * public request has (http/observe.ts), and the producer's next write rejects.
 */
export async function streamFramed(
  res: Response,
  framing: Framing,
  produce: (write: (chunk: Buffer | Buffer[]) => Promise<void>) => Promise<Meta>,
  slot?: { blocked(waiting: boolean): void },
): Promise<Written> {
  // One listener each for the whole response, never removed: compression
  // routes 'drain' listeners to its zlib stream, where removing them (and so
  // `once`) does not reach.
  let waiting: { resolve(): void; reject(err: Error): void } | null = null;
  const settle = (err?: Error) => {
    const w = waiting;
    waiting = null;
    if (err) w?.reject(err);
    else w?.resolve();
  };
  res.on('drain', () => {
    slot?.blocked(false);
    settle();
  });
  res.on('finish', () => settle());
  res.on('close', () => settle(new ClientGoneError('the client went away')));
  // A chunk given as parts is written part by part with the socket corked,
  // so the socket takes them in one write without their being copied into
  // one buffer first. The socket, not the response: a corked response holds
  // a chunked body's parts itself and says "wait" once they pass its
  // high-water mark, but hands them to the socket at uncork, and a socket
  // with room for them never needs draining, so the 'drain' a writer waits
  // for never comes (test/unit/stream-framed.test.ts). Corked beneath, the
  // response says "wait" only when the socket does, and the socket then
  // says "drain".
  const writeParts = (parts: Buffer[]) => {
    const socket = res.socket;
    socket?.cork();
    let taken = true;
    for (const part of parts) taken = res.write(part);
    socket?.uncork();
    return taken;
  };
  const send = (chunk: Buffer | Buffer[], end: boolean) =>
    new Promise<void>((resolve, reject) => {
      if (res.destroyed) return reject(new ClientGoneError('the client went away'));
      const sent = { resolve, reject };
      waiting = sent;
      // One chunk per turn of the event loop even while the socket takes
      // everything: a download filling empty socket buffers (megabytes each)
      // would otherwise render page after page while other requests wait.
      if (end) res.end(chunk);
      else if (Buffer.isBuffer(chunk) ? res.write(chunk) : writeParts(chunk)) setImmediate(() => waiting === sent && settle());
      else slot?.blocked(true);
    });
  let started = false;
  const write = (chunk: Buffer | Buffer[]) => {
    if (started) return send(chunk, false);
    started = true;
    // Its bytes are not known before its head, so it has no validator, and a copy could be revalidated against nothing (docs/api.md, "Caching").
    res.status(200).type(framing.type).set('Cache-Control', 'no-store');
    return send([framing.open, ...(Buffer.isBuffer(chunk) ? [chunk] : chunk)], false);
  };
  const meta = await produce(write);
  if (!started) await write(Buffer.alloc(0));
  await send(framing.close({ ...meta, asOf: servedAsOf(meta.asOf) }), true);
  return WRITTEN;
}
