import type { z } from 'zod';
import type { ISql } from '../db/sql.ts';
import { copyLine } from './copy-text.ts';
import type { IngestKind, KnowledgeRule, OrdinalRange, UploadStamp } from './kind.ts';
import type { InstrumentMarket } from '../core/session-close.ts';
import * as repo from './repository.ts';
import { AppError } from '../core/errors.ts';
import { hasNestedValue, mayHoldUnstorableText, refusalDetails, unstorableText } from '../core/validate.ts';
import { entryOf } from '../core/map-entry.ts';

// What one uploaded row must be, whichever way its kind writes it: its schema
// (or its kind's hot path), text PostgreSQL can store, its key once in the
// upload, an instrument that exists, and a knowledge time its market allows.
// service.ts runs these on every row of an upload; the kinds' staged checks
// refuse by row with rejectFirstRow.

/** The 400 for a row its schema refuses, each field worded as a request's are (core/validation-messages.ts). */
export function invalidRow(kind: { label: string; rowSchema: z.ZodType }, index: number, raw: unknown) {
  const details = refusalDetails(kind.rowSchema, raw, 'row', `rows[${index}]`) ?? {};
  return new AppError('invalid_request', `row ${index} of the ${kind.label} batch is invalid; nothing was stored`, details);
}

/** Throws the 400 naming each field of the row PostgreSQL could not store (see unstorableText), if any. */
export function refuseUnstorable(kind: { label: string }, index: number, row: unknown) {
  const problems = unstorableText(row);
  if (!problems) return;
  const details = Object.fromEntries(
    Object.entries(problems).map(([path, messages]) => [path === '_' ? `rows[${index}]` : `rows[${index}].${path}`, messages]),
  );
  throw new AppError('invalid_request', `row ${index} of the ${kind.label} batch holds text PostgreSQL cannot store; nothing was stored`, details);
}

/** The row as its kind's hot path or its schema returns it; the 400 naming each bad field otherwise. */
export function parseRow<Row>(kind: IngestKind<Row>, raw: unknown, index: number): Row {
  const fast = kind.fastRow?.(raw);
  if (fast !== undefined) return fast;
  const parsed = kind.rowSchema.safeParse(raw);
  if (!parsed.success) throw invalidRow(kind, index, raw);
  return parsed.data;
}

/**
 * The row's values as a line of COPY text. Text PostgreSQL cannot store is
 * refused by field, on the parsed row, so a NUL in a CSV cell's JSON text
 * (brokerCodes, symbols, params) is seen too. A row with nested values is
 * scanned before they are serialised (JSON.stringify overflows on 10,000
 * levels). For the rest, every text column is in the COPY line, and one test
 * of it stands in for the scan: on the daily-bar CSV path 0.3 s per million
 * rows against 3.0 s for the scan (7.2 s without either).
 */
export function encodeRow<Row>(kind: IngestKind<Row>, row: Row, raw: unknown, index: number, upload: UploadStamp): string {
  if (hasNestedValue(row as object)) refuseUnstorable(kind, index, row);
  const line = kind.copyLine ? kind.copyLine(row, raw as Record<string, unknown>, upload) : copyLine(kind.toStagingValues(row, upload));
  // The test also flattens a line built by concatenation, so the batch holds one string per row rather than a rope
  // of its pieces: 1,000,000 bars posted in 7.0 s with the test on the line, 7.5 s with it on the free text alone.
  if (mayHoldUnstorableText(line)) refuseUnstorable(kind, index, row);
  return line;
}

/**
 * The keys of a keyed upload: per instrument, a bitmap of the time ordinals
 * seen (pages of 4,096, so ten years of daily bars are one 512-byte page and a
 * year of minutes 64 KB), and the instruments not yet looked up, each with the
 * first row naming it.
 */
export class RowKeys {
  private readonly pages = new Map<string, Map<number, Uint32Array>>();
  private unchecked: { id: string; firstRow: number }[] = [];

  /** Records a key; false when the upload already had it. */
  add(instrumentId: string, ordinal: number, row: number): boolean {
    let pages = this.pages.get(instrumentId);
    if (!pages) {
      pages = new Map();
      this.pages.set(instrumentId, pages);
      this.unchecked.push({ id: instrumentId, firstRow: row });
    }
    const page = Math.floor(ordinal / 4096);
    const offset = ordinal - page * 4096;
    let bits = pages.get(page);
    if (!bits) {
      bits = new Uint32Array(128);
      pages.set(page, bits);
    }
    const mask = 1 << (offset & 31);
    if (bits[offset >>> 5] & mask) return false;
    bits[offset >>> 5] |= mask;
    return true;
  }

  /** Every instrument of the upload. */
  instrumentIds(): string[] {
    return [...this.pages.keys()];
  }

  /** Each instrument's first and last time ordinal, read from its bitmap once the upload has ended rather than kept per row. */
  spans(): Map<string, OrdinalRange> {
    const out = new Map<string, OrdinalRange>();
    for (const [id, pages] of this.pages) {
      const numbers = [...pages.keys()];
      const [low, high] = [Math.min(...numbers), Math.max(...numbers)];
      out.set(id, { first: low * 4096 + firstBit(entryOf(pages, low)), last: high * 4096 + lastBit(entryOf(pages, high)) });
    }
    return out;
  }

  /** The instruments first seen since the last call. */
  takeUnchecked(): { id: string; firstRow: number }[] {
    const out = this.unchecked;
    this.unchecked = [];
    return out;
  }
}

/** The offset of the lowest bit set in a page (every stored page has one). */
function firstBit(bits: Uint32Array): number {
  const word = bits.findIndex((w) => w !== 0);
  return word * 32 + (31 - Math.clz32(bits[word] & -bits[word]));
}

/** The offset of the highest bit set in a page. */
function lastBit(bits: Uint32Array): number {
  let word = bits.length - 1;
  while (bits[word] === 0) word--;
  return word * 32 + (31 - Math.clz32(bits[word]));
}

/** The 400 for one bad field of one row, which leaves the whole upload unstored. */
export function rowError(index: number, field: string, message: string): AppError {
  return new AppError('invalid_request', `row ${index}: ${message}; nothing was stored`, { [`rows[${index}].${field}`]: [message] });
}

/** Answers 400 naming the first staged row a check query returns (`row_index`), if any. */
export async function rejectFirstRow(check: PromiseLike<readonly { row_index: number }[]>, field: string, message: string): Promise<void> {
  const [row] = await check;
  if (row) throw rowError(row.row_index, field, message);
}

/** 400 naming the first staged row whose instrument_id is not a known instrument. */
export async function rejectUnknownInstruments(tx: ISql): Promise<void> {
  await rejectFirstRow(repo.unknownInstrumentRows(tx), 'instrumentId', 'unknown instrument');
}

/**
 * For a keyed upload: looks up the instruments first seen since the last
 * call, adding their markets to `markets`; 400 naming the first row of an
 * unknown one.
 */
export async function lookUpNewInstruments(tx: ISql, keys: RowKeys, markets: Map<string, InstrumentMarket>): Promise<void> {
  const unchecked = keys.takeUnchecked();
  if (!unchecked.length) return;
  const found = await repo.instrumentMarkets(
    tx,
    unchecked.map((u) => u.id),
  );
  const firstUnknown = unchecked.find((u) => !found.has(u.id)); // in first-row order already
  if (firstUnknown) throw rowError(firstUnknown.firstRow, 'instrumentId', 'unknown instrument');
  for (const [id, market] of found) markets.set(id, market);
}

/** A row known before some market's earliest instant for it: its index and knowledge time, judged once its instrument is known. */
export interface PendingRow {
  row: unknown;
  index: number;
  knownAt: number;
}

/**
 * A keyed kind's KnowledgeRule applied to one upload: a row known after
 * every market's earliest instant for it (most rows) passes alone; the others
 * wait with their batch and are judged against their instrument's market
 * when it is written. A refusal names the row's asOf, in which the upload
 * states when the row became known (absent: the upload's start).
 */
export class KnowledgeChecks<Row> {
  private readonly rule: KnowledgeRule<Row>;
  private readonly startedAt: number;

  constructor(rule: KnowledgeRule<Row>, upload: UploadStamp) {
    this.rule = rule;
    this.startedAt = Date.parse(upload.startedAt);
  }

  check(row: Row, index: number, pending: PendingRow[]): void {
    const knownAt = this.rule.statedKnownAt(row) ?? this.startedAt;
    if (knownAt < this.rule.knownOnAnyMarket(row)) pending.push({ row, index, knownAt });
  }

  judge(pending: PendingRow[], marketOf: (row: Row) => InstrumentMarket): void {
    for (const p of pending) {
      const row = p.row as Row;
      const earliest = this.rule.earliest(row, marketOf(row));
      if (p.knownAt >= earliest.at) continue;
      const known = new Date(p.knownAt).toISOString();
      const stated = this.rule.statedKnownAt(row) === undefined ? `absent, so known from the upload's start, ${known}, which` : known;
      throw rowError(
        p.index,
        'asOf',
        `${stated} is before ${new Date(earliest.at).toISOString()}, ${earliest.rule}: no ${this.rule.noun} is known before then`,
      );
    }
  }
}
