import { DuckDBInstance } from '@duckdb/node-api';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** The rows of a Parquet file's bytes, as DuckDB (a reader independent of the service's writer) counts them. */
export async function countParquetRows(bytes: Buffer): Promise<number> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mds-bench-parquet-'));
  try {
    const file = path.join(dir, 'rows.parquet');
    await writeFile(file, bytes);
    const duck = await (await DuckDBInstance.create(':memory:')).connect();
    try {
      const [row] = (await duck.runAndReadAll(`select count(*) as n from read_parquet('${file}')`)).getRowObjectsJS();
      return Number(row.n);
    } finally {
      duck.closeSync();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
