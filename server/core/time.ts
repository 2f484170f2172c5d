import { z } from 'zod';
import { whenParsed } from './params.ts';

// Calendar dates, UTC instants and point-in-time cut-offs, as a URL or a CSV
// cell carries them: each schema accepts the text form and yields the typed value.

const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;
const INSTANT_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** yyyy-mm-dd names a real day (no Date objects: this runs once per ingested row). */
function isCalendarDate(s: string): boolean {
  const y = Number(s.slice(0, 4));
  const m = Number(s.slice(5, 7));
  const d = Number(s.slice(8, 10));
  // PostgreSQL has no year 0 (1 BC is year 0 in ISO 8601 but not in its input).
  if (!(y >= 1 && m >= 1 && m <= 12 && d >= 1 && d <= DAYS_IN_MONTH[m - 1])) return false;
  return m !== 2 || d < 29 || (y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0));
}

/**
 * An instant-shaped text that names a real day and a real time of it. Date
 * reads T24:00:00 as the next day's midnight (ISO 8601's end of day), which
 * would let one instant have two spellings; hours end at 23 here. Date
 * refuses minute or second 60 itself.
 */
function isRealInstant(s: string): boolean {
  return isCalendarDate(s.slice(0, 10)) && Number(s.slice(11, 13)) <= 23 && !Number.isNaN(Date.parse(s));
}

/** The same test as DateSchema, for hand-written hot paths. */
export function isDate(v: unknown): v is string {
  return typeof v === 'string' && DATE_RE.test(v) && isCalendarDate(v);
}

/** The same test as InstantSchema, for hand-written hot paths. */
export function isInstant(v: unknown): v is string {
  return typeof v === 'string' && INSTANT_RE.test(v) && isRealInstant(v);
}

export const DateSchema = z
  .string()
  .regex(DATE_RE, { message: 'must be a date yyyy-mm-dd', abort: true })
  .refine(isCalendarDate, 'is not a calendar date')
  .describe('calendar date yyyy-mm-dd');

export const InstantSchema = z
  .string()
  .regex(INSTANT_RE, { message: 'must be an instant yyyy-mm-ddThh:mm:ss[.fff]Z', abort: true })
  .refine(isRealInstant, 'is not a valid instant')
  .describe('UTC instant');

export interface PointInTime {
  /** What the caller sent, echoed in assumptions and meta. */
  input: string;
  /** The cut-off: a date means the end of that day (23:59:59.999Z); an instant is used exactly. */
  instant: Date;
  isDate: boolean;
}

export const AsOfSchema = z
  .string()
  .refine((s) => DATE_RE.test(s) || INSTANT_RE.test(s), { message: 'must be yyyy-mm-dd or yyyy-mm-ddThh:mm:ss[.fff]Z', abort: true })
  .refine((s) => (s.length === 10 ? isCalendarDate(s) : isRealInstant(s)), 'is not a valid date or instant')
  .transform((s): PointInTime => {
    const isDate = s.length === 10;
    return { input: s, isDate, instant: new Date(isDate ? `${s}T23:59:59.999Z` : s) };
  })
  .describe('point-in-time cut-off: a date means the end of that day; an instant is used exactly');

/** A query with optional `from` and `to` dates, refused when `to` comes before `from`. */
export const withOrderedBounds = <T extends z.ZodObject>(query: T) =>
  query.refine((q: { from?: unknown; to?: unknown }) => !isDate(q.from) || !isDate(q.to) || q.from <= q.to, {
    path: ['to'],
    message: 'must be on or after from',
    ...whenParsed('from', 'to'),
  });
