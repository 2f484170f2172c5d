import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlClient } from '../../server/db/sql.ts';
import { DashboardClient } from '../support/dashboard-client.ts';
import { PROJECT_ROOT, runNode } from './child-process.ts';
import { createInstrument, dailyBar, ingest, minuteBar } from './fixtures.ts';
import { databaseUrl, startService, type Service } from './harness.ts';

// The service behind a real PgBouncer (Debian's 1.18) in transaction mode,
// with two server connections for the whole service: every pool's client
// connections take turns on them, so two statements outside a transaction
// may run on different sessions, and the pooler refuses any setting sent at
// connect. .ci/run installs pgbouncer, so in CI (CI=true) this runs, and a
// missing binary fails it; elsewhere it is skipped without one.

const PGBOUNCER =
  process.env.PGBOUNCER_PATH ??
  [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin'].map((dir) => path.join(dir, 'pgbouncer')).find((p) => existsSync(p));
const SKIP = !PGBOUNCER && !process.env.CI;

const SERVER_CONNECTIONS = 2;
// Short, so that a statement can be seen to run past it; uploads lift it for their own transaction.
const STATEMENT_TIMEOUT_MS = 3_000;
const DAY_LIMIT = 5;

type Client = ReturnType<typeof sqlClient>;

/** A running pgbouncer in front of this file's database. */
interface PgBouncer {
  /** The URL the service is given as DATABASE_URL. */
  url: string;
  /** The admin console (simple queries only). */
  console: Client;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
      .once('error', reject)
      .listen(0, '127.0.0.1', () => {
        const { port } = srv.address() as { port: number };
        srv.close(() => resolve(port));
      });
  });
}

/** A value of a pgbouncer connection string, quoted as libpq quotes one. */
const connValue = (v: string) => `'${v.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;

/**
 * Starts pgbouncer in transaction mode in front of `server` (this file's
 * database, over TCP or a Unix socket), its files in a temporary folder.
 * PgBouncer 1.18 refuses to run as root ("PgBouncer should not run as root"),
 * so as root it is started with -u: over a Unix socket as the account that
 * owns the socket's folder (the embedded cluster's), the one who can reach
 * it; over TCP as postgres.
 */
async function startPgBouncer(server: string, extraSettings: string[] = []): Promise<PgBouncer> {
  const target = new URL(server);
  const database = decodeURIComponent(target.pathname.slice(1));
  const socketDir = target.searchParams.get('host');
  const port = await freePort();
  const appPassword = randomBytes(16).toString('hex');
  const consolePassword = randomBytes(16).toString('hex');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mds-pgbouncer-'));
  const serverConn = [
    `host=${connValue(socketDir ?? target.hostname)}`,
    `port=${target.port || '5432'}`,
    `dbname=${connValue(database)}`,
    `user=${connValue(decodeURIComponent(target.username))}`,
    ...(target.password ? [`password=${connValue(decodeURIComponent(target.password))}`] : []),
  ].join(' ');
  await writeFile(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `${database} = ${serverConn}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = scram-sha-256',
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      'admin_users = console',
      'pool_mode = transaction',
      `default_pool_size = ${SERVER_CONNECTIONS}`,
      `max_db_connections = ${SERVER_CONNECTIONS}`,
      'reserve_pool_size = 0',
      'max_client_conn = 200',
      // No ignore_startup_parameters unless a test asks: a setting sent at connect is refused, as in production.
      ...extraSettings,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  await writeFile(path.join(dir, 'userlist.txt'), `"app" "${appPassword}"\n"console" "${consolePassword}"\n`, { mode: 0o600 });
  // The socket's folder is private to the account the cluster runs as (mds-postgres for the embedded one).
  const socketOwner = () => spawnSync('id', ['-nu', String(statSync(socketDir!).uid)], { encoding: 'utf8' }).stdout.trim();
  const runAs = process.getuid?.() === 0 ? (socketDir ? socketOwner() : spawnSync('id', ['-u', 'postgres']).status === 0 ? 'postgres' : 'nobody') : null;
  if (runAs) {
    const uid = Number(spawnSync('id', ['-u', runAs], { encoding: 'utf8' }).stdout);
    const gid = Number(spawnSync('id', ['-g', runAs], { encoding: 'utf8' }).stdout);
    for (const f of ['', 'pgbouncer.ini', 'userlist.txt']) await chown(path.join(dir, f), uid, gid);
    await chmod(dir, 0o700);
  }
  const child: ChildProcess = spawn(PGBOUNCER ?? 'pgbouncer', [...(runAs ? ['-u', runAs] : []), path.join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`pgbouncer exited (${code}) before it was up:\n${log}`)));
    child.stderr!.on('data', (chunk: Buffer) => {
      log += chunk.toString();
      if (log.includes('process up')) resolve();
    });
  });
  const consoleSql = sqlClient(`postgres://console:${consolePassword}@127.0.0.1:${port}/pgbouncer`, { max: 1, fetch_types: false, onnotice: () => {} });
  return {
    url: `postgres://app:${appPassword}@127.0.0.1:${port}/${database}`,
    console: consoleSql,
    async stop() {
      await consoleSql.end({ timeout: 1 });
      child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Rows of a console command (SHOW CLIENTS, SHOW SERVERS). */
const show = (bouncer: PgBouncer, what: 'clients' | 'servers') => bouncer.console.unsafe<Record<string, unknown>[]>(`show ${what}`).simple();

describe.skipIf(SKIP)('behind PgBouncer in transaction mode', () => {
  let bouncer: PgBouncer;
  let direct: Client;
  let role: string;
  let database: string;
  /** What the service is given to run behind the pooler. */
  let pooled: Record<string, string>;

  beforeAll(async () => {
    bouncer = await startPgBouncer(databaseUrl());
    direct = sqlClient(databaseUrl(), { max: 1, onnotice: () => {} });
    [{ role, database }] = await direct<{ role: string; database: string }[]>`select current_user as role, current_database() as database`;
    pooled = {
      DATABASE_URL: bouncer.url,
      DATABASE_DIRECT_URL: databaseUrl(),
      DATABASE_POOL_MODE: 'transaction',
      DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      RATE_LIMIT_SANDBOX_PER_DAY: String(DAY_LIMIT),
    };
  });
  afterAll(async () => {
    if (direct) {
      await direct`alter role ${direct(role)} in database ${direct(database)} reset all`;
      await direct.end();
    }
    await bouncer?.stop();
  });

  it('when three clients each run a statement through the pooler, then they share its two server connections (what the rest relies on)', async () => {
    const clients = [1, 2, 3].map(() => sqlClient(bouncer.url, { max: 1, prepare: false, onnotice: () => {} }));
    try {
      const pids = await Promise.all(clients.map(async (c) => (await c<{ pid: number }[]>`select pg_backend_pid() as pid`)[0].pid));
      expect(new Set(pids).size).toBeLessThanOrEqual(SERVER_CONNECTIONS);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  it('when DATABASE_DIRECT_URL is not set, then the service refuses to start, naming it', async () => {
    const { DATABASE_DIRECT_URL: _, ...withoutDirect } = pooled;
    await expect(startService(withoutDirect)).rejects.toThrow(/DATABASE_POOL_MODE=transaction needs DATABASE_DIRECT_URL/);
  });

  it('when the role sets no statement_timeout, then the service refuses to start, with the command that fixes it', async () => {
    await expect(startService(pooled)).rejects.toThrow(
      `pooled sessions have no statement_timeout (0): a runaway statement would hold its connection for ever, and DATABASE_STATEMENT_TIMEOUT_MS (${STATEMENT_TIMEOUT_MS}) would not hold; run: alter role ${role} in database ${database} set statement_timeout = ${STATEMENT_TIMEOUT_MS}`,
    );
  });

  it('when a pooler drops the settings sent at connect, then the service in session mode refuses to start rather than run without them', async () => {
    const dropping = await startPgBouncer(databaseUrl(), ['ignore_startup_parameters = statement_timeout,extra_float_digits,jit']);
    try {
      await expect(startService({ ...pooled, DATABASE_URL: dropping.url, DATABASE_POOL_MODE: 'session' })).rejects.toThrow(
        new RegExp(
          `^pooled sessions have no statement_timeout \\(0\\).*the service sent statement_timeout = ${STATEMENT_TIMEOUT_MS} at connect, so something between dropped it`,
        ),
      );
    } finally {
      await dropping.stop();
    }
  });

  it('when the CLI runs in transaction mode, then it works on DATABASE_DIRECT_URL, and without it says so in one line', async () => {
    const cli = (env: Record<string, string>) =>
      runNode([path.join(PROJECT_ROOT, 'server', 'cli', 'mds.mjs'), 'status'], {
        cwd: os.tmpdir(),
        env: { DATABASE_URL: bouncer.url, DATABASE_POOL_MODE: 'transaction', ...env },
      });
    const run = await cli({ DATABASE_DIRECT_URL: databaseUrl() });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ storageTier: expect.any(String) });
    const refused = await cli({});
    expect(refused.code).toBe(1);
    expect(refused.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^DATABASE_POOL_MODE=transaction needs DATABASE_DIRECT_URL/)]);
  });

  describe('with the settings on the role, as docs/operations.md says', () => {
    let svc: Service;
    const warnings: string[] = [];

    beforeAll(async () => {
      // ALTER ROLE takes no parameters: the value is this file's constant, written into the statement.
      await direct`alter role ${direct(role)} in database ${direct(database)} set statement_timeout = ${direct.unsafe(String(STATEMENT_TIMEOUT_MS))}`;
      await direct`alter role ${direct(role)} in database ${direct(database)} set extra_float_digits = 1`;
      await direct`alter role ${direct(role)} in database ${direct(database)} set jit = off`;
      // Server connections opened before the role changed keep their settings until they close.
      await bouncer.console.unsafe(`reconnect ${database}`).simple();
      svc = await startService({ ...pooled, LOG_LEVEL: 'warn' }, { write: (line: string) => void warnings.push(line) });
    });
    afterAll(() => svc?.stop());

    it('when it starts, then it warns of nothing about its sessions, and no migration lock is left on a server connection', async () => {
      expect(warnings.filter((w) => w.includes('pooled sessions'))).toEqual([]);
      const [locks] = await direct<{ n: number }[]>`
        select count(*)::int as n from pg_locks
        where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())
      `;
      expect(locks.n).toBe(0);
    });

    it('when keys are made, data uploaded and read, singly, in bulk and concurrently, then every answer is right', async () => {
      const key = await svc.keyWith(['instruments:read', 'prices:read']);
      const a = await createInstrument(svc);
      const b = await createInstrument(svc);
      // 10.000000000000002 is the double after 10: PostgreSQL writes it whole only with extra_float_digits ≥ 1.
      await ingest(svc, '/bars/daily', [
        dailyBar(a.id, { barDate: '2024-03-04', close: 10.000000000000002 }),
        dailyBar(a.id, { barDate: '2024-03-05', close: 11 }),
        dailyBar(b.id, { barDate: '2024-03-04', close: 20 }),
      ]);
      // A correction: staged, upserted and versioned under the price-history lock, in one transaction.
      const corrected = await ingest(svc, '/bars/daily', [dailyBar(a.id, { barDate: '2024-03-05', close: 12.5 })]);
      expect(corrected).toMatchObject({ updated: 1 });

      const daily = await svc.get(`/v1/instruments/${a.id}/prices?from=2024-03-01&to=2024-03-08`, key);
      expect(daily.status).toBe(200);
      expect(daily.body.data.map((bar: { closePrice: number }) => bar.closePrice)).toEqual([10.000000000000002, 12.5]);

      // 1-minute bars, and their 5-minute rollup: kept by the upload's transaction, or refreshed after it on full TimescaleDB.
      const minute = (barTimestamp: string, close: number) => minuteBar(a.id, barTimestamp, close, { asOf: '2024-04-01T00:00:00.000Z' });
      await ingest(svc, '/bars/intraday', [minute('2024-03-04T14:30:00Z', 10), minute('2024-03-04T14:31:00Z', 11), minute('2024-03-04T14:32:00Z', 12)]);
      const fiveMinutes = await svc.get(`/v1/instruments/${a.id}/intraday?from=2024-03-04&to=2024-03-04&interval=5min`, key);
      expect(fiveMinutes.status).toBe(200);
      expect(fiveMinutes.body.data).toMatchObject([{ openPrice: 10, highPrice: 12.5, lowPrice: 9.5, closePrice: 12 }]);

      const bulk = await svc.get(`/v1/prices/bulk?instrumentIds=${a.id},${b.id}&from=2024-03-01&to=2024-03-08`, key);
      expect(bulk.status).toBe(200);
      expect(bulk.body.data[a.id].map((bar: { closePrice: number }) => bar.closePrice)).toEqual([10.000000000000002, 12.5]);
      expect(bulk.body.data[b.id].map((bar: { closePrice: number }) => bar.closePrice)).toEqual([20]);

      const many = await Promise.all(
        Array.from({ length: 30 }, (_, i) => svc.get(`/v1/instruments/${i % 2 ? a.id : b.id}/prices?from=2024-03-01&to=2024-03-08`, key)),
      );
      expect(many.map((r) => r.status)).toEqual(many.map(() => 200));
      expect(many.map((r) => r.body.data.at(-1).closePrice)).toEqual(many.map((_, i) => (i % 2 ? 12.5 : 20)));

      // The service's client connections took turns on the pooler's two server connections.
      const clients = (await show(bouncer, 'clients')).filter((c) => c.user === 'app' && c.database === database);
      const servers = (await show(bouncer, 'servers')).filter((s) => s.database === database);
      expect(clients.length).toBeGreaterThan(SERVER_CONNECTIONS);
      expect(servers.length).toBeLessThanOrEqual(SERVER_CONNECTIONS);
    });

    it('when a sandbox key asks past its day limit at once, then exactly the limit is admitted and every request is counted', async () => {
      const accountId = await svc.createAccount();
      const { key } = await svc.createKey(accountId, ['instruments:read'], 'sandbox');
      const answers = await Promise.all(Array.from({ length: DAY_LIMIT + 3 }, () => svc.get('/v1/instruments?query=zz', key)));
      expect(answers.map((r) => r.status).sort()).toEqual([...Array(DAY_LIMIT).fill(200), 429, 429, 429]);
      const usage = (await svc.admin('GET', `/usage?accountId=${accountId}&days=1`)).body.data.usage.sandbox;
      expect(usage.days).toEqual([{ day: expect.any(String), admitted: DAY_LIMIT, refused: 3 }]);
    });

    it('when a holder signs in to the dashboard, then the session holds across requests', async () => {
      const accountId = await svc.createAccount();
      const login = `holder-${randomUUID()}@example.com`;
      const password = 'a long enough password';
      expect((await svc.admin('POST', `/accounts/${accountId}/password`, { login, password })).status).toBe(200);
      const client = new DashboardClient(svc.runtime.publicUrl);
      expect((await client.signIn(login, password)).status).toBe(303);
      const keys = await client.get('/account/keys');
      expect(keys.status).toBe(200);
    });

    it('when statements run on the pooled sessions, after an upload lifted its own timeout, then the role settings hold on each, and the timeout cuts', async () => {
      const a = await createInstrument(svc);
      await ingest(svc, '/bars/daily', [dailyBar(a.id, { barDate: '2024-04-01', close: 5 })]);
      // Enough at once, on the primary pool's client connections, to occupy both server connections.
      const seen = await Promise.all(
        Array.from({ length: 8 }, () =>
          svc.sql<{ pid: number; timeout: string; digits: string; jit: string }[]>`
            select pg_backend_pid() as pid, current_setting('statement_timeout') as timeout, current_setting('extra_float_digits') as digits, current_setting('jit') as jit, pg_sleep(0.05)
          `.then(([r]) => r),
        ),
      );
      expect(new Set(seen.map((r) => r.pid)).size).toBe(SERVER_CONNECTIONS);
      expect(seen.map(({ timeout, digits, jit }) => ({ timeout, digits, jit }))).toEqual(
        seen.map(() => ({ timeout: `${STATEMENT_TIMEOUT_MS / 1000}s`, digits: '1', jit: 'off' })),
      );
      await expect(svc.sql`select pg_sleep(${STATEMENT_TIMEOUT_MS / 1000 + 1})`).rejects.toMatchObject({ code: '57014' });
    });

    it('when DATABASE_STATEMENT_TIMEOUT_MS differs from the role, then the service starts and warns with both values', async () => {
      const logged: string[] = [];
      const other = await startService(
        { ...pooled, DATABASE_STATEMENT_TIMEOUT_MS: '4000', LOG_LEVEL: 'warn' },
        { write: (line: string) => void logged.push(line) },
      );
      await other.stop();
      expect(logged.join('\n')).toContain(`pooled sessions have statement_timeout = ${STATEMENT_TIMEOUT_MS} ms, not DATABASE_STATEMENT_TIMEOUT_MS (4000 ms)`);
    });
  });
});
