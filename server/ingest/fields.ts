import { z } from 'zod';

// Shared row-field schemas. Rows from CSV arrive as text, rows from JSON as
// numbers; both are accepted, and NaN, Infinity and empty text are refused.
const NUMERIC_TEXT = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** FiniteNumber's test, for hand-written hot paths: the number, or undefined. */
export function finiteNumber(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && NUMERIC_TEXT.test(v) ? Number(v) : undefined;
  return n !== undefined && Number.isFinite(n) ? n : undefined;
}

// One transform rather than a union of number and numeric text: a union pays
// for a failed branch on every CSV field.
export const FiniteNumber = z.unknown().transform((v, ctx): number => {
  const n = finiteNumber(v);
  if (n !== undefined) return n;
  const numeric = typeof v === 'number' || (typeof v === 'string' && NUMERIC_TEXT.test(v));
  // "1e999" is numeric text but no finite number.
  ctx.addIssue({ code: 'custom', message: v === undefined ? 'required' : numeric ? 'must be a finite number' : 'must be a number' });
  return z.NEVER;
});

export const PositiveNumber = FiniteNumber.refine((n) => n > 0, 'must be greater than 0');
export const NonNegativeNumber = FiniteNumber.refine((n) => n >= 0, 'must be 0 or greater');

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
