import { z } from 'zod';
import { STATED_WORDS } from '../core/schema-words.ts';

// Shared row-field schemas. Rows from CSV arrive as text, rows from JSON as
// numbers; both are accepted, and NaN, Infinity and empty text are refused.
const NUMERIC_TEXT = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** FiniteNumber's test, for hand-written hot paths: the number, or undefined. */
export function finiteNumber(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && NUMERIC_TEXT.test(v) ? Number(v) : undefined;
  return n !== undefined && Number.isFinite(n) ? n : undefined;
}

/**
 * A number field of a row: a number, or numeric text, that is finite and
 * passes `test`; anything else is told "must be " and `words` ("a number
 * greater than 0"), which also say what the field accepts where it is
 * required (core/schema-words.ts). One transform rather than a union of
 * number and numeric text: a union pays for a failed branch on every CSV field.
 */
function numberField(words: string, test?: (n: number) => boolean) {
  return z
    .unknown()
    .transform((v, ctx): number => {
      const n = finiteNumber(v);
      if (n !== undefined && (!test || test(n))) return n;
      const numeric = typeof v === 'number' || (typeof v === 'string' && NUMERIC_TEXT.test(v));
      // "1e999" is numeric text but no finite number.
      const message =
        v === undefined ? 'required' : numeric && n === undefined ? `must be ${words.replace(/^an? number/, 'a finite number')}` : `must be ${words}`;
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    })
    .register(STATED_WORDS, { accepts: words, numeric: true });
}

export const FiniteNumber = numberField('a number');
export const PositiveNumber = numberField('a number greater than 0', (n) => n > 0);
export const NonNegativeNumber = numberField('a number, at least 0', (n) => n >= 0);

export const BooleanValue = z.union([z.boolean(), z.enum(['true', 'false']).transform((s) => s === 'true')]);

/** A nested field (an object or array): JSON in JSON and NDJSON rows, JSON text in a CSV cell. */
export function jsonCell<T extends z.ZodType>(schema: T) {
  return z.preprocess((v) => {
    if (typeof v !== 'string') return v;
    try {
      return JSON.parse(v);
    } catch {
      return v;
    }
  }, schema);
}
