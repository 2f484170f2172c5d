import { z } from 'zod';
import { AppError, zodDetails, type ErrorDetails } from './errors.ts';
import { notInRangeTypeMessage, numberBounds, outOfRangeMessage, type NumberBounds } from './params.ts';

type Part = 'query' | 'params' | 'body' | 'row';

/** Parses one part of a request; every failing field is named in `details`. */
export function parse<S extends z.ZodType>(schema: S, value: unknown, part: Part = 'query'): z.infer<S> {
  const what = `invalid ${part === 'params' ? 'path parameters' : part}`;
  const unstorable = unstorableText(value);
  if (unstorable) throw new AppError('invalid_request', what, unstorable);
  const result = schema.safeParse(value);
  if (!result.success) throw new AppError('invalid_request', what, zodDetails(teaching(result.error, schema, value, part)));
  return result.data;
}

/**
 * zod's issues reworded for the caller: a field that is absent is "required"
 * (not "expected string, received undefined"), an unknown field is named by
 * itself with the fields the schema accepts, and a bounded number names its
 * range (see rangeIssues). The same message twice for one field is given once.
 */
function teaching(error: z.ZodError, schema: z.ZodType, value: unknown, part: Part): z.ZodError {
  const issues = error.issues.flatMap((issue): z.core.$ZodIssue[] => {
    if ((issue.code === 'invalid_type' || issue.code === 'invalid_value' || issue.code === 'invalid_union') && isAbsent(value, issue.path))
      return [{ ...issue, message: 'required' }];
    if (issue.code === 'unrecognized_keys') {
      const accepted = acceptedKeys(schema, issue.path);
      const noun = part === 'query' ? 'parameter' : 'field';
      const message = accepted ? `unknown ${noun}; accepted: ${accepted.length ? accepted.join(', ') : 'none'}` : `unknown ${noun}`;
      return issue.keys.map((key) => ({ ...issue, path: [...issue.path, key], message }));
    }
    return rangeIssues(issue, schema);
  });
  const seen = new Set<string>();
  return new z.ZodError(
    issues.filter((issue) => {
      const key = JSON.stringify([issue.path.map(String), issue.message]);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    }),
  );
}

// A message that says no more than the range does: zod's defaults ("Too big:
// expected number to be <=500"), "must be an integer", or one bound alone
// ("at most 5"). Anything else is the schema's own explanation and is kept
// after the range.
const RESTATES_RANGE =
  /^(Too (small|big)\b.*|Invalid input: expected (number|int)\b.*|(must be )?(an integer|a (finite )?number|a whole number)|(must be )?(at least|at most|greater than|less than|between) -?[\d.e+]+( and -?[\d.e+]+)?)$/;

/**
 * A failure of a bounded number names the range, as the limits give it: a
 * value that is not a number, or not an integer where one is required, is
 * told "must be an integer in [1, 500]" (or "a number in (0, 5]"); a number
 * outside the range "must be between 1 and 500" (or "greater than 0 and at
 * most 5"). A schema's own explanation beyond the range is kept as a second
 * message.
 */
function rangeIssues(issue: z.core.$ZodIssue, schema: z.ZodType): z.core.$ZodIssue[] {
  const ranged = issue.code === 'too_small' || issue.code === 'too_big' || issue.code === 'invalid_type' || issue.code === 'not_multiple_of';
  const generic = (issue.code === 'custom' || issue.code === 'invalid_format') && RESTATES_RANGE.test(issue.message);
  if (!ranged && !generic) return [issue];
  if (issue.code === 'too_small' || issue.code === 'too_big') {
    if (issue.origin !== 'number' && issue.origin !== 'int') return [issue];
  }
  const bounds = boundsAt(schema, issue.path);
  if (!bounds) return [issue];
  // The implicit (format) bound of an integer is named only when it is the one broken.
  const implicit =
    (issue.code === 'too_big' && bounds.implicitMax && Number(issue.maximum) >= bounds.max!) ||
    (issue.code === 'too_small' && bounds.implicitMin && Number(issue.minimum) <= bounds.min!);
  const message = issue.code === 'too_small' || issue.code === 'too_big' ? outOfRangeMessage(bounds, implicit) : notInRangeTypeMessage(bounds);
  const rewritten = { ...issue, message };
  const restates = RESTATES_RANGE.test(issue.message) || issue.message === message || issue.message === notInRangeTypeMessage(bounds);
  return restates ? [rewritten] : [rewritten, issue];
}

const defOf = (s: z.ZodType) => (s as unknown as { def: { type: string; innerType?: z.ZodType; in?: z.ZodType; out?: z.ZodType } }).def;

/**
 * The schema at `path`, stepping into object fields and array elements
 * through optionals, defaults and pipes; undefined when the path leaves the
 * schema (an unknown field, or a step into something that is not a container).
 */
function schemaAt(schema: z.ZodType, path: PropertyKey[]): z.ZodType | undefined {
  let current: z.ZodType | undefined = schema;
  for (const step of path) {
    if (!current) return undefined;
    const s = unwrapContainer(current);
    if (s instanceof z.ZodObject) current = s.shape[String(step)] as z.ZodType | undefined;
    else if (s instanceof z.ZodArray) current = s.element as z.ZodType;
    else return undefined;
  }
  return current;
}

/** The bounds of the number schema at `path` (through objects, arrays, optionals, defaults and pipes), or null. */
function boundsAt(schema: z.ZodType, path: PropertyKey[]): NumberBounds | null {
  const current = schemaAt(schema, path);
  const number = current && findNumber(current);
  return number ? numberBounds(number) : null;
}

function unwrapContainer(s: z.ZodType): z.ZodType {
  const def = defOf(s);
  if (def.innerType) return unwrapContainer(def.innerType);
  if (def.type === 'pipe' && def.in) return unwrapContainer(def.in);
  return s;
}

function findNumber(s: z.ZodType, depth = 0): z.ZodNumber | null {
  if (s instanceof z.ZodNumber) return s;
  if (depth > 8) return null;
  const def = defOf(s);
  if (def.innerType) return findNumber(def.innerType, depth + 1);
  if (def.type === 'pipe') return (def.in && findNumber(def.in, depth + 1)) || (def.out && findNumber(def.out, depth + 1)) || null;
  return null;
}

function isAbsent(value: unknown, path: PropertyKey[]): boolean {
  if (path.length === 0) return value === undefined;
  let container = value;
  for (const step of path.slice(0, -1)) {
    if (container === null || typeof container !== 'object') return false;
    container = (container as Record<PropertyKey, unknown>)[step];
  }
  return container !== null && typeof container === 'object' && !Object.prototype.hasOwnProperty.call(container, path[path.length - 1]);
}

/** The keys of the object schema at `path` (through arrays, optionals and pipes), or null when it cannot be told. */
function acceptedKeys(schema: z.ZodType, path: PropertyKey[]): string[] | null {
  const current = schemaAt(schema, path);
  const target = current && unwrapContainer(current);
  return target instanceof z.ZodObject ? Object.keys(target.shape) : null;
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
    (details[key] ??= []).push(message);
  };
  const join = (path: string, step: string | number) => (path ? `${path}.${step}` : String(step));
  if (typeof value === 'string') {
    const problem = problemOf(value);
    if (problem) report('', problem);
    return details;
  }
  const stack: [object, string, number][] = value !== null && typeof value === 'object' ? [[value, '', 1]] : [];
  while (stack.length) {
    const [container, path, depth] = stack.pop()!;
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
