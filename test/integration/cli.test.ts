import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sqlClient } from '../../server/db/sql.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../server/core/scopes.ts';
import { PROJECT_ROOT, runNode } from './child-process.ts';
import { databaseUrl, Service, startService } from './harness.ts';
import { csrfOn, DashboardClient } from '../support/dashboard-client.ts';

// The CLI as a user runs it: its bin in a child process, from a folder outside the project.
const CLI = path.join(PROJECT_ROOT, 'server', 'cli', 'mds.mjs');
const STACK_LINE = /^\s+at /m;

let scratch: string;
let elsewhere: string;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'mds-cli-'));
  elsewhere = path.join(scratch, 'some', 'other', 'folder');
  await mkdir(elsewhere, { recursive: true });
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

const cli = (args: string[], env: Record<string, string>, input?: string) => runNode([CLI, ...args], { cwd: elsewhere, env, input });

/** An empty folder for DATA_DIR. */
async function emptyDataDir(): Promise<string> {
  return mkdtemp(path.join(scratch, 'data-'));
}

describe('cli: usage', () => {
  it('when asked for help with --help, -h or help, then the usage is on stdout, nothing on stderr, exit 0, and no database is looked for', async () => {
    const dataDir = await emptyDataDir();
    const runs = await Promise.all([['--help'], ['-h'], ['help'], ['keys', 'create', '--help']].map((args) => cli(args, { DATA_DIR: dataDir })));
    for (const run of runs) {
      expect(run.code).toBe(0);
      expect(run.stderr).toBe('');
      expect(run.stdout).toMatch(/^usage: npm run cli -- <command>/);
      expect(run.stdout).toContain('keys create --account <accountId> --env sandbox|live --scopes <scope,scope,...>|all --name <name>');
      expect(run.stdout).toContain('--scopes all grants each of the 13 scopes');
    }
    expect(await readdir(dataDir)).toEqual([]);
  });

  it('when the command is unknown, then the reason and the usage are on stderr, the exit code is 2, and there is no stack trace', async () => {
    const run = await cli(['frobnicate', 'now'], { DATA_DIR: await emptyDataDir() });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.split('\n')[0]).toBe('unknown command: frobnicate now');
    expect(run.stderr).toContain('usage: npm run cli -- <command>');
    expect(run.stderr).not.toMatch(STACK_LINE);
  });

  it('when an option is unknown, then its name and the usage are on stderr, exit 2, and there is no stack trace', async () => {
    const run = await cli(['keys', 'list', '--acount', 'x'], { DATA_DIR: await emptyDataDir() });
    expect(run.code).toBe(2);
    expect(run.stderr.split('\n')[0]).toContain("'--acount'");
    expect(run.stderr).not.toMatch(STACK_LINE);
  });
});

describe('cli: dashboard logins', () => {
  let svc: Service;
  beforeAll(async () => {
    svc = await startService();
  });
  afterAll(() => svc.stop());

  it('when set-password reads the password from standard input, then the holder signs in to the dashboard with it, and no output holds it', async () => {
    const env = { DATABASE_URL: databaseUrl() };
    const accountId = JSON.parse((await cli(['accounts', 'create', '--name', 'cli dashboard'], env)).stdout).id as string;
    const login = `cli-${randomUUID()}@example.com`;
    const password = 'typed into standard input';
    const set = await cli(['accounts', 'set-password', '--account', accountId, '--login', login], env, `${password}\nignored second line\n`);
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout)).toEqual({ accountId, login });
    expect(set.stdout + set.stderr).not.toContain(password);
    expect((await new DashboardClient(svc.runtime.publicUrl).signIn(login, password)).status).toBe(303);
    expect((await new DashboardClient(svc.runtime.publicUrl).signIn(login, 'ignored second line')).status).toBe(401);
    const short = await cli(['accounts', 'set-password', '--account', accountId, '--login', login], env, 'short\n');
    expect(short.code).toBe(1);
    expect(short.stderr).toContain('must be 12 to 200 characters; received 5 characters (not shown)');
    const none = await cli(['accounts', 'set-password', '--account', accountId, '--login', login], env);
    expect(none.code).toBe(1);
    const [row] = await svc.sql<{ password_hash: string }[]>`select password_hash from dashboard_logins where account_id = ${accountId}`;
    expect(row.password_hash).toMatch(/^scrypt\$32768\$8\$3\$/);
    expect(row.password_hash).not.toContain(password);
  });

  it('when an invitation is made, then the command prints a link on the public address that sets the password once', async () => {
    const env = { DATABASE_URL: databaseUrl(), PUBLIC_BASE_URL: 'https://data.example.com' };
    const accountId = JSON.parse((await cli(['accounts', 'create', '--name', 'cli invite'], env)).stdout).id as string;
    const invited = await cli(['accounts', 'invite', '--account', accountId, '--login', `Invitee-${randomUUID()}@Example.com`], env);
    expect(invited.code).toBe(0);
    const out = JSON.parse(invited.stdout);
    expect(out.url).toMatch(/^https:\/\/data\.example\.com\/account\/invitation\?token=[A-Za-z0-9_-]{43}$/);
    expect(out.login).toBe(out.login.toLowerCase());
    // DASHBOARD_INVITATION_HOURS defaults to 72.
    expect(Date.parse(out.expiresAt) - Date.now()).toBeGreaterThan(71 * 3600_000);
    expect(Date.parse(out.expiresAt) - Date.now()).toBeLessThanOrEqual(72 * 3600_000);
    const link = new URL(out.url);
    const holder = new DashboardClient(svc.runtime.publicUrl);
    const csrf = csrfOn((await holder.get(link.pathname + link.search)).text)!;
    const password = 'chosen by the holder';
    const form = { csrf, token: link.searchParams.get('token')!, password, confirm: password };
    expect((await holder.post('/account/invitation', form)).status).toBe(303);
    expect((await holder.post('/account/invitation', form)).status).toBe(404);
    expect((await holder.signIn(out.login, password)).status).toBe(303);
  });

  it('when a key is rolled, then the new key has its name, scopes and environment and names the old one', async () => {
    const env = { DATABASE_URL: databaseUrl() };
    const accountId = JSON.parse((await cli(['accounts', 'create', '--name', 'cli roll'], env)).stdout).id as string;
    const created = JSON.parse(
      (await cli(['keys', 'create', '--account', accountId, '--env', 'sandbox', '--scopes', 'fx:read', '--name', 'rolled'], env)).stdout,
    );
    const rolled = await cli(['keys', 'roll', created.id], env);
    expect(rolled.code).toBe(0);
    const next = JSON.parse(rolled.stdout);
    expect(next).toMatchObject({ environment: 'sandbox', scopes: ['fx:read'], name: 'rolled', rolledFrom: created.id });
    expect(next.key).toMatch(/^pk_test_/);
    expect(next.key).not.toBe(created.key);
  });
});

describe('cli: keys', () => {
  it('when a key is created with --scopes all, then each of the 13 scopes is stored on it', async () => {
    const env = { DATABASE_URL: databaseUrl() };
    const account = await cli(['accounts', 'create', '--name', 'cli all scopes'], env);
    expect(account.code).toBe(0);
    const accountId = JSON.parse(account.stdout).id as string;
    const created = await cli(['keys', 'create', '--account', accountId, '--env', 'sandbox', '--scopes', 'all', '--name', 'everything'], env);
    expect(created.code).toBe(0);
    const keyId = JSON.parse(created.stdout).id as string;
    const sql = sqlClient(databaseUrl(), { max: 1, onnotice: () => {} });
    try {
      const [row] = await sql<{ scopes: string[] }[]>`select scopes from api_keys where id = ${keyId} and account_id = ${accountId}`;
      expect(row.scopes).toHaveLength(13);
      expect([...row.scopes].sort()).toEqual([...SCOPES].sort());
    } finally {
      await sql.end();
    }
  });
});

describe('cli: finding the database', () => {
  it('when DATABASE_URL is unset and DATA_DIR, relative to the project folder, holds no cluster, then accounts create and keys list refuse in one line and create nothing', async () => {
    const dataDir = await emptyDataDir();
    // Relative to the project folder; taken from the working directory it would name a folder under `elsewhere`.
    const env = { DATA_DIR: path.relative(PROJECT_ROOT, dataDir) };
    const runs = await Promise.all([cli(['accounts', 'create', '--name', 'nobody'], env), cli(['keys', 'list'], env)]);
    for (const run of runs) {
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      const lines = run.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^no database found: DATABASE_URL is not set and DATA_DIR \((.+)\) holds no embedded PostgreSQL cluster/);
      expect(lines[0]).toContain(`DATA_DIR (${dataDir})`);
    }
    expect(await readdir(dataDir)).toEqual([]);
    expect(await readdir(elsewhere)).toEqual([]);
  });

  it('when DATABASE_URL names a server that is not there, then the command says it cannot reach it, in one line without the password', async () => {
    const port = await closedPort();
    const run = await cli(['status'], { DATABASE_URL: `postgres://someone:s3cret-password@127.0.0.1:${port}/mds` });
    expect(run.code).toBe(1);
    expect(run.stderr.trimEnd().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^cannot reach the database at 127\\.0\\.0\\.1:${port} \\(DATABASE_URL\\): .*ECONNREFUSED`)),
    ]);
    expect(run.stderr).not.toContain('s3cret-password');
  });
});

/** A port nothing listens on: one the OS just handed out and took back. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}
