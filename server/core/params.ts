import { z } from 'zod';

// Shared building blocks of query and ingest-row schemas.

export const BooleanFlagSchema = z.enum(['true', 'false'], { error: 'must be true or false' }).transform((s) => s === 'true');

/** A closed enum whose error lists the allowed values, as the caller needs them to correct the request. */
export const closedEnum = <T extends readonly [string, ...string[]]>(values: T) => z.enum(values, { error: `must be one of ${values.join(', ')}` });

/** An integer query parameter within [min, max]. */
export const integerParam = (min: number, max: number) => z.coerce.number({ error: 'must be an integer' }).int('must be an integer').min(min).max(max);

/** For routes that take no query parameters: an unknown one is an error, not silently ignored. */
export const NoQuerySchema = z.strictObject({});

// The price reads answer in JSON (the envelope) or CSV: `format` in the query
// when given, else the Accept header, else JSON.

export const FORMATS = ['json', 'csv'] as const;
export type Format = (typeof FORMATS)[number];

export const FormatSchema = closedEnum(FORMATS)
  .optional()
  .describe('json (the default) or csv: RFC 4180, a header row, one row per bar, meta in a trailing `#meta` row; without it, `Accept: text/csv` asks for CSV');
