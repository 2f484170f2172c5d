import { AppError } from '../http/errors.ts';
import { parseCsvBatches } from './csv.ts';
import { ndjsonBatches } from './ndjson.ts';

export type BodyFormat = 'json' | 'ndjson' | 'csv';

export function formatOf(contentType: string | undefined): BodyFormat {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/json') return 'json';
  if (type === 'application/x-ndjson' || type === 'application/ndjson' || type === 'application/jsonl') return 'ndjson';
  if (type === 'text/csv') return 'csv';
  throw new AppError('unsupported_media_type', 'send application/json (an array), application/x-ndjson or text/csv', {
    'content-type': [`unsupported: ${type || '(none)'}`],
  });
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
