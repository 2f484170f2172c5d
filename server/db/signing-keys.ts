import type { ISql } from './sql.ts';

/** The tables holding a deployment's signing keys, each with the migration that makes its one row. */
const KEYS = {
  /** The list cursors' key (core/cursor.ts, ListCursors). */
  cursor_signing_key: 'sql/023_cursor_signing_key.sql',
  /** The export files' links' key (exports/links.ts). */
  export_link_key: 'sql/027_export_jobs.sql',
} as const;

/**
 * A deployment's signing key: 32 random bytes its migration made, one per
 * deployment, read from the primary so that every process and host signs and
 * checks alike. It goes to what signs with it and nowhere else: no log, error
 * or status holds it.
 */
export async function selectSigningKey(sql: ISql, table: keyof typeof KEYS): Promise<Buffer> {
  const [row] = await sql<{ secret: Buffer }[]>`
    select secret
    from ${sql(table)}
  `;
  if (!row) throw new Error(`${table} has no row: ${KEYS[table]} makes it, and nothing deletes it`);
  return row.secret;
}
