// The service and the bare Express server as child processes on loopback
// ports, started as `npm start` does and stopped through the cleanup registry.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sqlClient } from '../../server/db/sql.ts';
import { onCleanup, ROOT, sleep } from './harness.ts';
import { Admin } from './http.ts';
import { round } from './stats.ts';

export const LOOPBACK = '127.0.0.1';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, LOOPBACK, () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface Child {
  proc: ChildProcess;
  pid: number;
  stop(): Promise<void>;
}

/** What to do with each line a child writes. */
export interface OutputOptions {
  /** Receives every non-blank line, with the stream it came on. */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** Whether a line is copied to our stderr (default: every line). */
  echo?: (line: string) => boolean;
}

/** Spawns a child whose output goes to our stderr, prefixed; stop() sends SIGTERM, then SIGKILL after 15 s. */
export function spawnChild(name: string, args: string[], env: NodeJS.ProcessEnv, output: OutputOptions = {}): Child {
  const proc = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (proc.pid === undefined) throw new Error(`could not start ${name}`);
  const pid = proc.pid;
  for (const [stream, which] of [
    [proc.stdout!, 'stdout'],
    [proc.stderr!, 'stderr'],
  ] as const) {
    let partial = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        if (!line.trim()) continue;
        output.onLine?.(line, which);
        if (output.echo?.(line) ?? true) process.stderr.write(`  [${name}] ${line}\n`);
      }
    });
  }
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const stop = onCleanup(`child ${name} (${pid})`, async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  });
  return { proc, pid, stop };
}

async function waitFor(what: string, child: Child, timeoutMs: number, probe: () => Promise<boolean>) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.proc.exitCode !== null || child.proc.signalCode !== null) {
      throw new Error(`${what} exited early (code ${child.proc.exitCode}, signal ${child.proc.signalCode})`);
    }
    if (await probe().catch(() => false)) return;
    await sleep(100);
  }
  throw new Error(`${what} did not become ready within ${timeoutMs / 1000}s`);
}

export interface Service {
  publicUrl: string;
  adminUrl: string;
  adminToken: string;
  pid: number;
  nodeArgs: string[];
  admin: Admin;
  stop(): Promise<void>;
}

/** The application_name (a LIKE pattern) of every database session of the service process `pid`. */
const serviceSessions = (pid: number) => `market-data-service/%/${pid}`;

/**
 * The node arguments of package.json's start script: the bench runs the service
 * exactly as `npm start` does. The script's `exec` (the shell hands its process
 * to node, so signals reach the service) has no part in a direct spawn.
 */
function startArgs(): string[] {
  const start = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const [command, ...args] = start
    .trim()
    .replace(/^exec\s+/, '')
    .split(/\s+/);
  if (command !== 'node') throw new Error(`package.json's start script does not run node: ${start}`);
  return args;
}

/** The environment of a service process of the bench: loopback ports, its own data dir and token, no demo data. */
export function serviceEnv(o: { port: number; adminPort: number; adminToken: string; dataDir: string; logLevel: string }): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    PORT: String(o.port),
    ADMIN_PORT: String(o.adminPort),
    ADMIN_HOST: LOOPBACK,
    ADMIN_TOKEN: o.adminToken,
    DATA_DIR: o.dataDir,
    DEMO_DATA: 'off',
    LOG_LEVEL: o.logLevel,
  };
}

/**
 * Runs the service as `npm start` does (see startArgs) in a child process on
 * loopback ports, against `databaseUrl`, with the demo data off and the rate
 * limits raised out of the way (the limiter still runs on every request).
 */
export async function startService(databaseUrl: string, opts: { env?: Record<string, string>; output?: OutputOptions } = {}): Promise<Service> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const adminToken = `bench-admin-${randomBytes(16).toString('hex')}`;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mds-bench-data-'));
  // BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=prof") reaches every service process, for diagnosis.
  const nodeArgs = [...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean), ...startArgs()];
  const env: NodeJS.ProcessEnv = {
    ...serviceEnv({ port, adminPort, adminToken, dataDir, logLevel: 'warn' }),
    DATABASE_URL: databaseUrl,
    RATE_LIMIT_LIVE_PER_MINUTE: '1000000000',
    RATE_LIMIT_LIVE_PER_DAY: '1000000000',
    RATE_LIMIT_SANDBOX_PER_MINUTE: '1000000000',
    RATE_LIMIT_SANDBOX_PER_DAY: '1000000000',
    ...opts.env,
  };
  const child = spawnChild('service', nodeArgs, env, opts.output);
  const publicUrl = `http://${LOOPBACK}:${port}`;
  const adminUrl = `http://${LOOPBACK}:${adminPort}`;
  // Watches the service's own sessions (their application_name ends in its
  // pid): one left "idle in transaction (aborted)" under an unanswered upload
  // means the request is dead, whatever its socket says.
  const watch = sqlClient(databaseUrl, { max: 1, onnotice: () => {}, idle_timeout: 5 });
  const deadCheck = async () => {
    const [row] = await watch`
      select count(*)::int as n, max(now() - state_change) as since
      from pg_stat_activity
      where application_name like ${serviceSessions(child.pid)} and state = 'idle in transaction (aborted)'
    `;
    return row.n > 0 ? `the service's database session is "idle in transaction (aborted)" (its statement failed) while the request is still unanswered` : null;
  };
  const admin = new Admin(adminUrl, adminToken, deadCheck);
  try {
    await waitFor('the service', child, 180_000, async () => {
      const [pub, adm] = await Promise.all([fetch(`${publicUrl}/healthz`), fetch(`${adminUrl}/admin/v1/status`, { headers: admin.auth })]);
      await Promise.all([pub.arrayBuffer(), adm.arrayBuffer()]);
      return pub.status === 200 && adm.status === 200;
    });
  } catch (err) {
    await child.stop();
    await watch.end();
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  const stop = onCleanup('service data dir', async () => {
    await child.stop();
    // A statement the service left running (an upload it never answered)
    // would keep its locks after the process is gone: end those sessions.
    await watch`
      select pg_terminate_backend(pid)
      from pg_stat_activity
      where application_name like ${serviceSessions(child.pid)}
    `.catch(() => {});
    await watch.end();
    await rm(dataDir, { recursive: true, force: true });
  });
  return { publicUrl, adminUrl, adminToken, pid: child.pid, nodeArgs, admin, stop };
}

/**
 * A bare Express 5 server (bench/bare-server.ts) in a child process, like the
 * service; with `databaseUrl`, its route makes the service's key lookup first.
 */
export async function startBareServer(
  route: { method: string; path: string },
  body: unknown,
  databaseUrl?: string,
): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const port = await freePort();
  // BENCH_NODE_ARGS reaches the bare servers too, so a profile can compare both sides.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawnChild(databaseUrl ? 'bare-lookup' : 'bare', [...nodeArgs, 'bench/bare-server.ts'], {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    BARE_PORT: String(port),
    BARE_METHOD: route.method,
    BARE_PATH: route.path,
    BARE_BODY: JSON.stringify(body),
    ...(databaseUrl ? { BARE_DATABASE_URL: databaseUrl } : {}),
  });
  const url = `http://${LOOPBACK}:${port}`;
  await waitFor('the bare server', child, 60_000, async () => {
    const res = await fetch(`${url}/ready`);
    await res.arrayBuffer();
    return res.status === 200;
  });
  return { url, pid: child.pid, stop: child.stop };
}

/**
 * The service's event-loop delay over a window: prom-client's histogram
 * (monitorEventLoopDelay) is reset by every scrape of /metrics, so scraping
 * before and after a run reads that run alone.
 */
export async function eventLoopDelay(service: Service) {
  const text = await (await fetch(`${service.adminUrl}/metrics`)).text();
  const read = (name: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line ? round(Number(line.split(' ')[1]) * 1000, 2) : null;
  };
  return { p50Ms: read('nodejs_eventloop_lag_p50_seconds'), p99Ms: read('nodejs_eventloop_lag_p99_seconds'), maxMs: read('nodejs_eventloop_lag_max_seconds') };
}

/** Runs `fn` and reads the service's event-loop delay over exactly that run. */
export async function withEventLoopDelay<T>(
  service: Service,
  fn: () => Promise<T>,
): Promise<{ result: T; eventLoopDelay: Awaited<ReturnType<typeof eventLoopDelay>> }> {
  await eventLoopDelay(service);
  const result = await fn();
  return { result, eventLoopDelay: await eventLoopDelay(service) };
}
