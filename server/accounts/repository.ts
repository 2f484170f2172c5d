import type { Sql } from '../db/sql.ts';

export async function insertAccount(sql: Sql, name: string): Promise<{ id: string; name: string; createdAt: string }> {
  const [row] = await sql`
    insert into accounts (name)
    values (${name})
    returning id, name, created_at
  `;
  return { id: row.id as string, name: row.name as string, createdAt: (row.created_at as Date).toISOString() };
}

export async function accountExists(sql: Sql, id: string): Promise<boolean> {
  const [row] = await sql`select 1 from accounts where id = ${id}`;
  return Boolean(row);
}

export async function listAccounts(sql: Sql) {
  const rows = await sql`
    select id, name, created_at
    from accounts
    order by created_at, id
  `;
  return rows.map((r) => ({ id: r.id as string, name: r.name as string, createdAt: (r.created_at as Date).toISOString() }));
}
