import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { refuseUnlessUtf8 } from '../http/media-type.ts';
import { parseCsvBatches } from './csv.ts';
import { ndjsonBatches } from './ndjson.ts';
import { AppError, errorCode } from '../core/errors.ts';

export type BodyFormat = 'json' | 'ndjson' | 'csv';

/** The format a Content-Type names; 415 for any other type, or for a charset other than UTF-8. */
export function formatOf(contentType: string | undefined): BodyFormat {
  refuseUnlessUtf8(contentType);
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/json') return 'json';
  if (type === 'application/x-ndjson' || type === 'application/ndjson' || type === 'application/jsonl') return 'ndjson';
  if (type === 'text/csv') return 'csv';
  throw new AppError('unsupported_media_type', 'send application/json (an array), application/x-ndjson or text/csv', {
    'content-type': [`unsupported: ${type || '(none)'}`],
  });
}

export type BodyEncoding = 'identity' | 'gzip';

/** The Content-Encoding of an upload: none, or gzip; 415 for any other. */
export function encodingOf(contentEncoding: string | undefined): BodyEncoding {
  const encoding = (contentEncoding ?? '').trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') return 'identity';
  if (encoding === 'gzip' || encoding === 'x-gzip') return 'gzip';
  throw new AppError('unsupported_media_type', 'send the upload as it is, or compressed with Content-Encoding: gzip', {
    'content-encoding': [`unsupported: ${encoding}`],
  });
}

/**
 * How far a streamed (CSV or NDJSON) gzip upload may inflate: at most
 * MAX_INFLATION_RATIO times the compressed bytes read, once past its first
 * INFLATION_ALLOWANCE bytes. Price files inflate 5-7 times as CSV and 11 as
 * NDJSON (20 years of S&P 500 daily bars in the upload's columns, gzip -6
 * and -9), and the most regular history the tests post (one instrument,
 * prices rising by one a day) 13 times; gzip reaches about 1,030 on repeated
 * bytes. Between the two, 100 refuses a compression bomb after at most 4 MiB
 * plus a tenth of what gzip could have made of it: the ones that slip past
 * the record limits are rows repeated, which a staged kind would otherwise
 * parse and copy in full before finding them repeated. The allowance keeps a
 * record that is too long (1 MiB characters, up to 3 MiB of UTF-8) refused as
 * such, naming its row. A JSON array is held to its 64 MiB instead.
 */
export const MAX_INFLATION_RATIO = 100;
export const INFLATION_ALLOWANCE = 4 * 1024 * 1024;

/**
 * The upload's bytes as its parser reads them: as sent, or inflated from
 * gzip, with the ratio bound for the streamed formats.
 */
export function uploadBytes(body: AsyncIterable<Buffer>, encoding: BodyEncoding, format: BodyFormat): AsyncIterable<Buffer> {
  if (encoding === 'identity') return body;
  return gunzipped(body, format === 'json' ? Infinity : MAX_INFLATION_RATIO);
}

/**
 * A gzip body, inflated as it is read. Only what the reader asks for is
 * inflated (zlib's 16 KiB chunks, held back by the stream's backpressure), so
 * the limits on what is read (a JSON array's 64 MiB, a record's 1 MiB) count
 * inflated bytes, and a body that inflates past one is refused without
 * inflating the rest. Past INFLATION_ALLOWANCE, a body inflating to more than
 * `maxRatio` times the compressed bytes zlib has consumed is a 413. Bytes
 * that are not gzip are a 400.
 */
export async function* gunzipped(body: AsyncIterable<Buffer>, maxRatio: number): AsyncGenerator<Buffer> {
  const compressed = Readable.from(body);
  const inflate = createGunzip();
  compressed.once('error', (err) => inflate.destroy(err));
  compressed.pipe(inflate);
  let inflated = 0;
  try {
    for await (const chunk of inflate) {
      inflated += (chunk as Buffer).length;
      // bytesWritten is the compressed input zlib has consumed, not what the pipe has handed it ahead of time.
      if (inflated > INFLATION_ALLOWANCE && inflated > maxRatio * inflate.bytesWritten) throw inflatedTooFar(inflated, inflate.bytesWritten, maxRatio);
      yield chunk as Buffer;
    }
  } catch (err) {
    if (errorCode(err)?.startsWith('Z_')) {
      throw new AppError('invalid_request', 'the body is not valid gzip', { body: [`Content-Encoding is gzip, but: ${(err as Error).message}`] });
    }
    throw err;
  } finally {
    compressed.destroy();
    inflate.destroy();
  }
}

function inflatedTooFar(inflated: number, compressed: number, maxRatio: number): AppError {
  return new AppError(
    'payload_too_large',
    `a gzip upload may inflate to at most ${maxRatio} times its compressed size past its first ${INFLATION_ALLOWANCE / 1024 / 1024} MiB, far more than price data does; send this one uncompressed`,
    { body: [`inflated ${inflated} bytes from ${compressed}, more than ${maxRatio} times`] },
  );
}

// A JSON array body is parsed whole; larger uploads should use NDJSON or CSV.
const MAX_JSON_BYTES = 64 * 1024 * 1024;
const ROWS_PER_BATCH = 5_000;

async function* jsonBatches(body: AsyncIterable<Buffer | string>): AsyncGenerator<unknown[]> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_JSON_BYTES)
      throw new AppError('payload_too_large', `JSON bodies are limited to ${MAX_JSON_BYTES / 1024 / 1024} MiB; send NDJSON or CSV for larger batches`);
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new AppError('invalid_request', 'request body is not valid JSON', { body: ['malformed JSON'] });
  }
  if (!Array.isArray(parsed)) throw new AppError('invalid_request', 'the body must be a JSON array of rows', { body: ['expected an array'] });
  yield* batchesOf(parsed);
}

/** Groups rows (an array, or any iterable) into ingest batches. */
export function* batchesOf<T>(rows: Iterable<T>): Generator<T[]> {
  let batch: T[] = [];
  for (const row of rows) {
    batch.push(row);
    if (batch.length === ROWS_PER_BATCH) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

export function batchesFrom(body: AsyncIterable<Buffer | string>, format: BodyFormat): AsyncGenerator<unknown[]> {
  return format === 'json' ? jsonBatches(body) : format === 'ndjson' ? ndjsonBatches(body) : parseCsvBatches(body);
}
