import compression from 'compression';
import compressible from 'compressible';
import type { RequestHandler, Response } from 'express';
import Negotiator from 'negotiator';
import zlib from 'node:zlib';
import onHeaders from 'on-headers';

/** An Accept-Encoding that names a coding we produce (or any, with `*`). */
const OFFERS_A_CODING = /zstd|gzip|br|deflate|\*/i;

/** Answers smaller than this go uncompressed: they gain less than the coding costs. */
const THRESHOLD_BYTES = 1024;

/**
 * The codings in the order we prefer them among those a request accepts at
 * the same q-value: zstd, then br, then gzip. On the bulk read's year of 500
 * instruments (bench/results/bulk-read.json), zstd at level 3 cost 3.0 ms of
 * CPU per MB of JSON and 3.1 per MB of CSV, against 9.1 and 11.7 for gzip and
 * 9.6 and 10.7 for br, for 9 to 10 % more bytes than br; br before gzip is the
 * compression library's order (2 to 4 % fewer bytes). A q-value the client
 * gives still decides first (`gzip;q=1, zstd;q=0.5` gets gzip).
 */
export const CODING_PREFERENCE = ['zstd', 'br', 'gzip'] as const;

/** br's settings (see compressResponses); gzip is zlib's default, level 6. */
export const BROTLI_OPTIONS: zlib.BrotliOptions = {
  params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4, [zlib.constants.BROTLI_PARAM_LGWIN]: 18 },
};

/** zstd's settings: level 3 (zstd's default), a 256 KiB window as br's. */
export const ZSTD_OPTIONS: zlib.ZstdOptions = {
  params: { [zlib.constants.ZSTD_c_compressionLevel]: 3, [zlib.constants.ZSTD_c_windowLog]: 18 },
};

/**
 * zstd, br or gzip, as the request's Accept-Encoding and CODING_PREFERENCE
 * choose, for every answer of 1 KiB or more whose type compresses (JSON, CSV,
 * text, Arrow); smaller ones gain less than the encoding costs. Streamed answers
 * keep their backpressure: the compressor stops reading while the socket is
 * full, and the writer waits for the compressor (http/envelope.ts).
 *
 * br and gzip come from the `compression` library. It has no zstd, so a
 * request whose best coding is zstd goes to `zstdResponses` below, which
 * wraps the response the same way with Node's own zstd (node:zlib).
 *
 * br at quality 4 compresses about as fast as gzip's default and smaller; its
 * window is cut from 4 MiB to 256 KiB (lgwin 18), which still spans hundreds of
 * bars, so ten concurrent compressed downloads hold about a megabyte each
 * rather than several. zstd's window is cut the same way (windowLog 18).
 *
 * A request whose Accept-Encoding offers no coding (or that has none) can only
 * be answered in identity, so no wrapper runs for it: the library wraps every
 * response it sees (write, end, writeHead, a close listener, a type and
 * Cache-Control check): with autocannon at 50 connections on 2 cores, the
 * probability route's 600-byte answer took 0.19 to 0.20 ms of the service's
 * CPU a request without it and 0.22 to 0.23 ms with it.
 */
export function compressResponses(): RequestHandler {
  const brOrGzip = compression({ threshold: THRESHOLD_BYTES, brotli: BROTLI_OPTIONS, filter: (_req, res) => compressesType(res.getHeader('Content-Type')) });
  return (req, res, next) => {
    // Every answer, a 304 and an answer left in identity included, varies by Accept-Encoding.
    res.setHeader('Vary', 'Accept-Encoding');
    const accepted = req.headers['accept-encoding'];
    if (accepted === undefined || !OFFERS_A_CODING.test(accepted)) return next();
    const best = new Negotiator(req).encoding([...CODING_PREFERENCE, 'identity'], { preferred: CODING_PREFERENCE });
    if (best !== 'zstd') return brOrGzip(req, res, next);
    zstdResponse(req.method, res);
    next();
  };
}

/**
 * Whether answers of this media type compress: those the compressible
 * library (mime-db) says do, and Arrow IPC streams, whose fixed-width columns
 * of prices, dates and dictionary codes repeat bytes a coder finds. Parquet
 * is not coded again: its pages are zstd already (prices/bar-files.ts).
 */
function compressesType(type: unknown): boolean {
  return typeof type === 'string' && (compressible(type) === true || type.startsWith('application/vnd.apache.arrow.stream'));
}

/** Whether an answer with these headers is worth compressing, as the `compression` library judges it. */
function compresses(method: string, res: Response, length: number | undefined): boolean {
  if (method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304) return false;
  if (!compressesType(res.getHeader('Content-Type'))) return false;
  if (/(?:^|,)\s*no-transform\s*(?:,|$)/.test(String(res.getHeader('Cache-Control') ?? ''))) return false;
  const encoding = res.getHeader('Content-Encoding');
  if (encoding !== undefined && encoding !== 'identity') return false;
  const declared = res.getHeader('Content-Length');
  if (declared !== undefined && Number(declared) < THRESHOLD_BYTES) return false;
  return length === undefined || length >= THRESHOLD_BYTES;
}

type Chunk = string | Buffer | Uint8Array;
const toBuffer = (chunk: Chunk, encoding?: BufferEncoding) =>
  typeof chunk === 'string' ? Buffer.from(chunk, encoding) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);

/**
 * Codes `res` with zstd once its headers show it compresses: what is written
 * goes to the compressor, whose output goes to the socket, paused while the
 * socket is full; 'drain' listeners (the streamed writers') listen to the
 * compressor, so a writer waits for it as it would for the socket. The
 * compressor is released when the response closes, finished or not.
 */
function zstdResponse(method: string, res: Response): void {
  const write = res.write.bind(res) as (chunk: Chunk) => boolean;
  const end = res.end.bind(res) as (chunk?: Chunk) => Response;
  const on = res.on.bind(res);
  let stream: zlib.ZstdCompress | undefined;
  let ended = false;
  let closed = false;
  /** 'drain' listeners added before the headers: they go to the compressor if there is one, else to the response. */
  let drainListeners: ((...args: unknown[]) => void)[] | null = [];
  /** The length of a body ended in one call before its headers were sent. */
  let length: number | undefined;

  const addDrain = (listener: (...args: unknown[]) => void) => (stream ? stream.on('drain', listener) : on('drain', listener));
  const flush = () => {
    const listeners = drainListeners ?? [];
    drainListeners = null;
    for (const listener of listeners) addDrain(listener);
  };

  on('close', () => {
    closed = true;
    stream?.destroy();
  });

  onHeaders(res, () => {
    if (!compresses(method, res, length)) return flush();
    stream = zlib.createZstdCompress(ZSTD_OPTIONS);
    if (closed) {
      stream.destroy();
      stream = undefined;
      return flush();
    }
    res.setHeader('Content-Encoding', 'zstd');
    res.removeHeader('Content-Length');
    const compressor = stream;
    compressor.on('data', (chunk: Buffer) => {
      if (!write(chunk)) compressor.pause();
    });
    compressor.on('end', () => end());
    on('drain', () => compressor.resume());
    flush();
  });

  res.write = function zstdWrite(this: Response, chunk: Chunk, encoding?: BufferEncoding | ((err?: Error | null) => void)) {
    if (ended) return false;
    if (!this.headersSent) this.writeHead(this.statusCode);
    return stream ? stream.write(toBuffer(chunk, typeof encoding === 'string' ? encoding : undefined)) : write(chunk);
  } as Response['write'];

  res.end = function zstdEnd(this: Response, chunk?: Chunk | (() => void), encoding?: BufferEncoding | (() => void)) {
    if (ended) return this;
    const body = typeof chunk === 'function' ? undefined : chunk;
    if (!this.headersSent) {
      if (!this.getHeader('Content-Length')) length = body === undefined ? 0 : toBuffer(body, typeof encoding === 'string' ? encoding : undefined).length;
      this.writeHead(this.statusCode);
    }
    if (!stream) return body === undefined ? end() : end(body);
    ended = true;
    if (body === undefined) stream.end();
    else stream.end(toBuffer(body, typeof encoding === 'string' ? encoding : undefined));
    return this;
  } as Response['end'];

  res.on = function zstdOn(this: Response, type: string | symbol, listener: (...args: unknown[]) => void) {
    if (type !== 'drain') return on(type, listener);
    if (drainListeners !== null) drainListeners.push(listener);
    else addDrain(listener);
    return this;
  } as Response['on'];
}
