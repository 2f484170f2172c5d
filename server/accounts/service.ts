import type { Database } from '../db/database.ts';
import * as repo from './repository.ts';

export const createAccount = (db: Database, name: string) => db.run((sql) => repo.insertAccount(sql, name));

export const listAccounts = (db: Database) => db.run((sql) => repo.listAccounts(sql));
