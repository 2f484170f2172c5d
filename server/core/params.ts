import { z } from 'zod';

// Shared building blocks of query and ingest-row schemas.

/** "must be one of: call, put" ("must be true or false"): the allowed values, as the caller needs them to correct the request. */
export function oneOfRule(values: readonly unknown[]): string {
  if (values.length === 2 && values.includes('true') && values.includes('false')) return 'must be true or false';
  return `must be one of: ${values.map(String).join(', ')}`;
}

export const BooleanFlagSchema = z.enum(['true', 'false'], { error: oneOfRule(['true', 'false']) }).transform((s) => s === 'true');

/** A closed enum whose error lists the allowed values (validate.ts words any enum so, adding what was received). */
export const closedEnum = <T extends readonly [string, ...string[]]>(values: T) => z.enum(values, { error: oneOfRule(values) });

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

/** The bounds of a number schema (see NumberBounds), or null for any other schema or a number without any bound. */
export function numberBounds(schema: z.core.$ZodType): NumberBounds | null {
  if (!(schema instanceof z.core.$ZodNumber)) return null;
  const b: NumberBounds = { minInclusive: true, maxInclusive: true, integer: false };
  let formatRange: [number, number] | undefined;
  // An integer schema (z.int()) is its own format check; bounds are checks beside it.
  for (const c of [schema, ...(schema._zod.def.checks ?? [])]) {
    if (c instanceof z.core.$ZodCheckNumberFormat && INTEGER_FORMATS[c._zod.def.format]) {
      b.integer = true;
      formatRange = INTEGER_FORMATS[c._zod.def.format];
    } else if (c instanceof z.core.$ZodCheckGreaterThan && typeof c._zod.def.value === 'number') {
      const { value, inclusive } = c._zod.def;
      if (b.min === undefined || value > b.min || (value === b.min && !inclusive)) [b.min, b.minInclusive] = [value, inclusive];
    } else if (c instanceof z.core.$ZodCheckLessThan && typeof c._zod.def.value === 'number') {
      const { value, inclusive } = c._zod.def;
      if (b.max === undefined || value < b.max || (value === b.max && !inclusive)) [b.max, b.maxInclusive] = [value, inclusive];
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

/**
 * The unit a number field counts in, by the API's names: `lookbackDays`,
 * `expiryDays` and `days` count days, `validHours` hours. Its range and the
 * value received are worded in it.
 */
export type NumberUnit = 'days' | 'hours';

export function unitOfField(field: string | undefined): NumberUnit | undefined {
  if (field === undefined) return undefined;
  if (field === 'days' || field.endsWith('Days')) return 'days';
  if (field === 'hours' || field.endsWith('Hours')) return 'hours';
  return undefined;
}

// A unit's smaller units, each as a number of it: a fractional bound in days
// is named in minutes or hours too (1/1440 of a day is 1 minute).
const PARTS: Record<NumberUnit, [number, string][]> = {
  days: [
    [24, 'hour'],
    [1440, 'minute'],
    [86_400, 'second'],
  ],
  hours: [
    [60, 'minute'],
    [3600, 'second'],
  ],
};

/** "1 minute", "2 minutes". */
export const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** A number as a person reads it: at most 6 significant digits, "about" when rounded. */
export function numberText(n: number): string {
  const text = String(n);
  if (Number.isInteger(n) || text.length <= 10) return text;
  const rounded = String(Number(n.toPrecision(6)));
  return rounded === text ? text : `about ${rounded}`;
}

/** A bound in `unit`: a fraction of it that is a whole number of a smaller unit says so: "1/1440 (1 minute)". */
function boundWords(v: number, unit: NumberUnit | undefined): string {
  if (!unit || Number.isInteger(v) || Math.abs(v) >= 1) return numberText(v);
  for (const [per, noun] of PARTS[unit]) {
    const count = v * per;
    if (Math.abs(count - Math.round(count)) < 1e-9 * per) return `${Math.round(count)}/${per} (${plural(Math.round(count), noun)})`;
  }
  return numberText(v);
}

/** A value received in `unit`, a fraction of it in a smaller unit too: "0.0001 days (8.64 seconds)". */
export function amountWords(text: string, n: number, unit: NumberUnit | undefined): string {
  if (!unit) return text;
  if (!Number.isFinite(n) || n === 0 || Math.abs(n) >= 1) return `${text} ${unit}`;
  const parts = PARTS[unit];
  const [per, noun] = parts.find(([p]) => Math.abs(n * p) >= 1) ?? parts[parts.length - 1];
  return `${text} ${unit} (${Number((n * per).toPrecision(3))} ${noun}s)`;
}

/** The range in words: "between 1 and 500", "greater than 0 and at most 5", "at least 0". */
export function rangeWords(bounds: NumberBounds, full = false, unit?: NumberUnit): string {
  const b = stated(bounds, full);
  const w = (v: number) => boundWords(v, unit);
  if (b.min !== undefined && b.max !== undefined && b.minInclusive && b.maxInclusive) return `between ${w(b.min)} and ${w(b.max)}`;
  const parts: string[] = [];
  if (b.min !== undefined) parts.push(`${b.minInclusive ? 'at least' : 'greater than'} ${w(b.min)}`);
  if (b.max !== undefined) parts.push(`${b.maxInclusive ? 'at most' : 'less than'} ${w(b.max)}`);
  return parts.join(' and ');
}

/**
 * What a bounded number is, in words: "an integer between 1 and 500", "a
 * number greater than 0 and at most 5", "an integer of at least 0", or in the
 * field's unit "a whole number of days between 20 and 504". `full` names an
 * implicit (format) bound too, for a value that broke it.
 */
export function numberWords(bounds: NumberBounds, full = false, unit?: NumberUnit): string {
  const kind = unit ? `${bounds.integer ? 'a whole number' : 'a number'} of ${unit}` : bounds.integer ? 'an integer' : 'a number';
  const range = rangeWords(bounds, full, unit);
  // "an integer of at least 0", "a whole number of days, at least 1"
  return `${kind}${/^at (least|most)/.test(range) ? (unit ? ', ' : ' of ') : ' '}${range}`;
}

/** What a bounded number is told, whatever was wrong with the value received: "must be " and its numberWords. */
export const numberRule = (bounds: NumberBounds, full = false, unit?: NumberUnit) => `must be ${numberWords(bounds, full, unit)}`;

/**
 * An integer query parameter within [min, max]: anything else is told "must
 * be an integer between min and max" (validate.ts words any bounded number
 * the same way, adding what was received; this message holds for a direct
 * safeParse too).
 */
export function integerParam(min: number, max: number) {
  const rule = numberRule({ min, max, minInclusive: true, maxInclusive: true, integer: true });
  return z.coerce.number({ error: rule }).int(rule).min(min, rule).max(max, rule);
}

/** For routes that take no query parameters: an unknown one is an error, not silently ignored. */
export const NoQuerySchema = z.strictObject({});

// The price reads answer in JSON (the envelope), CSV, Apache Arrow IPC stream
// or Parquet: `format` in the query when given, else the Accept header, else
// JSON.

export const FORMATS = ['json', 'csv', 'arrow', 'parquet'] as const;
export type Format = (typeof FORMATS)[number];
/** The text formats of a price read; Arrow and Parquet files are made from packed columns (prices/bar-files.ts). */
export type TextFormat = Extract<Format, 'json' | 'csv'>;

export const FormatSchema = closedEnum(FORMATS)
  .optional()
  .describe(
    'json (the default); csv: RFC 4180, a header row, one row per bar, meta in a trailing `#meta` row; arrow: an Apache Arrow IPC stream; parquet: a Parquet file (zstd pages). Arrow and Parquet hold instrumentId and the fields as typed columns, the meta as JSON under the key `meta` of the schema or file metadata. Without format, the Accept header chooses (text/csv, application/vnd.apache.arrow.stream, application/vnd.apache.parquet)',
  );

/**
 * The options of an object's check across its fields (superRefine, refine)
 * that run it whenever the fields it reads parsed, whatever else failed. By
 * default zod skips such a check once any field fails, so a bulk read with
 * an unknown format and `to` before `from` was told of the format alone, and
 * refused again for the dates once the format was mended. The check must
 * read only `fields`: any other may be absent or as it was received.
 */
export function whenParsed(...fields: string[]): { when: (payload: z.core.ParsePayload) => boolean } {
  return {
    when: ({ value, issues }) =>
      typeof value === 'object' && value !== null && !Array.isArray(value) && !issues.some((issue) => fields.includes(String(issue.path?.[0]))),
  };
}

/**
 * Refuses a query that sends a field and its alias both (each pair: the
 * specification's name, then the word the rest of the API uses for it): the
 * issue is on the alias, "is <name> by another name".
 */
export function refuseBothNames<Q extends Record<string, unknown>>(
  q: Q,
  ctx: z.RefinementCtx,
  pairs: readonly (readonly [name: keyof Q & string, alias: keyof Q & string])[],
): void {
  for (const [name, alias] of pairs) {
    if (q[name] !== undefined && q[alias] !== undefined)
      ctx.addIssue({ code: 'custom', path: [alias], message: `is ${name} by another name; send one of them` });
  }
}
