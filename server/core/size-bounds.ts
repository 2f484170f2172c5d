import { z } from 'zod';
import { schemaEntered } from './schema-words.ts';

// What in a value is over a size its schema sets, found before zod walks the
// value: zod's work and the error's wording grow with the size of what it is
// given. Worded field by field, an object of 80,000 unknown fields posted to
// option-price (850 KiB, inside the 1 MB body limit) would be a 7.6 MB answer
// and 0.6 s of the main thread, and four clients posting it would take
// another account's price read from 8 ms to 2.3 s (p50).

type Schema = z.core.$ZodType;
type Path = PropertyKey[];

/** A part of a value over its schema's size: an object with far more fields than it declares, or a list or text over its length. */
export type Oversize =
  | {
      kind: 'fields';
      path: Path;
      /** The fields the object holds. */
      count: number;
      /** The fields the schema declares. */
      accepted: string[];
      /** The first few fields it holds that the schema does not declare. */
      unknown: string[];
    }
  | {
      kind: 'length';
      path: Path;
      /** The issue zod's own length check gives the value, not yet finalised (no message, no path). */
      issue: z.core.$ZodRawIssue;
    };

/** The unknown fields a refusal names: enough to recognise what was sent; the count says the rest. */
export const UNKNOWN_NAMED = 3;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The issue of the first length check of `s` that `value` breaks by being
 * too long, run as zod runs it: a string's overwrites (trim) first, in their
 * order, and lengths measured by the check itself (a string's in code
 * points). Other checks (formats, refinements) are not run.
 */
export function tooLong(s: Schema, value: string | unknown[]): z.core.$ZodRawIssue | null {
  const payload: z.core.ParsePayload<string | unknown[]> = { value, issues: [] };
  for (const check of s._zod.def.checks ?? []) {
    if (check instanceof z.core.$ZodCheckOverwrite) {
      // An overwrite on a string or list schema gives a string or list (trim, toLowerCase).
      payload.value = check._zod.def.tx(payload.value) as string | unknown[];
    } else if (check instanceof z.core.$ZodCheckMaxLength || check instanceof z.core.$ZodCheckLengthEquals) {
      // Length checks are synchronous; the type allows a promise for refinements.
      void check._zod.check(payload);
      const issue = payload.issues.find((i) => i.code === 'too_big');
      if (issue) return issue;
      payload.issues = [];
    }
  }
  return null;
}

/** The most items a list schema's length checks allow; Infinity without one. */
export function listLength(s: z.core.$ZodArray): number {
  let bound = Infinity;
  for (const check of s._zod.def.checks ?? []) {
    if (check instanceof z.core.$ZodCheckMaxLength) bound = Math.min(bound, check._zod.def.maximum);
    else if (check instanceof z.core.$ZodCheckLengthEquals) bound = Math.min(bound, check._zod.def.length);
  }
  return bound;
}

/**
 * Each part of `value` over its size in `schema`, walking the value beside
 * the schema: into declared fields, list items and record values, through
 * wrappers and into the side of a pipe a value enters (a preprocess step is
 * taken to pass an object or list through, as jsonCell does); not into a
 * union, a tuple, a catch (it replaces what it refuses) or anything the
 * schema does not declare. Over its size is:
 * - a strict object holding more than `spareFields` fields beyond those it
 *   declares: found by counting its keys, and not walked further;
 * - a list or text longer than its length check allows: not walked further.
 * Work per object is its declared fields and the count of its keys; the walk
 * is as deep as the schema, whatever the value's nesting.
 */
export function* oversizedParts(schema: Schema, value: unknown, spareFields: number, path: Path = []): Generator<Oversize> {
  const s = schemaEntered(schema);
  if (typeof value === 'string') {
    if (!(s instanceof z.core.$ZodString)) return;
    const issue = tooLong(s, value);
    if (issue) yield { kind: 'length', path, issue };
  } else if (Array.isArray(value)) {
    if (!(s instanceof z.core.$ZodArray)) return;
    const issue = tooLong(s, value);
    if (issue) {
      yield { kind: 'length', path, issue };
      return;
    }
    const element = s._zod.def.element;
    for (let i = 0; i < value.length; i++) yield* oversizedParts(element, value[i], spareFields, [...path, i]);
  } else if (isObject(value)) {
    if (s instanceof z.core.$ZodObject) {
      const { shape, catchall } = s._zod.def;
      const accepted = Object.keys(shape);
      if (catchall instanceof z.core.$ZodNever) {
        const count = Object.keys(value).length;
        if (count - accepted.length > spareFields) {
          const unknown: string[] = [];
          for (const key in value) {
            if (Object.hasOwn(shape, key)) continue;
            unknown.push(key);
            if (unknown.length === UNKNOWN_NAMED) break;
          }
          yield { kind: 'fields', path, count, accepted, unknown };
          return;
        }
      }
      for (const key of accepted) if (Object.hasOwn(value, key)) yield* oversizedParts(shape[key], value[key], spareFields, [...path, key]);
    } else if (s instanceof z.core.$ZodRecord) {
      for (const key of Object.keys(value)) yield* oversizedParts(s._zod.def.valueType, value[key], spareFields, [...path, key]);
    }
  }
}
