import { createReadStream } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { loadConfigOrExit } from './config.ts';
import { ingestKinds } from './app.ts';
import { EmbeddedPostgresError, openDatabase } from './db/embedded.ts';
import { migrate } from './db/migrate.ts';
import { Database } from './db/database.ts';
import { DatabaseHealth } from './db/health.ts';
import { createSql } from './db/sql.ts';
import { createLogger } from './logger.ts';
import { AppError } from './http/errors.ts';
import { parse } from './http/validate.ts';
import { UuidSchema } from './http/params.ts';
import type { BodyFormat } from './ingest/body.ts';
import { ingestBody } from './ingest/service.ts';
import { readStatus } from './admin/status.ts';
import * as accounts from './accounts/repository.ts';
import * as keys from './keys/service.ts';
import { ENVIRONMENTS, SCOPES } from './keys/scopes.ts';
import { VERSION } from './runtime.ts';

const USAGE = `usage: npm run cli -- <command>   (bin: mds)

  accounts create --name <name>
  keys create --account <accountId> --env sandbox|live --scopes <scope,scope,...> --name <name>
  keys list [--account <accountId>]
  keys revoke <keyId>
  ingest <kind> <file>        kind: one of the admin upload routes; file: .csv, .ndjson/.jsonl or .json
  demo load                   load the bundled demo data set (idempotent)
  migrate                     apply pending migrations
  status                      storage tier and migrations

Uses DATABASE_URL, else the embedded PostgreSQL under DATA_DIR (joining a running one).`;

function formatOfFile(file: string): BodyFormat {
  if (file.endsWith('.csv')) return 'csv';
  if (file.endsWith('.ndjson') || file.endsWith('.jsonl')) return 'ndjson';
  if (file.endsWith('.json')) return 'json';
  throw new AppError('invalid_request', 'the file must end in .csv, .ndjson, .jsonl or .json', { file: [file] });
}

async function run(db: Database, url: string, argv: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { name: { type: 'string' }, account: { type: 'string' }, env: { type: 'string' }, scopes: { type: 'string' } },
  });
  const [group, action, ...rest] = positionals;
  switch (`${group} ${action ?? ''}`.trim()) {
    case 'accounts create':
      return db.run((sql) => accounts.insertAccount(sql, parse(z.string().trim().min(1), values.name, 'body')));
    case 'keys create':
      return keys.createKey(
        db,
        parse(
          z.strictObject({
            accountId: UuidSchema,
            environment: z.enum(ENVIRONMENTS),
            scopes: z.array(z.enum(SCOPES)).min(1),
            name: z.string().trim().min(1),
          }),
          { accountId: values.account, environment: values.env, scopes: values.scopes?.split(',').map((s) => s.trim()), name: values.name },
          'body',
        ),
      );
    case 'keys list':
      return keys.listKeys(db, values.account ? parse(UuidSchema, values.account, 'body') : undefined);
    case 'keys revoke':
      return keys.revokeKey(db, parse(UuidSchema, rest[0], 'body'));
    case 'demo load': {
      const { loadDemoData } = await import('./demo/load.ts');
      return db.run((sql) => loadDemoData(sql));
    }
    case 'migrate':
      return migrate(url, (m) => process.stderr.write(`${m}\n`));
    case 'status':
      return db.run((sql) => readStatus(sql, { threads: 0, queueDepth: 0 }, VERSION));
    default:
      if (group === 'ingest' && action && rest[0]) {
        const kinds = ingestKinds();
        const kind = kinds[action];
        if (!kind) throw new AppError('invalid_request', `unknown ingest kind ${action}`, { kind: [`one of ${Object.keys(kinds).join(', ')}`] });
        return ingestBody(db, kind, createReadStream(rest[0]), formatOfFile(rest[0]));
      }
      process.stderr.write(`${USAGE}\n`);
      process.exit(2);
  }
}

const config = loadConfigOrExit();
const database = await openDatabase(config).catch((err) => {
  if (!(err instanceof EmbeddedPostgresError)) throw err;
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
// An operator's command: statements get no timeout, and a busy pool is waited for.
const sql = createSql(database.url, { max: 2, name: 'cli', statementTimeoutMs: 0 });
const db = new Database('cli', sql, new DatabaseHealth(database.url, 'cli', createLogger('silent')), { connections: 2, acquireTimeoutMs: 60_000, maxWaiting: 10 });
let exitCode = 0;
try {
  const argv = process.argv.slice(2);
  if (argv[0] !== 'migrate') await migrate(database.url);
  const result = await run(db, database.url, argv);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} catch (err) {
  if (err instanceof AppError) {
    process.stderr.write(`${err.code}: ${err.message}\n${Object.keys(err.details).length ? `${JSON.stringify(err.details, null, 2)}\n` : ''}`);
    exitCode = 1;
  } else {
    throw err;
  }
} finally {
  db.health.stop();
  await db.end(5);
  await database.stop();
}
process.exit(exitCode);
