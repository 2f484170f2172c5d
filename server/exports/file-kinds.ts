import { MEDIA_TYPES } from '../prices/bar-files.ts';
import type { Compression, ExportFormat } from './schema.ts';

// What an export file is, by its format and (CSV only) its compression: the
// extension its name ends in after the year or month (2012.parquet,
// 2012-03.csv.zst), the type it is served as, and how the API document
// describes it. A compressed CSV is its compressed bytes, served as such, not
// with a content coding.

interface FileKind {
  format: ExportFormat;
  compression: Compression;
  extension: string;
  contentType: string;
  description: string;
}

const FILE_KINDS: readonly FileKind[] = [
  { format: 'parquet', compression: 'none', extension: 'parquet', contentType: MEDIA_TYPES.parquet, description: 'a Parquet file' },
  { format: 'arrow', compression: 'none', extension: 'arrow', contentType: MEDIA_TYPES.arrow, description: 'an Arrow IPC stream' },
  { format: 'csv', compression: 'none', extension: 'csv', contentType: 'text/csv; charset=utf-8', description: 'CSV rows with a header' },
  { format: 'csv', compression: 'zstd', extension: 'csv.zst', contentType: 'application/zstd', description: 'CSV compressed with zstd' },
  { format: 'csv', compression: 'gzip', extension: 'csv.gz', contentType: 'application/gzip', description: 'CSV compressed with gzip' },
];

/** The extension of a request's files; compression applies to CSV only (Parquet compresses its pages itself). */
export function fileExtension(format: ExportFormat, compression: Compression): string {
  const kind = FILE_KINDS.find((k) => k.format === format && (format !== 'csv' || k.compression === compression));
  if (!kind) throw new Error(`no export file kind for ${format} with ${compression}`);
  return kind.extension;
}

// The longest extension first: 2012.csv.gz is gzip, not CSV.
const BY_LONGEST_EXTENSION = [...FILE_KINDS].sort((a, b) => b.extension.length - a.extension.length);

/** The content type a file is served as, by its name's extension. */
export function contentTypeOf(name: string): string {
  const kind = BY_LONGEST_EXTENSION.find((k) => name.endsWith(`.${k.extension}`));
  return kind?.contentType ?? 'text/csv; charset=utf-8';
}

/** The file answer's media types as the API document lists them, each with its description and extension. */
export const FILE_MEDIA_TYPES: Record<string, string> = Object.fromEntries(
  FILE_KINDS.map((k) => [k.contentType.split(';')[0], `${k.description} (name.${k.extension})`]),
);
