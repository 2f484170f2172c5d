import type { ISql } from '../db/sql.ts';

export interface Account {
  id: string;
  name: string;
  createdAt: string;
}

interface AccountRow {
  id: string;
  name: string;
  created_at: Date;
}

const toAccount = (r: AccountRow): Account => ({ id: r.id, name: r.name, createdAt: r.created_at.toISOString() });

export async function insertAccount(sql: ISql, name: string): Promise<Account> {
  const [row] = await sql<AccountRow[]>`
    insert into accounts (name)
    values (${name})
    returning id, name, created_at
  `;
  return toAccount(row);
}

export async function accountExists(sql: ISql, id: string): Promise<boolean> {
  const [row] = await sql`select 1 from accounts where id = ${id}`;
  return Boolean(row);
}

export async function listAccounts(sql: ISql): Promise<Account[]> {
  const rows = await sql<AccountRow[]>`
    select id, name, created_at
    from accounts
    order by created_at, id
  `;
  return rows.map(toAccount);
}
