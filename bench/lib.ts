// Shared benchmark helpers: the database server, the service as a child
// process, admin calls, streaming uploads, autocannon, an open-loop latency
// probe, percentiles, RSS and per-thread CPU from /proc.
//
// Everything here targets loopback only, and everything it starts is
// registered for cleanup so an interrupted run leaves nothing behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { startEmbeddedPostgres } from '../server/db/embedded.ts';
import { mulberry32 } from '../server/demo/synthetic-intraday.ts';

export const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
export const LOOPBACK = '127.0.0.1';

// ---------------------------------------------------------------- logging

const t0 = Date.now();
/** Progress goes to stderr; stdout carries only the JSON summary. */
export function log(msg: string): void {
  process.stderr.write(`[bench +${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}\n`);
}

// ---------------------------------------------------------------- cleanup

const cleanups: { name: string; fn: () => Promise<void> }[] = [];

/** Registers a cleanup; returns a function that runs it once and unregisters it. */
export function onCleanup(name: string, fn: () => Promise<void>): () => Promise<void> {
  const entry = { name, fn };
  cleanups.push(entry);
  let done: Promise<void> | null = null;
  return () =>
    (done ??= (async () => {
      const i = cleanups.indexOf(entry);
      if (i >= 0) cleanups.splice(i, 1);
      await fn();
    })());
}

/** Runs every registered cleanup, newest first (children before databases before the cluster). */
export async function cleanupAll(): Promise<void> {
  while (cleanups.length) {
    const entry = cleanups.pop()!;
    try {
      await entry.fn();
    } catch (err) {
      log(`cleanup ${entry.name} failed: ${(err as Error).message}`);
    }
  }
}

// ---------------------------------------------------------------- statistics

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  // Linear interpolation between closest ranks.
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

export const median = (values: number[]) => percentile(values, 50);

/** Rounds for display, keeping `digits` decimals. */
export const round = (n: number, digits = 2) => (Number.isFinite(n) ? Math.round(n * 10 ** digits) / 10 ** digits : n);

/** p50, p90, p99, mean and max of request latencies (ms). */
export function latencySummary(latencies: number[]) {
  return {
    p50: round(percentile(latencies, 50), 3),
    p90: round(percentile(latencies, 90), 3),
    p99: round(percentile(latencies, 99), 3),
    mean: round(latencies.reduce((a, b) => a + b, 0) / latencies.length, 3),
    max: round(Math.max(...latencies), 3),
  };
}

export function summarise(samplesMs: number[]) {
  return {
    runs: samplesMs.length,
    medianMs: round(median(samplesMs)),
    minMs: round(Math.min(...samplesMs)),
    maxMs: round(Math.max(...samplesMs)),
    samplesMs: samplesMs.map((s) => round(s)),
  };
}

/** Times `fn` `warmups` times unrecorded, then `runs` times. */
export async function timeRuns<T>(runs: number, warmups: number, fn: () => Promise<T>, check?: (value: T) => void): Promise<number[]> {
  for (let i = 0; i < warmups; i++) check ? check(await fn()) : await fn();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const value = await fn();
    samples.push(performance.now() - started);
    check?.(value);
  }
  return samples;
}

export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number (got ${raw})`);
  return n;
}

// ---------------------------------------------------------------- deterministic data

/** mulberry32 (the demo data's): a small, fast, seedable PRNG so every run generates identical data. */
export { mulberry32 as prng };

/** A deterministic RFC 9562-shaped (version 4, variant 10) UUID from a name. */
export function benchUuid(name: string): string {
  const h = createHash('sha256').update(`mds-bench/${name}`).digest('hex');
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Weekdays (UTC) from `from` to `to` inclusive, as yyyy-mm-dd. */
export function weekdays(from: string, to: string, limit = Infinity): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`), end = Date.parse(`${to}T00:00:00Z`); t <= end && out.length < limit; t += 86_400_000) {
    const dow = new Date(t).getUTCDay();
    if (dow !== 0 && dow !== 6) out.push(new Date(t).toISOString().slice(0, 10));
  }
  return out;
}

const DAILY_CSV_HEADER = 'instrumentId,barDate,openPrice,highPrice,lowPrice,closePrice,volume,quoteCurrency,quoteUnit,source,asOf\n';

/** daily_bars' columns in the order of the daily-bar CSV's fields. */
export const DAILY_BARS_COLUMNS = ['instrument_id', 'bar_date', 'open_price', 'high_price', 'low_price', 'close_price', 'volume', 'quote_currency', 'quote_unit', 'source', 'as_of'];

const r4 = (x: number) => Math.round(x * 10_000) / 10_000;

/**
 * One synthetic OHLCV bar from a geometric random walk; high ≥ open, close ≥
 * low always hold. Prices have at most 4 decimals, volumes are integers.
 */
export function nextBar(rand: () => number, prevClose: number) {
  const open = r4(prevClose * (1 + (rand() - 0.5) * 0.01));
  const close = r4(open * (1 + (rand() - 0.5) * 0.04));
  const high = r4(Math.max(open, close) * (1 + rand() * 0.01));
  const low = r4(Math.min(open, close) * (1 - rand() * 0.01));
  const volume = 1_000 + Math.floor(rand() * 1_000_000);
  return { open, high, low, close, volume };
}

/** Joins `lines` into ~256 KiB pieces, the way an upload body is sent. */
export async function* inPieces(lines: Iterable<string>): AsyncGenerator<string> {
  let buffer = '';
  for (const line of lines) {
    buffer += line;
    if (buffer.length >= 256 * 1024) {
      yield buffer;
      buffer = '';
    }
  }
  if (buffer) yield buffer;
}

/**
 * Daily-bar CSV for `ids` over `dates`, instrument by instrument, yielded in
 * ~256 KiB pieces (with the header first). Each instrument's series depends
 * only on its id and the dates, so any subset gives the same rows.
 */
export function dailyBarsCsv(ids: string[], dates: string[], asOf: string): AsyncGenerator<string> {
  return inPieces(
    (function* () {
      yield DAILY_CSV_HEADER;
      for (const id of ids) {
        const rand = mulberry32(parseInt(id.slice(0, 8), 16));
        let close = 20 + rand() * 200;
        for (const date of dates) {
          const b = nextBar(rand, close);
          close = b.close;
          yield `${id},${date},${b.open},${b.high},${b.low},${b.close},${b.volume},USD,USD per share,bench,${asOf}\n`;
        }
      }
    })(),
  );
}

/** An equity instrument for POST /admin/v1/instruments, quoted in USD per share. */
export function equity(displayName: string, symbol: string, id?: string) {
  return {
    ...(id === undefined ? {} : { id }),
    assetClass: 'equity',
    displayName,
    quoteCurrency: 'USD',
    quoteUnit: 'USD per share',
    symbols: [{ symbol, validFrom: '2000-01-01', validTo: null }],
  };
}

// ---------------------------------------------------------------- processes and ports

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

export interface ProcStatus {
  rssKb: number;
  hwmKb: number;
}

/** VmRSS and VmHWM (peak RSS) of a process, from /proc/<pid>/status. */
export function procStatus(pid: number): ProcStatus {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => {
    const m = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm').exec(text);
    if (!m) throw new Error(`no ${name} in /proc/${pid}/status`);
    return Number(m[1]);
  };
  return { rssKb: field('VmRSS'), hwmKb: field('VmHWM') };
}

/** Resets the peak-RSS counter (VmHWM) of a process we own; false when the kernel refuses. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** Samples a process's VmRSS every `everyMs` until stopped; returns the largest sample. */
export function sampleRss(pid: number, everyMs = 50) {
  let maxKb = 0;
  let samples = 0;
  const tick = () => {
    try {
      maxKb = Math.max(maxKb, procStatus(pid).rssKb);
      samples++;
    } catch {
      // the process is gone; the caller notices elsewhere
    }
  };
  tick();
  const timer = setInterval(tick, everyMs);
  return {
    stop() {
      clearInterval(timer);
      tick();
      return { maxRssKb: maxKb, samples };
    },
  };
}

interface ThreadTimes {
  nice: number;
  /** User + system CPU, seconds. */
  cpuSec: number;
  /** Time spent runnable but waiting for a CPU (schedstat), seconds. */
  waitSec: number;
}

/** User + system CPU (clock ticks of 1/100 s) and nice value from a /proc stat file (a process's or a thread's). */
function statTimes(file: string): { cpuSec: number; nice: number } {
  const stat = readFileSync(file, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the command: utime and stime are fields 14 and 15, nice 19 (1-based over the whole line).
  return { cpuSec: (Number(f[11]) + Number(f[12])) / 100, nice: Number(f[16]) };
}

/** Per-thread CPU and run-queue wait of a process, from /proc/<pid>/task/<tid>/{stat,schedstat}. */
function threadTimes(pid: number): Map<number, ThreadTimes> {
  const out = new Map<number, ThreadTimes>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out; // the process is gone
  }
  for (const tid of tids) {
    try {
      const sched = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
      out.set(Number(tid), { ...statTimes(`/proc/${pid}/task/${tid}/stat`), waitSec: Number(sched[1]) / 1e9 });
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}

/** Pids of the local PostgreSQL server's processes (its backends included). */
function postgresPids(): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return readFileSync(`/proc/${d}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    })
    .map(Number);
}

/**
 * Where the CPU went over a window, in % of one core: the service's request
 * thread (with the share of the window it spent runnable but waiting for a
 * CPU), its worker threads (those at `workerNice`), its other threads (V8's
 * garbage-collection and compiler helpers), and the local PostgreSQL.
 */
export function cpuAccount(servicePid: number, workerNice: number) {
  const snap = () => ({ at: performance.now(), service: threadTimes(servicePid), postgres: postgresPids().map((p) => threadTimes(p)) });
  const before = snap();
  return () => {
    const after = snap();
    const sec = (after.at - before.at) / 1000;
    const pct = (n: number) => round((100 * n) / sec, 1);
    const delta = (a: Map<number, ThreadTimes>, b: Map<number, ThreadTimes>, pick: (tid: number, t: ThreadTimes) => boolean, field: 'cpuSec' | 'waitSec') =>
      [...a].filter(([tid, t]) => pick(tid, t)).reduce((n, [tid, t]) => n + t[field] - (b.get(tid)?.[field] ?? 0), 0);
    const isWorker = (tid: number, t: ThreadTimes) => tid !== servicePid && workerNice > 0 && t.nice === workerNice;
    const pgBefore = new Map(before.postgres.flatMap((m) => [...m]));
    const pgAfter = new Map(after.postgres.flatMap((m) => [...m]));
    return {
      windowSec: round(sec, 2),
      requestThread: {
        cpuPct: pct(delta(after.service, before.service, (tid) => tid === servicePid, 'cpuSec')),
        runQueueWaitPct: pct(delta(after.service, before.service, (tid) => tid === servicePid, 'waitSec')),
      },
      workerThreadsCpuPct: pct(delta(after.service, before.service, isWorker, 'cpuSec')),
      otherServiceThreadsCpuPct: pct(delta(after.service, before.service, (tid, t) => tid !== servicePid && !isWorker(tid, t), 'cpuSec')),
      postgresCpuPct: pct(delta(pgAfter, pgBefore, () => true, 'cpuSec')),
    };
  };
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
  for (const [stream, which] of [[proc.stdout!, 'stdout'], [proc.stderr!, 'stderr']] as const) {
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

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- database

export interface DbServer {
  kind: 'embedded' | 'external';
  /** A maintenance URL (some existing database on the server). */
  url: string;
  /** A fresh database on the server, dropped by the returned drop(). */
  createDatabase(name: string): Promise<{ url: string; name: string; drop(): Promise<void> }>;
  stop(): Promise<void>;
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

/** Runs `fn` on a one-connection client of `url`, then closes it. */
async function withClient<T>(url: string, fn: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const client = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

function assertLoopback(url: string) {
  const host = new URL(url).hostname;
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host)) {
    throw new Error(`BENCH_DATABASE_URL must point at loopback (127.0.0.1); got host ${host}`);
  }
}

/** BENCH_DATABASE_URL's server when set, else a throwaway embedded PostgreSQL. */
export async function openDbServer(): Promise<DbServer> {
  const external = process.env.BENCH_DATABASE_URL;
  let url: string;
  let kind: DbServer['kind'];
  let stopServer: () => Promise<void>;
  if (external) {
    assertLoopback(external);
    url = external;
    kind = 'external';
    stopServer = async () => {};
  } else {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mds-bench-pg-'));
    // As root the cluster runs as the postgres user, which must reach the directory.
    await chmod(dir, 0o755);
    log(`starting embedded PostgreSQL in ${dir}`);
    const db = await startEmbeddedPostgres(path.join(dir, 'pg'), { persistent: false });
    url = db.url;
    kind = 'embedded';
    stopServer = onCleanup('embedded postgres', async () => {
      await db.stop();
      await rm(dir, { recursive: true, force: true });
    });
  }
  return {
    kind,
    url,
    async createDatabase(name: string) {
      if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`bad database name ${name}`);
      await withClient(url, (sql) => sql.unsafe(`create database ${name}`));
      const drop = onCleanup(`database ${name}`, async () => {
        await withClient(url, (sql) => sql.unsafe(`drop database if exists ${name} with (force)`));
      });
      return { url: withDatabase(url, name), name, drop };
    },
    stop: stopServer,
  };
}

/** A postgres.js client configured like the service's (dates stay yyyy-mm-dd strings). */
export function benchSql(url: string, max = 2) {
  return postgres(url, {
    max,
    onnotice: () => {},
    types: {
      date: { to: 1082, from: [1082], serialize: (x: string) => x, parse: (x: string) => x },
    },
  });
}

// ---------------------------------------------------------------- the service

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
  const [command, ...args] = start.trim().replace(/^exec\s+/, '').split(/\s+/);
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
  const watch = postgres(databaseUrl, { max: 1, onnotice: () => {}, idle_timeout: 5 });
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

/** A bare Express 5 server (bench/bare-server.ts) in a child process, like the service. */
export async function startBareServer(route: { method: string; path: string }, body: unknown): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawnChild('bare', ['--import', 'tsx', 'bench/bare-server.ts'], {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    BARE_PORT: String(port),
    BARE_METHOD: route.method,
    BARE_PATH: route.path,
    BARE_BODY: JSON.stringify(body),
  });
  const url = `http://${LOOPBACK}:${port}`;
  await waitFor('the bare server', child, 60_000, async () => {
    const res = await fetch(`${url}/ready`);
    await res.arrayBuffer();
    return res.status === 200;
  });
  return { url, pid: child.pid, stop: child.stop };
}

export interface Reply {
  status: number;
  body: any;
  text: string;
}

/** A reply body: its JSON when it parses, else the text. */
function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** An authenticated request to a public route; a body is sent as JSON. */
export async function callRoute(baseUrl: string, key: string, route: { method?: string; path: string; body?: string }): Promise<{ status: number; text: string }> {
  const res = await fetch(`${baseUrl}${route.path}`, {
    method: route.method ?? 'GET',
    headers: { authorization: `Bearer ${key}`, ...(route.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: route.body,
  });
  return { status: res.status, text: await res.text() };
}

/** GET /admin/v1/status, the parts the results report. */
export interface ServiceStatus {
  storageTier: string;
  timescaledbVersion: string | null;
  database: { serverVersion: string };
}

export class Admin {
  constructor(
    readonly url: string,
    readonly token: string,
    private readonly deadCheck?: () => Promise<string | null>,
  ) {}

  get auth() {
    return { authorization: `Bearer ${this.token}` };
  }

  async request(method: string, route: string, body?: unknown): Promise<Reply> {
    const res = await fetch(`${this.url}/admin/v1${route}`, {
      method,
      headers: { ...this.auth, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: parseBody(text), text };
  }

  /** Like request(), but throws unless the status is 200 or 201. */
  async ok(method: string, route: string, body?: unknown): Promise<any> {
    const res = await this.request(method, route, body);
    if (![200, 201].includes(res.status)) throw new Error(`${method} /admin/v1${route} answered ${res.status}: ${res.text.slice(0, 500)}`);
    return res.body;
  }

  /** Streams `body` as the request body (chunked); resolves with the reply once the server has answered. */
  postStream(route: string, contentType: string, body: Readable | AsyncIterable<string | Buffer>, opts?: UploadOptions): Promise<Reply & { ms: number; bytesSent: number }> {
    return postStream(`${this.url}/admin/v1${route}`, { ...this.auth, 'content-type': contentType }, body, { deadCheck: this.deadCheck, ...opts });
  }

  async status(): Promise<ServiceStatus> {
    return (await this.ok('GET', '/status')).data;
  }

  async apiKey(scopes: string[]): Promise<string> {
    const account = await this.ok('POST', '/accounts', { name: `bench-${Date.now()}` });
    const key = await this.ok('POST', '/keys', { accountId: account.data.id, environment: 'live', scopes, name: 'bench' });
    return key.data.key as string;
  }
}

/** An upload the server stopped reading, or one that outlived its time limit. */
export class UploadFailure extends Error {
  constructor(message: string, readonly bytesSent: number, readonly ms: number) {
    super(message);
  }
}

/** An upload's outcome: answered 200 (with the reply's data), or not (another status, or an UploadFailure: hung). */
export type UploadOutcome<T> = { ok: true; ms: number; result: T } | { ok: false; ms: number; failure: string; hung: boolean };

export async function settleUpload<T>(upload: Promise<Reply & { ms: number }>): Promise<UploadOutcome<T>> {
  try {
    const res = await upload;
    if (res.status === 200) return { ok: true, ms: res.ms, result: res.body.data };
    return { ok: false, ms: res.ms, failure: `answered ${res.status} after ${round(res.ms / 1000, 1)} s: ${res.text.slice(0, 300)}`, hung: false };
  } catch (err) {
    if (err instanceof UploadFailure) return { ok: false, ms: err.ms, failure: err.message, hung: true };
    throw err;
  }
}

export interface UploadOptions {
  /** Fail when the server has not taken any body bytes for this long while the body is unfinished (default 30 s). */
  stallMs?: number;
  /** Fail when there is no answer after this long (default 15 min). */
  timeoutMs?: number;
  /** Polled every 2 s while the upload is unanswered; a returned reason fails it at once. */
  deadCheck?: () => Promise<string | null>;
}

/**
 * Streams `body` as a chunked POST and resolves with the reply. Rejects with
 * UploadFailure when the server stops reading the body without answering
 * (a hung upload) or when the whole exchange outlives `timeoutMs`.
 */
export function postStream(
  url: string,
  headers: Record<string, string>,
  body: Readable | AsyncIterable<string | Buffer>,
  opts: UploadOptions = {},
): Promise<Reply & { ms: number; bytesSent: number }> {
  const stallMs = opts.stallMs ?? 30_000;
  const timeoutMs = opts.timeoutMs ?? 15 * 60_000;
  const source = body instanceof Readable ? body : Readable.from(body);
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let bytesSent = 0;
    let lastProgress = started;
    let sourceEnded = false;
    let settled = false;
    const done = (err: Error | null, value?: Reply & { ms: number; bytesSent: number }) => {
      if (settled) return;
      settled = true;
      clearInterval(watchdog);
      source.unpipe(req);
      source.destroy();
      if (err) {
        req.destroy();
        reject(err);
      } else resolve(value!);
    };
    const req = http.request(url, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err) => done(err));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        done(null, { status: res.statusCode ?? 0, body: parseBody(text), text, ms: performance.now() - started, bytesSent });
      });
    });
    let checking = false;
    let lastCheck = started;
    const watchdog = setInterval(() => {
      const now = performance.now();
      if (opts.deadCheck && !checking && now - lastCheck >= 2_000) {
        checking = true;
        lastCheck = now;
        opts.deadCheck().then(
          (reason) => {
            checking = false;
            const t = performance.now();
            if (reason) done(new UploadFailure(`${reason}; after ${(bytesSent / MB).toFixed(1)} MB${sourceEnded ? ' (the whole body)' : ''} in ${((t - started) / 1000).toFixed(1)}s`, bytesSent, t - started));
          },
          () => (checking = false),
        );
      }
      const mb = (bytesSent / MB).toFixed(1);
      if (!sourceEnded && now - lastProgress > stallMs) {
        done(new UploadFailure(`the server stopped reading the request body for ${stallMs / 1000}s without answering, after ${mb} MB in ${((now - started) / 1000).toFixed(1)}s`, bytesSent, now - started));
      } else if (now - started > timeoutMs) {
        done(new UploadFailure(`no answer within ${timeoutMs / 1000}s (${mb} MB sent${sourceEnded ? ', the whole body' : ''})`, bytesSent, now - started));
      }
    }, 500);
    req.on('error', (err) => done(err));
    source.on('data', (c: string | Buffer) => {
      bytesSent += typeof c === 'string' ? Buffer.byteLength(c) : c.length;
      lastProgress = performance.now();
    });
    source.on('end', () => (sourceEnded = true));
    source.on('error', (err) => done(err));
    source.pipe(req);
  });
}

// ---------------------------------------------------------------- load generation

export interface LoadOptions {
  url: string;
  method: string;
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  durationSec: number;
  warmupSec: number;
  /** When given, each request takes the next of these header sets (round robin), e.g. to spread load over several API keys. */
  rotateHeaders?: Record<string, string>[];
  /** The server's pid: its CPU time (all threads) over the measured run is reported per request. */
  serverPid?: number;
  /** autocannon's per-request timeout (default 10 s). */
  timeoutSec?: number;
}

/** User + system CPU seconds a process has used so far, all its threads. */
export function cpuSeconds(pid: number): number {
  return statTimes(`/proc/${pid}/stat`).cpuSec;
}

function rotate(sets: Record<string, string>[]) {
  let i = 0;
  return (req: { headers?: Record<string, string> }) => ({ ...req, headers: { ...(req.headers ?? {}), ...sets[i++ % sets.length] } });
}

export function autocannonOptions(o: LoadOptions) {
  return {
    url: o.url,
    method: o.method,
    headers: { ...(o.headers ?? {}), ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: o.body,
    connections: o.connections,
    timeout: o.timeoutSec ?? 10,
    ...(o.rotateHeaders?.length ? { requests: [{ setupRequest: rotate(o.rotateHeaders) }] } : {}),
  };
}

/** An unrecorded run of `o.warmupSec` seconds. */
export async function warmUp(o: LoadOptions): Promise<void> {
  if (o.warmupSec > 0) await autocannon({ ...autocannonOptions(o), duration: o.warmupSec });
}

interface RawLoad {
  durationSec: number;
  requests: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statuses: Map<number, number>;
  latencies: number[];
  serverCpuSec: number;
}

/** One measured run (no warm-up), keeping every 2xx latency. */
export async function measureLoad(o: LoadOptions): Promise<RawLoad> {
  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  const cpuBefore = o.serverPid ? cpuSeconds(o.serverPid) : 0;
  const instance = autocannon({ ...autocannonOptions(o), duration: o.durationSec });
  instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    if (status >= 200 && status < 300) latencies.push(ms);
  });
  const result = await instance;
  return {
    durationSec: result.duration,
    requests: result.requests.total,
    ok: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statuses,
    latencies,
    serverCpuSec: o.serverPid ? cpuSeconds(o.serverPid) - cpuBefore : NaN,
  };
}

/** Pools measured runs of the same load into one summary (percentiles over all their latencies). */
export function summariseLoad(o: LoadOptions, parts: RawLoad[]) {
  const sum = (f: (p: RawLoad) => number) => parts.reduce((n, p) => n + f(p), 0);
  const latencies = parts.flatMap((p) => p.latencies);
  const statuses = new Map<number, number>();
  for (const p of parts) for (const [k, v] of p.statuses) statuses.set(k, (statuses.get(k) ?? 0) + v);
  const durationSec = sum((p) => p.durationSec);
  const ok = sum((p) => p.ok);
  const requests = sum((p) => p.requests);
  const serverCpuSec = sum((p) => p.serverCpuSec);
  return {
    connections: o.connections,
    ...(parts.length > 1 ? { rounds: parts.length } : {}),
    durationSec: round(durationSec, 3),
    requests,
    ok,
    non2xx: sum((p) => p.non2xx),
    errors: sum((p) => p.errors),
    timeouts: sum((p) => p.timeouts),
    statuses: Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])),
    rps: round(ok / durationSec, 1),
    ...(o.serverPid ? { serverCpuSec: round(serverCpuSec, 2), serverCpuMsPerRequest: round((serverCpuSec * 1000) / requests, 3) } : {}),
    latencyMs: latencySummary(latencies),
  };
}

/**
 * autocannon, programmatically: a warm-up run (discarded), then the measured
 * run. Latencies are taken from autocannon's per-response hrtime durations
 * (sub-millisecond), not its integer-millisecond histogram.
 */
export async function load(o: LoadOptions) {
  await warmUp(o);
  return summariseLoad(o, [await measureLoad(o)]);
}

/** What bench/heavy-load.ts reports for each of its loads. */
export interface HeavyResult {
  requests: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  p50Ms: number;
  p99Ms: number;
}

/**
 * Runs `loads` concurrently in a child process (bench/heavy-load.ts), at
 * `nice` when given, and resolves with their results. A process of their own
 * keeps their responses off the event loop of whoever measures beside them.
 */
export function heavyLoad(loads: LoadOptions[], opts: { nice?: number } = {}): Promise<HeavyResult[]> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'bench/heavy-load.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, HEAVY_LOAD: JSON.stringify(loads) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (proc.pid === undefined) throw new Error('could not start the heavy load');
  if (opts.nice !== undefined) os.setPriority(proc.pid, opts.nice);
  let out = '';
  proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => {
      if (code === 0) resolve(JSON.parse(out) as HeavyResult[]);
      else reject(new Error(`the heavy load exited with code ${code}`));
    });
  });
}

export interface ProbeOptions {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  /** Requests a second, sent on schedule whether or not earlier ones have been answered (open loop). */
  ratePerSec: number;
  durationSec: number;
}

/** One probe window: every 2xx latency, and how many requests were sent and failed. */
export interface ProbeRun {
  requests: number;
  ok: number;
  /** Connection errors and non-2xx answers. */
  failed: number;
  latencies: number[];
}

/**
 * An open-loop latency probe: one request every 1/ratePerSec seconds over
 * keep-alive connections (as many as are outstanding), each timed from its
 * send to the end of its response. Unlike a closed loop, a slow answer does
 * not hold back the next request, and the probe adds almost no load of its own.
 */
export async function probe(o: ProbeOptions): Promise<ProbeRun> {
  const agent = new http.Agent({ keepAlive: true });
  const body = o.body === undefined ? undefined : Buffer.from(o.body);
  const headers = { ...o.headers, ...(body ? { 'content-type': 'application/json', 'content-length': String(body.length) } : {}) };
  const latencies: number[] = [];
  let failed = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      const start = process.hrtime.bigint();
      const req = http.request(o.url, { method: o.method, headers, agent }, (res) => {
        res.resume();
        res.once('end', () => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
          else failed += 1;
          resolve();
        });
      });
      req.once('error', () => {
        failed += 1;
        resolve();
      });
      req.end(body);
    });
  const intervalMs = 1000 / o.ratePerSec;
  const total = Math.round(o.durationSec * o.ratePerSec);
  const started = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const wait = started + i * intervalMs - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(one());
  }
  await Promise.all(pending);
  agent.destroy();
  return { requests: total, ok: latencies.length, failed, latencies };
}

/** Probe windows of one condition pooled: percentiles over all their latencies. */
export function pooledProbe(runs: ProbeRun[]) {
  const sum = (f: (r: ProbeRun) => number) => runs.reduce((n, r) => n + f(r), 0);
  return { rounds: runs.length, requests: sum((r) => r.requests), ok: sum((r) => r.ok), failed: sum((r) => r.failed), latencyMs: latencySummary(runs.flatMap((r) => r.latencies)) };
}

// ---------------------------------------------------------------- results

export interface ScenarioContext {
  db: DbServer;
  /** Prefix for this run's databases: mds_bench_<ts>. */
  runId: string;
}

export interface ScenarioResult {
  scenario: string;
  tier: string;
  database: { kind: DbServer['kind']; serverVersion: string; timescaledbVersion: string | null };
  service: { process: 'child'; nodeArgs: string[] };
  config: Record<string, unknown>;
  [section: string]: unknown;
  meetsTarget: Record<string, boolean>;
  serverIssues: string[];
  notes: string[];
}

/** The head of every scenario's result: the storage tier, the database, how the service ran. */
export function resultHeader(ctx: ScenarioContext, status: ServiceStatus, service: Pick<Service, 'nodeArgs'>) {
  return {
    tier: status.storageTier,
    database: { kind: ctx.db.kind, serverVersion: status.database.serverVersion, timescaledbVersion: status.timescaledbVersion },
    service: { process: 'child' as const, nodeArgs: service.nodeArgs },
  };
}

export const MB = 1024 * 1024;

export const ratio = (a: number, b: number, digits = 3) => round(a / b, digits);
