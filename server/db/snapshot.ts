import type { ISql, Sql } from './sql.ts';

// One snapshot read by two connections at once: the first exports its
// transaction's snapshot (pg_export_snapshot) and the second adopts it (SET
// TRANSACTION SNAPSHOT), so both see exactly the same committed rows, as
// one statement would. The exporting transaction must stay open until the
// second has adopted it: readInExportedSnapshot's `read` keeps it open until
// it returns, so it must await whatever it gave the snapshot to. (begin's
// result type unwraps arrays of promises; `read` returns none.)

/** Runs `read` in a read-only repeatable-read transaction, with the id of its snapshot. */
export function readInExportedSnapshot<T>(sql: Sql, read: (tx: ISql, snapshot: string) => Promise<T>): Promise<T> {
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    const [{ snapshot }] = await tx<{ snapshot: string }[]>`select pg_export_snapshot() as snapshot`;
    return read(tx, snapshot);
  }) as Promise<T>;
}

/** PostgreSQL's snapshot ids: hexadecimal words and a counter joined by hyphens. */
const SNAPSHOT_ID = /^[0-9A-F]+(-[0-9A-F]+)+$/;

/** Runs `read` in a read-only repeatable-read transaction that sees `snapshot` (from readInExportedSnapshot). */
export function readInSnapshot<T>(sql: Sql, snapshot: string, read: (tx: ISql) => Promise<T>): Promise<T> {
  if (!SNAPSHOT_ID.test(snapshot)) throw new Error(`not a PostgreSQL snapshot id: ${JSON.stringify(snapshot)}`);
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    // SET TRANSACTION SNAPSHOT takes a literal, never a parameter; the id is
    // PostgreSQL's own and checked above, so it cannot hold a quote.
    await tx.unsafe(`set transaction snapshot '${snapshot}'`);
    return read(tx);
  }) as Promise<T>;
}
