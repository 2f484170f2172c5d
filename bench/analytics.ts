// analytics: what the worker pool buys. Two services on the same data, one
// with the piscina pool (WORKER_THREADS = cores) and one computing the same
// tasks on its main thread (WORKER_THREADS=0), measured in the same run:
//  1. event-loop protection: the latency of a trivial authenticated route
//     (POST /v1/analytics/probability, computed inline in both), probed at a
//     steady 100 requests a second (open loop: a slow answer never holds back
//     the next request), idle and while 2 × cores concurrent strategy-EV and
//     2 × cores concurrent 20-instrument correlation requests run. The heavy
//     clients run in a process of their own, so handling their responses never
//     delays the probe's clock. Where the CPU went during each loaded window is
//     read from /proc: the request thread (and how long it waited for a CPU),
//     the workers, the service's other threads, PostgreSQL;
//  2. throughput with p50/p99: a 4-leg iron condor's strategy EV, technicals
//     for one instrument over 1000 days, a 20 × 20 correlation over 504 days.
import os from 'node:os';
import { benchUuid, dailyBarsCsv, equity, weekdays } from './lib/data.ts';
import { envInt, log, sleep } from './lib/harness.ts';
import { callRoute } from './lib/http.ts';
import { heavyLoad, load, pooledProbe, probe, type ProbeRun } from './lib/load.ts';
import { cpuAccount } from './lib/proc.ts';
import { resultHeader, type ScenarioContext, type ScenarioResult } from './lib/results.ts';
import { startService, type Service } from './lib/service.ts';
import { ratio, round } from './lib/stats.ts';
import { PRIMARY_ROUTE } from './platform-overhead.ts';
import { ConfigSchema } from '../server/config.ts';

const AS_OF = '2021-01-01T00:00:00.000Z';
const IRON_CONDOR = {
  structure: 'iron_condor',
  legs: [
    { action: 'buy', type: 'put', strike: 90, quantity: 1 },
    { action: 'sell', type: 'put', strike: 95, quantity: 1 },
    { action: 'sell', type: 'call', strike: 105, quantity: 1 },
    { action: 'buy', type: 'call', strike: 110, quantity: 1 },
  ],
  spot: 100,
  expiryDays: 45,
  rate: 0.04,
  vol: 0.25,
};
const SCOPES = ['analytics:read', 'technicals:read', 'correlations:read'];

async function loadData(service: Service) {
  const ids = Array.from({ length: 20 }, (_, i) => benchUuid(`analytics-${i}`));
  await service.admin.ok(
    'POST',
    '/instruments',
    ids.map((id, i) => equity(`Analytics Bench ${i}`, `ANB${i}`, id)),
  );
  // 1000 calendar days end on 2020-12-31; every instrument has each weekday.
  const dates = weekdays('2018-04-06', '2020-12-31');
  const res = await service.admin.postStream('/bars/daily', 'text/csv', dailyBarsCsv(ids, dates, AS_OF));
  if (res.status !== 200) throw new Error(`bar ingest answered ${res.status}: ${res.text.slice(0, 300)}`);
  return { ids, bars: dates.length };
}

interface RouteSpec {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
}

/** The trivial route: computed inline in both services. */
const PROBABILITY: RouteSpec = { method: 'POST', path: PRIMARY_ROUTE.path, body: JSON.stringify(PRIMARY_ROUTE.body) };
const PROBE_RATE_PER_SEC = 100;
/** The worker threads' nice increment: the service's default (WORKER_NICE), which the bench leaves unset. */
const WORKER_NICE = ConfigSchema.shape.WORKER_NICE.parse(undefined);

function routes(ids: string[]): Record<'strategyEv' | 'technicals' | 'correlations' | 'probability', RouteSpec> {
  return {
    strategyEv: { method: 'POST', path: '/v1/analytics/strategy-ev', body: JSON.stringify(IRON_CONDOR) },
    technicals: { method: 'GET', path: `/v1/instruments/${ids[0]}/technicals?lookbackDays=1000&asOf=2020-12-31` },
    correlations: { method: 'GET', path: `/v1/correlations?instrumentIds=${ids.join(',')}&lookbackDays=504&asOf=2020-12-31` },
    probability: PROBABILITY,
  };
}

async function check(service: Service, key: string, r: RouteSpec) {
  const res = await callRoute(service.publicUrl, key, r);
  if (res.status !== 200) throw new Error(`${r.method} ${r.path.slice(0, 60)} answered ${res.status}: ${res.text.slice(0, 300)}`);
}

/** The trivial route under `key`, probed at PROBE_RATE_PER_SEC. */
const probeTrivial = (service: Service, key: string, durationSec: number) =>
  probe({
    url: `${service.publicUrl}${PROBABILITY.path}`,
    method: PROBABILITY.method,
    headers: { authorization: `Bearer ${key}` },
    body: PROBABILITY.body,
    ratePerSec: PROBE_RATE_PER_SEC,
    durationSec,
  });

/**
 * The service's event-loop delay over a window: prom-client's histogram
 * (monitorEventLoopDelay) is reset by every scrape of /metrics, so scraping
 * before and after a run reads that run alone.
 */
async function eventLoopDelay(service: Service) {
  const text = await (await fetch(`${service.adminUrl}/metrics`)).text();
  const read = (name: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line ? round(Number(line.split(' ')[1]) * 1000, 2) : null;
  };
  return { p50Ms: read('nodejs_eventloop_lag_p50_seconds'), p99Ms: read('nodejs_eventloop_lag_p99_seconds'), maxMs: read('nodejs_eventloop_lag_max_seconds') };
}

/** Runs `fn` and reads the service's event-loop delay over exactly that run. */
async function withEventLoopDelay<T>(
  service: Service,
  fn: () => Promise<T>,
): Promise<{ result: T; eventLoopDelay: Awaited<ReturnType<typeof eventLoopDelay>> }> {
  await eventLoopDelay(service);
  const result = await fn();
  return { result, eventLoopDelay: await eventLoopDelay(service) };
}

/** Unmeasured heavy load on each service before the first probe: the workers' (or the inline thread's) JIT warm-up. */
const HEAVY_WARMUP_SEC = 6;
/** Seconds of heavy load before each probe window starts: the child process starts (about 1 s of CPU) and its load settles. */
const HEAVY_LEAD_IN_SEC = 3;

type Routes = ReturnType<typeof routes>;

/** The heavy clients: `connections` connections on each of strategy EV and correlations, for `durationSec`. */
const heavyClients = (service: Service, key: string, r: Routes, connections: number, durationSec: number) =>
  heavyLoad(
    [r.strategyEv, r.correlations].map((h) => ({
      url: `${service.publicUrl}${h.path}`,
      method: h.method,
      headers: { authorization: `Bearer ${key}` },
      body: h.body,
      connections,
      durationSec,
      warmupSec: 0,
      timeoutSec: 30,
    })),
  );

/** One probe window of the trivial route while the heavy clients run. */
async function underLoad(service: Service, keys: { heavy: string; trivial: string }, r: Routes, heavyConnections: number, durationSec: number) {
  const heavy = heavyClients(service, keys.heavy, r, heavyConnections, HEAVY_LEAD_IN_SEC + durationSec + 1);
  await sleep(HEAVY_LEAD_IN_SEC * 1000);
  const cpu = cpuAccount(service.pid, WORKER_NICE);
  const { result: trivial, eventLoopDelay: delay } = await withEventLoopDelay(service, () => probeTrivial(service, keys.trivial, durationSec));
  const cpuDuringProbe = cpu();
  const [ev, corr] = await heavy;
  return {
    trivial,
    eventLoopDelay: delay,
    cpuDuringProbe,
    heavyRequests: { strategyEv: ev.requests, correlations: corr.requests, non2xx: ev.non2xx + corr.non2xx + ev.errors + corr.errors },
  };
}

type LoadedRun = Awaited<ReturnType<typeof underLoad>>;

/** The CPU accounts of several windows, averaged (each field in % of one core). */
function meanCpu(runs: LoadedRun[]) {
  const mean = (f: (c: LoadedRun['cpuDuringProbe']) => number) => round(runs.reduce((n, r) => n + f(r.cpuDuringProbe), 0) / runs.length, 1);
  return {
    requestThread: { cpuPct: mean((c) => c.requestThread.cpuPct), runQueueWaitPct: mean((c) => c.requestThread.runQueueWaitPct) },
    workerThreadsCpuPct: mean((c) => c.workerThreadsCpuPct),
    otherServiceThreadsCpuPct: mean((c) => c.otherServiceThreadsCpuPct),
    postgresCpuPct: mean((c) => c.postgresCpuPct),
  };
}

export async function run(ctx: ScenarioContext): Promise<ScenarioResult> {
  const cores = os.availableParallelism();
  const durationSec = envInt('BENCH_ANALYTICS_DURATION', 8);
  const rounds = envInt('BENCH_ANALYTICS_ROUNDS', 2);
  const heavyConnections = 2 * cores;
  const database = await ctx.db.createDatabase(`${ctx.runId}_analytics`);
  const pooled = await startService(database.url);
  const inline = await startService(database.url, { env: { WORKER_THREADS: '0' } });
  try {
    const status = await pooled.admin.status();
    const data = await loadData(pooled);
    const r = routes(data.ids);
    const keyPool = await pooled.admin.apiKey(SCOPES);
    const keyInline = await inline.admin.apiKey(SCOPES);
    for (const spec of Object.values(r)) {
      await check(pooled, keyPool, spec);
      await check(inline, keyInline, spec);
    }

    // Conditions alternate between the two services, round after round, and each condition's windows are pooled:
    // the machine's speed drifts over minutes, and alternation spreads that drift over both services alike.
    log('analytics: trivial route idle');
    await probeTrivial(pooled, keyPool, 1);
    await probeTrivial(inline, keyInline, 1);
    const idle = { pool: [] as ProbeRun[], inline: [] as ProbeRun[], eventLoopDelay: [] as Awaited<ReturnType<typeof eventLoopDelay>>[] };
    for (let i = 0; i < rounds; i++) {
      const pool = await withEventLoopDelay(pooled, () => probeTrivial(pooled, keyPool, durationSec));
      idle.pool.push(pool.result);
      idle.eventLoopDelay.push(pool.eventLoopDelay);
      idle.inline.push(await probeTrivial(inline, keyInline, durationSec));
    }
    log(`analytics: heavy load warm-up, ${HEAVY_WARMUP_SEC} s per service`);
    await heavyClients(pooled, keyPool, r, heavyConnections, HEAVY_WARMUP_SEC);
    await heavyClients(inline, keyInline, r, heavyConnections, HEAVY_WARMUP_SEC);
    // The trivial route is probed under load with another account's key (a different customer's cheap request: what
    // event-loop protection is for), and with the heavy clients' own key (every request of both then upserts the
    // same usage-counter row, a database lock shared by one account).
    const otherPool = await pooled.admin.apiKey(SCOPES);
    const otherInline = await inline.admin.apiKey(SCOPES);
    const loaded = { pool: [] as LoadedRun[], inline: [] as LoadedRun[], samePool: [] as LoadedRun[], sameInline: [] as LoadedRun[] };
    for (let i = 0; i < rounds; i++) {
      log(`analytics: trivial route under heavy load, round ${i + 1} of ${rounds}: pool, inline (another account), pool, inline (same account)`);
      loaded.pool.push(await underLoad(pooled, { heavy: keyPool, trivial: otherPool }, r, heavyConnections, durationSec));
      loaded.inline.push(await underLoad(inline, { heavy: keyInline, trivial: otherInline }, r, heavyConnections, durationSec));
      loaded.samePool.push(await underLoad(pooled, { heavy: keyPool, trivial: keyPool }, r, heavyConnections, durationSec));
      loaded.sameInline.push(await underLoad(inline, { heavy: keyInline, trivial: keyInline }, r, heavyConnections, durationSec));
    }
    const trivial = (runs: LoadedRun[]) => pooledProbe(runs.map((x) => x.trivial));
    const probes = {
      idle: { pool: pooledProbe(idle.pool), inline: pooledProbe(idle.inline) },
      underLoad: { pool: trivial(loaded.pool), inline: trivial(loaded.inline) },
      underLoadSameAccount: { pool: trivial(loaded.samePool), inline: trivial(loaded.sameInline) },
    };

    const throughput: Record<string, unknown> = {};
    for (const name of ['strategyEv', 'technicals', 'correlations'] as const) {
      const spec = r[name];
      const measure = (service: Service, key: string) =>
        load({
          url: `${service.publicUrl}${spec.path}`,
          method: spec.method,
          headers: { authorization: `Bearer ${key}` },
          body: spec.body,
          connections: heavyConnections,
          durationSec,
          warmupSec: 1,
          serverPid: service.pid,
        });
      log(`analytics: throughput ${name}`);
      const pool = await measure(pooled, keyPool);
      const inl = await measure(inline, keyInline);
      throughput[name] = { pool, inline: inl, rpsPoolOverInline: ratio(pool.rps, inl.rps) };
    }

    const p99Idle = probes.idle.pool.latencyMs.p99;
    const p99Pool = probes.underLoad.pool.latencyMs.p99;
    const p99SamePool = probes.underLoadSameAccount.pool.latencyMs.p99;
    const p99InlineOverPool = ratio(probes.underLoad.inline.latencyMs.p99, p99Pool);
    // The target is judged on the worse of the two accounts.
    const p99PoolMinusIdle = Math.max(p99Pool, p99SamePool) - p99Idle;
    const eld = (runs: LoadedRun[]) => runs.map((x) => x.eventLoopDelay);
    return {
      scenario: 'analytics',
      ...resultHeader(ctx, status, pooled),
      config: {
        cores,
        workerThreads: { pool: cores, inline: 0 },
        workerNice: WORKER_NICE,
        heavyConnectionsPerRoute: heavyConnections,
        heavyWarmupSec: HEAVY_WARMUP_SEC,
        heavyLeadInSec: HEAVY_LEAD_IN_SEC,
        probeRatePerSec: PROBE_RATE_PER_SEC,
        probeWindowSec: durationSec,
        rounds,
        instruments: data.ids.length,
        barsPerInstrument: data.bars,
      },
      eventLoop: {
        trivialRoute: probes,
        p99PoolMinusIdleMs: { anotherAccount: round(p99Pool - p99Idle, 2), sameAccount: round(p99SamePool - p99Idle, 2) },
        p99InlineOverPool: { anotherAccount: p99InlineOverPool, sameAccount: ratio(probes.underLoadSameAccount.inline.latencyMs.p99, p99SamePool) },
        // Measured inside the service (monitorEventLoopDelay, 10 ms sampling), one reading per window: how late its
        // timers ran, which counts both a held event loop and a request thread waiting for a CPU it shares with the
        // workers, PostgreSQL and the load generators.
        eventLoopDelayMs: { idle: idle.eventLoopDelay, underLoadWithPool: eld(loaded.pool), underLoadInline: eld(loaded.inline) },
        // % of one core over the loaded probe windows (another account), averaged, from /proc.
        cpuDuringProbe: { pool: meanCpu(loaded.pool), inline: meanCpu(loaded.inline) },
        heavyRequestsPerWindow: { pool: loaded.pool.map((x) => x.heavyRequests), inline: loaded.inline.map((x) => x.heavyRequests) },
      },
      throughput,
      ratios: { trivialP99InlineOverPool: p99InlineOverPool },
      targets: { p99PoolMinusIdleMs: '<= a few ms' },
      meetsTarget: { p99PoolWithinFewMsOfIdle: p99PoolMinusIdle <= 5 },
      serverIssues: [],
      notes: [
        'both services are child processes on the same database; the inline one runs every worker task on its main thread (WORKER_THREADS=0), the pooled one on piscina threads',
        `the trivial route is probed open loop at ${PROBE_RATE_PER_SEC} requests/s from the bench process; the heavy clients (autocannon, closed loop) run in a child process, warm each service up for ${HEAVY_WARMUP_SEC} s, and load it for ${HEAVY_LEAD_IN_SEC} s before each probe window; their request counts cover whole windows, lead-in included`,
        `each condition is probed in ${rounds} windows of ${durationSec} s, alternating between the services, and its latencies are pooled`,
        'on 2 cores the request thread, the workers, PostgreSQL and the load generators share the CPU: cpuDuringProbe shows how much of the loaded window the request thread spent waiting for a CPU',
      ],
    };
  } finally {
    await inline.stop();
    await pooled.stop();
    await database.drop();
  }
}
