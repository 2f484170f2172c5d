import { createHash } from 'node:crypto';
import { z } from 'zod';

/**
 * A name-based UUID: the first 16 bytes of SHA-1 over `namespace` (its 16
 * bytes, when given) followed by `name` in UTF-8, with the version nibble set
 * to 5 and the variant bits to 10. With a namespace this is RFC 9562 version 5;
 * without one the name carries its own prefix (`corporate-action:…`,
 * `economic-event:…`). The same text always gives the same id, so a row
 * posted again without an id finds the row it made before.
 */
export function nameBasedUuid(name: string, namespace?: string): string {
  const hash = createHash('sha1');
  if (namespace !== undefined) hash.update(Buffer.from(namespace.replace(/-/g, ''), 'hex'));
  const bytes = hash.update(name, 'utf8').digest().subarray(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x50;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const UuidSchema = z.string().uuid('must be a UUID');

/**
 * What a value that is not a UUID is told where an instrument is named: the
 * spec names instruments by UUID only, so a symbol sent instead
 * (`/v1/instruments/MSFT/prices`) is refused, and the message says where the
 * id is found. Its second part is a message of its own (validation-messages.ts).
 */
export const INSTRUMENT_ID_RULE = "must be a UUID; find an instrument's id with GET /v1/instruments?query=MSFT";

const InstrumentUuidSchema = z.string().uuid(INSTRUMENT_ID_RULE);

/**
 * Ids are stored and compared in lower case: one sent in upper case names
 * the same row. Each id schema lower-cases once, where the id enters.
 */
const lowerUuid = () => UuidSchema.transform((s) => s.toLowerCase());

/** An instrument id already in lower case: the brand says it was checked and lower-cased where it entered. */
const LowerInstrumentId = InstrumentUuidSchema.brand<'InstrumentId'>();

/** An instrument's id as it enters (a path, a query, a body, an upload row): a lower-case UUID. */
export const InstrumentIdSchema = InstrumentUuidSchema.transform((s) => s.toLowerCase()).pipe(LowerInstrumentId);
export type InstrumentId = z.output<typeof InstrumentIdSchema>;

// The RFC 9562 shape z.uuid() accepts, less its nil and max special cases.
const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$/;

/** The same as InstrumentIdSchema, for hand-written hot paths (an upload's bars): the id, or undefined when it is not one. */
export function instrumentIdOf(v: unknown): InstrumentId | undefined {
  return typeof v === 'string' && UUID_RE.test(v) ? (v.toLowerCase() as InstrumentId) : undefined;
}

/** Any other resource's id (a key, an account, an event), lower-cased. */
export const IdSchema = lowerUuid();

/** The path parameters of a route on one resource (`/keys/:id/revoke`): its id. */
export const IdParamsSchema = z.strictObject({ id: IdSchema });

/** The path parameters of a route on one instrument (`/instruments/:id/prices`). */
export const InstrumentParamsSchema = z.strictObject({ id: InstrumentIdSchema });

/** Comma-separated instrument ids: trimmed and lower-cased, duplicates collapsed in order, then at least `min` and at most `max` distinct. */
export function instrumentIdListSchema(max: number, min = 1) {
  return z
    .string()
    .min(1, 'must list at least one id')
    .transform((s) => [...new Set(s.split(',').map((x) => x.trim().toLowerCase()))])
    .pipe(
      z
        .array(LowerInstrumentId)
        .min(min, `must list at least ${min} distinct id${min > 1 ? 's' : ''}`)
        .max(max, `at most ${max} distinct ids per call`),
    );
}
