import { z } from 'zod';
import { numberBounds, numberWords, oneOfRule, plural, type NumberBounds, type NumberUnit } from './params.ts';

// What a schema accepts, in words, and the schema at a field's path: the
// accepted half of a validation message (validation-messages.ts).

/**
 * What a schema accepts, stated where its structure cannot tell it: a
 * transform that reads a number from a number or numeric text (ingest/fields.ts).
 */
export const STATED_WORDS = z.registry<{ accepts: string; numeric?: boolean }>();

type Schema = z.core.$ZodType;

/** A wrapper that accepts what its inner schema accepts, absent aside (and null, for nullable). */
type Wrapper =
  z.core.$ZodOptional | z.core.$ZodNullable | z.core.$ZodDefault | z.core.$ZodPrefault | z.core.$ZodCatch | z.core.$ZodReadonly | z.core.$ZodNonOptional;

const WRAPPERS = [
  z.core.$ZodOptional,
  z.core.$ZodNullable,
  z.core.$ZodDefault,
  z.core.$ZodPrefault,
  z.core.$ZodCatch,
  z.core.$ZodReadonly,
  z.core.$ZodNonOptional,
];

const isWrapper = (s: Schema): s is Wrapper => WRAPPERS.some((wrapper) => s instanceof wrapper);

/** The side of a pipe a value enters: its input schema, or its output schema after a preprocess step. */
function entered(pipe: z.core.$ZodPipe): Schema {
  const { in: input, out } = pipe._zod.def;
  return input instanceof z.core.$ZodTransform ? out : input;
}

const isContainer = (s: Schema) => s instanceof z.core.$ZodObject || s instanceof z.core.$ZodArray || s instanceof z.core.$ZodRecord;

/** `s` without its wrappers and pipes, down to an object, array or record where there is one. */
function unwrapContainer(s: Schema): Schema {
  if (isWrapper(s)) return unwrapContainer(s._zod.def.innerType);
  if (s instanceof z.core.$ZodPipe) {
    const first = unwrapContainer(entered(s));
    // A list read from text (comma-separated ids) steps into the list the text becomes.
    return isContainer(first) ? first : unwrapContainer(s._zod.def.out);
  }
  return s;
}

/**
 * The schema a value meets first: through wrappers, and into the side of a
 * pipe the value enters; a catch is not stepped through, as a value its inner
 * schema refuses is replaced rather than refused.
 */
export function schemaEntered(s: Schema): Schema {
  for (let depth = 0; depth <= 8; depth++) {
    if (isWrapper(s) && !(s instanceof z.core.$ZodCatch)) s = s._zod.def.innerType;
    else if (s instanceof z.core.$ZodPipe) s = entered(s);
    else break;
  }
  return s;
}

/**
 * The schema at `path`, stepping into object fields, array elements and
 * record values through wrappers and pipes; undefined when the path leaves
 * the schema (an unknown field, or a step into something that is not a container).
 */
export function schemaAt(schema: Schema, path: readonly PropertyKey[]): Schema | undefined {
  let current: Schema | undefined = schema;
  for (const step of path) {
    if (!current) return undefined;
    const s = unwrapContainer(current);
    if (s instanceof z.core.$ZodObject) current = s._zod.def.shape[String(step)];
    else if (s instanceof z.core.$ZodArray) current = s._zod.def.element;
    else if (s instanceof z.core.$ZodRecord) current = s._zod.def.valueType;
    else return undefined;
  }
  return current;
}

/** The first schema in `s` that `found` picks, through wrappers and pipes. */
function findIn<T>(s: Schema, found: (s: Schema) => T | null, depth = 0): T | null {
  const hit = found(s);
  if (hit || depth > 8) return hit;
  if (isWrapper(s)) return findIn(s._zod.def.innerType, found, depth + 1);
  if (s instanceof z.core.$ZodPipe) return findIn(s._zod.def.in, found, depth + 1) || findIn(s._zod.def.out, found, depth + 1);
  for (const option of s instanceof z.core.$ZodUnion ? s._zod.def.options : []) {
    const inOption = findIn(option, found, depth + 1);
    if (inOption) return inOption;
  }
  return null;
}

const findNumber = (s: Schema) => findIn(s, (x) => (x instanceof z.core.$ZodNumber ? x : null));

/** The bounds of the number schema at `path` (through objects, arrays, wrappers and pipes), or null. */
export function boundsAt(schema: Schema, path: readonly PropertyKey[]): NumberBounds | null {
  const current = schemaAt(schema, path);
  const number = current && findNumber(current);
  return number ? numberBounds(number) : null;
}

/** Whether the schema at `path` takes a number (a bounded one or not, or one read from text). */
export function isNumberAt(schema: Schema, path: readonly PropertyKey[]): boolean {
  const current = schemaAt(schema, path);
  return Boolean(current && (findNumber(current) || findIn(current, (x) => (STATED_WORDS.get(x)?.numeric ? x : null))));
}

/** The first string (or array) schema in `s`, through wrappers and pipes: the one whose length checks a length issue broke. */
export function findSchemaOf(s: Schema | undefined, type: 'string' | 'array', depth = 0): Schema | undefined {
  if (!s || depth > 8) return undefined;
  if (s._zod.def.type === type) return s;
  if (isWrapper(s)) return findSchemaOf(s._zod.def.innerType, type, depth + 1);
  if (s instanceof z.core.$ZodPipe) return findSchemaOf(s._zod.def.in, type, depth + 1) ?? findSchemaOf(s._zod.def.out, type, depth + 1);
  return undefined;
}

/** The key schema of the record at `path`, or undefined. */
export function recordKeysAt(schema: Schema, path: readonly PropertyKey[]): Schema | undefined {
  const current = schemaAt(schema, path);
  const target = current && unwrapContainer(current);
  return target instanceof z.core.$ZodRecord ? target._zod.def.keyType : undefined;
}

/** The keys of the object schema at `path` (through arrays, wrappers and pipes), or null when it cannot be told. */
export function acceptedKeys(schema: Schema, path: readonly PropertyKey[]): string[] | null {
  const current = schemaAt(schema, path);
  const target = current && unwrapContainer(current);
  return target instanceof z.core.$ZodObject ? Object.keys(target._zod.def.shape) : null;
}

/** "1 to 100 characters", "at least 1 item", from a string's or an array's length checks; null without any. */
export function lengthWords(schema: Schema | undefined, noun: string): string | null {
  if (!schema) return null;
  let min: number | undefined;
  let max: number | undefined;
  for (const check of schema._zod.def.checks ?? []) {
    if (check instanceof z.core.$ZodCheckMinLength) min = Math.max(min ?? 0, check._zod.def.minimum);
    else if (check instanceof z.core.$ZodCheckMaxLength) max = Math.min(max ?? Infinity, check._zod.def.maximum);
    else if (check instanceof z.core.$ZodCheckLengthEquals) min = max = check._zod.def.length;
  }
  if (min !== undefined && max !== undefined) return min === max ? plural(min, noun) : `${min} to ${max} ${noun}s`;
  if (min !== undefined) return `at least ${plural(min, noun)}`;
  if (max !== undefined) return `at most ${plural(max, noun)}`;
  return null;
}

/** A string's own words for its format ("must be a UUID" gives "a UUID"), from its first check whose message says what it must be. */
function formatWords(schema: z.core.$ZodString): string | null {
  const checks = schema._zod.def.checks ?? [];
  for (const check of checks) {
    // A check's error map, asked without an issue, gives its own message when it has one.
    const own = check._zod.def.error?.({} as never);
    // Its rule alone: what follows a "; " says how to find such a value (ids.ts, INSTRUMENT_ID_RULE).
    if (typeof own === 'string' && own.startsWith('must be ')) return own.slice('must be '.length).split('; ')[0];
  }
  for (const check of checks) {
    if (!(check instanceof z.core.$ZodCheckStringFormat)) continue;
    const { format } = check._zod.def;
    if (format === 'uuid') return 'a UUID';
    if (check instanceof z.core.$ZodCheckRegex) return `text matching ${check._zod.def.pattern.source}`;
    return `a valid ${format}`;
  }
  return null;
}

/**
 * What `schema` accepts, as a noun phrase: "one of: call, put", "an integer
 * between 1 and 500", "a date yyyy-mm-dd", "text of 1 to 100 characters", "a
 * list of at least 1 item", "true or false", each "or null" where null is
 * accepted; null when it cannot be told (a transform of anything). A number
 * is worded in `unit` (params.ts, unitOfField).
 */
export function acceptedWords(schema: Schema | undefined, unit?: NumberUnit, depth = 0): string | null {
  if (!schema || depth > 8) return null;
  const stated = STATED_WORDS.get(schema);
  if (stated) return stated.accepts;
  const inner = (s: Schema | undefined) => acceptedWords(s, unit, depth + 1);
  if (schema instanceof z.core.$ZodNullable) {
    const words = inner(schema._zod.def.innerType);
    return words && `${words} or null`;
  }
  if (isWrapper(schema)) return inner(schema._zod.def.innerType);
  if (schema instanceof z.core.$ZodPipe) return inner(entered(schema));
  if (schema instanceof z.core.$ZodEnum) return oneOfRule(Object.values(schema._zod.def.entries)).slice('must be '.length);
  if (schema instanceof z.core.$ZodLiteral) {
    const { values } = schema._zod.def;
    return values.length === 1 ? JSON.stringify(values[0]) : oneOfRule(values).slice('must be '.length);
  }
  if (schema instanceof z.core.$ZodBoolean) return 'true or false';
  if (schema instanceof z.core.$ZodNumber) {
    const bounds = numberBounds(schema);
    if (bounds) return numberWords(bounds, false, unit);
    return (schema._zod.def.checks ?? []).some((c) => c instanceof z.core.$ZodCheckNumberFormat) ? 'an integer' : 'a number';
  }
  if (schema instanceof z.core.$ZodString) {
    const format = formatWords(schema);
    if (format) return format;
    const length = lengthWords(schema, 'character');
    return length ? `text of ${length}` : 'text';
  }
  if (schema instanceof z.core.$ZodArray) {
    const length = lengthWords(schema, 'item');
    return `a list${length ? ` of ${length}` : ''}`;
  }
  if (schema instanceof z.core.$ZodTuple) return `a list of ${plural(schema._zod.def.items.length, 'item')}`;
  if (schema instanceof z.core.$ZodObject) {
    const keys = Object.keys(schema._zod.def.shape);
    return keys.length ? `an object with the fields ${keys.join(', ')}` : 'an empty object';
  }
  if (schema instanceof z.core.$ZodRecord) return 'an object';
  if (schema instanceof z.core.$ZodUnion) {
    const options = schema._zod.def.options.map(inner);
    if (options.some((o) => o === null)) return null;
    return [...new Set(options)].join(' or ');
  }
  return null;
}
