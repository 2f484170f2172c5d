import compression from 'compression';
import type { RequestHandler } from 'express';
import zlib from 'node:zlib';

/**
 * gzip or br, as the request's Accept-Encoding prefers (br first when it
 * takes both), for every answer of 1 KiB or more whose type compresses (JSON,
 * CSV, text); smaller ones gain less than the encoding costs. Streamed
 * answers keep their backpressure: the compressor stops reading while the
 * socket is full, and the writer waits for the compressor (http/envelope.ts).
 *
 * br at quality 4 compresses about as fast as gzip's default and smaller; its
 * window is cut from 4 MiB to 256 KiB (lgwin 18), which still spans hundreds of
 * bars, so ten concurrent compressed downloads hold about a megabyte each
 * rather than several.
 */
export function compressResponses(): RequestHandler {
  return compression({
    threshold: 1024,
    brotli: {
      params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: 4,
        [zlib.constants.BROTLI_PARAM_LGWIN]: 18,
      },
    },
  });
}
