import { z } from 'zod';
import { BooleanValue, finiteNumber, NonNegativeNumber, PositiveNumber } from '../ingest/fields.ts';
import { ingestCounts, type CopyBatch, type KeyedIngestKind, type KeyedUpload, type OrdinalRange, type WriteCounts } from '../ingest/kind.ts';
import { analyzeStaging, copyInto, restage } from '../ingest/repository.ts';
import { copyField } from '../ingest/copy-text.ts';
import { DAILY_COLUMNS, latestBarDates, writeStagedDailyBars } from '../price-history/bars-repository.ts';
import { dayNumber, dayToDate } from '../price-history/day-numbers.ts';
import { actionSetVersions, bumpVersions, lockPriceHistory } from '../price-history/versions-repository.ts';
import type { ISql } from '../db/sql.ts';
import { readStorageTier, type StorageTier } from '../db/migrate.ts';
import * as repo from './repository.ts';
import { instrumentIdOf, InstrumentIdSchema } from '../core/ids.ts';
import { DateSchema, InstantSchema, isDate, isInstant } from '../core/time.ts';

const nullable = <T extends z.ZodType>(schema: T) =>
  schema
    .nullable()
    .optional()
    .transform((v) => v ?? null);

const CURRENCY_RE = /^[A-Z]{3}$/;
const MINUTE_MS = 60_000;

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
  asOf: InstantSchema.describe('when the source published or we captured this bar'),
  knownAt: InstantSchema.optional().describe(
    'when this revision of the bar became known, for back-filling a history of corrections (docs/api.md, "Point in time"); at most the time of the upload, and not before the bar; default: the instant the upload began',
  ),
};

/** The earliest instant a bar can be known at: the start of its day (daily), the end of its minute (intraday). */
const daily = { earliestKnown: (barDate: string) => Date.parse(`${barDate}T00:00:00.000Z`), what: "the start of the bar's day" };
const intraday = { earliestKnown: (barTimestamp: string) => Date.parse(barTimestamp) + MINUTE_MS, what: "the end of the bar's minute" };

/** Whether a bar known no earlier than `earliest` can state `knownAt`: not after now, not before the bar. */
function knowable(knownAt: string, earliest: number): boolean {
  const t = Date.parse(knownAt);
  return t <= Date.now() && t >= earliest;
}

function checkKnownAt(row: { knownAt?: string }, earliest: number, what: string, ctx: z.RefinementCtx) {
  if (row.knownAt === undefined) return;
  const t = Date.parse(row.knownAt);
  if (t > Date.now()) ctx.addIssue({ code: 'custom', path: ['knownAt'], message: 'must not be in the future' });
  else if (t < earliest) ctx.addIssue({ code: 'custom', path: ['knownAt'], message: `must not precede ${what}` });
}

type OhlcRow = { openPrice: number | null; highPrice: number | null; lowPrice: number | null; closePrice: number };

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
  .superRefine((row, ctx) => {
    checkOhlc(row, ctx);
    checkKnownAt(row, daily.earliestKnown(row.barDate), daily.what, ctx);
    if ((row.priceBasis === 'vendor_adjusted') !== (row.reflectsActionsThrough !== null)) {
      ctx.addIssue({ code: 'custom', path: ['reflectsActionsThrough'], message: 'required exactly when priceBasis is vendor_adjusted' });
    }
  });

export const IntradayBarRowSchema = z
  .strictObject({
    ...barFields,
    openPrice: PositiveNumber,
    highPrice: PositiveNumber,
    lowPrice: PositiveNumber,
    barTimestamp: InstantSchema.refine((s) => new Date(s).getTime() % 60_000 === 0, 'must be on a whole minute (1-minute bars only)'),
  })
  .superRefine((row, ctx) => {
    checkOhlc(row, ctx);
    checkKnownAt(row, intraday.earliestKnown(row.barTimestamp), intraday.what, ctx);
  });

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
function lastPassed<T>(check: (v: unknown) => T | undefined): (v: unknown) => T | undefined {
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
    checkedAsOf(r.asOf) === undefined ||
    (r.knownAt !== undefined && checkedKnownAt(r.knownAt) === undefined)
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
    asOf: r.asOf as string,
    knownAt: r.knownAt as string | undefined,
  };
}

function fastDailyBar(raw: unknown): DailyBarRow | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || !onlyKeys(raw, DAILY_KEYS)) return undefined;
  const r = raw as Record<string, unknown>;
  const bar = fastBarFields(r);
  if (!bar || !isDate(r.barDate)) return undefined;
  if (bar.knownAt !== undefined && !knowable(bar.knownAt, daily.earliestKnown(r.barDate))) return undefined;
  const stale = r.stale === undefined || r.stale === false || r.stale === 'false' ? false : r.stale === true || r.stale === 'true' ? true : undefined;
  const priceBasis = r.priceBasis === undefined ? 'raw' : r.priceBasis === 'raw' || r.priceBasis === 'vendor_adjusted' ? r.priceBasis : undefined;
  const through = r.reflectsActionsThrough;
  const reflectsActionsThrough = through === undefined || through === null ? null : isDate(through) ? through : undefined;
  if (stale === undefined || priceBasis === undefined || reflectsActionsThrough === undefined) return undefined;
  if ((priceBasis === 'vendor_adjusted') !== (reflectsActionsThrough !== null)) return undefined;
  return {
    instrumentId: bar.instrumentId,
    openPrice: bar.openPrice,
    highPrice: bar.highPrice,
    lowPrice: bar.lowPrice,
    closePrice: bar.closePrice,
    volume: bar.volume,
    quoteCurrency: bar.quoteCurrency,
    quoteUnit: bar.quoteUnit,
    source: bar.source,
    asOf: bar.asOf,
    ...(bar.knownAt !== undefined ? { knownAt: bar.knownAt } : {}),
    barDate: r.barDate,
    stale,
    priceBasis,
    reflectsActionsThrough,
  };
}

function fastIntradayBar(raw: unknown): IntradayBarRow | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || !onlyKeys(raw, INTRADAY_KEYS)) return undefined;
  const r = raw as Record<string, unknown>;
  const bar = fastBarFields(r);
  if (!bar || bar.openPrice === null || bar.highPrice === null || bar.lowPrice === null) return undefined;
  if (!isInstant(r.barTimestamp) || Date.parse(r.barTimestamp) % MINUTE_MS !== 0) return undefined;
  if (bar.knownAt !== undefined && !knowable(bar.knownAt, intraday.earliestKnown(r.barTimestamp))) return undefined;
  return {
    instrumentId: bar.instrumentId,
    openPrice: bar.openPrice,
    highPrice: bar.highPrice,
    lowPrice: bar.lowPrice,
    closePrice: bar.closePrice,
    volume: bar.volume,
    quoteCurrency: bar.quoteCurrency,
    quoteUnit: bar.quoteUnit,
    source: bar.source,
    asOf: bar.asOf,
    ...(bar.knownAt !== undefined ? { knownAt: bar.knownAt } : {}),
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
function barFieldsText(r: BarFields, raw: Record<string, unknown>): string {
  return (
    `${numberText(r.openPrice, raw.openPrice)}\t${numberText(r.highPrice, raw.highPrice)}\t${numberText(r.lowPrice, raw.lowPrice)}\t` +
    `${numberText(r.closePrice, raw.closePrice)}\t${numberText(r.volume, raw.volume)}\t${r.quoteCurrency}\t${copyField(r.quoteUnit)}`
  );
}

export const dailyBarIngest: KeyedIngestKind<DailyBarRow> = {
  writes: 'keyed',
  label: 'daily bars',
  rowSchema: DailyBarRowSchema,
  resultSchema: z.strictObject({
    ...ingestCounts,
    actionSetVersions: z
      .record(z.string(), z.int().min(1))
      .describe('instrument id → its new action-set version, for each instrument whose stored bars the upload corrected or filled in'),
  }),
  fastRow: fastDailyBar,
  stagingColumns: DAILY_COLUMNS,
  toStagingValues: (r, upload) => [
    r.instrumentId,
    r.barDate,
    r.openPrice,
    r.highPrice,
    r.lowPrice,
    r.closePrice,
    r.volume,
    r.quoteCurrency,
    r.quoteUnit,
    r.stale,
    r.priceBasis,
    r.reflectsActionsThrough,
    r.source,
    r.asOf,
    r.knownAt ?? upload.startedAt,
  ],
  copyLine: (r, raw, upload) =>
    `${r.instrumentId}\t${r.barDate}\t${barFieldsText(r, raw)}\t${r.stale}\t${r.priceBasis}\t${r.reflectsActionsThrough ?? '\\N'}\t` +
    `${copyField(r.source)}\t${r.asOf}\t${r.knownAt ?? upload.startedAt}`,
  key: { field: 'barDate', instrumentId: (r) => r.instrumentId, ordinal: (r) => dayNumber(r.barDate) },
  startUpload: () => new DailyBarUpload(),
  changes: (instrumentIds) => ({ adjustedCloses: instrumentIds }),
};

/** An instrument of a daily upload: its version and latest bar date when the upload first wrote it, and the version the upload bumped it to. */
interface HistoryHead {
  instrumentId: string;
  version: number;
  latestBefore: string | null;
  bumpedTo?: number;
}

/** One daily-bar upload's writes, and the heads of the instruments it has met. */
class DailyBarUpload implements KeyedUpload {
  /** Set once the upload's first batch has taken the price-history lock. */
  private heads: Map<string, HistoryHead> | undefined;

  /**
   * Under the price-history lock (versions, sql/015): a batch that only
   * appends, every bar after its instrument's latest date before the upload,
   * is copied straight into daily_bars, at the cost of a bare COPY, and
   * changes no version. Any other batch goes through staging: what it
   * replaces (a bar's values, or a bar's absence on or before the latest
   * date) is kept under the instrument's next version, the version is bumped
   * once per upload, and the bars are written, all over one join of the
   * staged bars with the stored ones (writeStagedDailyBars).
   */
  async writeBatch(tx: ISql, batch: CopyBatch): Promise<WriteCounts> {
    const heads = await this.headsOf(tx, batch);
    const appendsOnly = [...batch.firstByInstrument].every(([id, first]) => {
      const latest = heads.get(id)!.latestBefore;
      return latest === null || first > dayNumber(latest);
    });
    if (appendsOnly) {
      await copyInto(tx, 'daily_bars', batch.text, repo.columnNames(DAILY_COLUMNS));
      return { inserted: batch.rows, updated: 0 };
    }
    await restage(tx, batch.text);
    // Statistics, so the search for what the batch replaces joins by hash: without them
    // the planner probes daily_bars once per staged row, and an unchanged re-post of
    // 1,000,000 bars took 44.0 s instead of 17.5 s (npm run bench -- ingest).
    await analyzeStaging(tx);
    const writes = [...heads.values()].map((h) => ({ instrumentId: h.instrumentId, version: h.bumpedTo ?? h.version + 1, latestBefore: h.latestBefore }));
    const span = { instrumentIds: [...batch.firstByInstrument.keys()], from: dayToDate(batch.first), to: dayToDate(batch.last) };
    const { inserted, updated, revised } = await writeStagedDailyBars(tx, writes, span);
    const replaced = revised.map((id) => heads.get(id)!).filter((h) => h.bumpedTo === undefined);
    if (replaced.length) {
      const bumped = await bumpVersions(
        tx,
        replaced.map((h) => ({ instrumentId: h.instrumentId, priorLastBarDate: h.latestBefore })),
      );
      for (const h of replaced) h.bumpedTo = bumped.get(h.instrumentId)!;
    }
    return { inserted, updated };
  }

  summarise() {
    return {
      actionSetVersions: Object.fromEntries([...(this.heads?.values() ?? [])].filter((h) => h.bumpedTo !== undefined).map((h) => [h.instrumentId, h.bumpedTo])),
    };
  }

  /**
   * The heads of the batch's instruments, read when the upload first meets
   * each, after taking the price-history lock on the upload's first batch: no
   * other upload can then bump a version or write a bar until this one ends.
   */
  private async headsOf(tx: ISql, batch: CopyBatch): Promise<Map<string, HistoryHead>> {
    if (!this.heads) {
      await lockPriceHistory(tx);
      this.heads = new Map();
    }
    // Instrument ids arrive lower-cased (the row schema), as the database writes them.
    const all = this.heads;
    const ids = [...batch.firstByInstrument.keys()];
    const unseen = ids.filter((id) => !all.has(id));
    if (unseen.length) {
      // One transaction's connection: the two reads run one after the other.
      const versions = await actionSetVersions(tx, unseen);
      const latest = await latestBarDates(tx, unseen);
      for (const id of unseen) all.set(id, { instrumentId: id, version: versions.get(id)!, latestBefore: latest.get(id) ?? null });
    }
    return new Map(ids.map((id) => [id, all.get(id)!]));
  }
}

export const intradayBarIngest: KeyedIngestKind<IntradayBarRow> = {
  writes: 'keyed',
  label: 'intraday bars',
  rowSchema: IntradayBarRowSchema,
  resultSchema: z.strictObject({ ...ingestCounts, firstBarTimestamp: z.string().optional(), lastBarTimestamp: z.string().optional() }),
  fastRow: fastIntradayBar,
  stagingColumns: repo.INTRADAY_COLUMNS,
  toStagingValues: (r, upload) => [
    r.instrumentId,
    r.barTimestamp,
    r.openPrice,
    r.highPrice,
    r.lowPrice,
    r.closePrice,
    r.volume,
    r.quoteCurrency,
    r.quoteUnit,
    r.source,
    r.asOf,
    r.knownAt ?? upload.startedAt,
  ],
  copyLine: (r, raw, upload) =>
    `${r.instrumentId}\t${r.barTimestamp}\t${barFieldsText(r, raw)}\t${copyField(r.source)}\t${r.asOf}\t${r.knownAt ?? upload.startedAt}`,
  key: { field: 'barTimestamp', instrumentId: (r) => r.instrumentId, ordinal: (r) => Date.parse(r.barTimestamp) / MINUTE_MS },
  startUpload: () => new IntradayBarUpload(),
  async afterCommit(sql, range) {
    if ((await readStorageTier(sql)).tier !== 'timescaledb') return;
    // A continuous aggregate refresh cannot run inside a transaction. Real-time
    // aggregation already serves unmaterialised buckets; this re-materialises
    // buckets a correction touched.
    // Whole hours, a boundary of every rollup width, so no touched bucket is
    // cut off.
    const hour = 3_600_000;
    const first = new Date(Math.floor((range.first * MINUTE_MS) / hour) * hour);
    const lastHour = new Date(Math.floor((range.last * MINUTE_MS) / hour) * hour);
    await repo.refreshContinuousAggregates(sql, first, lastHour);
  },
};

/** One intraday upload's writes, and the storage tier, read on its first batch. */
class IntradayBarUpload implements KeyedUpload {
  private tier: StorageTier | undefined;

  async writeBatch(tx: ISql, batch: CopyBatch): Promise<WriteCounts> {
    await restage(tx, batch.text);
    const span = {
      instrumentIds: [...batch.firstByInstrument.keys()],
      from: new Date(batch.first * MINUTE_MS).toISOString(),
      to: new Date(batch.last * MINUTE_MS).toISOString(),
    };
    const written = await repo.writeStagedIntradayBars(tx, span);
    this.tier ??= (await readStorageTier(tx)).tier;
    // Full TimescaleDB keeps the rollups as continuous aggregates, refreshed after commit.
    if (this.tier !== 'timescaledb') {
      await analyzeStaging(tx);
      await repo.refreshRollups(tx, batch.first, batch.last);
    }
    return written;
  }

  summarise(range: OrdinalRange) {
    return {
      firstBarTimestamp: new Date(range.first * MINUTE_MS).toISOString(),
      lastBarTimestamp: new Date(range.last * MINUTE_MS).toISOString(),
    };
  }
}
