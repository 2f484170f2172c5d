// Load generation: autocannon runs (closed loop), a heavy load in a process of
// its own, and an open-loop latency probe.
import { spawn } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import autocannon from 'autocannon';
import { ROOT, sleep } from './harness.ts';
import { cpuSeconds } from './proc.ts';
import { latencySummary, percentile, round } from './stats.ts';

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
  /** The pids of the server's PostgreSQL backends: their CPU time over the measured run is reported per request. */
  databasePids?: () => Promise<number[]>;
  /** autocannon's per-request timeout (default 10 s). */
  timeoutSec?: number;
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

export interface RawLoad {
  durationSec: number;
  requests: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statuses: Map<number, number>;
  latencies: number[];
  serverCpuSec: number;
  databaseCpuSec: number;
}

/** CPU seconds so far of each of `pids` still running. */
function cpuByPid(pids: number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of pids) {
    try {
      out.set(pid, cpuSeconds(pid));
    } catch {
      // the backend ended
    }
  }
  return out;
}

/** CPU seconds the processes of `pidsOf` used from `before` until now (a process started since counts from zero). */
async function cpuSince(before: Map<number, number>, pidsOf: () => Promise<number[]>): Promise<number> {
  const after = cpuByPid([...new Set([...before.keys(), ...(await pidsOf())])]);
  return [...after].reduce((n, [pid, sec]) => n + sec - (before.get(pid) ?? 0), 0);
}

/** One measured run (no warm-up), keeping every 2xx latency. */
export async function measureLoad(o: LoadOptions): Promise<RawLoad> {
  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  const cpuBefore = o.serverPid ? cpuSeconds(o.serverPid) : 0;
  const databaseBefore = o.databasePids ? cpuByPid(await o.databasePids()) : new Map<number, number>();
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
    databaseCpuSec: o.databasePids ? await cpuSince(databaseBefore, o.databasePids) : NaN,
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
  const databaseCpuSec = sum((p) => p.databaseCpuSec);
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
    ...(o.databasePids ? { databaseCpuSec: round(databaseCpuSec, 2), databaseCpuMsPerRequest: round((databaseCpuSec * 1000) / requests, 3) } : {}),
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

/**
 * A load of bench/heavy-load.ts: closed loop (autocannon, `connections`
 * clients each sending its next request when the last is answered) or open
 * loop (`ratePerSec` requests a second on schedule, answered or not).
 */
export type HeavyLoad = LoadOptions | ProbeOptions;

/** What bench/heavy-load.ts reports for each of its loads. */
export interface HeavyResult {
  /** From the first request sent to the last answer. */
  durationSec: number;
  requests: number;
  ok: number;
  /** Connection errors, timeouts and non-2xx answers. */
  failed: number;
  p50Ms: number;
  p99Ms: number;
}

/** Runs one heavy load in this process. */
export async function runHeavyLoad(o: HeavyLoad): Promise<HeavyResult> {
  if ('ratePerSec' in o) {
    const started = performance.now();
    const run = await probe(o);
    return {
      durationSec: round((performance.now() - started) / 1000, 3),
      requests: run.requests,
      ok: run.ok,
      failed: run.failed,
      p50Ms: round(percentile(run.latencies, 50), 3),
      p99Ms: round(percentile(run.latencies, 99), 3),
    };
  }
  const r = await autocannon({ ...autocannonOptions(o), duration: o.durationSec });
  return {
    durationSec: r.duration,
    requests: r.requests.total,
    ok: r['2xx'],
    failed: r.non2xx + r.errors + r.timeouts,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
  };
}

/**
 * Runs `loads` concurrently in a child process (bench/heavy-load.ts), at
 * `nice` when given, and resolves with their results. A process of their own
 * keeps their responses off the event loop of whoever measures beside them.
 */
export function heavyLoad(loads: HeavyLoad[], opts: { nice?: number } = {}): Promise<HeavyResult[]> {
  const proc = spawn(process.execPath, ['bench/heavy-load.ts'], {
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
  return {
    rounds: runs.length,
    requests: sum((r) => r.requests),
    ok: sum((r) => r.ok),
    failed: sum((r) => r.failed),
    latencyMs: latencySummary(runs.flatMap((r) => r.latencies)),
  };
}
