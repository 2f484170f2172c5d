import type { z } from 'zod';
import { AppError, type ErrorDetails } from './errors.ts';
import { oversizedJson } from './json-shape.ts';
import { clipped, type Part } from './received-words.ts';
import { EXPLAINED, listedDetails, MAX_LISTED_FIELDS, oversizeDetails, oversizeListed, type Listed } from './validation-messages.ts';

/** The 400 for a refused part of a request: its message says how many fields were refused when not all are named. */
function refused(what: string, { details, fields, shown }: Listed): AppError {
  return new AppError('invalid_request', fields > shown ? `${what}: ${shown} of ${fields} problems shown` : what, details);
}

/**
 * Parses one part of a request; each failing field is named in `details`
 * (at most MAX_LISTED_FIELDS of them), with what it accepts and what was
 * received (validation-messages.ts). A part over a size its schema sets (an
 * object with far more fields than it declares, a list or text over its
 * length) is refused before zod walks the value, for that alone
 * (size-bounds.ts), unless `sizesChecked` says its JSON text was scanned for
 * the same sizes (refuseOversizedJson); then text PostgreSQL could not store;
 * then the schema.
 */
export function parse<S extends z.ZodType>(schema: S, value: unknown, part: Part = 'query', sizesChecked = false): z.infer<S> {
  const what = `invalid ${part === 'params' ? 'path parameters' : part}`;
  const oversize = sizesChecked ? null : oversizeDetails(schema, value, part);
  if (oversize) throw refused(what, oversize);
  const unstorable = unstorableText(value);
  if (unstorable) throw new AppError('invalid_request', what, unstorable);
  const result = schema.safeParse(value, EXPLAINED);
  if (!result.success) throw refused(what, listedDetails(result.error, schema, value, part));
  return result.data;
}

/**
 * Refuses a JSON body over a size `schema` sets, from its bytes, before
 * JSON.parse builds it (json-shape.ts): 80,000 fields cost JSON.parse 22 ms
 * and the scan 3 ms. parse refuses the same parts of a parsed value.
 */
export function refuseOversizedJson(schema: z.ZodType, bytes: Buffer): void {
  const found = oversizeListed(oversizedJson(schema, bytes, MAX_LISTED_FIELDS), schema, undefined, 'body');
  if (found) throw refused('invalid body', found);
}

/**
 * `details` for a value `schema` refuses, keyed under `prefix` (an upload's
 * `rows[3]`), worded and bounded as parse words them; null when the schema
 * accepts it. For a failure found by a plain safeParse on a hot path: it
 * parses again, after the same size pre-pass as parse.
 */
export function refusalDetails(schema: z.ZodType, value: unknown, part: Part, prefix = ''): ErrorDetails | null {
  const oversize = oversizeDetails(schema, value, part, prefix);
  if (oversize) return oversize.details;
  const result = schema.safeParse(value, EXPLAINED);
  return result.success ? null : listedDetails(result.error, schema, value, part, prefix).details;
}

// PostgreSQL text cannot hold NUL (U+0000); jsonb refuses the escape \u0000
// and a UTF-16 surrogate without its pair, which plain text would store
// silently as U+FFFD. Both are refused at the input boundary, naming the
// field, rather than failing in the database as a 500. The first pattern is
// a quick test (it also matches a well-formed pair); the second is exact.
const NUL_OR_SURROGATE = /[\0\uD800-\uDFFF]/;
const UNPAIRED_SURROGATE = /\p{Cs}/u;

// The deepest legitimate input, an instrument row's symbols[i].validFrom, is
// three levels down. Deeper values reach recursive code: JSON.stringify
// overflows its stack at 10,000 levels (60 KB of JSON, well inside the 1 MB
// body limit), and PostgreSQL's jsonb parser recurses too.
export const MAX_DEPTH = 32;

// Enough to show what is wrong without echoing a whole hostile body.
const MAX_REPORTED = 10;

function problemOf(text: string): string | null {
  if (!NUL_OR_SURROGATE.test(text)) return null;
  if (text.includes('\0')) return 'must not contain NUL (U+0000)';
  return UNPAIRED_SURROGATE.test(text) ? 'must not contain an unpaired UTF-16 surrogate' : null;
}

/** Whether `text` may hold what unstorableText reports: false is certain, true means look closer. */
export function mayHoldUnstorableText(text: string): boolean {
  return NUL_OR_SURROGATE.test(text);
}

/** Whether any enumerable value of `value` is an object or array. */
export function hasNestedValue(value: object): boolean {
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key];
    if (v !== null && typeof v === 'object') return true;
  }
  return false;
}

/**
 * What PostgreSQL could not store in `value`: each string (object keys too)
 * holding NUL or an unpaired surrogate, and nesting deeper than MAX_DEPTH, by
 * field path (keys and indexes joined by dots, as zod issues are reported;
 * "_" for `value` itself), or null when there is nothing. Iterative, so a
 * hostile depth cannot overflow the scan itself.
 */
export function unstorableText(value: unknown): ErrorDetails | null {
  let details: ErrorDetails | null = null;
  let reported = 0;
  const report = (path: string, message: string) => {
    // No prototype: a field named "__proto__" is a key like any other.
    details ??= Object.create(null) as ErrorDetails;
    const key = path || '_';
    if (!details[key] && reported++ >= MAX_REPORTED) return;
    // Once per field: an object of 80,000 keys each holding NUL is told it once.
    const messages = (details[key] ??= []);
    if (!messages.includes(message)) messages.push(message);
  };
  // A name is cut as in every other message (received-words.ts, clipped): a key may be 100 KB long.
  const join = (path: string, step: string | number) => (path ? `${path}.${clipped(String(step))}` : clipped(String(step)));
  if (typeof value === 'string') {
    const problem = problemOf(value);
    if (problem) report('', problem);
    return details;
  }
  const stack: [object, string, number][] = value !== null && typeof value === 'object' ? [[value, '', 1]] : [];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const [container, path, depth] = next;
    if (depth > MAX_DEPTH) {
      report(path, `must not be nested more than ${MAX_DEPTH} levels deep`);
      continue;
    }
    const isArray = Array.isArray(container);
    for (const key of Object.keys(container)) {
      if (!isArray) {
        const problem = problemOf(key);
        if (problem) report(path, `a key ${problem.replace('must not contain', 'contains')}`);
      }
      const v = (container as Record<string, unknown>)[key];
      if (typeof v === 'string') {
        const problem = problemOf(v);
        if (problem) report(join(path, key), problem);
      } else if (v !== null && typeof v === 'object') {
        stack.push([v, join(path, key), depth + 1]);
      }
    }
  }
  return details;
}
