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

/**
 * The bytes of the same rows written again by DuckDB's own Parquet writer
 * with each of `settings` (COPY … TO options), by name: what another kept
 * writer makes of the same columns and types.
 */
export function parquetRewrittenBytes(bytes: Buffer, settings: Record<string, string>): Promise<Record<string, number>> {
  return withParquetFile(bytes, async (duck, file, dir) => {
    const sizes: Record<string, number> = {};
    for (const [name, options] of Object.entries(settings)) {
      const out = path.join(dir, `${name}.parquet`);
      await duck.run(`copy (select * from read_parquet('${file}')) to '${out}' (format parquet, ${options})`);
      sizes[name] = (await stat(out)).size;
    }
    return sizes;
  });
}
