import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import postgres from 'postgres';
import { z } from 'zod';
import type { DeriveDeps } from '../ingest/derived.ts';
import { publicBaseUrl, type Config } from '../config.ts';
import { ingestKinds } from '../wiring/areas.ts';
import { EmbeddedPostgresError } from '../db/cluster-placement.ts';
import { openDatabase } from '../db/embedded.ts';
import { migrate } from '../runtime/migrations.ts';
import { Database } from '../db/database.ts';
import { DatabaseHealth, isConnectionFailure } from '../db/health.ts';
import { PoolerRefusal, sessionUrl } from '../db/pooler.ts';
import { createSql } from '../db/sql.ts';
import { createLogger } from '../observability/logger.ts';
import type { BodyFormat } from '../ingest/body.ts';
import { ingestBody } from '../ingest/service.ts';
import { readStatus } from '../admin/status.ts';
import * as accounts from '../accounts/repository.ts';
import * as keys from '../keys/service.ts';
import * as logins from '../dashboard/service.ts';
import { PasswordHasher } from '../dashboard/password.ts';
import { ENVIRONMENTS, SCOPES } from '../core/scopes.ts';
import { VERSION } from '../core/version.ts';
import { AppError } from '../core/errors.ts';
import { UuidSchema } from '../core/ids.ts';
import { parse } from '../core/validate.ts';

export type CommandName =
  | 'accounts create'
  | 'accounts set-password'
  | 'accounts invite'
  | 'keys create'
  | 'keys list'
  | 'keys revoke'
  | 'keys roll'
  | 'ingest'
  | 'demo load'
  | 'migrate'
  | 'status';

export interface Invocation {
  name: CommandName;
  options: { name?: string; account?: string; env?: string; scopes?: string; login?: string };
  /** The positional arguments after the command's words. */
  args: string[];
  /** Whether the command may create the embedded cluster when there is none. */
  createsDatabase: boolean;
}

type Run = (db: Database, url: string, options: Invocation['options'], args: string[], config: Config) => Promise<unknown>;

const RUNS: Record<CommandName, Run> = {
  'accounts create': (db, _url, o) => db.run((sql) => accounts.insertAccount(sql, parse(z.string().trim().min(1), o.name, 'body'))),
  'accounts set-password': async (db, _url, o) => {
    const target = parse(z.strictObject({ accountId: UuidSchema, login: logins.LoginSchema }), { accountId: o.account, login: o.login }, 'body');
    const password = parse(z.strictObject({ password: logins.PasswordSchema }), { password: await firstLineOfStdin() }, 'body').password;
    // An operator's command: one hash, waited for as long as it takes.
    const passwords = new PasswordHasher({ threads: 1, maxWaiting: 1, waitMs: 60_000, niceIncrement: 0 });
    try {
      return await logins.setPassword(db, passwords, { ...target, password });
    } finally {
      await passwords.destroy();
    }
  },
  'accounts invite': (db, _url, o, _args, config) =>
    logins.invite(
      db,
      {
        ...parse(z.strictObject({ accountId: UuidSchema, login: logins.LoginSchema }), { accountId: o.account, login: o.login }, 'body'),
        validHours: config.DASHBOARD_INVITATION_HOURS,
      },
      publicBaseUrl(config),
    ),
  'keys create': (db, _url, o) =>
    keys.createKey(
      db,
      parse(
        z.strictObject({
          accountId: UuidSchema,
          environment: z.enum(ENVIRONMENTS),
          scopes: z.array(z.enum(SCOPES)).min(1),
          name: z.string().trim().min(1),
        }),
        { accountId: o.account, environment: o.env, scopes: o.scopes === 'all' ? [...SCOPES] : o.scopes?.split(',').map((s) => s.trim()), name: o.name },
        'body',
      ),
    ),
  'keys list': (db, _url, o) => keys.listKeys(db, o.account ? parse(UuidSchema, o.account, 'body') : undefined),
  'keys revoke': (db, _url, _o, [keyId]) => keys.revokeKey(db, parse(UuidSchema, keyId, 'body')),
  'keys roll': (db, _url, _o, [keyId]) => keys.rollKey(db, parse(UuidSchema, keyId, 'body')),
  ingest: async (db, _url, _o, [kindName, file], config) => {
    const kinds = ingestKinds();
    const kind = kinds[kindName];
    if (!kind) throw new AppError('invalid_request', `unknown ingest kind ${kindName}`, { kind: [`one of ${Object.keys(kinds).join(', ')}`] });
    const { changes, ...stored } = await ingestBody(db, kind, createReadStream(file), formatOfFile(file));
    if (!changes) return stored;
    const { deriveChanged } = await import('../wiring/derivations.ts');
    return { ...stored, derived: await withDeriveDeps(db, config, (deps) => deriveChanged(deps, changes)) };
  },
  'demo load': async (db, _url, _o, _args, config) => {
    const [{ loadDemoData }, { deriveAll }] = await Promise.all([import('../demo/load.ts'), import('../wiring/derivations.ts')]);
    return withDeriveDeps(db, config, (deps) => loadDemoData({ db, deriveAll: () => deriveAll(deps) }));
  },
  migrate: (_db, url) => migrate(url, (m) => process.stderr.write(`${m}\n`)),
  status: (db) => db.run((sql) => readStatus(sql, { threads: 0, queueDepth: 0 }, VERSION)),
};

/**
 * What deriving implied-volatility snapshots needs besides the database: the
 * risk-free rate and a worker pool, whose tasks run on this thread (a one-off
 * command has no requests to keep answering).
 */
async function withDeriveDeps<T>(db: Database, config: Config, run: (deps: DeriveDeps) => Promise<T>): Promise<T> {
  const { macroServiceOf } = await import('../macro/service.ts');
  const { WorkerPool } = await import('../../workers/pool.ts');
  const pool = new WorkerPool({ threads: 0, maxQueue: config.WORKER_MAX_QUEUE, taskTimeoutMs: 600_000 });
  try {
    return await run({ db, macro: macroServiceOf(db, createLogger('silent'), config), pool });
  } finally {
    await pool.destroy();
  }
}

/** The password, read as the first line of standard input so it is never in the command line, the shell history or `ps`. */
async function firstLineOfStdin(): Promise<string | undefined> {
  if (process.stdin.isTTY) process.stderr.write('password (it is shown as typed; pipe it in to keep it off the screen): ');
  const lines = createInterface({ input: process.stdin, terminal: false });
  try {
    for await (const line of lines) return line;
    return undefined;
  } finally {
    lines.close();
  }
}

function formatOfFile(file: string): BodyFormat {
  if (file.endsWith('.csv')) return 'csv';
  if (file.endsWith('.ndjson') || file.endsWith('.jsonl')) return 'ndjson';
  if (file.endsWith('.json')) return 'json';
  throw new AppError('invalid_request', 'the file must end in .csv, .ndjson, .jsonl or .json', { file: [file] });
}

/**
 * One line for a failure the operator can act on: a refusal of ours, an
 * unreachable or refusing database, a file that cannot be read. Null for
 * anything else, which is a defect and keeps its stack.
 */
function operatorMessage(err: unknown, config: Config): string | null {
  if (err instanceof AppError) return `${err.code}: ${err.message}${Object.keys(err.details).length ? `\n${JSON.stringify(err.details, null, 2)}` : ''}`;
  if (err instanceof EmbeddedPostgresError || err instanceof PoolerRefusal) return err.message;
  if (isConnectionFailure(err)) {
    const [variable, databaseUrl] = config.DATABASE_DIRECT_URL ? ['DATABASE_DIRECT_URL', config.DATABASE_DIRECT_URL] : ['DATABASE_URL', config.DATABASE_URL];
    const where = databaseUrl ? `${new URL(databaseUrl).host} (${variable})` : 'the embedded PostgreSQL';
    return `cannot reach the database at ${where}: ${(err as Error).message}`;
  }
  if (err instanceof postgres.PostgresError) return `database error ${err.code}: ${err.message}`;
  if (err instanceof Error && typeof (err as NodeJS.ErrnoException).syscall === 'string') return err.message;
  return null;
}

/**
 * Runs one command against the database (migrating it first, except for
 * `migrate` itself), prints its result as JSON on stdout, and returns the exit
 * code: 0, or 1 with a message on stderr.
 */
export async function runCommand(config: Config, invocation: Invocation): Promise<number> {
  let database: Awaited<ReturnType<typeof openDatabase>> | null = null;
  let db: Database | null = null;
  try {
    database = await openDatabase(config, { create: invocation.createsDatabase });
    // An operator's command: statements get no timeout, and a busy pool is
    // waited for; it runs on sessions of its own, past any pooler (db/pooler.ts).
    const url = sessionUrl(database.url, config);
    const sql = createSql(url, { max: 2, name: 'cli', statementTimeoutMs: 0 });
    db = new Database('cli', sql, new DatabaseHealth(url, 'cli', createLogger('silent')), {
      connections: 2,
      acquireTimeoutMs: 60_000,
      maxWaiting: 10,
    });
    if (invocation.name !== 'migrate') await migrate(url);
    const result = await RUNS[invocation.name](db, url, invocation.options, invocation.args, config);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (err) {
    const message = operatorMessage(err, config);
    if (message === null) throw err;
    process.stderr.write(`${message}\n`);
    return 1;
  } finally {
    db?.health.stop();
    await db?.end(5);
    await database?.stop();
  }
}
