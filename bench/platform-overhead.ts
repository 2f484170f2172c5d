// platform-overhead: what the platform (request id, metrics, key lookup,
// scope check, rate-limit counters, validation, envelope) costs per request,
// against a bare Express 5 route answering a similar JSON body, same machine,
// same run, same load.
//
// Both servers run as child processes: with 2 cores, a server inside the
// bench process would share one event loop with autocannon and be measured
// slower than it is; as children, each gets its own event loop and the
// comparison is like for like.
import { equity } from './lib/data.ts';
import { envInt, log } from './lib/harness.ts';
import { callRoute } from './lib/http.ts';
import { load, measureLoad, summariseLoad, warmUp } from './lib/load.ts';
import { resultHeader, type ScenarioContext, type ScenarioResult } from './lib/results.ts';
import { startBareServer, startService } from './lib/service.ts';
import { percentile, ratio } from './lib/stats.ts';

interface RouteSpec {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  scope: string;
  body?: unknown;
}

/** The route measured first: trivial to compute, yet authenticated, validated and enveloped. */
export const PRIMARY_ROUTE: RouteSpec = {
  name: 'analytics-probability',
  method: 'POST',
  path: '/v1/analytics/probability',
  scope: 'analytics:read',
  body: { spot: 100, target: 110, expiryDays: 30, rate: 0.05, vol: 0.2, direction: 'long' },
};

/** Used while PRIMARY_ROUTE does not answer 200 (or with BENCH_PLATFORM_ROUTE=fallback). */
export const FALLBACK_ROUTE: RouteSpec = {
  name: 'instruments-search',
  method: 'GET',
  path: '/v1/instruments?query=MSFT',
  scope: 'instruments:read',
};

const TARGET_P50_RATIO = 1.5;

export async function run(ctx: ScenarioContext): Promise<ScenarioResult> {
  const connections = envInt('BENCH_CONNECTIONS', 50);
  const durationSec = envInt('BENCH_DURATION', 10);
  const warmupSec = envInt('BENCH_WARMUP', 2);
  const rounds = envInt('BENCH_PLATFORM_ROUNDS', 2);
  const forced = process.env.BENCH_PLATFORM_ROUTE;
  // Diagnostic (off by default): a third run spreading the load over this
  // many keys of separate accounts, to tell per-key counter contention apart
  // from the per-request database round trip.
  const spreadKeys = envInt('BENCH_PLATFORM_KEYS', 1);
  const serverIssues: string[] = [];
  const notes: string[] = [
    'both servers are child processes (node --import tsx), loopback only; autocannon runs in the bench process',
    'latency percentiles are computed from autocannon per-response hrtime durations of 2xx responses, pooled over the rounds',
    'each server is warmed up once, then measured in interleaved rounds (bare, auth, auth, bare, ...) totalling durationSec each',
    'the service keeps its rate limiter on (limits raised to 1e9 so nothing is refused); one API key, so every request upserts the same usage-counter rows',
  ];

  const database = await ctx.db.createDatabase(`${ctx.runId}_platform`);
  const service = await startService(database.url);
  try {
    const status = await service.admin.status();
    // For the fallback route: one instrument to find.
    await service.admin.ok('POST', '/instruments', [equity('Microsoft Corporation', 'MSFT')]);
    const key = await service.admin.apiKey([PRIMARY_ROUTE.scope, FALLBACK_ROUTE.scope]);
    const headers = { authorization: `Bearer ${key}` };

    const call = (r: RouteSpec) => callRoute(service.publicUrl, key, { method: r.method, path: r.path, body: r.body ? JSON.stringify(r.body) : undefined });

    let route = PRIMARY_ROUTE;
    let probe = await call(PRIMARY_ROUTE);
    if (forced === 'fallback' || (probe.status !== 200 && forced !== 'primary')) {
      if (forced !== 'fallback') {
        serverIssues.push(
          `${PRIMARY_ROUTE.method} ${PRIMARY_ROUTE.path} answered ${probe.status} (${probe.text.slice(0, 200)}); measured ${FALLBACK_ROUTE.method} ${FALLBACK_ROUTE.path} instead`,
        );
      }
      route = FALLBACK_ROUTE;
      probe = await call(FALLBACK_ROUTE);
    }
    if (probe.status !== 200) throw new Error(`${route.method} ${route.path} answered ${probe.status}: ${probe.text.slice(0, 300)}`);
    const enveloped = JSON.parse(probe.text);
    // The bare route answers the same payload without the envelope.
    const bareBody = enveloped.data ?? enveloped;
    log(`platform-overhead: measuring ${route.method} ${route.path} (${probe.text.length} B) against a bare route (${JSON.stringify(bareBody).length} B)`);

    const bare = await startBareServer({ method: route.method, path: route.path.split('?')[0] }, bareBody);
    const body = route.body ? JSON.stringify(route.body) : undefined;
    const bareLoad = {
      url: `${bare.url}${route.path}`,
      method: route.method,
      body,
      connections,
      durationSec: durationSec / rounds,
      warmupSec,
      serverPid: bare.pid,
    };
    const authLoad = { ...bareLoad, url: `${service.publicUrl}${route.path}`, headers, serverPid: service.pid };
    // Interleaved rounds (bare, auth, auth, bare, ...) so a change in the
    // machine's background load during the run falls on both sides alike.
    const bareParts: Awaited<ReturnType<typeof measureLoad>>[] = [];
    const authParts: Awaited<ReturnType<typeof measureLoad>>[] = [];
    try {
      log(`platform-overhead: warming up both servers (${warmupSec}s each)`);
      await warmUp(bareLoad);
      await warmUp(authLoad);
      for (let i = 0; i < rounds; i++) {
        const order = i % 2 === 0 ? (['bare', 'auth'] as const) : (['auth', 'bare'] as const);
        for (const which of order) {
          log(
            `platform-overhead: round ${i + 1}/${rounds}, ${which === 'bare' ? 'bare Express route' : 'authenticated route'}, ${connections} connections, ${bareLoad.durationSec}s`,
          );
          if (which === 'bare') bareParts.push(await measureLoad(bareLoad));
          else authParts.push(await measureLoad(authLoad));
        }
      }
    } finally {
      await bare.stop();
    }
    const bareRun = summariseLoad(bareLoad, bareParts);
    const authRun = summariseLoad(authLoad, authParts);
    const roundP50Ratios = authParts.map((a, i) => ratio(percentile(a.latencies, 50), percentile(bareParts[i].latencies, 50)));
    let spreadRun: Awaited<ReturnType<typeof load>> | undefined;
    if (spreadKeys > 1) {
      const keys = [];
      for (let i = 0; i < spreadKeys; i++) keys.push({ authorization: `Bearer ${await service.admin.apiKey([route.scope])}` });
      log(`platform-overhead: authenticated route, load spread over ${spreadKeys} keys of separate accounts`);
      spreadRun = await load({
        url: `${service.publicUrl}${route.path}`,
        method: route.method,
        body,
        connections,
        durationSec,
        warmupSec,
        rotateHeaders: keys,
        serverPid: service.pid,
      });
    }
    for (const [name, r] of [
      ['bare', bareRun],
      ['authenticated', authRun],
      ['spread', spreadRun],
    ] as const) {
      if (!r) continue;
      if (r.non2xx > 0 || r.errors > 0)
        serverIssues.push(`${name} run had ${r.non2xx} non-2xx responses and ${r.errors} errors: ${JSON.stringify(r.statuses)}`);
    }

    const p50Ratio = ratio(authRun.latencyMs.p50, bareRun.latencyMs.p50);
    return {
      scenario: 'platform-overhead',
      ...resultHeader(ctx, status, service),
      config: {
        route: `${route.method} ${route.path}`,
        routeName: route.name,
        requestBody: route.body ?? null,
        responseBytes: { authenticated: Buffer.byteLength(probe.text), bare: Buffer.byteLength(JSON.stringify(bareBody)) },
        connections,
        warmupSec,
        durationSec,
        rounds,
        loadGenerator: 'autocannon (in the bench process)',
      },
      measured: { authenticated: authRun, ...(spreadRun ? { [`authenticatedSpreadOver${spreadKeys}Keys`]: spreadRun } : {}) },
      baseline: { bareExpress: bareRun },
      ratios: {
        p50: p50Ratio,
        p99: ratio(authRun.latencyMs.p99, bareRun.latencyMs.p99),
        rps: ratio(authRun.rps, bareRun.rps),
        p50ByRound: roundP50Ratios,
        serverCpuPerRequest: ratio(authRun.serverCpuMsPerRequest!, bareRun.serverCpuMsPerRequest!),
        ...(spreadRun ? { spreadKeysP50: ratio(spreadRun.latencyMs.p50, bareRun.latencyMs.p50) } : {}),
      },
      targets: { p50Ratio: `<= ${TARGET_P50_RATIO}` },
      meetsTarget: { p50Ratio: p50Ratio <= TARGET_P50_RATIO },
      serverIssues,
      notes,
    };
  } finally {
    await service.stop();
    await database.drop();
  }
}
