import type { Writable } from 'node:stream';
import type postgres from 'postgres';
import { identifierList, type Sql } from '../db/sql.ts';
import type { StagingColumns } from './kind.ts';

// The statements of an upload's transaction over its temporary table,
// `ingest_staging` (see IngestKind), and the COPY that fills it.

/**
 * Opens an upload in its transaction: session settings for a long upload,
 * and the staging table with `columns` (after `row_index` when
 * `withRowIndex`), dropped at commit.
 */
export async function beginUpload(tx: Sql, columns: StagingColumns, withRowIndex: boolean): Promise<void> {
  // The upload lasts as long as the client sends; the service-wide statement
  // timeout is for queries, not for streaming a large batch.
  await tx`set local statement_timeout = 0`;
  // Each batch repeats the same statements with new bounds. After five runs
  // PostgreSQL may switch a prepared statement to a generic plan that cannot
  // see the bounds (no chunk exclusion, guessed row counts); measured, one
  // such plan turned a 3 s rollup refresh into 160 s. Plan every run afresh.
  await tx`set local plan_cache_mode = force_custom_plan`;
  const definitions = columns.map(([name, type], i) => tx`${i ? tx`,` : tx``} ${tx(name)} ${tx(type)}`);
  await tx`
    create temp table ingest_staging (
      ${withRowIndex ? tx`row_index integer not null,` : tx``}
      ${definitions}
    ) on commit drop
  `;
}

/** Replaces the staged rows with one batch of COPY text. */
export async function restage(tx: Sql, text: string): Promise<void> {
  await tx`truncate ingest_staging`;
  await copyInto(tx, 'ingest_staging', text);
}

/** Statistics for the staged rows, so the statements that read them are planned for their real count. */
export async function analyzeStaging(tx: Sql): Promise<void> {
  await tx`analyze ingest_staging`;
}

/**
 * Sends COPY text into `table` (its `columns`, or all of them in table
 * order) inside the transaction, and settles with the server's verdict.
 *
 * postgres.js resolves a COPY query with its stream as soon as the server
 * accepts the data; an error the server raises after the end of the data
 * (a unique violation, a constraint) goes to the query's own reject, which is
 * then a no-op, and the stream's end callback never fires. Wrapping that
 * reject surfaces the error (with its SQLSTATE) instead of waiting forever;
 * test/integration/ingest.test.ts holds this to the library's behaviour.
 */
export async function copyInto(tx: Sql, table: string, text: string, columns?: string[]): Promise<void> {
  const query = tx`copy ${tx(table)} ${columns ? tx`(${identifierList(tx, columns)})` : tx``} from stdin` as unknown as {
    reject(err: unknown): void;
    writable(): Promise<Writable>;
  };
  if (typeof query.reject !== 'function') throw new Error('postgres.js no longer exposes Query.reject; copyInto needs revisiting');
  const failed = new Promise<never>((_, reject) => {
    const original = query.reject.bind(query);
    query.reject = (err) => {
      reject(err);
      original(err);
    };
  });
  failed.catch(() => {}); // observed by the race below, or by the awaited writable()
  const writable = await query.writable();
  await Promise.race([
    failed,
    new Promise<void>((resolve, reject) => {
      writable.once('error', reject);
      writable.end(text, resolve);
    }),
  ]);
}

/**
 * Runs an upsert of the staged rows and counts what it did. `upsert` is an
 * `insert … select … from ingest_staging on conflict … do update … where <a
 * value differs> returning (xmax = 0) as inserted`: a row equal to the stored
 * one returns nothing, so the unchanged rows are rows − inserted − updated.
 */
export async function countedStagedUpsert(tx: Sql, upsert: postgres.Fragment): Promise<{ rows: number; inserted: number; updated: number }> {
  const [row] = await tx<{ rows: number; inserted: number; updated: number }[]>`
    with upserted as (${upsert})
    select
      (select count(*)::int from ingest_staging) as rows,
      count(*) filter (where inserted)::int as inserted,
      count(*) filter (where not inserted)::int as updated
    from upserted
  `;
  return row;
}

/**
 * Serialises the uploads that take the same `lock` (a constant of their kind)
 * until the transaction ends, across processes, for a kind whose checks
 * against stored rows would otherwise race with a concurrent upload's writes.
 */
export async function lockUploads(tx: Sql, lock: number): Promise<void> {
  await tx`select pg_advisory_xact_lock(${lock})`;
}

/** The first staged row whose instrument_id is not a known instrument, if any. */
export function unknownInstrumentRows(tx: Sql) {
  return tx<{ row_index: number }[]>`
    select s.row_index
    from ingest_staging s
    where not exists (select 1 from instruments i where i.id = s.instrument_id)
    order by s.row_index
    limit 1
  `;
}

/** The first staged row whose key (`columns`) repeats an earlier row's (a key with a null repeats nothing). */
export function repeatedStagedKeys(tx: Sql, ...columns: [string, ...string[]]) {
  const key = identifierList(tx, columns);
  const present = columns.map((c, i) => (i ? tx` and ${tx(c)} is not null` : tx`${tx(c)} is not null`));
  return tx<{ row_index: number }[]>`
    select row_index
    from (
      select row_index, row_number() over (partition by ${key} order by row_index) as k
      from ingest_staging
      where ${present}
    ) d
    where k > 1
    order by row_index
    limit 1
  `;
}

/** Those of `ids` that are not known instruments. */
export async function unknownInstrumentIds(tx: Sql, ids: string[]): Promise<Set<string>> {
  const rows = await tx<{ id: string }[]>`
    select t.id::text as id
    from unnest(${ids}::uuid[]) as t (id)
    where not exists (select 1 from instruments i where i.id = t.id)
  `;
  return new Set(rows.map((r) => r.id));
}
