import { z } from 'zod';
import { BooleanValue, finiteNumber, NonNegativeNumber, PositiveNumber } from '../ingest/fields.ts';
import { copyField } from '../ingest/copy-text.ts';
import { instrumentIdOf, InstrumentIdSchema } from '../core/ids.ts';
import { DateSchema, InstantSchema, isDate, isInstant } from '../core/time.ts';
import { whenParsed } from '../core/params.ts';
import { dayNumber } from '../core/day-numbers.ts';

const DAY_MS = 86_400_000;

// A bar upload's rows: their schemas, the hand-written hot path that checks
// the common well-formed row (IngestKind.fastRow), and its COPY encoding
// (IngestKind.copyLine). The upload writers are in ingest.ts.

const nullable = <T extends z.ZodType>(schema: T) =>
  schema
    .nullable()
    .optional()
    .transform((v) => v ?? null);

const CURRENCY_RE = /^[A-Z]{3}$/;
export const MINUTE_MS = 60_000;

const barFields = {
  instrumentId: InstrumentIdSchema,
  openPrice: nullable(PositiveNumber),
  highPrice: nullable(PositiveNumber),
  lowPrice: nullable(PositiveNumber),
  closePrice: PositiveNumber,
  volume: nullable(NonNegativeNumber),
  quoteCurrency: z.string().regex(CURRENCY_RE, 'must be an ISO 4217 code'),
  quoteUnit: z.string().trim().min(1).max(50),
  source: z.string().trim().min(1).max(200),
  asOf: InstantSchema.optional().describe(
    "the instant this revision of the bar became known: the source's publication time (docs/api.md, \"Point in time\"). Not in the future, and not before the bar can be known: a daily bar's session close on its instrument's market (16:00 America/New_York on a US exchange, the end of the UTC day for crypto, else the start of the bar's UTC day), a 1-minute bar's minute end. Default: the instant the upload began",
  ),
  knownAt: InstantSchema.optional().describe('a synonym of asOf, accepted for older uploads; when both are given they must name the same instant'),
};

/**
 * The earliest instant a bar can be known at whatever its market: the start
 * of its UTC day (a daily bar; its session close on its instrument's market
 * is checked when the upload writes it, core/session-close.ts), the end of
 * its minute (a 1-minute bar).
 */
const daily = { earliestKnown: (barDate: string) => dayNumber(barDate) * DAY_MS, what: "the start of the bar's UTC day" };
const intraday = { earliestKnown: (barTimestamp: string) => Date.parse(barTimestamp) + MINUTE_MS, what: "the end of the bar's minute" };

/** The instant a bar row states it became known: asOf, else its synonym knownAt; undefined when it states neither. */
export function statedKnownAt(row: { asOf?: string; knownAt?: string }): string | undefined {
  return row.asOf ?? row.knownAt;
}

/**
 * An instant's milliseconds, the last one remembered: an upload's rows mostly
 * repeat one asOf (a vendor file's publication time). Parsing it on every
 * row, with the start of the bar's date, took 1.0 µs a row of the request
 * thread (1,000,000 daily bars posted twice, a CPU profile of npm run bench
 * -- ingest).
 */
export const instantMs = lastPassed((v) => (typeof v === 'string' ? Date.parse(v) : undefined));

/** Whether a bar known no earlier than `earliest` can be stated known at `at` (a valid instant): not after now, not before the bar. */
function knowable(at: string, earliest: number): boolean {
  // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- a valid instant: Date.parse gives a number
  const t = instantMs(at)!;
  return t <= Date.now() && t >= earliest;
}

function checkKnowledge(row: { asOf?: string; knownAt?: string }, earliest: number, what: string, ctx: z.RefinementCtx) {
  if (row.asOf !== undefined && row.knownAt !== undefined && Date.parse(row.asOf) !== Date.parse(row.knownAt)) {
    ctx.addIssue({
      code: 'custom',
      path: ['knownAt'],
      message: `received ${row.knownAt}, which differs from asOf ${row.asOf}: knownAt is a synonym of asOf and must name the same instant, or be left out`,
    });
    return;
  }
  const stated = statedKnownAt(row);
  if (stated === undefined) return;
  const path = [row.asOf !== undefined ? 'asOf' : 'knownAt'];
  const t = Date.parse(stated);
  if (t > Date.now()) ctx.addIssue({ code: 'custom', path, message: `received ${stated}, in the future: must be at most the time of the upload` });
  else if (t < earliest) ctx.addIssue({ code: 'custom', path, message: `received ${stated}: must not precede ${what}, ${new Date(earliest).toISOString()}` });
}

type OhlcRow = { openPrice: number | null; highPrice: number | null; lowPrice: number | null; closePrice: number };
const OHLC = ['openPrice', 'highPrice', 'lowPrice', 'closePrice'] satisfies (keyof OhlcRow)[];

function checkOhlc(row: OhlcRow, ctx: z.RefinementCtx) {
  const { openPrice: o, highPrice: h, lowPrice: l, closePrice: c } = row;
  const inside = [o, c].filter((v): v is number => v !== null);
  if (h !== null && inside.some((v) => v > h)) ctx.addIssue({ code: 'custom', path: ['highPrice'], message: 'must be at least open and close' });
  if (l !== null && inside.some((v) => v < l)) ctx.addIssue({ code: 'custom', path: ['lowPrice'], message: 'must be at most open and close' });
  if (h !== null && l !== null && l > h) ctx.addIssue({ code: 'custom', path: ['lowPrice'], message: 'must not exceed highPrice' });
}

export const DailyBarRowSchema = z
  .strictObject({
    ...barFields,
    barDate: DateSchema,
    stale: BooleanValue.default(false),
    priceBasis: z.enum(['raw', 'vendor_adjusted']).default('raw').describe('vendor_adjusted: the source already applied actions'),
    reflectsActionsThrough: nullable(DateSchema).describe('for vendor_adjusted bars: the last action effective date the source reflects'),
  })
  .superRefine(checkOhlc, whenParsed(...OHLC))
  .superRefine((row, ctx) => checkKnowledge(row, daily.earliestKnown(row.barDate), daily.what, ctx), whenParsed('barDate', 'asOf', 'knownAt'))
  .superRefine(
    (row, ctx) => {
      if ((row.priceBasis === 'vendor_adjusted') !== (row.reflectsActionsThrough !== null)) {
        ctx.addIssue({ code: 'custom', path: ['reflectsActionsThrough'], message: 'required exactly when priceBasis is vendor_adjusted' });
      }
    },
    whenParsed('priceBasis', 'reflectsActionsThrough'),
  );

export const IntradayBarRowSchema = z
  .strictObject({
    ...barFields,
    openPrice: PositiveNumber,
    highPrice: PositiveNumber,
    lowPrice: PositiveNumber,
    barTimestamp: InstantSchema.refine((s) => new Date(s).getTime() % 60_000 === 0, 'must be on a whole minute (1-minute bars only)'),
  })
  .superRefine(checkOhlc, whenParsed(...OHLC))
  .superRefine((row, ctx) => checkKnowledge(row, intraday.earliestKnown(row.barTimestamp), intraday.what, ctx), whenParsed('barTimestamp', 'asOf', 'knownAt'));

export type DailyBarRow = z.infer<typeof DailyBarRowSchema>;
export type IntradayBarRow = z.infer<typeof IntradayBarRowSchema>;

// ---- hot path: the common well-formed bar, checked by hand (see IngestKind.fastRow)

const DAILY_KEYS = new Set(Object.keys(DailyBarRowSchema.shape));
const INTRADAY_KEYS = new Set(Object.keys(IntradayBarRowSchema.shape));

function onlyKeys(raw: object, allowed: Set<string>): boolean {
  for (const k in raw) if (!allowed.has(k)) return false;
  return true;
}

/** A positive number, null for an absent one, undefined when rowSchema must decide. */
function optionalPositive(v: unknown): number | null | undefined {
  if (v === undefined || v === null) return null;
  const n = finiteNumber(v);
  return n !== undefined && n > 0 ? n : undefined;
}

/** Text already trimmed and within bounds (so rowSchema's trim would change nothing). */
function plainText(v: unknown, max: number): string | undefined {
  return typeof v === 'string' && v.length >= 1 && v.length <= max && v.trim() === v ? v : undefined;
}

type BarFields = Omit<DailyBarRow, 'barDate' | 'stale' | 'priceBasis' | 'reflectsActionsThrough'>;

/**
 * The last value a check passed, so a value repeated row after row (an
 * upload's instrument id for thousands of bars, its one asOf) is checked once:
 * on 1,000,000 bars the UUID and instant tests took 1.3 s of the request
 * thread (a CPU profile of npm run bench -- ingest).
 */
export function lastPassed<T>(check: (v: unknown) => T | undefined): (v: unknown) => T | undefined {
  let last: unknown;
  let result: T | undefined;
  return (v) => {
    if (v === last && result !== undefined) return result;
    const checked = check(v);
    if (checked !== undefined) {
      last = v;
      result = checked;
    }
    return checked;
  };
}

const checkedInstrumentId = lastPassed(instrumentIdOf);
const checkedAsOf = lastPassed((v) => (isInstant(v) ? v : undefined));
const checkedKnownAt = lastPassed((v) => (isInstant(v) ? v : undefined));

/** The fields every bar has, as the row schemas give them: asOf and knownAt only when the row states them. */
function fastBarFields(r: Record<string, unknown>): BarFields | undefined {
  const closePrice = finiteNumber(r.closePrice);
  const openPrice = optionalPositive(r.openPrice);
  const highPrice = optionalPositive(r.highPrice);
  const lowPrice = optionalPositive(r.lowPrice);
  const volumeRaw = r.volume;
  const volume = volumeRaw === undefined || volumeRaw === null ? null : finiteNumber(volumeRaw);
  const quoteUnit = plainText(r.quoteUnit, 50);
  const source = plainText(r.source, 200);
  const instrumentId = checkedInstrumentId(r.instrumentId);
  if (
    closePrice === undefined ||
    !(closePrice > 0) ||
    openPrice === undefined ||
    highPrice === undefined ||
    lowPrice === undefined ||
    volume === undefined ||
    (volume !== null && !(volume >= 0)) ||
    quoteUnit === undefined ||
    source === undefined ||
    instrumentId === undefined ||
    typeof r.quoteCurrency !== 'string' ||
    !CURRENCY_RE.test(r.quoteCurrency) ||
    (r.asOf !== undefined && checkedAsOf(r.asOf) === undefined) ||
    (r.knownAt !== undefined &&
      (checkedKnownAt(r.knownAt) === undefined || (r.asOf !== undefined && Date.parse(r.knownAt as string) !== Date.parse(r.asOf as string))))
  ) {
    return undefined;
  }
  // checkOhlc's rules
  if (highPrice !== null && (closePrice > highPrice || (openPrice !== null && openPrice > highPrice))) return undefined;
  if (lowPrice !== null && (closePrice < lowPrice || (openPrice !== null && openPrice < lowPrice))) return undefined;
  if (highPrice !== null && lowPrice !== null && lowPrice > highPrice) return undefined;
  return {
    instrumentId,
    openPrice,
    highPrice,
    lowPrice,
    closePrice,
    volume,
    quoteCurrency: r.quoteCurrency,
    quoteUnit,
    source,
    // As the schema gives them: a key the row has, even holding undefined, stays; an absent one stays absent.
    ...('asOf' in r ? { asOf: r.asOf as string | undefined } : {}),
    ...('knownAt' in r ? { knownAt: r.knownAt as string | undefined } : {}),
  };
}

export function fastDailyBar(raw: unknown): DailyBarRow | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || !onlyKeys(raw, DAILY_KEYS)) return undefined;
  const r = raw as Record<string, unknown>;
  const bar = fastBarFields(r);
  if (!bar || !isDate(r.barDate)) return undefined;
  const known = statedKnownAt(bar);
  if (known !== undefined && !knowable(known, daily.earliestKnown(r.barDate))) return undefined;
  const stale = r.stale === undefined || r.stale === false || r.stale === 'false' ? false : r.stale === true || r.stale === 'true' ? true : undefined;
  const priceBasis = r.priceBasis === undefined ? 'raw' : r.priceBasis === 'raw' || r.priceBasis === 'vendor_adjusted' ? r.priceBasis : undefined;
  const through = r.reflectsActionsThrough;
  const reflectsActionsThrough = through === undefined || through === null ? null : isDate(through) ? through : undefined;
  if (stale === undefined || priceBasis === undefined || reflectsActionsThrough === undefined) return undefined;
  if ((priceBasis === 'vendor_adjusted') !== (reflectsActionsThrough !== null)) return undefined;
  return {
    ...bar,
    barDate: r.barDate,
    stale,
    priceBasis,
    reflectsActionsThrough,
  };
}

export function fastIntradayBar(raw: unknown): IntradayBarRow | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || !onlyKeys(raw, INTRADAY_KEYS)) return undefined;
  const r = raw as Record<string, unknown>;
  const bar = fastBarFields(r);
  if (!bar || bar.openPrice === null || bar.highPrice === null || bar.lowPrice === null) return undefined;
  if (!isInstant(r.barTimestamp) || Date.parse(r.barTimestamp) % MINUTE_MS !== 0) return undefined;
  const known = statedKnownAt(bar);
  if (known !== undefined && !knowable(known, intraday.earliestKnown(r.barTimestamp))) return undefined;
  return {
    ...bar,
    // Restated: the check above narrows them to numbers, which the spread's type does not carry.
    openPrice: bar.openPrice,
    highPrice: bar.highPrice,
    lowPrice: bar.lowPrice,
    barTimestamp: r.barTimestamp,
  };
}

/**
 * A number of a bar as COPY text: the decimal text the upload gave, when it
 * gave text (CSV) and the number is not zero, else JavaScript's text of it.
 * PostgreSQL reads a decimal into the nearest double, as Number does, so both
 * store the same value; the row schemas accept numeric text only in a form
 * both read (fields.ts, NUMERIC_TEXT), and a decimal that reads as zero is
 * written as 0 (PostgreSQL refuses one that underflows).
 */
function numberText(n: number | null, raw: unknown): string {
  return n === null ? '\\N' : typeof raw === 'string' && n !== 0 ? raw : String(n);
}

/**
 * A bar's COPY line, written field by field: the values
 * copyLine(toStagingValues(row)) gives, with each number spelled as the
 * upload spelled it (numberText). Only the free text (quoteUnit, source) can
 * need escaping; ids, dates, instants, codes and booleans were checked to
 * hold none of COPY's special characters. On 1,000,000 bars the generic
 * encoder was the request thread's largest cost, 2.6 s of self time in
 * copyField, most of it writing doubles out again (a CPU profile of npm run
 * bench -- ingest).
 */
export function barFieldsText(r: BarFields, raw: Record<string, unknown>): string {
  return (
    `${numberText(r.openPrice, raw.openPrice)}\t${numberText(r.highPrice, raw.highPrice)}\t${numberText(r.lowPrice, raw.lowPrice)}\t` +
    `${numberText(r.closePrice, raw.closePrice)}\t${numberText(r.volume, raw.volume)}\t${r.quoteCurrency}\t${copyField(r.quoteUnit)}`
  );
}
