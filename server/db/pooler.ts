import type { Config } from '../config.ts';
import { createSql } from './sql.ts';

/** The variables that decide how the service's connections reach PostgreSQL. */
export type PoolerConfig = Pick<
  Config,
  'DATABASE_URL' | 'DATABASE_POOL_MODE' | 'DATABASE_DIRECT_URL' | 'DATABASE_PREPARED_STATEMENTS' | 'DATABASE_STATEMENT_TIMEOUT_MS'
>;

/** A start the service refuses: the database or the variables would make it serve wrong answers or run unbounded. */
export class PoolerRefusal extends Error {}

const SEE_DOCS = 'see "Behind a pooler" in docs/operations.md';

/**
 * The URL of a connection that stays one session for as long as it is open,
 * for the work that needs one: the migrations (a session advisory lock held
 * across many transactions) and the CLI's commands (no statement timeout).
 * DATABASE_DIRECT_URL, else DATABASE_URL (or the embedded cluster's) itself.
 * Behind a transaction-mode pooler DATABASE_URL is not one session, so
 * DATABASE_DIRECT_URL is required: a session lock taken through it stays on
 * whichever server connection ran it after the migration ends, and a later
 * start whose lock request reaches another server connection waits for ever.
 */
export function sessionUrl(databaseUrl: string, config: PoolerConfig): string {
  if (config.DATABASE_DIRECT_URL) {
    if (!config.DATABASE_URL) {
      throw new PoolerRefusal(`DATABASE_DIRECT_URL is set without DATABASE_URL: the migrations would run on another database than the embedded one served`);
    }
    return config.DATABASE_DIRECT_URL;
  }
  if (config.DATABASE_POOL_MODE === 'transaction') {
    throw new PoolerRefusal(
      `DATABASE_POOL_MODE=transaction needs DATABASE_DIRECT_URL, a connection to PostgreSQL that bypasses the pooler, for the migrations and the CLI; ${SEE_DOCS}`,
    );
  }
  return databaseUrl;
}

interface SessionSettingsRow {
  statement_timeout_ms: number;
  extra_float_digits: number;
  jit: string;
  role: string;
  database: string;
}

/**
 * Reads, on a connection made as the pools make theirs, the settings every
 * pooled session needs, and refuses to start when one would make answers
 * wrong or statements unbounded; returns a warning for each that only costs
 * speed or differs from the configuration.
 *
 * In `session` mode the pools send these settings at connect, so a value
 * other than theirs means something between dropped them (PgBouncer's
 * ignore_startup_parameters does, silently). In `transaction` mode they
 * cannot be sent at all and must be the role's (ALTER ROLE … IN DATABASE …
 * SET), which PostgreSQL applies to every server connection the pooler opens.
 * One connection is read: a server connection the pooler opened before the
 * role was altered keeps its old values until it closes (PgBouncer's
 * RECONNECT closes them).
 */
export async function checkPooledSettings(databaseUrl: string, config: PoolerConfig): Promise<string[]> {
  const sql = createSql(databaseUrl, {
    max: 1,
    name: 'settings-check',
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    poolMode: config.DATABASE_POOL_MODE,
    preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
  });
  let row: SessionSettingsRow;
  try {
    [row] = await sql<SessionSettingsRow[]>`
      select
        (select setting::int from pg_settings where name = 'statement_timeout') as statement_timeout_ms,
        current_setting('extra_float_digits')::int as extra_float_digits,
        current_setting('jit') as jit,
        current_user as role,
        current_database() as database
    `;
  } finally {
    await sql.end({ timeout: 5 });
  }
  const pooled = config.DATABASE_POOL_MODE === 'transaction';
  const fix = (setting: string) =>
    pooled
      ? `run: alter role ${quoteIdent(row.role)} in database ${quoteIdent(row.database)} set ${setting}; then RECONNECT on the pooler's console; ${SEE_DOCS}`
      : `the service sent ${setting} at connect, so something between dropped it (PgBouncer's ignore_startup_parameters does); behind a transaction-mode pooler set DATABASE_POOL_MODE=transaction and the role's settings; ${SEE_DOCS}`;
  const configured = config.DATABASE_STATEMENT_TIMEOUT_MS;
  if (row.extra_float_digits < 1) {
    throw new PoolerRefusal(
      `pooled sessions have extra_float_digits = ${row.extra_float_digits}: PostgreSQL would round every float8 to 15 significant digits and prices would be served wrong; ${fix('extra_float_digits = 1')}`,
    );
  }
  if (row.statement_timeout_ms === 0) {
    throw new PoolerRefusal(
      `pooled sessions have no statement_timeout (0): a runaway statement would hold its connection for ever, and DATABASE_STATEMENT_TIMEOUT_MS (${configured}) would not hold; ${fix(`statement_timeout = ${configured}`)}`,
    );
  }
  const warnings: string[] = [];
  if (row.statement_timeout_ms !== configured) {
    warnings.push(
      `pooled sessions have statement_timeout = ${row.statement_timeout_ms} ms, not DATABASE_STATEMENT_TIMEOUT_MS (${configured} ms); statements are cut at ${row.statement_timeout_ms} ms; ${fix(`statement_timeout = ${configured}`)}`,
    );
  }
  if (row.jit !== 'off') {
    warnings.push(
      `pooled sessions have jit = ${row.jit}: PostgreSQL may spend far longer compiling a bulk read's plan than running it (see server/db/sql.ts); ${fix('jit = off')}`,
    );
  }
  return warnings;
}

/** An identifier as PostgreSQL quotes it, for a command the operator copies. */
function quoteIdent(name: string): string {
  return /^[a-z_][a-z0-9_]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`;
}
