import { createHash } from 'node:crypto';
import { z } from 'zod';
import { AppError } from './errors.ts';

// Keyset cursors for the list reads (news, catalyst events, the economic
// calendar, instrument search). A cursor is the position of the last row of a
// page in the list's total order (its sort key and id), so the next page
// starts right after that row whatever was added or removed meanwhile; an
// offset would shift with every row added before it.
//
// On the wire it is base64url (no padding) of a small JSON object:
//   { "v": 1, "r": <list>, "q": <binding>, "k": [<sort key values>…, <id>] }
// `r` names the list it was made for (news, events, economic-events,
// instruments); `q` is the first 128 bits (base64url) of the SHA-256 of that
// list's normalised filters, every query parameter except `limit` and
// `cursor`. A cursor given to another list, or with other filters, is refused:
// it would name a position in an order the request does not read. `limit`
// may change from page to page. The cursor is opaque, not secret: it holds
// nothing the caller could not read, so it is not signed; a forged one can
// only start a page at another position of the same list.

export const CURSOR_VERSION = 1;

/** Cursors are short: the longest a list makes is well under this. */
const MAX_CURSOR_LENGTH = 1024;

export const CursorSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(MAX_CURSOR_LENGTH, `is not a cursor this service made (at most ${MAX_CURSOR_LENGTH} characters)`)
  .regex(/^[A-Za-z0-9_-]+$/, 'is not a cursor this service made (base64url characters only)')
  .optional()
  .describe(
    "resume after the last row of a previous page: pass that page's meta.nextCursor unchanged, with the same other parameters (limit may differ). Rows that sort before the cursor's position and were added after it was made are not returned.",
  );

export const NextCursorSchema = z
  .string()
  .nullable()
  .describe('pass as `cursor`, with the same other parameters, for the rows after this page; null when there are no more');

const LIST_NAMES = ['news', 'events', 'economic-events', 'instruments'] as const;
export type CursorList = (typeof LIST_NAMES)[number];
const LISTS: ReadonlySet<string> = new Set(LIST_NAMES);

const PayloadSchema = z.strictObject({
  v: z.literal(CURSOR_VERSION),
  r: z.string().max(64),
  q: z.string().max(64),
  k: z.array(z.string().max(256)).min(1).max(8),
});

/** The binding of a cursor to its list's filters: a hash of them in a fixed order, `undefined` written as null. */
export function bindingOf(filters: readonly unknown[]): string {
  const text = JSON.stringify(filters.map((f) => (f === undefined ? null : f)));
  return createHash('sha256').update(text).digest().subarray(0, 16).toString('base64url');
}

export function encodeCursor(list: CursorList, binding: string, key: readonly string[]): string {
  return Buffer.from(JSON.stringify({ v: CURSOR_VERSION, r: list, q: binding, k: key }), 'utf8').toString('base64url');
}

const refuse = (message: string) => new AppError('invalid_request', 'invalid query', { cursor: [message] });

const MALFORMED = 'is not a cursor this service made; pass meta.nextCursor exactly as it was given';

/**
 * The sort key of a cursor made for `list` with `binding`, checked by
 * `key` (which returns the parsed key, or null when a value is not of the
 * list's kind). A malformed cursor, or one made for another list or other
 * filters, is a 400 naming `cursor`.
 */
export function decodeCursor<K>(cursor: string, list: CursorList, binding: string, key: (values: string[]) => K | null): K {
  let payload: z.infer<typeof PayloadSchema>;
  try {
    const text = Buffer.from(cursor, 'base64url').toString('utf8');
    // Node decodes base64url leniently: the text must encode back to the same cursor.
    if (Buffer.from(text, 'utf8').toString('base64url') !== cursor) throw refuse(MALFORMED);
    const parsed = PayloadSchema.safeParse(JSON.parse(text));
    if (!parsed.success) throw refuse(MALFORMED);
    payload = parsed.data;
  } catch (e) {
    if (e instanceof AppError) throw e;
    throw refuse(MALFORMED);
  }
  if (payload.r !== list) throw refuse(`was made for another list${LISTS.has(payload.r) ? ` (${payload.r})` : ''}, not this one`);
  if (payload.q !== binding)
    throw refuse('was made for a request with other parameters; repeat every parameter of the request that gave it (only limit may change)');
  const parsed = key(payload.k);
  if (parsed === null) throw refuse(MALFORMED);
  return parsed;
}

// Checks of sort-key values, so that nothing malformed reaches SQL as a value
// PostgreSQL would refuse (a 500) rather than a 400.

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const isCursorId = (s: string | undefined): s is string => s !== undefined && UUID_RE.test(s);

// An instant with microseconds as PostgreSQL stores it, UTC, no zone: 2024-03-04T14:00:00.123456.
const MICROS_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{6})$/;

/** Whether `s` is a real UTC instant to the microsecond, as the lists' SQL writes a timestamptz key (to_char … 'YYYY-MM-DD"T"HH24:MI:SS.US'). */
export function isCursorInstant(s: string | undefined): s is string {
  if (s === undefined || !MICROS_RE.test(s)) return false;
  const ms = new Date(`${s.slice(0, 23)}Z`);
  return !Number.isNaN(ms.getTime()) && ms.toISOString().slice(0, 23) === s.slice(0, 23);
}
