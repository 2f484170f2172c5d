// wide-bodies: can one account's request shapes stall another's reads? Four
// clients of one account post a JSON object of 80,000 unknown fields (850 KiB)
// to option-price, together as many times a second as the account's default
// rate limit allows (RATE_LIMIT_LIVE_PER_MINUTE, 1,200 a minute: 20 a
// second), each as soon as it is answered or at its next turn, while a client
// of another account reads a year of one instrument's daily prices, one read
// after another. The reader's latency under the posts is compared with its
// latency without them, in the same run, in interleaved rounds.
//
// For comparison, without a target: the same four clients posting as fast as
// they are answered, the rate limits out of the way, first the wide object,
// then a body of the same size holding one long text (the option's type,
// refused for its value). Those are floods of bytes: they cost what reading
// 850 KiB a post costs, whatever its shape.
import { spawn } from 'node:child_process';
import type { PostersConfig, PostersResult } from './wide-bodies-posters.ts';
import { ConfigSchema } from '../server/config.ts';
import { benchUuid, dailyBarsCsv, equity, weekdays } from './lib/data.ts';
import { envInt, log, ROOT, sleep } from './lib/harness.ts';
import { getBody } from './lib/http.ts';
import { resultHeader, type ScenarioContext, type ScenarioResult } from './lib/results.ts';
import { cpuAccount, cpuSeconds } from './lib/proc.ts';
import { startService } from './lib/service.ts';
import { latencySummary, percentile, round } from './lib/stats.ts';

const TARGET_P50_RATIO = 1.5;
/** The posts a second one live account may make by default: RATE_LIMIT_LIVE_PER_MINUTE / 60. */
const ACCOUNT_PER_SECOND = ConfigSchema.shape.RATE_LIMIT_LIVE_PER_MINUTE.parse(undefined) / 60;
/** The worker threads' nice increment: the service's default (WORKER_NICE), which the bench leaves unset. */
const WORKER_NICE = ConfigSchema.shape.WORKER_NICE.parse(undefined);
const POSTERS = 4;
const FIELDS = 80_000;
const POST_PATH = '/v1/analytics/option-price';

const LOADS = {
  wideObjects: { body: 'wideObject', perSecond: ACCOUNT_PER_SECOND },
  wideObjectFlood: { body: 'wideObject' },
  longTextFlood: { body: 'longText' },
} as const satisfies Record<string, Pick<PostersConfig, 'body' | 'perSecond'>>;
type Load = keyof typeof LOADS;
const LOAD_NAMES = Object.keys(LOADS) as Load[];

/**
 * Starts the posters (bench/wide-bodies-posters.ts) in a process of their
 * own; resolves once each has had an answer, with a stop that ends them and
 * resolves with their counts.
 */
async function startPosters(config: PostersConfig): Promise<{ pid: number; stop(): Promise<PostersResult> }> {
  const proc = spawn(process.execPath, ['bench/wide-bodies-posters.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, WIDE_POSTERS: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const exited = new Promise<PostersResult>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => {
      const last = out.trim().split('\n').at(-1) ?? '';
      if (code === 0 && last.startsWith('{')) resolve(JSON.parse(last) as PostersResult);
      else reject(new Error(`the posters exited with code ${code}: ${out.slice(-300)}`));
    });
  });
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('posting\n')) resolve();
    });
    exited.catch(reject);
  });
  return {
    pid: proc.pid!,
    stop() {
      proc.kill('SIGTERM');
      return exited;
    },
  };
}

export async function run(ctx: ScenarioContext): Promise<ScenarioResult> {
  const rounds = envInt('BENCH_WIDE_ROUNDS', 4);
  const readsPerPhase = envInt('BENCH_WIDE_READS', 25);
  const database = await ctx.db.createDatabase(`${ctx.runId}_wide`);
  const service = await startService(database.url);
  try {
    const status = await service.admin.status();
    const id = benchUuid('wide-bodies/reader');
    await service.admin.ok('POST', '/instruments', [equity('Wide Bodies Bench Corp', 'WIDE', id)]);
    const upload = await service.admin.postStream('/bars/daily', 'text/csv', dailyBarsCsv([id], weekdays('2020-01-01', '2020-12-31'), '2021-01-04T00:00:00Z'));
    if (upload.status !== 200) throw new Error(`daily-bar upload answered ${upload.status}: ${upload.text.slice(0, 300)}`);
    // Two accounts: the reader's, and the posters'.
    const readerKey = await service.admin.apiKey(['prices:read']);
    const posterKey = await service.admin.apiKey(['analytics:read']);
    const path = `/v1/instruments/${id}/prices?from=2020-01-01&to=2020-12-31`;
    const read = async () => {
      const started = performance.now();
      const body = await getBody(service.publicUrl, readerKey, path, { 'accept-encoding': 'gzip' });
      const ms = performance.now() - started;
      if (body.status !== 200) throw new Error(`the price read answered ${body.status}`);
      return { ms, wireBytes: body.wireBytes, bytes: body.bytes };
    };
    const sample = await read();
    for (let i = 0; i < 5; i++) await read();
    log(`wide-bodies: reader ${round(sample.bytes / 1024)} KiB; ${POSTERS} posters of ${FIELDS} fields; ${rounds} rounds of ${readsPerPhase} reads`);

    type Phase = 'quiet' | Load;
    type CpuAccount = ReturnType<ReturnType<typeof cpuAccount>> & { postersCpuPct: number };
    const byPhase = <T>(make: () => T) => Object.fromEntries((['quiet', ...LOAD_NAMES] as Phase[]).map((p) => [p, make()])) as Record<Phase, T>;
    const samples = byPhase<number[]>(() => []);
    const cpu = byPhase<CpuAccount[]>(() => []);
    const posted = byPhase<PostersResult[]>(() => []);

    /** Runs `fn` while the posters post as `load` says. */
    const under = async (load: Load, fn: () => Promise<void>) => {
      const posters = await startPosters({ url: `${service.publicUrl}${POST_PATH}`, key: posterKey, clients: POSTERS, fields: FIELDS, ...LOADS[load] });
      try {
        // The posts settle before the reads start.
        await sleep(1_000);
        await measured(load, fn, posters.pid);
      } finally {
        posted[load].push(await posters.stop());
      }
    };
    /** Runs `fn`, accounting the CPU of the service, its database and the posters (`postersPid`) over it. */
    const measured = async (phase: Phase, fn: () => Promise<void>, postersPid?: number) => {
      const account = cpuAccount(service.pid, WORKER_NICE);
      const postersBefore = postersPid ? cpuSeconds(postersPid) : 0;
      await fn();
      const used = account();
      cpu[phase].push({ ...used, postersCpuPct: postersPid ? round((100 * (cpuSeconds(postersPid) - postersBefore)) / used.windowSec, 1) : 0 });
    };
    const reads = (into: number[]) => async () => {
      for (let i = 0; i < readsPerPhase; i++) into.push((await read()).ms);
    };
    const phases: (() => Promise<void>)[] = [() => measured('quiet', reads(samples.quiet)), ...LOAD_NAMES.map((l) => () => under(l, reads(samples[l])))];
    for (let r = 0; r < rounds; r++) {
      // Interleaved, the order reversed every other round, so drift in the machine's load falls on every side.
      for (const phase of r % 2 === 0 ? phases : [...phases].reverse()) await phase();
    }

    const p50 = (xs: number[]) => percentile(xs, 50);
    const ratioOf = (load: Load) => round(p50(samples[load]) / p50(samples.quiet), 3);
    const ratio = ratioOf('wideObjects');
    const posts = (load: Load) => {
      const runs = posted[load];
      const byStatus: Record<string, number> = {};
      for (const run of runs) for (const [s, n] of Object.entries(run.byStatus)) byStatus[s] = (byStatus[s] ?? 0) + n;
      const answers = Object.values(byStatus).reduce((a, b) => a + b, 0);
      return {
        bodyBytes: runs[0].bodyBytes,
        byStatus,
        perSecond: round(answers / runs.reduce((n, r) => n + r.seconds, 0), 1),
        latencyMsP50ByRound: runs.map((r) => r.latencyMs.p50),
        largestAnswerBytes: Math.max(...runs.map((r) => r.largestAnswerBytes)),
      };
    };
    const statuses = LOAD_NAMES.flatMap((l) => posted[l].flatMap((r) => Object.keys(r.byStatus)));
    return {
      scenario: 'wide-bodies',
      ...resultHeader(ctx, status, service),
      config: {
        posters: POSTERS,
        fields: FIELDS,
        rounds,
        readsPerPhase,
        read: `GET ${path.replace(id, '{id}')}, Accept-Encoding: gzip`,
        readBytes: sample.bytes,
        readWireBytes: sample.wireBytes,
        post: `POST ${POST_PATH}`,
        loads: LOADS,
        rateLimits: 'raised to 1e9: the wideObjects load is paced at the default live limit (1,200 a minute) instead, the floods are not limited',
      },
      measured: Object.fromEntries(
        LOAD_NAMES.map((l) => [l, { reader: { latencyMs: latencySummary(samples[l]), samples: samples[l].length }, posts: posts(l) }]),
      ),
      baseline: { readerWithoutPosts: { latencyMs: latencySummary(samples.quiet), samples: samples.quiet.length } },
      cpuPctOfOneCoreByRound: cpu,
      ratios: {
        readerP50WithWideObjectsOverWithout: ratio,
        readerP50WithWideObjectFloodOverWithout: ratioOf('wideObjectFlood'),
        readerP50WithLongTextFloodOverWithout: ratioOf('longTextFlood'),
      },
      targets: { readerP50WithWideObjectsOverWithout: `≤ ${TARGET_P50_RATIO}×` },
      meetsTarget: { readerP50WithWideObjectsOverWithout: ratio <= TARGET_P50_RATIO },
      serverIssues: statuses.some((s) => s !== '400') ? [`posts answered other statuses than 400: ${[...new Set(statuses)].join(', ')}`] : [],
      notes: [
        'the service is a child process run as npm start runs it; the reader runs in the bench process, the posters in a process of their own (bench/wide-bodies-posters.ts), all on loopback',
        'the reader and the posters use keys of two different accounts; every post is answered 400 for its shape',
        `wideObjects (the target): ${POSTERS} clients of one account post the ${FIELDS}-field object, together ${ACCOUNT_PER_SECOND} a second (the default live rate limit, 1,200 a minute), each when answered or at its next turn if later`,
        'wideObjectFlood and longTextFlood, for comparison, without a target: the same clients posting as fast as they are answered, the wide object or a body of the same size holding one text; floods of 850 KiB posts cost what receiving the bytes costs on 2 cores, whatever the shape',
        `${rounds} rounds, each ${readsPerPhase} reads with no load and ${readsPerPhase} under each load (loads start 1 s after every poster has had an answer), in alternating order; the reader reads one response after another, each timed to its last byte`,
        "cpuPctOfOneCoreByRound: over each phase's reads, the service's request thread (and the share it waited for a CPU), its other threads (garbage collection), the local PostgreSQL and the posters' process",
      ],
    };
  } finally {
    await service.stop();
    await database.drop();
  }
}
