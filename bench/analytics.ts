// analytics: what the worker pool buys. Two services on the same data, one
// with the piscina pool (WORKER_THREADS = cores) and one computing the same
// tasks on its main thread (WORKER_THREADS=0), measured in the same run:
//  1. event-loop protection: p99 of a trivial authenticated route (POST
//     /v1/analytics/probability, computed inline in both) idle, and while
//     2 × cores concurrent strategy-EV and 2 × cores concurrent 20-instrument
//     correlation requests run;
//  2. throughput with p50/p99: a 4-leg iron condor's strategy EV, technicals
//     for one instrument over 1000 days, a 20 × 20 correlation over 504 days.
import os from 'node:os';
import autocannon from 'autocannon';
import {
  autocannonOptions,
  benchUuid,
  callRoute,
  dailyBarsCsv,
  envInt,
  equity,
  load,
  log,
  ratio,
  resultHeader,
  round,
  sleep,
  startService,
  weekdays,
  type ScenarioContext,
  type ScenarioResult,
  type Service,
} from './lib.ts';
import { PRIMARY_ROUTE } from './platform-overhead.ts';

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
const TRIVIAL_CONNECTIONS = 5;

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

/** The trivial route under `key`, TRIVIAL_CONNECTIONS connections. */
const trivialLoad = (service: Service, key: string, durationSec: number, warmupSec: number) =>
  load({ url: `${service.publicUrl}${PROBABILITY.path}`, method: PROBABILITY.method, headers: { authorization: `Bearer ${key}` }, body: PROBABILITY.body, connections: TRIVIAL_CONNECTIONS, durationSec, warmupSec });

/**
 * The service's event-loop delay over a window: prom-client's histogram
 * (monitorEventLoopDelay) is reset by every scrape of /metrics, so scraping
 * before and after a run reads that run alone.
 */
async function eventLoopDelay(service: Service) {
  const text = await (await fetch(`${service.publicUrl}/metrics`)).text();
  const read = (name: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line ? round(Number(line.split(' ')[1]) * 1000, 2) : null;
  };
  return { p50Ms: read('nodejs_eventloop_lag_p50_seconds'), p99Ms: read('nodejs_eventloop_lag_p99_seconds'), maxMs: read('nodejs_eventloop_lag_max_seconds') };
}

/** Runs `fn` and reads the service's event-loop delay over exactly that run. */
async function withEventLoopDelay<T>(service: Service, fn: () => Promise<T>): Promise<{ result: T; eventLoopDelay: Awaited<ReturnType<typeof eventLoopDelay>> }> {
  await eventLoopDelay(service);
  const result = await fn();
  return { result, eventLoopDelay: await eventLoopDelay(service) };
}

/** The trivial route's latency while heavy requests keep `heavyConnections` connections busy on each heavy route. */
async function underLoad(service: Service, keys: { heavy: string; trivial: string }, r: ReturnType<typeof routes>, heavyConnections: number, durationSec: number) {
  const heavy = [r.strategyEv, r.correlations].map((h) => {
    const o = { url: `${service.publicUrl}${h.path}`, method: h.method, headers: { authorization: `Bearer ${keys.heavy}` }, body: h.body, connections: heavyConnections, durationSec: durationSec + 2, warmupSec: 0, timeoutSec: 30 };
    return autocannon({ ...autocannonOptions(o), duration: o.durationSec });
  });
  // Let the heavy load build up before measuring.
  await sleep(1000);
  const { result: trivial, eventLoopDelay: delay } = await withEventLoopDelay(service, () => trivialLoad(service, keys.trivial, durationSec, 0));
  const results = await Promise.all(heavy);
  return {
    trivial,
    eventLoopDelay: delay,
    heavy: {
      strategyEv: { requests: results[0].requests.total, non2xx: results[0].non2xx, p50Ms: results[0].latency.p50, p99Ms: results[0].latency.p99 },
      correlations: { requests: results[1].requests.total, non2xx: results[1].non2xx, p50Ms: results[1].latency.p50, p99Ms: results[1].latency.p99 },
    },
  };
}

export async function run(ctx: ScenarioContext): Promise<ScenarioResult> {
  const cores = os.availableParallelism();
  const durationSec = envInt('BENCH_ANALYTICS_DURATION', 6);
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

    log('analytics: trivial route idle');
    const idlePool = await withEventLoopDelay(pooled, () => trivialLoad(pooled, keyPool, durationSec, 1));
    const idle = { pool: idlePool.result, inline: await trivialLoad(inline, keyInline, durationSec, 1) };
    // The trivial route is measured twice under load: with the heavy clients' own key (every request of both then
    // upserts the same usage-counter row, a database lock shared by one account), and with another account's key
    // (a different customer's cheap request: what event-loop protection is for).
    const otherPool = await pooled.admin.apiKey(SCOPES);
    const otherInline = await inline.admin.apiKey(SCOPES);
    log('analytics: trivial route under heavy load (pool, same account)');
    const loadedPool = await underLoad(pooled, { heavy: keyPool, trivial: keyPool }, r, heavyConnections, durationSec);
    log('analytics: trivial route under heavy load (inline, same account)');
    const loadedInline = await underLoad(inline, { heavy: keyInline, trivial: keyInline }, r, heavyConnections, durationSec);
    log('analytics: trivial route under heavy load (pool, another account)');
    const loadedPoolOther = await underLoad(pooled, { heavy: keyPool, trivial: otherPool }, r, heavyConnections, durationSec);
    log('analytics: trivial route under heavy load (inline, another account)');
    const loadedInlineOther = await underLoad(inline, { heavy: keyInline, trivial: otherInline }, r, heavyConnections, durationSec);

    const throughput: Record<string, unknown> = {};
    for (const name of ['strategyEv', 'technicals', 'correlations'] as const) {
      const spec = r[name];
      const measure = (service: Service, key: string) =>
        load({ url: `${service.publicUrl}${spec.path}`, method: spec.method, headers: { authorization: `Bearer ${key}` }, body: spec.body, connections: heavyConnections, durationSec, warmupSec: 1, serverPid: service.pid });
      log(`analytics: throughput ${name}`);
      const pool = await measure(pooled, keyPool);
      const inl = await measure(inline, keyInline);
      throughput[name] = { pool, inline: inl, rpsPoolOverInline: ratio(pool.rps, inl.rps) };
    }

    const p99Idle = idle.pool.latencyMs.p99;
    const p99Pool = loadedPool.trivial.latencyMs.p99;
    const p99Inline = loadedInline.trivial.latencyMs.p99;
    const p99InlineOverPool = ratio(p99Inline, p99Pool);
    const p99PoolMinusIdle = p99Pool - p99Idle;
    return {
      scenario: 'analytics',
      ...resultHeader(ctx, status, pooled),
      config: { cores, workerThreads: { pool: cores, inline: 0 }, heavyConnectionsPerRoute: heavyConnections, trivialConnections: TRIVIAL_CONNECTIONS, durationSec, instruments: data.ids.length, barsPerInstrument: data.bars },
      eventLoop: {
        trivialRouteP99Ms: { idle: p99Idle, idleInline: idle.inline.latencyMs.p99, underLoadWithPool: p99Pool, underLoadInline: p99Inline },
        trivialRouteP50Ms: { idle: idle.pool.latencyMs.p50, underLoadWithPool: loadedPool.trivial.latencyMs.p50, underLoadInline: loadedInline.trivial.latencyMs.p50 },
        heavy: { pool: loadedPool.heavy, inline: loadedInline.heavy },
        // Measured inside the service (monitorEventLoopDelay, 10 ms sampling): how long the event loop itself was held,
        // apart from waiting on the database and on CPU shared with the workers, PostgreSQL and the load generator.
        eventLoopDelayMs: { idle: idlePool.eventLoopDelay, underLoadWithPool: loadedPool.eventLoopDelay, underLoadInline: loadedInline.eventLoopDelay },
        anotherAccount: {
          trivialRouteP99Ms: { underLoadWithPool: loadedPoolOther.trivial.latencyMs.p99, underLoadInline: loadedInlineOther.trivial.latencyMs.p99 },
          trivialRouteP50Ms: { underLoadWithPool: loadedPoolOther.trivial.latencyMs.p50, underLoadInline: loadedInlineOther.trivial.latencyMs.p50 },
          eventLoopDelayMs: { underLoadWithPool: loadedPoolOther.eventLoopDelay, underLoadInline: loadedInlineOther.eventLoopDelay },
          p99PoolMinusIdleMs: round(loadedPoolOther.trivial.latencyMs.p99 - p99Idle, 2),
          p99InlineOverPool: ratio(loadedInlineOther.trivial.latencyMs.p99, loadedPoolOther.trivial.latencyMs.p99),
        },
        p99InlineOverPool,
        p99PoolMinusIdleMs: round(p99PoolMinusIdle, 2),
      },
      throughput,
      ratios: { trivialP99InlineOverPool: p99InlineOverPool },
      targets: { p99PoolMinusIdleMs: '<= a few ms' },
      meetsTarget: { p99PoolWithinFewMsOfIdle: p99PoolMinusIdle <= 5 },
      serverIssues: [],
      notes: [
        'both services are child processes on the same database; the inline one runs every worker task on its main thread (WORKER_THREADS=0), the pooled one on piscina threads',
        'on 2 cores the pool threads, the database and autocannon share the CPU, so some of the loaded p99 is CPU contention rather than event-loop blocking',
      ],
    };
  } finally {
    await inline.stop();
    await pooled.stop();
    await database.drop();
  }
}
