import type postgres from 'postgres';
import { identifierList, type ISql } from '../db/sql.ts';
import type { StagingColumns } from './kind.ts';
import type { InstrumentMarket } from '../core/session-close.ts';

// The statements of an upload's transaction over its temporary table,
// `ingest_staging` (see IngestKind), and the COPY that fills it.

/**
 * Opens an upload in its transaction: session settings for a long upload,
 * and the staging table with `columns` (after `row_index` when
 * `withRowIndex`), dropped at commit.
 */
export async function beginUpload(tx: ISql, columns: StagingColumns, withRowIndex: boolean): Promise<void> {
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
export async function restage(tx: ISql, text: string): Promise<void> {
  await tx`truncate ingest_staging`;
  await copyInto(tx, 'ingest_staging', text);
}

/** Statistics for the staged rows, so the statements that read them are planned for their real count. */
export async function analyzeStaging(tx: ISql): Promise<void> {
  await tx`analyze ingest_staging`;
}

/**
 * Sends COPY text into `table` (its `columns`, or all of them in table
 * order) inside the transaction, and settles with the server's verdict.
 *
 * postgres.js resolves a COPY query with its stream as soon as the server
 * accepts the data. An error the server raises after the end of the data (a
 * unique violation, a constraint, a malformed line) reaches only the query's
 * internal `reject`, which is a no-op by then: the stream's end callback never
 * fires, the stream emits no error, awaiting the query (or its `execute()`)
 * gives the stream again, and the connection's next query fails with 25P02
 * (transaction aborted) without the cause (porsager/postgres#1173). Wrapping
 * that internal reject is the only way to the error and its SQLSTATE, so the
 * postgres version is pinned exactly in package.json (3.4.9). A version that
 * settles the stream with the error itself (porsager/postgres#1183) is seen by
 * the stream's listeners below. test/integration/ingest.test.ts holds this to
 * the library's behaviour.
 */
export async function copyInto(tx: ISql, table: string, text: string, columns?: string[]): Promise<void> {
  const query = tx`copy ${tx(table)} ${columns ? tx`(${identifierList(tx, columns)})` : tx``} from stdin` as postgres.PendingQuery<postgres.Row[]> & {
    reject(err: unknown): void;
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
      writable.end(text, (err?: Error | null) => (err ? reject(err) : resolve()));
    }),
  ]);
}

/**
 * An upsert of the staged rows into `table` (stagedUpsert). Its columns are
 * `key`, then `kept`, then `updated`, each copied from the staging column of
 * the same name.
 */
export interface StagedUpsert {
  table: string;
  /** The conflict target: the unique key a staged row is matched to a stored one by. */
  key: readonly string[];
  /** Inserted, never rewritten: values the kind's checks have held to the stored row's (a news item's instrument). */
  kept?: readonly string[];
  /** Rewritten from the staged row when any of them differs from the stored row's; the change test compares exactly these. */
  updated: readonly string[];
  /** Whether a rewrite also sets updated_at to now(). */
  setsUpdatedAt: boolean;
  /** Columns of the written row returned before `inserted`. */
  returning?: readonly string[];
}

/**
 * `insert … select … from ingest_staging on conflict (key) do update set
 * <updated> = excluded.<updated> where <a value of updated differs> returning
 * (xmax = 0) as inserted`: a new key is inserted, a stored row is rewritten
 * only when a value differs (so an unchanged re-post writes nothing), and
 * each row written returns whether it was inserted (true) or rewritten (false).
 */
export function stagedUpsert(tx: ISql, upsert: StagedUpsert): postgres.Fragment {
  const { table, key, kept = [], updated, setsUpdatedAt, returning = [] } = upsert;
  const columns = [...key, ...kept, ...updated];
  const assignments = updated.map((c, i) => tx`${i ? tx`, ` : tx``}${tx(c)} = excluded.${tx(c)}`);
  const values = (alias: string) =>
    identifierList(
      tx,
      updated.map((c) => `${alias}.${c}`),
    );
  return tx`
    insert into ${tx(table)} as stored (${identifierList(tx, columns)})
    select ${identifierList(tx, columns)}
    from ingest_staging
    on conflict (${identifierList(tx, key)}) do update set
      ${assignments}${setsUpdatedAt ? tx`, updated_at = now()` : tx``}
    where (${values('stored')}) is distinct from (${values('excluded')})
    returning ${returning.length ? returning.map((c) => tx`stored.${tx(c)}, `) : tx``}(xmax = 0) as inserted
  `;
}

/**
 * Runs an upsert of the staged rows (stagedUpsert, or another that returns
 * `inserted` only for the rows it wrote) and counts what it did: a row equal
 * to the stored one returns nothing, so the unchanged rows are rows −
 * inserted − updated.
 */
export async function countedStagedUpsert(tx: ISql, upsert: postgres.Fragment): Promise<{ rows: number; inserted: number; updated: number }> {
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
export async function lockUploads(tx: ISql, lock: number): Promise<void> {
  await tx`select pg_advisory_xact_lock(${lock})`;
}

/** The first staged row whose instrument_id is not a known instrument, if any. */
export function unknownInstrumentRows(tx: ISql) {
  return tx<{ row_index: number }[]>`
    select s.row_index
    from ingest_staging s
    where not exists (select 1 from instruments i where i.id = s.instrument_id)
    order by s.row_index
    limit 1
  `;
}

/** The first staged row whose key (`columns`) repeats an earlier row's (a key with a null repeats nothing). */
export function repeatedStagedKeys(tx: ISql, ...columns: [string, ...string[]]) {
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

/** The market of each of `ids` that names a known instrument; an unknown id is absent. */
export async function instrumentMarkets(tx: ISql, ids: string[]): Promise<Map<string, InstrumentMarket>> {
  const rows = await tx<{ id: string; asset_class: string; exchange: string | null; region: string | null }[]>`
    select i.id::text as id, i.asset_class, i.exchange, i.region
    from instruments i
    where i.id = any (${ids}::uuid[])
  `;
  return new Map(rows.map((r) => [r.id, { assetClass: r.asset_class, exchange: r.exchange, region: r.region }]));
}
