// analytics: what the worker pool buys. Two services on the same data, one
// with the piscina pool (WORKER_THREADS = cores) and one computing the same
// tasks on its main thread (WORKER_THREADS=0), measured in the same run:
//  1. event-loop protection: the latency of a trivial authenticated route
//     (POST /v1/analytics/probability, computed inline in both), probed at a
//     steady 100 requests a second (open loop: a slow answer never holds back
//     the next request), idle and while heavy requests run: a custom 8-leg
//     strategy EV with a real-world drift and a 20 × 20 Spearman correlation
//     over 504 days. The heavy load comes two ways: closed loop (2 × cores
//     clients per route, each sending its next request when the last is
//     answered), and open loop, at a fixed rate of half what the pool served
//     closed loop, measured first in the same run, sent to both services
//     alike. The heavy clients run in a process of their own, so handling
//     their responses never delays the probe's clock. Where the CPU went
//     during each loaded window is read from /proc: the request thread (and
//     how long it waited for a CPU), the workers, the service's other
//     threads, PostgreSQL;
//  2. throughput with p50/p99: the strategy EV, technicals for one instrument
//     over 1000 days, the correlation.
import os from 'node:os';
import { benchUuid, dailyBarsCsv, equity, weekdays } from './lib/data.ts';
import { envInt, log, sleep } from './lib/harness.ts';
import { callRoute } from './lib/http.ts';
import { heavyLoad, load, pooledProbe, probe, type HeavyResult, type ProbeRun } from './lib/load.ts';
import { cpuAccount } from './lib/proc.ts';
import { resultHeader, type ScenarioContext, type ScenarioResult } from './lib/results.ts';
import { eventLoopDelay, startService, withEventLoopDelay, type Service } from './lib/service.ts';
import { ratio, round } from './lib/stats.ts';
import { PRIMARY_ROUTE } from './platform-overhead.ts';
import { ConfigSchema } from '../server/config.ts';

const AS_OF = '2021-01-01T00:00:00.000Z';
/**
 * The heaviest strategy EV the API takes: 8 legs (the most it accepts) of a
 * custom structure, under a real-world drift.
 */
const EIGHT_LEGS_WITH_DRIFT = {
  structure: 'custom',
  legs: [80, 85, 90, 95, 105, 110, 115, 120].map((strike, i) => ({
    action: i % 2 === 0 ? 'buy' : 'sell',
    type: strike < 100 ? 'put' : 'call',
    strike,
    quantity: 1 + (i % 3),
  })),
  spot: 100,
  expiryDays: 45,
  rate: 0.04,
  vol: 0.25,
  drift: 0.08,
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
    strategyEv: { method: 'POST', path: '/v1/analytics/strategy-ev', body: JSON.stringify(EIGHT_LEGS_WITH_DRIFT) },
    technicals: { method: 'GET', path: `/v1/instruments/${ids[0]}/technicals?lookbackDays=1000&asOf=2020-12-31` },
    correlations: { method: 'GET', path: `/v1/correlations?instrumentIds=${ids.join(',')}&lookbackDays=504&method=spearman&asOf=2020-12-31` },
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

/** Unmeasured heavy load on each service before the first probe: the workers' (or the inline thread's) JIT warm-up. */
const HEAVY_WARMUP_SEC = 6;
/** Seconds of heavy load before each probe window starts: the child process starts (about 1 s of CPU) and its load settles. */
const HEAVY_LEAD_IN_SEC = 3;
/** Closed-loop heavy load on the pooled service whose throughput sets the open-loop rate. */
const CAPACITY_SEC = 10;
/** The open-loop heavy rate, as a share of what the pool served closed loop. */
const OPEN_LOOP_SHARE = 0.5;

type Routes = ReturnType<typeof routes>;
const HEAVY = ['strategyEv', 'correlations'] as const;
type HeavyRates = Record<(typeof HEAVY)[number], number>;

/** The heavy routes under `key`: closed loop with `connections` clients each, or open loop at `rates`, for `durationSec`. */
function heavyClients(service: Service, key: string, r: Routes, durationSec: number, load: { connections: number } | { rates: HeavyRates }) {
  return heavyLoad(
    HEAVY.map((name) => {
      const base = {
        url: `${service.publicUrl}${r[name].path}`,
        method: r[name].method,
        headers: { authorization: `Bearer ${key}` },
        body: r[name].body,
        durationSec,
      };
      return 'rates' in load ? { ...base, ratePerSec: load.rates[name] } : { ...base, connections: load.connections, warmupSec: 0, timeoutSec: 30 };
    }),
  );
}

/** One probe window of the trivial route under `trivialKey` while `startHeavy` loads the service for the lead-in, the window and a second more. */
async function underLoad(service: Service, trivialKey: string, startHeavy: (durationSec: number) => Promise<HeavyResult[]>, durationSec: number) {
  const heavy = startHeavy(HEAVY_LEAD_IN_SEC + durationSec + 1);
  await sleep(HEAVY_LEAD_IN_SEC * 1000);
  const cpu = cpuAccount(service.pid, WORKER_NICE);
  const { result: trivial, eventLoopDelay: delay } = await withEventLoopDelay(service, () => probeTrivial(service, trivialKey, durationSec));
  const cpuDuringProbe = cpu();
  const [ev, corr] = await heavy;
  return {
    trivial,
    eventLoopDelay: delay,
    cpuDuringProbe,
    heavyRequests: { strategyEv: ev, correlations: corr },
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
    const closedLoop = (key: string, service: Service) => (sec: number) => heavyClients(service, key, r, sec, { connections: heavyConnections });
    await closedLoop(keyPool, pooled)(HEAVY_WARMUP_SEC);
    await closedLoop(keyInline, inline)(HEAVY_WARMUP_SEC);
    log(`analytics: the pool's capacity, ${CAPACITY_SEC} s of closed-loop heavy load`);
    const capacity = await closedLoop(keyPool, pooled)(CAPACITY_SEC);
    const capacityPerSec = Object.fromEntries(HEAVY.map((name, i) => [name, round(capacity[i].ok / capacity[i].durationSec, 1)])) as HeavyRates;
    const openRates = Object.fromEntries(HEAVY.map((name) => [name, round(capacityPerSec[name] * OPEN_LOOP_SHARE, 1)])) as HeavyRates;
    if (HEAVY.some((name) => !(openRates[name] > 0))) throw new Error(`the pool served no heavy requests in ${CAPACITY_SEC} s: ${JSON.stringify(capacity)}`);
    const openLoop = (key: string, service: Service) => (sec: number) => heavyClients(service, key, r, sec, { rates: openRates });

    // The trivial route is probed under load with another account's key (a different customer's cheap request: what
    // event-loop protection is for), and closed loop also with the heavy clients' own key (every request of both then
    // upserts the same usage-counter row, a database lock shared by one account).
    const otherPool = await pooled.admin.apiKey(SCOPES);
    const otherInline = await inline.admin.apiKey(SCOPES);
    const loaded = {
      pool: [] as LoadedRun[],
      inline: [] as LoadedRun[],
      samePool: [] as LoadedRun[],
      sameInline: [] as LoadedRun[],
      openPool: [] as LoadedRun[],
      openInline: [] as LoadedRun[],
    };
    for (let i = 0; i < rounds; i++) {
      log(`analytics: trivial route under closed-loop heavy load, round ${i + 1} of ${rounds}: pool, inline (another account), pool, inline (same account)`);
      loaded.pool.push(await underLoad(pooled, otherPool, closedLoop(keyPool, pooled), durationSec));
      loaded.inline.push(await underLoad(inline, otherInline, closedLoop(keyInline, inline), durationSec));
      loaded.samePool.push(await underLoad(pooled, keyPool, closedLoop(keyPool, pooled), durationSec));
      loaded.sameInline.push(await underLoad(inline, keyInline, closedLoop(keyInline, inline), durationSec));
      log(`analytics: trivial route under open-loop heavy load (${JSON.stringify(openRates)} per s), round ${i + 1} of ${rounds}: pool, inline`);
      loaded.openPool.push(await underLoad(pooled, otherPool, openLoop(keyPool, pooled), durationSec));
      loaded.openInline.push(await underLoad(inline, otherInline, openLoop(keyInline, inline), durationSec));
    }
    const trivial = (runs: LoadedRun[]) => pooledProbe(runs.map((x) => x.trivial));
    const probes = {
      idle: { pool: pooledProbe(idle.pool), inline: pooledProbe(idle.inline) },
      underLoad: { pool: trivial(loaded.pool), inline: trivial(loaded.inline) },
      underLoadSameAccount: { pool: trivial(loaded.samePool), inline: trivial(loaded.sameInline) },
      underOpenLoopLoad: { pool: trivial(loaded.openPool), inline: trivial(loaded.openInline) },
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
    const p99OpenPool = probes.underOpenLoopLoad.pool.latencyMs.p99;
    const p99InlineOverPool = ratio(probes.underLoad.inline.latencyMs.p99, p99Pool);
    const p99InlineOverPoolOpenLoop = ratio(probes.underOpenLoopLoad.inline.latencyMs.p99, p99OpenPool);
    // The target is judged on the worst of the closed-loop windows (both accounts) and the open-loop ones.
    const p99PoolMinusIdle = Math.max(p99Pool, p99SamePool, p99OpenPool) - p99Idle;
    const eld = (runs: LoadedRun[]) => runs.map((x) => x.eventLoopDelay);
    const heavyPerWindow = (runs: LoadedRun[]) => runs.map((x) => x.heavyRequests);
    return {
      scenario: 'analytics',
      ...resultHeader(ctx, status, pooled),
      config: {
        cores,
        workerThreads: { pool: cores, inline: 0 },
        workerNice: WORKER_NICE,
        heavyRoutes: { strategyEv: 'custom structure, 8 legs, drift 0.08', correlations: '20 × 20 Spearman, 504 days' },
        heavyConnectionsPerRoute: heavyConnections,
        heavyWarmupSec: HEAVY_WARMUP_SEC,
        heavyLeadInSec: HEAVY_LEAD_IN_SEC,
        capacitySec: CAPACITY_SEC,
        openLoopShareOfCapacity: OPEN_LOOP_SHARE,
        probeRatePerSec: PROBE_RATE_PER_SEC,
        probeWindowSec: durationSec,
        rounds,
        instruments: data.ids.length,
        barsPerInstrument: data.bars,
      },
      eventLoop: {
        trivialRoute: probes,
        p99PoolMinusIdleMs: {
          anotherAccount: round(p99Pool - p99Idle, 2),
          sameAccount: round(p99SamePool - p99Idle, 2),
          openLoop: round(p99OpenPool - p99Idle, 2),
        },
        p99InlineOverPool: {
          anotherAccount: p99InlineOverPool,
          sameAccount: ratio(probes.underLoadSameAccount.inline.latencyMs.p99, p99SamePool),
          openLoop: p99InlineOverPoolOpenLoop,
        },
        // The heavy routes' closed-loop throughput with the pool (requests a second), and the open-loop rate sent to both services.
        openLoop: { poolCapacityPerSec: capacityPerSec, heavyRatePerSec: openRates },
        // Measured inside the service (monitorEventLoopDelay, 10 ms sampling), one reading per window: how late its
        // timers ran, which counts both a held event loop and a request thread waiting for a CPU it shares with the
        // workers, PostgreSQL and the load generators.
        eventLoopDelayMs: {
          idle: idle.eventLoopDelay,
          underLoadWithPool: eld(loaded.pool),
          underLoadInline: eld(loaded.inline),
          underOpenLoopLoadWithPool: eld(loaded.openPool),
          underOpenLoopLoadInline: eld(loaded.openInline),
        },
        // % of one core over the loaded probe windows (another account), averaged, from /proc.
        cpuDuringProbe: {
          pool: meanCpu(loaded.pool),
          inline: meanCpu(loaded.inline),
          openLoopPool: meanCpu(loaded.openPool),
          openLoopInline: meanCpu(loaded.openInline),
        },
        // Each heavy route's requests over whole windows (lead-in included): sent, answered 2xx, failed (a 503 when shed), p50/p99.
        heavyRequestsPerWindow: {
          pool: heavyPerWindow(loaded.pool),
          inline: heavyPerWindow(loaded.inline),
          openLoopPool: heavyPerWindow(loaded.openPool),
          openLoopInline: heavyPerWindow(loaded.openInline),
        },
      },
      throughput,
      ratios: { trivialP99InlineOverPool: p99InlineOverPool, trivialP99InlineOverPoolOpenLoop: p99InlineOverPoolOpenLoop },
      targets: { p99PoolMinusIdleMs: '<= a few ms' },
      meetsTarget: { p99PoolWithinFewMsOfIdle: p99PoolMinusIdle <= 5 },
      serverIssues: [],
      notes: [
        'both services are child processes on the same database; the inline one runs every worker task on its main thread (WORKER_THREADS=0), the pooled one on piscina threads',
        `the trivial route is probed open loop at ${PROBE_RATE_PER_SEC} requests/s from the bench process; the heavy clients run in a child process, warm each service up for ${HEAVY_WARMUP_SEC} s (closed loop), and load it for ${HEAVY_LEAD_IN_SEC} s before each probe window; their request counts cover whole windows, lead-in included`,
        `closed loop: ${heavyConnections} autocannon clients per heavy route; open loop: each heavy route at ${OPEN_LOOP_SHARE} × what the pool served of it in ${CAPACITY_SEC} s of closed-loop load (measured after the warm-up, same run), the same rate to both services`,
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
