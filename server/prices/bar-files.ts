import type { TextFormat } from '../core/params.ts';
import { csvFraming } from '../http/envelope.ts';
import { FORMAT_TYPES } from '../http/format.ts';
import { arrowFile } from './bar-arrow.ts';
import { BAR_COLUMNS, type BarFile, type BarKind } from './bar-columns.ts';
import { parquetFile } from './bar-parquet.ts';
import type { DailyBarsFormat } from './daily-text-repository.ts';

// Price bars as files: CSV rows as PostgreSQL wrote them, or columns in an
// Apache Arrow IPC stream or a Parquet file. A daily series comes packed by
// PostgreSQL as the bytes of its columns (daily-text-repository.ts,
// packedBars), an intraday one as the JSON answer's text, parsed here
// (JSON.parse reads the shortest round-trip decimal as the double it came
// from); both carry the values the JSON answer writes, so a columnar file and
// a JSON read of the same asOf and version hold the same numbers.
//
// Columns: instrumentId, then the bar's fields with their JSON names, in the
// JSON's order; dates as Arrow date32 / Parquet DATE, instants as UTC
// timestamps in milliseconds, prices and volume as float64, booleans as
// booleans, strings dictionary-encoded; a field the API document marks
// nullable is nullable, and an absent value is null. The answer's meta, as
// JSON text, is the value of the key `meta` in the Arrow schema's or the
// Parquet file's key-value metadata.

export type BarFileFormat = 'csv' | 'arrow' | 'parquet';
export { BATCH_ROWS, COLUMNAR_INPUT, type BarFile, type BarKind } from './bar-columns.ts';

/** The columnar files' media types (the price reads' own, http/format.ts). */
export const MEDIA_TYPES = { arrow: FORMAT_TYPES.arrow, parquet: FORMAT_TYPES.parquet } as const;

function csvFile(kind: BarKind, write: (chunk: Buffer) => Promise<void>): BarFile {
  const framing = csvFraming(BAR_COLUMNS[kind].map(({ name }) => name));
  let begun = false;
  return {
    textFormat: 'csv',
    async add(_instrumentId, parts) {
      if (!begun) await write(framing.open);
      begun = true;
      for (const part of parts) await write(part);
      return csvRecords(parts);
    },
    async end(meta) {
      if (!begun) await write(framing.open);
      begun = true;
      await write(framing.close(meta));
      return Buffer.alloc(0);
    },
  };
}

/**
 * The records in CSV rows: each ends with a line feed outside quotes (a
 * quoted cell may hold one; a doubled quote inside it toggles twice).
 */
function csvRecords(parts: Buffer[]): number {
  let records = 0;
  let quoted = false;
  for (const part of parts) {
    for (let i = 0; i < part.length; i++) {
      if (part[i] === 0x22) quoted = !quoted;
      else if (part[i] === 0x0a && !quoted) records++;
    }
  }
  return records;
}

/** The form a file of `Kind` bars takes them in: intraday reads write text only. */
export type BarFileInput<Kind extends BarKind> = Kind extends 'intraday' ? TextFormat : DailyBarsFormat;

/** A file of `kind` bars in `format`, its bytes handed to `write` in order (Arrow's head comes from end()). */
export function openBarFile<Kind extends BarKind>(format: BarFileFormat, kind: Kind, write: (chunk: Buffer) => Promise<void>): BarFile<BarFileInput<Kind>> {
  const file = format === 'arrow' ? arrowFile(kind, write) : format === 'parquet' ? parquetFile(kind, write) : csvFile(kind, write);
  return file as BarFile<BarFileInput<Kind>>;
}
