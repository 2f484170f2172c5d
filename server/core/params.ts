import { z } from 'zod';

// Shared building blocks of query and ingest-row schemas.

export const BooleanFlagSchema = z.enum(['true', 'false'], { error: 'must be true or false' }).transform((s) => s === 'true');

/** A closed enum whose error lists the allowed values, as the caller needs them to correct the request. */
export const closedEnum = <T extends readonly [string, ...string[]]>(values: T) => z.enum(values, { error: `must be one of ${values.join(', ')}` });

/**
 * The bounds of a number schema, read from its checks: `min` and `max` when
 * it has them (exclusive when `minInclusive` / `maxInclusive` is false), and
 * whether it takes integers only. An integer schema without an explicit bound
 * on a side is bounded there by its format (the safe-integer range for
 * `.int()`), marked `implicitMin` / `implicitMax`: the range words leave such
 * a bound out, as the reference does, unless it is the one broken.
 */
export interface NumberBounds {
  min?: number;
  minInclusive: boolean;
  max?: number;
  maxInclusive: boolean;
  integer: boolean;
  implicitMin?: boolean;
  implicitMax?: boolean;
}

// zod's integer formats and the range each admits.
const INTEGER_FORMATS: Record<string, [number, number]> = {
  safeint: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  int32: [-2147483648, 2147483647],
  uint32: [0, 4294967295],
};

interface CheckDef {
  check?: string;
  value?: unknown;
  inclusive?: boolean;
  format?: string;
}

/** The bounds of a number schema (see NumberBounds), or null for any other schema or a number without any bound. */
export function numberBounds(schema: z.ZodType): NumberBounds | null {
  if (!(schema instanceof z.ZodNumber)) return null;
  const b: NumberBounds = { minInclusive: true, maxInclusive: true, integer: false };
  let formatRange: [number, number] | undefined;
  const def = schema._zod.def as CheckDef & { checks?: { _zod: { def: CheckDef } }[] };
  for (const c of [def, ...(def.checks ?? []).map((check) => check._zod.def)]) {
    if (c.check === 'number_format' && c.format && INTEGER_FORMATS[c.format]) {
      b.integer = true;
      formatRange = INTEGER_FORMATS[c.format];
    } else if (c.check === 'greater_than' && typeof c.value === 'number') {
      const inclusive = c.inclusive === true;
      if (b.min === undefined || c.value > b.min || (c.value === b.min && !inclusive)) [b.min, b.minInclusive] = [c.value, inclusive];
    } else if (c.check === 'less_than' && typeof c.value === 'number') {
      const inclusive = c.inclusive === true;
      if (b.max === undefined || c.value < b.max || (c.value === b.max && !inclusive)) [b.max, b.maxInclusive] = [c.value, inclusive];
    }
  }
  if (b.min === undefined && b.max === undefined) return null;
  if (formatRange) {
    if (b.min === undefined || b.min < formatRange[0]) [b.min, b.minInclusive, b.implicitMin] = [formatRange[0], true, b.min === undefined];
    if (b.max === undefined || b.max > formatRange[1]) [b.max, b.maxInclusive, b.implicitMax] = [formatRange[1], true, b.max === undefined];
    // Integers only: an exclusive bound is the next integer inside it, inclusive ("> 0" is "at least 1").
    if (!b.minInclusive) [b.min, b.minInclusive] = [Math.floor(b.min) + 1, true];
    if (!b.maxInclusive) [b.max, b.maxInclusive] = [Math.ceil(b.max) - 1, true];
  }
  return b;
}

/** The bounds as stated: without an implicit (format) bound, unless `full`. */
function stated(b: NumberBounds, full: boolean): NumberBounds {
  return { ...b, min: b.implicitMin && !full ? undefined : b.min, max: b.implicitMax && !full ? undefined : b.max };
}

/** The range in words: "between 1 and 500", "greater than 0 and at most 5", "at least 0". */
export function rangeWords(bounds: NumberBounds, full = false): string {
  const b = stated(bounds, full);
  if (b.min !== undefined && b.max !== undefined && b.minInclusive && b.maxInclusive) return `between ${b.min} and ${b.max}`;
  const parts: string[] = [];
  if (b.min !== undefined) parts.push(`${b.minInclusive ? 'at least' : 'greater than'} ${b.min}`);
  if (b.max !== undefined) parts.push(`${b.maxInclusive ? 'at most' : 'less than'} ${b.max}`);
  return parts.join(' and ');
}

/** What an out-of-range value is told: "must be between 1 and 500"; `full` when it broke an implicit (format) bound. */
export const outOfRangeMessage = (b: NumberBounds, full = false) => `must be ${rangeWords(b, full)}`;

/** What a value that is not a number (or not an integer) is told: "must be an integer in [1, 500]", "must be a number in (0, 5]". */
export function notInRangeTypeMessage(bounds: NumberBounds): string {
  const kind = bounds.integer ? 'an integer' : 'a number';
  const b = stated(bounds, false);
  if (b.min === undefined || b.max === undefined) return `must be ${kind} ${bounds.integer ? 'of ' : ''}${rangeWords(bounds)}`;
  return `must be ${kind} in ${b.minInclusive ? '[' : '('}${b.min}, ${b.max}${b.maxInclusive ? ']' : ')'}`;
}

/**
 * An integer query parameter within [min, max]. A value that is not an
 * integer is told "must be an integer in [min, max]", an integer outside the
 * range "must be between min and max" (validate.ts words any bounded number
 * the same way; these messages hold for a direct safeParse too).
 */
export function integerParam(min: number, max: number) {
  const bounds: NumberBounds = { min, max, minInclusive: true, maxInclusive: true, integer: true };
  const notInteger = notInRangeTypeMessage(bounds);
  const outside = outOfRangeMessage(bounds);
  return z.coerce.number({ error: notInteger }).int(notInteger).min(min, outside).max(max, outside);
}

/** For routes that take no query parameters: an unknown one is an error, not silently ignored. */
export const NoQuerySchema = z.strictObject({});

// The price reads answer in JSON (the envelope) or CSV: `format` in the query
// when given, else the Accept header, else JSON.

export const FORMATS = ['json', 'csv'] as const;
export type Format = (typeof FORMATS)[number];

export const FormatSchema = closedEnum(FORMATS)
  .optional()
  .describe('json (the default) or csv: RFC 4180, a header row, one row per bar, meta in a trailing `#meta` row; without it, `Accept: text/csv` asks for CSV');
