import { z } from 'zod';
import type { ErrorDetails } from './errors.ts';
import { numberRule, oneOfRule, plural, unitOfField } from './params.ts';
import { clipped, quoted, receivedWords, type Part } from './received-words.ts';
import { acceptedKeys, acceptedWords, boundsAt, findSchemaOf, isNumberAt, lengthWords, recordKeysAt, schemaAt } from './schema-words.ts';
import { oversizedParts, type Oversize } from './size-bounds.ts';

/**
 * The message of an issue whose schema states none. Parsing with this as
 * the error map tells a schema's own words from zod's defaults ("Invalid
 * option: expected one of "call"|"put""), which are worded here instead.
 */
const UNSTATED = '\u0000unstated';

/** The options of a safeParse whose failure is to be explained (validationDetails). */
export const EXPLAINED: z.core.ParseContext<z.core.$ZodIssue> = { error: () => UNSTATED, reportInput: true };

// A schema's own message that says no more than the range does: zod's
// defaults, "must be an integer", one bound ("at most 5", "at most 3650
// days") or the whole range ("must be an integer between 1 and 500").
// Anything else is the schema's own explanation and is kept after the range.
const BOUND = String.raw`-?[\d.e+]+`;
const RANGE = `(at least|at most|greater than|less than|between) ${BOUND}( and ((at most|less than) )?${BOUND})?`;
const KIND = String.raw`(an integer|a (finite )?number|a whole number)`;
const RESTATES_RANGE = new RegExp(
  String.raw`^(Too (small|big)\b.*|Invalid input: expected (number|int)\b.*|(must be )?(${KIND}(,? (of )?${RANGE})?|${RANGE})( \w+)?)$`,
);

const NUMBER_WORDS: Record<number, string> = { 1: 'one', 2: 'two' };

/** Whether a schema's own message on a length says no more than the bound it broke ("must not be empty", "at least 12 characters"). */
function restatesLength(own: string, bound: number): boolean {
  if (/[;:]/.test(own)) return false;
  if (own === 'required' || (bound === 1 && /\bempty\b/.test(own))) return true;
  return new RegExp(`\\b(${bound}${NUMBER_WORDS[bound] ? `|${NUMBER_WORDS[bound]}` : ''})\\b`).test(own);
}

/** The value at `path` in `value`, stepping only into objects and arrays; `found` false where the path leaves it. */
function valueAt(value: unknown, path: readonly PropertyKey[]): { found: boolean; value: unknown } {
  let current = value;
  for (const step of path) {
    if (current === null || typeof current !== 'object' || !Object.prototype.hasOwnProperty.call(current, step)) return { found: false, value: undefined };
    current = (current as Record<PropertyKey, unknown>)[step];
  }
  return { found: true, value: current };
}

/** Whether the field at `path` is absent from an object that is there (a key holding undefined is absent too, as JSON cannot send one). */
function isAbsent(value: unknown, path: readonly PropertyKey[]): boolean {
  if (path.length === 0) return value === undefined;
  const parent = valueAt(value, path.slice(0, -1));
  return parent.found && parent.value !== null && typeof parent.value === 'object' && valueAt(parent.value, path.slice(-1)).value === undefined;
}

/** zod's `expected` as words, where the schema cannot be read. */
const EXPECTED: Record<string, string> = {
  string: 'text',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
};

interface Worded {
  path: PropertyKey[];
  message: string;
}

/**
 * The messages of one issue: what the field must be (its accepted values or
 * range, in the field's unit) and what was received, in words ("must be one
 * of: call, put; received "calls""). A schema's own explanation beyond the
 * accepted values follows as a second message. A field that is absent is
 * "required", with what it accepts; an unknown field is named by itself with
 * the fields the schema accepts.
 */
function worded(issue: z.core.$ZodIssue, schema: z.ZodType, value: unknown, part: Part): Worded[] {
  const path = issue.path;
  const own = issue.message === UNSTATED ? null : issue.message;
  if (issue.code === 'unrecognized_keys') {
    const accepted = acceptedKeys(schema, path);
    const noun = part === 'query' ? 'parameter' : 'field';
    const message = accepted ? `unknown ${noun}; accepted: ${accepted.length ? accepted.join(', ') : 'none'}` : `unknown ${noun}`;
    return issue.keys.map((key) => ({ path: [...path, key], message }));
  }
  const field = [...path].reverse().find((step): step is string => typeof step === 'string');
  const unit = unitOfField(field);
  const target = schemaAt(schema, path);
  const one = (message: string, ...more: string[]) => [message, ...more].map((m) => ({ path, message: m }));

  if (isAbsent(value, path)) {
    if (issue.code === 'invalid_type' || issue.code === 'invalid_value' || issue.code === 'invalid_union' || own === null || own === 'required') {
      const words = acceptedWords(target, unit);
      return one(words ? `required (${words})` : 'required');
    }
    // A rule between fields, on one that is absent ("required with broker").
    return one(own);
  }

  const at = valueAt(value, path);
  let received: unknown = at.found ? at.value : 'input' in issue ? issue.input : undefined;
  const known = at.found || 'input' in issue;
  // A list's length is told of the list, also when it was read from text (comma-separated ids).
  if ((issue.code === 'too_small' || issue.code === 'too_big') && Array.isArray(issue.input) && !Array.isArray(received)) received = issue.input;
  // A schema's own message may already say what was received.
  const said =
    known && !(own !== null && /\breceived\b/.test(own))
      ? `; received ${receivedWords(received, { part, field, numeric: isNumberAt(schema, path), unit })}`
      : '';
  const ruled = (rule: string, ...more: string[]) => one(rule + said, ...more);

  if (part === 'query' && path.length === 1 && Array.isArray(at.value)) {
    const words = acceptedWords(target, unit);
    return one(`must be given once${words ? `, as ${words}` : ''}; received ${at.value.length} values: the parameter was given more than once`);
  }
  if (issue.code === 'invalid_value') {
    return ruled(issue.values.length === 1 ? `must be ${JSON.stringify(issue.values[0])}` : oneOfRule(issue.values));
  }

  const numeric =
    issue.code === 'invalid_type' ||
    issue.code === 'not_multiple_of' ||
    ((issue.code === 'too_small' || issue.code === 'too_big') && (issue.origin === 'number' || issue.origin === 'int')) ||
    ((issue.code === 'custom' || issue.code === 'invalid_format') && own !== null && RESTATES_RANGE.test(own));
  const bounds = numeric ? boundsAt(schema, path) : null;
  if (bounds) {
    // The implicit (format) bound of an integer is named only when it is the one broken.
    const full =
      (issue.code === 'too_big' && bounds.implicitMax === true && bounds.max !== undefined && Number(issue.maximum) >= bounds.max) ||
      (issue.code === 'too_small' && bounds.implicitMin === true && bounds.min !== undefined && Number(issue.minimum) <= bounds.min);
    const rule = numberRule(bounds, full, unit);
    return ruled(rule, ...(own !== null && own !== rule && !RESTATES_RANGE.test(own) ? [own] : []));
  }

  switch (issue.code) {
    case 'too_small':
    case 'too_big': {
      const bound = Number(issue.code === 'too_small' ? issue.minimum : issue.maximum);
      const more = own !== null && !restatesLength(own, bound) ? [own] : [];
      if (issue.origin === 'string' || issue.origin === 'array' || issue.origin === 'set') {
        const text = issue.origin === 'string';
        const noun = text ? 'character' : 'item';
        const length =
          lengthWords(findSchemaOf(target, text ? 'string' : 'array'), noun) ?? `${issue.code === 'too_small' ? 'at least' : 'at most'} ${plural(bound, noun)}`;
        return ruled(text ? `must be ${length}` : `must list ${length}`, ...more);
      }
      return ruled(
        own ?? `must be ${issue.code === 'too_small' ? 'at least' : 'at most'} ${String(issue.code === 'too_small' ? issue.minimum : issue.maximum)}`,
      );
    }
    case 'invalid_type': {
      const words = acceptedWords(target, unit) ?? EXPECTED[issue.expected] ?? issue.expected;
      return ruled(own ?? `must be ${words}`);
    }
    case 'invalid_format': {
      const format =
        issue.format === 'uuid' ? 'a UUID' : issue.format === 'regex' && issue.pattern ? `text matching ${issue.pattern}` : `a valid ${issue.format}`;
      // An own message may say after its rule how to find a value that is accepted ("must be a UUID; find an instrument's id with …"): that follows as a message of its own.
      const [rule, ...how] = (own ?? `must be ${format}`).split('; ');
      return ruled(rule, ...(how.length ? [how.join('; ')] : []));
    }
    case 'not_multiple_of':
      return ruled(own ?? `must be a multiple of ${String(issue.divisor)}`);
    case 'invalid_union': {
      const words = acceptedWords(target, unit);
      return ruled(own ?? (words ? `must be ${words}` : 'is not in an accepted form'));
    }
    case 'invalid_key': {
      // The path ends at the key itself.
      const words = acceptedWords(recordKeysAt(schema, path.slice(0, -1)) ?? recordKeysAt(schema, path));
      const key = receivedWords(issue.input, { part, field, numeric: false });
      return one(`${own ?? `each key must be ${words ?? 'text'}`}; received the key ${key}`);
    }
    default:
      return ruled(own ?? 'is not accepted');
  }
}

/**
 * The most fields an error names. Past it the message says how many fields
 * were refused in all ("invalid body: 20 of 33 problems shown") and the
 * input's own key ("_", or an upload row's) how many are not shown, so an
 * answer's size and the work of wording it stay bounded whatever was sent.
 */
export const MAX_LISTED_FIELDS = 20;

// Node's query-string parser (querystring.parse: Express's 'simple' query
// parser, app.ts) reads the first 1,000 parameters, its maxKeys, and drops
// the rest: a query of that many may have had more.
const QUERY_PARAMETERS_READ = 1000;

/** `details` naming at most MAX_LISTED_FIELDS fields, and how many fields were refused in all. */
export interface Listed {
  details: ErrorDetails;
  /** The fields with a problem, named or not. */
  fields: number;
  /** Those named in `details`. */
  shown: number;
}

/** The `details` key of the field at `path` under `prefix`: its names and indexes joined by dots, each name cut as `clipped` cuts it; "_" for the whole input. */
function fieldKey(prefix: string, path: readonly PropertyKey[]): string {
  let key = prefix;
  for (const step of path) {
    const name = clipped(String(step));
    if (name) key = key ? `${key}.${name}` : name;
  }
  return key || '_';
}

/** The messages of the first MAX_LISTED_FIELDS fields refused, each message once, and the count of the others. */
class FieldList {
  // No prototype: a field named "__proto__" is a key like any other.
  private readonly details = Object.create(null) as ErrorDetails;
  private readonly unshown = new Set<string>();
  private shown = 0;
  private readonly root: string;

  constructor(prefix: string) {
    this.root = fieldKey(prefix, []);
  }

  /** Whether a message on `key` would be shown. */
  shows(key: string): boolean {
    return key in this.details || this.shown < MAX_LISTED_FIELDS;
  }

  add(key: string, message: string): void {
    const messages = this.details[key];
    if (messages) {
      if (!messages.includes(message)) messages.push(message);
    } else if (this.shown < MAX_LISTED_FIELDS) {
      this.details[key] = [message];
      this.shown++;
    } else {
      this.unshown.add(key);
    }
  }

  /** A field refused, counted without being worded. */
  count(key: string): void {
    if (!(key in this.details)) this.unshown.add(key);
  }

  listed(): Listed {
    const { details, shown, unshown } = this;
    if (unshown.size) (details[this.root] ??= []).push(`${unshown.size} more problems not shown`);
    return { details, fields: shown + unshown.size, shown };
  }
}

/**
 * `details` for a failed parse of `value` by `schema`, each issue worded by
 * `worded` and keyed by its dotted field path under `prefix` ("_" for the
 * whole input), at most MAX_LISTED_FIELDS fields worded. The error must come
 * from a safeParse with EXPLAINED, so a schema's own words can be told from
 * zod's. The same message twice for one field is given once.
 */
export function listedDetails(error: z.ZodError, schema: z.ZodType, value: unknown, part: Part, prefix = ''): Listed {
  // A length check also runs on a value of the wrong type (an array where text
  // is required is "too small" too): where the type is wrong, that is all that is said.
  const mistyped = new Set(error.issues.filter((i) => i.code === 'invalid_type').map((i) => JSON.stringify(i.path.map(String))));
  const list = new FieldList(prefix);
  for (const issue of error.issues) {
    if ((issue.code === 'too_small' || issue.code === 'too_big') && mistyped.has(JSON.stringify(issue.path.map(String)))) continue;
    // An unknown field is one issue for all of an object's unknown fields, and one field each.
    const keys = issue.code === 'unrecognized_keys' ? issue.keys.map((k) => fieldKey(prefix, [...issue.path, k])) : [fieldKey(prefix, issue.path)];
    if (!keys.some((key) => list.shows(key))) {
      for (const key of keys) list.count(key);
      continue;
    }
    for (const w of worded(issue, schema, value, part)) list.add(fieldKey(prefix, w.path), w.message);
  }
  return list.listed();
}

/** "has 80000 fields; accepts at most 7: spot, …; unknown fields include "k0", "k1", "k2"". */
function fieldsWords(o: Extract<Oversize, { kind: 'fields' }>, part: Part): string {
  const noun = part === 'query' ? 'parameter' : 'field';
  const count = part === 'query' && o.count >= QUERY_PARAMETERS_READ ? `at least ${o.count}` : String(o.count);
  const accepted = o.accepted.length ? `accepts at most ${o.accepted.length}: ${o.accepted.join(', ')}` : 'accepts none';
  return `has ${count} ${noun}s; ${accepted}; unknown ${noun}s include ${o.unknown.map(quoted).join(', ')}`;
}

/**
 * `details` for the parts of a value over their size (size-bounds.ts), or
 * null when `found` is empty. A list or text over its length is worded as
 * zod's own issue on it would be; an object of too many fields by its count,
 * the fields it accepts and a few of those it holds. `value` is the parsed
 * value, or undefined where only its JSON text was scanned (json-shape.ts).
 */
export function oversizeListed(found: Iterable<Oversize>, schema: z.ZodType, value: unknown, part: Part, prefix = ''): Listed | null {
  const list = new FieldList(prefix);
  let any = false;
  for (const o of found) {
    any = true;
    const key = fieldKey(prefix, o.path);
    if (!list.shows(key)) list.count(key);
    else if (o.kind === 'fields') list.add(key, fieldsWords(o, part));
    else {
      const issue = z.core.util.finalizeIssue({ ...o.issue, path: o.path }, EXPLAINED, z.core.config());
      for (const w of worded(issue, schema, value, part)) list.add(fieldKey(prefix, w.path), w.message);
    }
  }
  return any ? list.listed() : null;
}

/** oversizeListed over the parts of `value` over their size in `schema`, found before zod runs. */
export function oversizeDetails(schema: z.ZodType, value: unknown, part: Part, prefix = ''): Listed | null {
  return oversizeListed(oversizedParts(schema, value, MAX_LISTED_FIELDS), schema, value, part, prefix);
}
