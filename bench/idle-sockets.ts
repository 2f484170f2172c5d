// idle-sockets: can one address holding idle connections starve another?
// A client (bench/lib/idle-flood.ts, a process of its own) keeps 4,150 idle
// sockets open from 127.0.0.2, above MAX_CONNECTIONS' default (4,096), each
// reopened as soon as the service closes it (at once, beyond
// MAX_CONNECTIONS_PER_ADDRESS; after FIRST_BYTE_TIMEOUT_MS, within it), while
// a client at 127.0.0.1 sends an authenticated instrument search every 50 ms,
// each on a new connection, on schedule whether or not the earlier ones have
// been answered. The searches' latency under the flood is compared with their
// latency without it, in the same run, in interleaved rounds.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { equity } from './lib/data.ts';
import { envInt, log, onCleanup, ROOT, sleep } from './lib/harness.ts';
import { cpuSeconds } from './lib/proc.ts';
import { resultHeader, type ScenarioContext, type ScenarioResult } from './lib/results.ts';
import { LOOPBACK, startService, type Service } from './lib/service.ts';
import { latencySummary, percentile, ratioSpread, round, roundOrder } from './lib/stats.ts';

const TARGET_P99_MS = 100;
/** The flood's address; the probes come from LOOPBACK (127.0.0.1), where the service listens. */
const FLOOD_ADDRESS = '127.0.0.2';
const PROBE_PATH = '/v1/instruments?query=X';
/** A probe not answered within this counts as an error. */
const PROBE_TIMEOUT_MS = 10_000;
/** Pause after the flood has every socket open once, and after it stops, before the next probes. */
const SETTLE_MS = 1_000;

type Side = 'flood' | 'baseline';
const SIDES: readonly Side[] = ['flood', 'baseline'];

interface Probe {
  status?: number;
  error?: string;
  ms: number;
}

/** One GET on a new connection from 127.0.0.1: its status, or the error that ended it. */
function probe(port: number, key: string): Promise<Probe> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.request(
      { host: LOOPBACK, port, path: PROBE_PATH, localAddress: LOOPBACK, headers: { authorization: `Bearer ${key}` }, agent: false, timeout: PROBE_TIMEOUT_MS },
      (res) => {
        res.resume();
        res.once('end', () => resolve({ status: res.statusCode, ms: performance.now() - started }));
        res.once('error', (err) => resolve({ error: err.message, ms: performance.now() - started }));
      },
    );
    req.once('timeout', () => req.destroy(new Error(`no answer within ${PROBE_TIMEOUT_MS / 1000} s`)));
    req.once('error', (err) => resolve({ error: (err as NodeJS.ErrnoException).code ?? err.message, ms: performance.now() - started }));
    req.end();
  });
}

/** `count` probes, one every `intervalMs` on schedule, whether or not the earlier ones have been answered. */
async function probes(port: number, key: string, count: number, intervalMs: number): Promise<Probe[]> {
  const pending: Promise<Probe>[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const wait = started + i * intervalMs - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(probe(port, key));
  }
  return Promise.all(pending);
}

/** The public listener's connections closed unanswered so far, by reason, from the service's /metrics. */
async function dropped(service: Service): Promise<Record<string, number>> {
  const text = await (await fetch(`${service.adminUrl}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const m of text.matchAll(/^http_connections_dropped_total\{([^}]*)\} (\S+)$/gm)) {
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (labels.listener === 'public') counts[labels.reason] = (counts[labels.reason] ?? 0) + Number(m[2]);
  }
  return counts;
}

interface FloodCounts {
  /** Connections the flood opened (the kernel completed the handshake), and saw closed. */
  connects: number;
  closes: number;
}

/**
 * Starts the flood (bench/lib/idle-flood.ts) in a process of its own;
 * resolves once each of its sockets has been accepted once, with a stop that
 * ends it and resolves with its counts.
 */
async function startFlood(port: number, count: number): Promise<{ pid: number; running(): boolean; stop(): Promise<FloodCounts> }> {
  const proc = spawn(process.execPath, ['bench/lib/idle-flood.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, PORT: String(port), HOST: LOOPBACK, LOCAL_ADDRESS: FLOOD_ADDRESS, COUNT: String(count) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  let exitedEarly = false;
  const exited = new Promise<FloodCounts>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code, signal) => {
      exitedEarly = true;
      const last = out.trim().split('\n').at(-1) ?? '';
      if (code === 0 && last.includes('"connects"')) resolve(JSON.parse(last) as FloodCounts);
      else reject(new Error(`the flood exited with code ${code}, signal ${signal}: ${out.slice(-300)}`));
    });
  });
  const kill = onCleanup(`idle flood (${proc.pid})`, async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exited.catch(() => {});
  });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the flood's ${count} sockets were not all accepted within 60 s`)), 60_000);
      proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk;
        if (out.includes('"ready":true')) {
          clearTimeout(timer);
          resolve();
        }
      });
      exited.catch((err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  } catch (err) {
    await kill();
    throw err;
  }
  return {
    pid: proc.pid!,
    running: () => !exitedEarly,
    async stop() {
      // Its standard input ending is its signal to close everything and print its counts.
      proc.stdin!.end();
      try {
        return await exited;
      } finally {
        await kill();
      }
    },
  };
}

export async function run(ctx: ScenarioContext): Promise<ScenarioResult> {
  const idleSockets = envInt('BENCH_IDLE_SOCKETS', 4_150);
  const rounds = envInt('BENCH_IDLE_ROUNDS', 6);
  const probesPerPhase = envInt('BENCH_IDLE_PROBES', 200);
  const intervalMs = envInt('BENCH_IDLE_INTERVAL_MS', 50);
  const database = await ctx.db.createDatabase(`${ctx.runId}_idle`);
  const service = await startService(database.url);
  try {
    const status = await service.admin.status();
    const port = Number(new URL(service.publicUrl).port);
    await service.admin.ok('POST', '/instruments', [equity('X Idle Sockets Bench Corp', 'X')]);
    const key = await service.admin.apiKey(['instruments:read']);
    const first = await probe(port, key);
    if (first.status !== 200) throw new Error(`GET ${PROBE_PATH} answered ${first.status ?? first.error}`);
    for (let i = 0; i < 20; i++) await probe(port, key);
    log(
      `idle-sockets: ${rounds} rounds of ${probesPerPhase} probes every ${intervalMs} ms from ${LOOPBACK}, with and without ${idleSockets} idle sockets from ${FLOOD_ADDRESS}`,
    );

    const samples: Record<Side, Probe[][]> = { flood: [], baseline: [] };
    const cpuPct: Record<Side, { service: number; flood?: number }[]> = { flood: [], baseline: [] };
    const floods: (FloodCounts & { seconds: number; droppedByReason: Record<string, number> })[] = [];

    const measure = async (side: Side, floodPid?: number) => {
      const at = performance.now();
      const serviceCpu = cpuSeconds(service.pid);
      const floodCpu = floodPid ? cpuSeconds(floodPid) : 0;
      samples[side].push(await probes(port, key, probesPerPhase, intervalMs));
      const sec = (performance.now() - at) / 1000;
      const pct = (cpu: number) => round((100 * cpu) / sec, 1);
      cpuPct[side].push({ service: pct(cpuSeconds(service.pid) - serviceCpu), ...(floodPid ? { flood: pct(cpuSeconds(floodPid) - floodCpu) } : {}) });
    };
    const phases: Record<Side, () => Promise<void>> = {
      baseline: () => measure('baseline'),
      flood: async () => {
        const before = await dropped(service);
        const started = performance.now();
        const flood = await startFlood(port, idleSockets);
        let counts: FloodCounts;
        try {
          await sleep(SETTLE_MS);
          await measure('flood', flood.pid);
          if (!flood.running()) throw new Error('the flood exited while it was measured');
        } finally {
          counts = await flood.stop();
        }
        const seconds = (performance.now() - started) / 1000;
        // The service closes the flood's last sockets as they close.
        await sleep(SETTLE_MS);
        const after = await dropped(service);
        const droppedByReason = Object.fromEntries(Object.keys(after).map((r) => [r, after[r] - (before[r] ?? 0)]));
        floods.push({ ...counts, seconds: round(seconds, 2), droppedByReason });
      },
    };
    for (let r = 0; r < rounds; r++) {
      for (const side of roundOrder(SIDES, r)) {
        log(`idle-sockets: round ${r + 1}/${rounds}, ${side === 'flood' ? `${idleSockets} idle sockets` : 'no flood'}`);
        await phases[side]();
      }
    }

    const answered = (ps: Probe[]) => ps.filter((p) => p.status !== undefined);
    const latencies = (ps: Probe[]) => answered(ps).map((p) => p.ms);
    const errors = (ps: Probe[]) => {
      const byKind: Record<string, number> = {};
      for (const p of ps) if (p.status !== 200) byKind[p.status ?? p.error!] = (byKind[p.status ?? p.error!] ?? 0) + 1;
      return byKind;
    };
    const summary = (side: Side) => {
      const all = samples[side].flat();
      return {
        latencyMs: latencySummary(latencies(all)),
        probes: all.length,
        errors: Object.values(errors(all)).reduce((a, b) => a + b, 0),
        errorsByKind: errors(all),
        p99MsByRound: samples[side].map((ps) => round(percentile(latencies(ps), 99), 3)),
        cpuPctOfOneCoreByRound: cpuPct[side],
      };
    };
    const withFlood = summary('flood');
    const without = summary('baseline');
    const byRound = (side: Side, p: number) => samples[side].map((ps) => percentile(latencies(ps), p));
    const p99Spread = ratioSpread(byRound('flood', 99), byRound('baseline', 99));
    const p50Spread = ratioSpread(byRound('flood', 50), byRound('baseline', 50));
    const total = (pick: (f: (typeof floods)[number]) => number) => floods.reduce((n, f) => n + pick(f), 0);
    const floodSeconds = total((f) => f.seconds);
    const refusals = total((f) => (f.droppedByReason.per_address ?? 0) + (f.droppedByReason.max_connections ?? 0));
    const p99 = withFlood.latencyMs.p99;
    const serverIssues = (
      [
        ['with', withFlood],
        ['without', without],
      ] as const
    )
      .filter(([, s]) => s.errors > 0)
      .map(([when, s]) => `${when} the flood, ${s.errors} of ${s.probes} probes were not answered 200: ${JSON.stringify(s.errorsByKind)}`);
    return {
      scenario: 'idle-sockets',
      ...resultHeader(ctx, status, service),
      config: {
        idleSockets,
        floodAddress: FLOOD_ADDRESS,
        probeAddress: LOOPBACK,
        rounds,
        probesPerPhase,
        probeIntervalMs: intervalMs,
        probe: `GET ${PROBE_PATH}, each on a new connection, API key with instruments:read`,
        probeTimeoutMs: PROBE_TIMEOUT_MS,
        settleMs: SETTLE_MS,
        serviceLimits: "the service's defaults (MAX_CONNECTIONS, MAX_CONNECTIONS_PER_ADDRESS, FIRST_BYTE_TIMEOUT_MS unset); rate limits raised to 1e9",
      },
      measured: {
        withFlood,
        flood: {
          connects: total((f) => f.connects),
          closes: total((f) => f.closes),
          refusals,
          refusalsPerSecond: round(refusals / floodSeconds, 0),
          firstByteTimeouts: total((f) => f.droppedByReason.first_byte_timeout ?? 0),
          seconds: round(floodSeconds, 1),
          byRound: floods,
        },
      },
      baseline: { withoutFlood: without },
      ratios: { p99WithFloodOverWithout: p99Spread.median, p50WithFloodOverWithout: p50Spread.median },
      spreads: { 'ratios.p99WithFloodOverWithout': p99Spread, 'ratios.p50WithFloodOverWithout': p50Spread },
      targets: { p99WithFloodMs: `< ${TARGET_P99_MS} ms`, everyProbeAnswered200: 'every probe, with and without the flood' },
      meetsTarget: { p99WithFloodMs: p99 < TARGET_P99_MS, everyProbeAnswered200: withFlood.errors === 0 && without.errors === 0 },
      serverIssues,
      notes: [
        'the service is a child process run as npm start runs it, with its connection limits at their defaults; the probes run in the bench process, the flood in a process of its own (bench/lib/idle-flood.ts), all on loopback and on the same cores',
        `the flood holds ${idleSockets} sockets from ${FLOOD_ADDRESS} that send nothing, each reopened as soon as it is closed; the probes start ${SETTLE_MS / 1000} s after every one of its sockets has been accepted once, and it stops after them`,
        `${rounds} rounds, each ${probesPerPhase} probes with the flood and ${probesPerPhase} without, in alternating order; each probe is a new connection from ${LOOPBACK}, sent every ${intervalMs} ms on schedule whether or not the earlier ones have been answered, timed to its last byte`,
        'latencies pool every answered probe of the rounds; a probe answered other than 200, or not answered (reset, refused, or no answer within probeTimeoutMs), is counted in errors',
        "each ratio is the median of the rounds' ratios of that round's percentile with the flood over without; spreads holds their range and interquartile range",
        "flood.connects and closes are the flood's own counts (a connect is a handshake the kernel completed, whether or not the service then kept the socket); refusals are the connections the service closed unanswered as soon as it accepted them (per_address or max_connections), firstByteTimeouts those it closed after FIRST_BYTE_TIMEOUT_MS, both from its /metrics (http_connections_dropped_total) over each flood's life; refusals may exceed connects by connections still in the kernel's accept queue when the flood closed its sockets",
        "cpuPctOfOneCoreByRound: over each phase's probes, the service process (all its threads) and the flood's process",
      ],
    };
  } finally {
    await service.stop();
    await database.drop();
  }
}
