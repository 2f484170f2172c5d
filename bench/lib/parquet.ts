import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** Runs `work` with DuckDB and the Parquet `bytes` written to a file of a temporary directory, which is then removed. */
async function withParquetFile<T>(bytes: Buffer, work: (duck: DuckDBConnection, file: string, dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mds-bench-parquet-'));
  try {
    const file = path.join(dir, 'rows.parquet');
    await writeFile(file, bytes);
    const duck = await (await DuckDBInstance.create(':memory:')).connect();
    try {
      return await work(duck, file, dir);
    } finally {
      duck.closeSync();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The rows of a Parquet file's bytes, as DuckDB (a reader independent of the service's writer) counts them. */
export function countParquetRows(bytes: Buffer): Promise<number> {
  return withParquetFile(bytes, async (duck, file) => {
    const [row] = (await duck.runAndReadAll(`select count(*) as n from read_parquet('${file}')`)).getRowObjectsJS();
    return Number(row.n);
  });
}

/** A Parquet file's size, and the bytes of its column chunks alone (what its footer, with its key-value metadata, does not hold). */
export interface ParquetSize {
  bytes: number;
  columnBytes: number;
}

const columnBytes = async (duck: DuckDBConnection, file: string) =>
  Number((await duck.runAndReadAll(`select sum(total_compressed_size) as n from parquet_metadata('${file}')`)).getRowObjectsJS()[0].n);

/**
 * The size of the Parquet `bytes`, and of the same rows written again by
 * DuckDB's own Parquet writer with each of `settings` (COPY … TO options), by
 * name: what another kept writer makes of the same columns and types. DuckDB
 * does not carry the file's key-value metadata over, so the column chunks'
 * bytes are the like-for-like comparison.
 */
export function parquetRewrittenSizes(bytes: Buffer, settings: Record<string, string>): Promise<Record<string, ParquetSize>> {
  return withParquetFile(bytes, async (duck, file, dir) => {
    const sizes: Record<string, ParquetSize> = { original: { bytes: bytes.length, columnBytes: await columnBytes(duck, file) } };
    for (const [name, options] of Object.entries(settings)) {
      const out = path.join(dir, `${name}.parquet`);
      await duck.run(`copy (select * from read_parquet('${file}')) to '${out}' (format parquet, ${options})`);
      sizes[name] = { bytes: (await stat(out)).size, columnBytes: await columnBytes(duck, out) };
    }
    return sizes;
  });
}
