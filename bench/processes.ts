// processes: throughput and p99 of `npm start` with one serving process
// (WEB_CONCURRENCY=1) and with two (WEB_CONCURRENCY=2), same machine, same
// database, same run, same load, as ratios against the one-process baseline.
//
// Two routes: one whose cost is the request thread's (POST
// /v1/analytics/probability: key admission, validation, a closed form, the
// envelope) and a one-year daily-price read, whose cost is mostly
// PostgreSQL's (it writes the answer's text). Both services run at once as
// child processes on the same database; the loads alternate between them in
// interleaved rounds (the order reversed every other round), so a change in
// the machine's background load falls on both alike.
import { readFileSync } from 'node:fs';
import { sqlClient } from '../server/db/sql.ts';
import { benchUuid, equity, nextBar, prng, weekdays } from './lib/data.ts';
import { envInt, log } from './lib/harness.ts';
import { measureLoad, summariseLoad, warmUp, type LoadOptions, type RawLoad } from './lib/load.ts';
import { cpuSeconds, procStatus } from './lib/proc.ts';
import { resultHeader, type ScenarioContext, type ScenarioResult } from './lib/results.ts';
import { startService, type Service } from './lib/service.ts';
import { ratio, round } from './lib/stats.ts';

/** Accounts each load's requests are spread over: one account's counter row is a cost of its own (platform-overhead measures it). */
const ACCOUNTS = 10;

const PROBABILITY = { spot: 100, target: 110, expiryDays: 30, rate: 0.05, vol: 0.2, direction: 'long' };

type Side = 'one' | 'two';
type Route = 'probability' | 'dailyPrices';

/** A service process and its serving processes (none of its own when it serves alone). */
function processTree(pid: number): number[] {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    return [pid, ...children];
  } catch {
    return [pid];
  }
}

/** Requests admitted and admission statements so far, from the service's /metrics (all its processes together). */
async function admissions(adminUrl: string): Promise<{ requests: number; statements: number }> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const value = (series: string) => Number(new RegExp(`^${series} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { requests: value('auth_admission_batch_size_sum'), statements: value('auth_admission_batch_size_count') };
}

const treeCpu = (pids: number[]) => pids.reduce((n, pid) => n + cpuSeconds(pid), 0);
const treeRssMb = (pids: number[]) => round(pids.reduce((n, pid) => n + procStatus(pid).rssKb, 0) / 1024, 1);

export async function run(ctx: ScenarioContext): Promise<ScenarioResult> {
  const connections = envInt('BENCH_CONNECTIONS', 50);
  const durationSec = envInt('BENCH_DURATION', 10);
  const warmupSec = envInt('BENCH_WARMUP', 2);
  const rounds = envInt('BENCH_PROCESSES_ROUNDS', 2);
  const serverIssues: string[] = [];
  const notes = [
    'both services are `npm start` child processes (node, which strips the TypeScript types itself) on loopback ports against the same database; WEB_CONCURRENCY=1 serves in one process, WEB_CONCURRENCY=2 in two serving processes behind a primary (node:cluster, round-robin)',
    'WORKER_THREADS is left unset: the one process gets a thread per core, each of the two half the cores (at least one)',
    `each request takes the next of ${ACCOUNTS} accounts' keys; the rate limits are raised to 1e9 (the limiter still runs on every request)`,
    'latency percentiles are computed from autocannon per-response hrtime durations of 2xx responses, pooled over the rounds; autocannon runs in the bench process',
    'serverCpuMsPerRequest: CPU of the service process and its serving processes (all threads), from /proc; databaseCpuMsPerRequest: CPU of their PostgreSQL sessions',
    'requestsPerAdmissionStatement: requests admitted per admission statement during the measured runs (auth_admission_batch_size from /metrics, every process of the service together)',
    'idleRssMb: resident memory of the service process and its serving processes before the loads',
  ];

  const database = await ctx.db.createDatabase(`${ctx.runId}_processes`);
  const services: Partial<Record<Side, Service>> = {};
  const watch = sqlClient(database.url, { max: 1, onnotice: () => {} });
  try {
    services.one = await startService(database.url, { env: { WEB_CONCURRENCY: '1' } });
    services.two = await startService(database.url, { env: { WEB_CONCURRENCY: '2' } });
    const { one, two } = services as Record<Side, Service>;
    const status = await one.admin.status();

    const instrumentId = benchUuid('processes/instrument');
    await one.admin.ok('POST', '/instruments', [equity('Processes Corporation', 'PROC', instrumentId)]);
    const rand = prng(7);
    let close = 100;
    const days = weekdays('2023-01-02', '2023-12-29');
    const bars = days.map((barDate) => {
      const bar = nextBar(rand, close);
      close = bar.close;
      return {
        instrumentId,
        barDate,
        openPrice: bar.open,
        highPrice: bar.high,
        lowPrice: bar.low,
        closePrice: bar.close,
        volume: bar.volume,
        quoteCurrency: 'USD',
        quoteUnit: 'USD per share',
        source: 'bench',
        asOf: '2024-01-02T00:00:00Z',
      };
    });
    await one.admin.ok('POST', '/bars/daily', bars);
    const keys: Record<string, string>[] = [];
    for (let i = 0; i < ACCOUNTS; i++) keys.push({ authorization: `Bearer ${await one.admin.apiKey(['analytics:read', 'prices:read'])}` });

    const routes: Record<Route, { method: string; path: string; body?: string }> = {
      probability: { method: 'POST', path: '/v1/analytics/probability', body: JSON.stringify(PROBABILITY) },
      dailyPrices: { method: 'GET', path: `/v1/instruments/${instrumentId}/prices?from=2023-01-01&to=2023-12-31` },
    };
    for (const side of ['one', 'two'] as const) {
      for (const [name, r] of Object.entries(routes)) {
        const res = await fetch(`${services[side]!.publicUrl}${r.path}`, {
          method: r.method,
          headers: { ...keys[0], ...(r.body ? { 'content-type': 'application/json' } : {}) },
          body: r.body,
        });
        const text = await res.text();
        if (res.status !== 200) throw new Error(`${side}: ${r.method} ${r.path} (${name}) answered ${res.status}: ${text.slice(0, 300)}`);
      }
    }

    const trees = { one: processTree(one.pid), two: processTree(two.pid) };
    if (trees.one.length !== 1 || trees.two.length !== 3) {
      serverIssues.push(`expected 1 and 1+2 processes, found ${trees.one.length} and ${trees.two.length}`);
    }
    const idleRssMb = { one: treeRssMb(trees.one), two: treeRssMb(trees.two) };
    const sessionsOf = (pids: number[]) => async () =>
      (
        await watch<{ pid: number }[]>`
          select pid
          from pg_stat_activity
          where application_name like any(${pids.map((p) => `market-data-service/%/${p}`)})
        `
      ).map((r) => r.pid);

    const loadOf = (side: Side, route: Route): LoadOptions => ({
      url: `${services[side]!.publicUrl}${routes[route].path}`,
      method: routes[route].method,
      body: routes[route].body,
      connections,
      durationSec: durationSec / rounds,
      warmupSec,
      rotateHeaders: keys,
      databasePids: sessionsOf(trees[side]),
    });
    const loads = ['probability', 'dailyPrices'].flatMap((route) => (['one', 'two'] as const).map((side) => ({ side, route: route as Route })));
    const parts = new Map(loads.map((l) => [`${l.side}/${l.route}`, [] as (RawLoad & { treeCpuSec: number; admitted: number; statements: number })[]]));
    log(`processes: warming up (${warmupSec}s per load)`);
    for (const l of loads) await warmUp(loadOf(l.side, l.route));
    for (let i = 0; i < rounds; i++) {
      for (const l of i % 2 === 0 ? loads : [...loads].reverse()) {
        log(
          `processes: round ${i + 1}/${rounds}, ${l.route}, WEB_CONCURRENCY=${l.side === 'one' ? 1 : 2}, ${connections} connections, ${durationSec / rounds}s`,
        );
        const before = treeCpu(trees[l.side]);
        const admittedBefore = await admissions(services[l.side]!.adminUrl);
        const raw = await measureLoad(loadOf(l.side, l.route));
        const cpu = treeCpu(trees[l.side]) - before;
        const admittedAfter = await admissions(services[l.side]!.adminUrl);
        parts.get(`${l.side}/${l.route}`)!.push({
          ...raw,
          treeCpuSec: cpu,
          admitted: admittedAfter.requests - admittedBefore.requests,
          statements: admittedAfter.statements - admittedBefore.statements,
        });
      }
    }
    const summary = (side: Side, route: Route) => {
      const p = parts.get(`${side}/${route}`)!;
      const s = summariseLoad(loadOf(side, route), p);
      const cpu = p.reduce((n, r) => n + r.treeCpuSec, 0);
      const admitted = p.reduce((n, r) => n + r.admitted, 0);
      const statements = p.reduce((n, r) => n + r.statements, 0);
      if (s.non2xx > 0 || s.errors > 0)
        serverIssues.push(`${route} with WEB_CONCURRENCY=${side === 'one' ? 1 : 2}: ${s.non2xx} non-2xx, ${s.errors} errors: ${JSON.stringify(s.statuses)}`);
      return {
        ...s,
        serverCpuSec: round(cpu, 2),
        serverCpuMsPerRequest: round((cpu * 1000) / s.requests, 3),
        requestsPerAdmissionStatement: round(admitted / statements, 2),
      };
    };
    const measured = {
      oneProcess: { probability: summary('one', 'probability'), dailyPrices: summary('one', 'dailyPrices'), idleRssMb: idleRssMb.one },
      twoProcesses: { probability: summary('two', 'probability'), dailyPrices: summary('two', 'dailyPrices'), idleRssMb: idleRssMb.two },
    };
    const against = (route: Route) => {
      const [a, b] = [measured.twoProcesses[route], measured.oneProcess[route]];
      return {
        rps: ratio(a.rps, b.rps),
        p50: ratio(a.latencyMs.p50, b.latencyMs.p50),
        p99: ratio(a.latencyMs.p99, b.latencyMs.p99),
        serverCpuPerRequest: ratio(a.serverCpuMsPerRequest, b.serverCpuMsPerRequest),
        databaseCpuPerRequest: ratio(a.databaseCpuMsPerRequest!, b.databaseCpuMsPerRequest!),
        requestsPerAdmissionStatement: ratio(a.requestsPerAdmissionStatement, b.requestsPerAdmissionStatement),
      };
    };
    return {
      scenario: 'processes',
      ...resultHeader(ctx, status, one),
      config: {
        routes: Object.fromEntries(Object.entries(routes).map(([k, r]) => [k, `${r.method} ${r.path}`])),
        dailyBars: days.length,
        connections,
        warmupSec,
        durationSec,
        rounds,
        accounts: ACCOUNTS,
        loadGenerator: 'autocannon (in the bench process)',
      },
      measured,
      ratios: { twoOverOneProcess: { probability: against('probability'), dailyPrices: against('dailyPrices') } },
      targets: { everyAnswer: '2xx on both sides' },
      meetsTarget: { everyAnswer: serverIssues.length === 0 },
      serverIssues,
      notes,
    };
  } finally {
    await watch.end();
    for (const s of Object.values(services)) await s.stop();
    await database.drop();
  }
}
