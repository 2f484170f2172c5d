import { createHash, createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import { AppError } from './errors.ts';

// Keyset cursors for the list reads (news, catalyst events, the economic
// calendar, instrument search). A cursor is the position of the last row of a
// page in the list's total order (its sort key and id), so the next page
// starts right after that row whatever was added or removed meanwhile; an
// offset would shift with every row added before it.
//
// On the wire it is base64url (no padding) of a 16-byte tag followed by a
// small JSON object:
//   { "v": 2, "r": <list>, "q": <binding>, "k": [<sort key values>…, <id>] }
// `r` names the list it was made for (news, events, economic-events,
// instruments); `q` is the first 128 bits (base64url) of the SHA-256 of that
// list's normalised filters, every query parameter except `limit` and
// `cursor`. A cursor given to another list, or with other filters, is refused:
// it would name a position in an order the request does not read. `limit`
// may change from page to page.
//
// The JSON is readable, but only the service can make it: the tag is
// HMAC-SHA-256 of the JSON under the deployment's signing key
// (sql/023_cursor_signing_key.sql), which every process reads from the
// primary at start: a cursor made by any process of the deployment is read by
// all of them, and one made elsewhere by none. Unsigned, a client could
// re-encode a position and skip rows with a 200. The tag is cut to 128 bits:
// each guess at a forgery costs a rate-limited request and succeeds with
// probability 2^-128, and a cursor grows by 22 characters rather than 43.

export const CURSOR_VERSION = 2;

/** Cursors are short: the longest a list makes is well under this. */
const MAX_CURSOR_LENGTH = 1024;

/** Bytes of the HMAC-SHA-256 tag a cursor carries. */
const TAG_BYTES = 16;

/** Bytes of the signing key: SHA-256's block is 64, its output 32, and a key of 32 random bytes is as strong as the hash. */
const CURSOR_KEY_BYTES = 32;

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

const LIST_NAMES = ['news', 'events', 'economic-events', 'instruments', 'exports'] as const;
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

const refuse = (message: string) => new AppError('invalid_request', 'invalid query', { cursor: [message] });

const NOT_MADE_HERE = 'is not a cursor this service made; pass meta.nextCursor exactly as it was given';

/**
 * The list cursors of one deployment: made and checked under its signing
 * key, which stays inside this object (a KeyObject prints and serialises
 * without its bytes).
 */
export class ListCursors {
  readonly #key: KeyObject;

  /** `secret` is the deployment's signing key (db/signing-keys.ts). */
  constructor(secret: Uint8Array) {
    if (secret.length !== CURSOR_KEY_BYTES) throw new Error(`a cursor signing key is ${CURSOR_KEY_BYTES} bytes, not ${secret.length}`);
    this.#key = createSecretKey(secret);
  }

  #tag(payload: Buffer): Buffer {
    return createHmac('sha256', this.#key).update(payload).digest().subarray(0, TAG_BYTES);
  }

  /** The cursor after a row of `list` whose sort key is `key`, bound to `binding`. */
  make(list: CursorList, binding: string, key: readonly string[]): string {
    const payload = Buffer.from(JSON.stringify({ v: CURSOR_VERSION, r: list, q: binding, k: key }), 'utf8');
    return Buffer.concat([this.#tag(payload), payload]).toString('base64url');
  }

  /**
   * The sort key of a cursor this deployment made for `list` with `binding`,
   * checked by `key` (which returns the parsed key, or null when a value is
   * not of the list's kind). A cursor whose tag does not verify (altered,
   * cut, forged, or made under another deployment's key) is a 400 naming
   * `cursor`, and so is one made for another list or other filters, each
   * with its own message.
   */
  read<K>(cursor: string, list: CursorList, binding: string, key: (values: string[]) => K | null): K {
    const bytes = Buffer.from(cursor, 'base64url');
    // Node decodes base64url leniently: the bytes must encode back to the same cursor.
    if (bytes.length <= TAG_BYTES || bytes.toString('base64url') !== cursor) throw refuse(NOT_MADE_HERE);
    const payload = bytes.subarray(TAG_BYTES);
    // Constant time, so that the time of a refusal says nothing of how much of a forged tag was right.
    if (!timingSafeEqual(bytes.subarray(0, TAG_BYTES), this.#tag(payload))) throw refuse(NOT_MADE_HERE);
    let json: unknown;
    try {
      json = JSON.parse(payload.toString('utf8'));
    } catch {
      throw refuse(NOT_MADE_HERE);
    }
    // Signed but not of this version's shape: made under this key by another version of the service.
    const parsed = PayloadSchema.safeParse(json);
    if (!parsed.success) throw refuse(NOT_MADE_HERE);
    const { r, q, k } = parsed.data;
    if (r !== list) throw refuse(`was made for another list${LISTS.has(r) ? ` (${r})` : ''}, not this one`);
    if (q !== binding) throw refuse('was made for a request with other parameters; repeat every parameter of the request that gave it (only limit may change)');
    const position = key(k);
    if (position === null) throw refuse(NOT_MADE_HERE);
    return position;
  }
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
