import type { ISql } from './sql.ts';

/**
 * The deployment's cursor signing key (sql/023_cursor_signing_key.sql), read
 * once per process at start, from the primary. It goes to ListCursors
 * (core/cursor.ts) and nowhere else: no log, error or status holds it.
 */
export async function selectCursorSigningKey(sql: ISql): Promise<Buffer> {
  const [row] = await sql<{ secret: Buffer }[]>`
    select secret
    from cursor_signing_key
  `;
  if (!row) throw new Error('cursor_signing_key has no row: sql/023_cursor_signing_key.sql makes it, and nothing deletes it');
  return row.secret;
}
