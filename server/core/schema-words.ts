import { z } from 'zod';
import { numberBounds, numberWords, oneOfRule, plural, type NumberBounds, type NumberUnit } from './params.ts';

// What a schema accepts, in words, and the schema at a field's path: the
// accepted half of a validation message (validation-messages.ts).

interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
  entries?: Record<string, string | number>;
  values?: unknown[];
  keyType?: z.ZodType;
  items?: z.ZodType[];
  checks?: { _zod: { def: CheckDef } }[];
}

interface CheckDef {
  check?: string;
  format?: string;
  pattern?: RegExp;
  minimum?: number;
  maximum?: number;
  length?: number;
  error?: (issue: object) => unknown;
}

/**
 * What a schema accepts, stated where its structure cannot tell it: a
 * transform that reads a number from a number or numeric text (ingest/fields.ts).
 */
export const STATED_WORDS = z.registry<{ accepts: string; numeric?: boolean }>();

const defOf = (s: z.ZodType) => (s as unknown as { def: Def }).def;

// Wrappers that accept what their inner schema accepts, absent aside.
const TRANSPARENT = new Set(['optional', 'default', 'prefault', 'catch', 'readonly', 'nonoptional']);

/** The side of a pipe a value enters: its input schema, or its output schema after a preprocess step. */
function entered(def: Def): z.ZodType | undefined {
  return def.in && defOf(def.in).type === 'transform' ? def.out : def.in;
}

/** `s` without its wrappers and pipes, down to an object, array or record where there is one. */
function unwrapContainer(s: z.ZodType): z.ZodType {
  const def = defOf(s);
  if (def.innerType) return unwrapContainer(def.innerType);
  if (def.type === 'pipe') {
    const first = entered(def) && unwrapContainer(entered(def)!);
    // A list read from text (comma-separated ids) steps into the list the text becomes.
    if (first && !['object', 'array', 'record'].includes(defOf(first).type) && def.out) return unwrapContainer(def.out);
    return first ?? s;
  }
  return s;
}

/**
 * The schema at `path`, stepping into object fields, array elements and
 * record values through wrappers and pipes; undefined when the path leaves
 * the schema (an unknown field, or a step into something that is not a container).
 */
export function schemaAt(schema: z.ZodType, path: readonly PropertyKey[]): z.ZodType | undefined {
  let current: z.ZodType | undefined = schema;
  for (const step of path) {
    if (!current) return undefined;
    const s = unwrapContainer(current);
    if (s instanceof z.ZodObject) current = s.shape[String(step)] as z.ZodType | undefined;
    else if (s instanceof z.ZodArray) current = s.element as z.ZodType;
    else if (s instanceof z.ZodRecord) current = s.valueType as z.ZodType;
    else return undefined;
  }
  return current;
}

/** The first schema in `s` that `found` picks, through wrappers and pipes. */
function findIn<T>(s: z.ZodType, found: (s: z.ZodType) => T | null, depth = 0): T | null {
  const hit = found(s);
  if (hit || depth > 8) return hit;
  const def = defOf(s);
  if (def.innerType) return findIn(def.innerType, found, depth + 1);
  if (def.type === 'pipe') return (def.in && findIn(def.in, found, depth + 1)) || (def.out && findIn(def.out, found, depth + 1)) || null;
  for (const option of def.type === 'union' ? (def.options ?? []) : []) {
    const inOption = findIn(option, found, depth + 1);
    if (inOption) return inOption;
  }
  return null;
}

const findNumber = (s: z.ZodType) => findIn(s, (x) => (x instanceof z.ZodNumber ? x : null));

/** The bounds of the number schema at `path` (through objects, arrays, wrappers and pipes), or null. */
export function boundsAt(schema: z.ZodType, path: readonly PropertyKey[]): NumberBounds | null {
  const current = schemaAt(schema, path);
  const number = current && findNumber(current);
  return number ? numberBounds(number) : null;
}

/** Whether the schema at `path` takes a number (a bounded one or not, or one read from text). */
export function isNumberAt(schema: z.ZodType, path: readonly PropertyKey[]): boolean {
  const current = schemaAt(schema, path);
  return Boolean(current && (findNumber(current) || findIn(current, (x) => (STATED_WORDS.get(x)?.numeric ? x : null))));
}

/** The first string (or array) schema in `s`, through wrappers and pipes: the one whose length checks a length issue broke. */
export function findSchemaOf(s: z.ZodType | undefined, type: 'string' | 'array', depth = 0): z.ZodType | undefined {
  if (!s || depth > 8) return undefined;
  const def = defOf(s);
  if (def.type === type) return s;
  if (def.innerType) return findSchemaOf(def.innerType, type, depth + 1);
  if (def.type === 'pipe') return findSchemaOf(def.in, type, depth + 1) ?? findSchemaOf(def.out, type, depth + 1);
  return undefined;
}

/** The key schema of the record at `path`, or undefined. */
export function recordKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): z.ZodType | undefined {
  const current = schemaAt(schema, path);
  const target = current && unwrapContainer(current);
  return target instanceof z.ZodRecord ? (target.keyType as z.ZodType) : undefined;
}

/** The keys of the object schema at `path` (through arrays, wrappers and pipes), or null when it cannot be told. */
export function acceptedKeys(schema: z.ZodType, path: readonly PropertyKey[]): string[] | null {
  const current = schemaAt(schema, path);
  const target = current && unwrapContainer(current);
  return target instanceof z.ZodObject ? Object.keys(target.shape) : null;
}

/** "1 to 100 characters", "at least 1 item", from a string's or an array's length checks; null without any. */
export function lengthWords(schema: z.ZodType | undefined, noun: string): string | null {
  if (!schema) return null;
  let min: number | undefined;
  let max: number | undefined;
  for (const check of defOf(schema).checks ?? []) {
    const c = check._zod.def;
    if (c.check === 'min_length' && c.minimum !== undefined) min = Math.max(min ?? 0, c.minimum);
    else if (c.check === 'max_length' && c.maximum !== undefined) max = Math.min(max ?? Infinity, c.maximum);
    else if (c.check === 'length_equals' && c.length !== undefined) min = max = c.length;
  }
  if (min !== undefined && max !== undefined) return min === max ? plural(min, noun) : `${min} to ${max} ${noun}s`;
  if (min !== undefined) return `at least ${plural(min, noun)}`;
  if (max !== undefined) return `at most ${plural(max, noun)}`;
  return null;
}

/** A string's own words for its format ("must be a UUID" gives "a UUID"), from its first check whose message says what it must be. */
function formatWords(def: Def): string | null {
  for (const check of def.checks ?? []) {
    const c = check._zod.def;
    const own = c.error?.({});
    if (typeof own === 'string' && own.startsWith('must be ')) return own.slice('must be '.length);
  }
  for (const check of def.checks ?? []) {
    const c = check._zod.def;
    if (c.check !== 'string_format') continue;
    if (c.format === 'uuid') return 'a UUID';
    if (c.format === 'regex' && c.pattern) return `text matching ${c.pattern.source}`;
    return `a valid ${c.format}`;
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
export function acceptedWords(schema: z.ZodType | undefined, unit?: NumberUnit, depth = 0): string | null {
  if (!schema || depth > 8) return null;
  const stated = STATED_WORDS.get(schema);
  if (stated) return stated.accepts;
  const def = defOf(schema);
  const inner = (s: z.ZodType | undefined) => acceptedWords(s, unit, depth + 1);
  if (TRANSPARENT.has(def.type)) return inner(def.innerType);
  switch (def.type) {
    case 'nullable': {
      const words = inner(def.innerType);
      return words && `${words} or null`;
    }
    case 'pipe':
      return inner(entered(def));
    case 'enum': {
      return oneOfRule(Object.values(def.entries ?? {})).slice('must be '.length);
    }
    case 'literal': {
      const values = def.values ?? [];
      return values.length === 1 ? JSON.stringify(values[0]) : oneOfRule(values).slice('must be '.length);
    }
    case 'boolean':
      return 'true or false';
    case 'number': {
      const bounds = numberBounds(schema);
      if (bounds) return numberWords(bounds, false, unit);
      return (def.checks ?? []).some((c) => c._zod.def.check === 'number_format') ? 'an integer' : 'a number';
    }
    case 'string': {
      const format = formatWords(def);
      if (format) return format;
      const length = lengthWords(schema, 'character');
      return length ? `text of ${length}` : 'text';
    }
    case 'array': {
      const length = lengthWords(schema, 'item');
      return `a list${length ? ` of ${length}` : ''}`;
    }
    case 'tuple':
      return `a list of ${plural(def.items?.length ?? 0, 'item')}`;
    case 'object': {
      const keys = Object.keys((schema as z.ZodObject).shape);
      return keys.length ? `an object with the fields ${keys.join(', ')}` : 'an empty object';
    }
    case 'record':
      return 'an object';
    case 'union': {
      const options = (def.options ?? []).map(inner);
      if (options.some((o) => o === null)) return null;
      return [...new Set(options)].join(' or ');
    }
    default:
      return null;
  }
}
