// password-hashing: can dashboard sign-ins starve the API? Sixteen clients,
// each from a loopback address of its own (the service lets one check at a
// time wait or run per address, and answers a second 429 at once), post the
// sign-in form as fast as they are answered, each to an unknown login
// (checked against the stand-in hash, as a guess is), while one client reads
// ten years of one instrument's daily prices with Accept-Encoding: gzip, one
// read after another. The reader's latency with the posts is compared with its
// latency without them, in the same run, in interleaved rounds.
//
// The sign-in limits are raised out of the way, so every post reaches the
// password check: what is measured is the hashing's own admission (a thread
// of its own, a short ranked queue, 503 beyond it), the worst case the limits
// allow from many addresses.
import http from 'node:http';
import { benchUuid, dailyBarsCsv, equity, weekdays } from './lib/data.ts';
import { envInt, log, sleep } from './lib/harness.ts';
import { getBody } from './lib/http.ts';
import { resultHeader, type ScenarioContext, type ScenarioResult } from './lib/results.ts';
import { startService } from './lib/service.ts';
import { latencySummary, percentile, round } from './lib/stats.ts';

const TARGET_P50_RATIO = 1.5;
const POSTERS = 16;
const UNLIMITED = '1000000000';

/** A sign-in form client: the form cookie and its CSRF token, then posts over one kept-alive connection from `localAddress`. */
class SignInPoster {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  private cookie = '';
  private csrf = '';

  private readonly base: URL;
  private readonly localAddress: string;

  constructor(base: URL, localAddress: string) {
    this.base = base;
    this.localAddress = localAddress;
  }

  private request(method: string, path: string, body?: string): Promise<{ status: number; text: string; setCookie: string[] }> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          agent: this.agent,
          localAddress: this.localAddress,
          hostname: this.base.hostname,
          port: this.base.port,
          method,
          path,
          headers: {
            ...(this.cookie ? { cookie: this.cookie } : {}),
            ...(body ? { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), setCookie: res.headers['set-cookie'] ?? [] }),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  async open(): Promise<void> {
    const page = await this.request('GET', '/account/sign-in');
    this.cookie = page.setCookie.map((c) => c.split(';')[0]).join('; ');
    this.csrf = /name="csrf" value="([^"]+)"/.exec(page.text)?.[1] ?? '';
    if (page.status !== 200 || !this.csrf) throw new Error(`GET /account/sign-in answered ${page.status} without a form token`);
  }

  async post(login: string): Promise<number> {
    const body = new URLSearchParams({ login, password: 'a guessed password', csrf: this.csrf }).toString();
    return (await this.request('POST', '/account/sign-in', body)).status;
  }

  close(): void {
    this.agent.destroy();
  }
}

export async function run(ctx: ScenarioContext): Promise<ScenarioResult> {
  const rounds = envInt('BENCH_HASH_ROUNDS', 4);
  const readsPerPhase = envInt('BENCH_HASH_READS', 25);
  const database = await ctx.db.createDatabase(`${ctx.runId}_hashing`);
  const service = await startService(database.url, {
    env: { DASHBOARD_SIGN_IN_PER_ADDRESS: UNLIMITED, DASHBOARD_SIGN_IN_PER_LOGIN_ADDRESS: UNLIMITED, DASHBOARD_SIGN_IN_PER_LOGIN: UNLIMITED },
  });
  const posterAddress = (p: number) => `127.0.1.${p + 1}`;
  const posters = Array.from({ length: POSTERS }, (_, p) => new SignInPoster(new URL(service.publicUrl), posterAddress(p)));
  try {
    const status = await service.admin.status();
    const id = benchUuid('password-hashing/reader');
    await service.admin.ok('POST', '/instruments', [equity('Hashing Bench Corp', 'HASH', id)]);
    const days = weekdays('2011-01-01', '2020-12-31');
    const upload = await service.admin.postStream('/bars/daily', 'text/csv', dailyBarsCsv([id], days, '2021-01-04T00:00:00Z'));
    if (upload.status !== 200) throw new Error(`daily-bar upload answered ${upload.status}: ${upload.text.slice(0, 300)}`);
    const key = await service.admin.apiKey(['prices:read']);
    const path = `/v1/instruments/${id}/prices?from=2011-01-01&to=2020-12-31`;
    const read = async () => {
      const started = performance.now();
      const body = await getBody(service.publicUrl, key, path, { 'accept-encoding': 'gzip' });
      const ms = performance.now() - started;
      if (body.status !== 200 || body.encoding !== 'gzip') throw new Error(`the price read answered ${body.status} with ${body.encoding}`);
      return { ms, wireBytes: body.wireBytes, bytes: body.bytes };
    };
    for (const poster of posters) await poster.open();
    const sample = await read();
    for (let i = 0; i < 5; i++) await read();
    log(`password-hashing: reader ${round(sample.bytes / 1024)} KiB (${round(sample.wireBytes / 1024)} KiB gzip); ${rounds} rounds of ${readsPerPhase} reads`);

    type Load = 'posts' | 'postsIgnoringRetryAfter' | 'healthzFlood';
    const samples: Record<'quiet' | Load, number[]> = { quiet: [], posts: [], postsIgnoringRetryAfter: [], healthzFlood: [] };
    const statuses: Record<Load, Record<string, number>> = { posts: {}, postsIgnoringRetryAfter: {}, healthzFlood: {} };
    const postMs: Record<'checked' | 'refused', number[]> = { checked: [], refused: [] };
    const loadedSeconds: Record<Load, number> = { posts: 0, postsIgnoringRetryAfter: 0, healthzFlood: 0 };

    const healthz = () =>
      new Promise<number>((resolve, reject) => {
        http
          .get(`${service.publicUrl}/healthz`, { agent: floodAgent }, (res) =>
            res
              .resume()
              .on('end', () => resolve(res.statusCode ?? 0))
              .on('error', reject),
          )
          .on('error', reject);
      });
    const floodAgent = new http.Agent({ keepAlive: true, maxSockets: POSTERS });

    /** Runs `fn` while POSTERS clients load the service as `load` says. */
    const under = async (load: Load, fn: () => Promise<void>) => {
      let going = true;
      let n = 0;
      const loops = posters.map(async (poster, p) => {
        while (going) {
          const started = performance.now();
          const code = load === 'healthzFlood' ? await healthz() : await poster.post(`nobody-${p}-${n++}@bench.example`);
          const ms = performance.now() - started;
          statuses[load][code] = (statuses[load][code] ?? 0) + 1;
          if (load === 'posts') {
            if (code === 401) postMs.checked.push(ms);
            else if (code === 503) postMs.refused.push(ms);
          }
          // Retry-After is 1 s on every 503 of the sign-in form.
          if (load === 'posts' && code === 503) await sleep(1_000);
        }
      });
      const started = performance.now();
      // The hashing thread and its queue are full before the reads start.
      await sleep(1_000);
      await fn();
      going = false;
      await Promise.all(loops);
      // The load's whole span, over which its answers were counted.
      loadedSeconds[load] += (performance.now() - started) / 1000;
    };
    const reads = (into: number[]) => async () => {
      for (let i = 0; i < readsPerPhase; i++) into.push((await read()).ms);
    };
    const phases: (() => Promise<void>)[] = [
      reads(samples.quiet),
      () => under('posts', reads(samples.posts)),
      () => under('postsIgnoringRetryAfter', reads(samples.postsIgnoringRetryAfter)),
      () => under('healthzFlood', reads(samples.healthzFlood)),
    ];
    for (let r = 0; r < rounds; r++) {
      // Interleaved, the order reversed every other round, so drift in the machine's load falls on every side.
      for (const phase of r % 2 === 0 ? phases : [...phases].reverse()) await phase();
    }
    floodAgent.destroy();

    const p50 = (xs: number[]) => percentile(xs, 50);
    const ratio = round(p50(samples.posts) / p50(samples.quiet), 3);
    const perSecond = (load: Load, status: string) => round((statuses[load][status] ?? 0) / loadedSeconds[load], 1);
    return {
      scenario: 'password-hashing',
      ...resultHeader(ctx, status, service),
      config: {
        posters: POSTERS,
        posterAddresses: `${posterAddress(0)} to ${posterAddress(POSTERS - 1)}, one each`,
        rounds,
        readsPerPhase,
        read: `GET ${path.replace(id, '{id}')}, Accept-Encoding: gzip`,
        readBytes: sample.bytes,
        readWireBytes: sample.wireBytes,
        passwordHashThreads: 1,
        signInLimits: 'raised to 1e9 (every post reaches the password check)',
      },
      measured: {
        readerWithPosts: { latencyMs: latencySummary(samples.posts), samples: samples.posts.length },
        posts: {
          byStatus: statuses.posts,
          checkedPerSecond: perSecond('posts', '401'),
          refusedPerSecond: perSecond('posts', '503'),
          checkedLatencyMs: postMs.checked.length ? latencySummary(postMs.checked) : null,
          refusedLatencyMs: postMs.refused.length ? latencySummary(postMs.refused) : null,
        },
        readerWithPostsIgnoringRetryAfter: {
          latencyMs: latencySummary(samples.postsIgnoringRetryAfter),
          postsByStatus: statuses.postsIgnoringRetryAfter,
          postsPerSecond: round(Object.values(statuses.postsIgnoringRetryAfter).reduce((a, b) => a + b, 0) / loadedSeconds.postsIgnoringRetryAfter, 0),
        },
        readerWithHealthzFlood: {
          latencyMs: latencySummary(samples.healthzFlood),
          requestsPerSecond: perSecond('healthzFlood', '200'),
        },
      },
      baseline: { readerWithoutPosts: { latencyMs: latencySummary(samples.quiet), samples: samples.quiet.length } },
      ratios: {
        readerP50WithPostsOverWithout: ratio,
        readerP50WithPostsIgnoringRetryAfterOverWithout: round(p50(samples.postsIgnoringRetryAfter) / p50(samples.quiet), 3),
        readerP50WithHealthzFloodOverWithout: round(p50(samples.healthzFlood) / p50(samples.quiet), 3),
      },
      targets: { readerP50WithPostsOverWithout: `≤ ${TARGET_P50_RATIO}×` },
      meetsTarget: { readerP50WithPostsOverWithout: ratio <= TARGET_P50_RATIO },
      serverIssues: (['posts', 'postsIgnoringRetryAfter'] as const).some((l) => Object.keys(statuses[l]).some((s) => !['401', '503'].includes(s)))
        ? [`sign-in posts answered other statuses: ${JSON.stringify(statuses)}`]
        : [],
      notes: [
        'the service is a child process run as npm start runs it; the bench process holds the reader and the posters, on loopback',
        'each post names an unknown login, so it is checked against the stand-in hash: one scrypt (N = 2^15, r = 8, p = 3), as a guess costs',
        'PASSWORD_HASH_THREADS is 1 (the default): one check at a time, two more may wait up to 2 s (served by rank: the fewest attempts from their address first), the rest are answered 503 with Retry-After: 1 after the limits have counted them (one transaction)',
        'posts: 16 clients each post again as soon as they are answered, waiting the 1 s of Retry-After after a 503 (the target is on this load)',
        'postsIgnoringRetryAfter: the same 16 clients posting again at once after every answer, and healthzFlood: 16 clients requesting GET /healthz as fast as they are answered; both for comparison, without a target: they are request floods, which cost request handling on 2 cores whatever the route',
        `${rounds} rounds, each ${readsPerPhase} reads with no load and ${readsPerPhase} under each load (loads start 1 s before the reads), in alternating order; the reader reads one response after another, each timed to its last byte, decompressed as it arrives`,
      ],
    };
  } finally {
    for (const poster of posters) poster.close();
    await service.stop();
    await database.drop();
  }
}
