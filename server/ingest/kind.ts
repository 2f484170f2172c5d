import { z } from 'zod';
import type { ISql } from '../db/sql.ts';
import type { InstrumentId } from '../core/ids.ts';
import type { InstrumentMarket } from '../core/session-close.ts';

/**
 * PostgreSQL type names as the catalog spells them (bool, not boolean): the
 * staging table is declared with each name as a quoted identifier.
 */
export type StagingType = 'uuid' | 'text' | 'date' | 'timestamptz' | 'float8' | 'int4' | 'bool' | 'jsonb';

/** Staging columns in COPY order. */
export type StagingColumns = readonly (readonly [name: string, type: StagingType])[];

/**
 * Batch ingest shared by every admin upload route, the CLI and the demo load.
 *
 * The body is parsed by Content-Type (JSON array, NDJSON or CSV) and streamed
 * in batches; each row is validated and encoded as a line of COPY text. The
 * whole upload is one transaction, so a bad row anywhere aborts it and nothing
 * is stored. A kind writes one of two ways (`writes`):
 *
 * - keyed (bars): each row names its (instrument, time) key. The service
 *   refuses a repeated key and an unknown instrument itself while streaming,
 *   and writes each batch as soon as it is complete, while the next batch is
 *   being parsed, so parsing and the database work overlap. Memory is bounded
 *   by two batches.
 * - staged (everything else): every row is staged with its index in a
 *   temporary table, and `apply` checks the staged set against the database
 *   and upserts it at the end.
 */
export type IngestKind<Row> = KeyedIngestKind<Row> | StagedIngestKind<Row>;

/** What every kind declares, whichever way it writes. */
interface IngestKindRows<Row> {
  /** Used in messages: "daily bars". */
  label: string;
  rowSchema: z.ZodType<Row>;
  /** The answer's `data`: the counts (ingestCounts) and what the kind adds. */
  resultSchema: z.ZodObject;
  /** Columns of the temporary `ingest_staging` table (after `row_index` for staged kinds). */
  stagingColumns: StagingColumns;
  /** Values in staging column order; null for an absent value. */
  toStagingValues(row: Row, upload: UploadStamp): (string | number | boolean | null)[];
  /**
   * Optional hot path: the row's COPY line written by hand, from the row and
   * the raw row it was parsed from, the same values as
   * copyLine(toStagingValues(row, upload)) gives (a number may be spelled as
   * the raw row spelled it). Unit tests hold it to that.
   */
  copyLine?(row: Row, raw: Record<string, unknown>, upload: UploadStamp): string;
  /**
   * Optional hot path: a hand-written check that accepts only rows rowSchema
   * accepts and returns exactly what it would, or undefined to let rowSchema
   * decide (and word any error). Unit tests hold it to that against rowSchema.
   */
  fastRow?(raw: unknown): Row | undefined;
}

/** What every row of one upload shares. */
export interface UploadStamp {
  /** The instant the upload began (ISO): when a row that states no `asOf` is taken to have become known. */
  startedAt: string;
}

/** Rows checked by key as they stream and written a batch at a time. */
export interface KeyedIngestKind<Row> extends IngestKindRows<Row> {
  writes: 'keyed';
  key: RowKey<Row>;
  /** Starts one upload: what writes its batches, and keeps what they share until the upload ends. */
  startUpload(): KeyedUpload;
  /**
   * What an upload that stored or rewrote rows of these instruments changed
   * (DataChanges), given each instrument's first and last time ordinal among
   * the upload's rows.
   */
  changes?(instrumentIds: string[], spans: ReadonlyMap<string, OrdinalRange>): DataChanges;
  /** Optional: when a row's values can first have been known, which may depend on its instrument (KnowledgeRule). */
  knowledge?: KnowledgeRule<Row>;
  /**
   * Runs after the transaction commits, given the upload's first and last
   * time ordinal (e.g. refreshing continuous aggregates, which refuse to run
   * inside one).
   */
  afterCommit?(sql: ISql, range: OrdinalRange): Promise<void>;
}

/** One keyed upload's writer, made for it by startUpload. */
export interface KeyedUpload {
  /** Writes one batch of staging-format COPY text, inside the upload's transaction. */
  writeBatch(tx: ISql, batch: CopyBatch): Promise<WriteCounts>;
  /** Extra result fields, from the upload's first and last time ordinal and what the writes kept. */
  summarise?(range: OrdinalRange): Record<string, unknown>;
}

/** Rows staged with their indexes, then checked against the database and applied. */
export interface StagedIngestKind<Row> extends IngestKindRows<Row> {
  writes: 'staged';
  /** Checks the staged rows against the database, then upserts. Throw AppError with the row index on a bad row. */
  apply(tx: ISql): Promise<UploadResult>;
}

/**
 * When a row of a keyed kind can have become known. A row stated known (or,
 * stating nothing, known from the upload's start) before its earliest
 * instant is refused, naming its asOf. Most rows are known long after any
 * market's close and are judged alone; the rest wait until their batch is
 * written, when their instruments have been looked up.
 */
export interface KnowledgeRule<Row> {
  /** What a row is, in messages: "daily bar". */
  noun: string;
  /** The instant (ms) the row states it became known (its asOf), undefined when it states none: it is then known from the upload's start. */
  statedKnownAt(row: Row): number | undefined;
  /** An instant at or after the earliest of every market: a row known from then needs no instrument. */
  knownOnAnyMarket(row: Row): number;
  /** The earliest instant on the row's instrument, and the rule that sets it, in words ("the end of its minute"). */
  earliest(row: Row, market: InstrumentMarket): { at: number; rule: string };
}

export interface RowKey<Row> {
  /** The request field the time part comes from, for messages: "barDate". */
  field: string;
  instrumentId(row: Row): string;
  /** An integer position in time: days or minutes since 1970-01-01. */
  ordinal(row: Row): number;
}

export interface OrdinalRange {
  first: number;
  last: number;
}

export interface CopyBatch extends OrdinalRange {
  /** COPY text (tab-separated, \N for null), one line per row, in staging column order. */
  text: string;
  rows: number;
  /** Each instrument of the batch with its first time ordinal in it. */
  firstByInstrument: Map<string, number>;
}

export interface WriteCounts {
  inserted: number;
  updated: number;
}

/** The counts every upload answers with. */
export const ingestCounts = {
  rows: z.int().min(0).describe('rows in the upload'),
  inserted: z.int().min(0),
  updated: z.int().min(0).describe('rows that replaced a stored row with different values'),
  unchanged: z.int().min(0).describe('rows equal to the stored row'),
};

export interface IngestResult {
  rows: number;
  inserted: number;
  updated: number;
  unchanged: number;
  [extra: string]: unknown;
}

/** An ingest kind of any row type, as an area's table of them (http/area.ts) holds it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each kind has its own row type
export type AnyIngestKind = IngestKind<any>;

/**
 * What an upload changed that the service derives other data from. After the
 * upload commits, the admin API and the CLI run the derivations that read it
 * (server/wiring/derivations.ts) and answer their counts as `derived`.
 */
export interface DataChanges {
  /** (underlying, UTC day) pairs whose option listings or quotes changed: their implied-volatility snapshots. */
  optionDays?: { instrumentId: InstrumentId; day: string }[];
  /** Instruments whose daily bars or corporate actions changed: their adjusted closes. */
  adjustedCloses?: string[];
  /**
   * Instruments whose daily bars changed, each with the first and last bar
   * date of the upload's rows: the implied-volatility snapshots whose windows
   * of raw bars may hold them.
   */
  rawBarDays?: RawBarDays[];
  /** Instruments whose news changed: their event reactions. */
  news?: string[];
  /** Sentiment scores were stored or corrected: the source leads, which pool every instrument's scores. */
  sentiment?: true;
}

/** An instrument's daily bars an upload wrote, by their first and last bar date (yyyy-mm-dd). */
export interface RawBarDays {
  instrumentId: InstrumentId;
  from: string;
  to: string;
}

/** What an upload reports to the admin API and the CLI: the result, and what it changed (see DataChanges). */
export type UploadResult = IngestResult & { changes?: DataChanges };
