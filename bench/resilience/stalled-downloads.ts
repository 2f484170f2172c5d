// Phase A: ten bulk downloads that are never read, held past the statement
// timeout, while instrument reads must keep answering right and fast; then an
// eleventh, paused reader resumes. A2: the default stream limits.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { isDeepStrictEqual } from 'node:util';
import { benchSql } from '../lib/database.ts';
import { log, sleep } from '../lib/harness.ts';
import { procStatus } from '../lib/proc.ts';
import type { Service } from '../lib/service.ts';
import { latencySummary, MB, ratio, round } from '../lib/stats.ts';
import { downloadFigures, drain, openPaused, timedGet } from './clients.ts';

export const STALLED = 10;
// Past the default DATABASE_STATEMENT_TIMEOUT_MS (60 s): a download that held
// a statement open while its reader stalled would have had it cancelled by now.
export const STALL_MS = 65_000;
export const READS_DURING = 30;
export const READS_AFTER = 165;
export const READ_DEADLINE_MS = 2_000;

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

const STREAM_METRICS = [
  'http_streams_open',
  'db_pool_connections_in_use',
  'db_pool_waiting',
  'db_pool_refused_total',
  'http_idle_closed_total',
  'db_available',
];

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
          return {
            id,
            status: a.status,
            ms: a.ms,
            right: false,
            problem: data?.id === id ? 'its own id but a different object' : `returned ${String(data?.id).slice(0, 40)}`,
          };
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
    ...(baseline
      ? {
          overIdleBaseline: {
            p50: ratio(latencyMs.p50, baseline.p50, 2),
            p99: ratio(latencyMs.p99, baseline.p99, 2),
            max: ratio(latencyMs.max, baseline.max, 2),
          },
        }
      : {}),
    problems: [...new Set(reads.filter((r) => !r.right).map((r) => r.problem))].slice(0, 5),
  };
}

function burstFailures(label: string, reads: Read[]): string[] {
  const wrong = reads.filter((r) => !r.right);
  const late = reads.filter((r) => r.right && r.ms > READ_DEADLINE_MS);
  const out: string[] = [];
  if (wrong.length) out.push(`${label}: ${wrong.length} of ${reads.length} reads were not answered 200 with their own instrument (${wrong[0].problem})`);
  if (late.length)
    out.push(`${label}: ${late.length} of ${reads.length} reads took longer than ${READ_DEADLINE_MS} ms (max ${round(Math.max(...late.map((r) => r.ms)))} ms)`);
  return out;
}

export async function stalledDownloads(
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
    log(
      `resilience: A: ${READS_DURING} reads at +${duringAtSec} s: ${during.filter((r) => r.right).length} right, max ${round(Math.max(...during.map((r) => r.ms)))} ms`,
    );
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
    log(
      `resilience: A: ${READS_DURING} reads at +${midAtSec} s: ${mid.filter((r) => r.right).length} right, max ${round(Math.max(...mid.map((r) => r.ms)))} ms`,
    );

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
    log(
      `resilience: A: ${READS_AFTER} reads at +${destroyedAtSec} s: ${after.filter((r) => r.right).length} right, max ${round(Math.max(...after.map((r) => r.ms)))} ms`,
    );

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
      downloads: {
        opened: STALLED + 1,
        statuses: openStatuses,
        everyAnswerBegunAtSec: headersAtSec,
        cutByTheServerWhileStalled: cutWhileStalled,
        destroyedByTheClientAtSec: destroyedAtSec,
      },
      server: {
        note: "the service's RSS, the bytes queued in the kernel on the public port's established connections (the service's send queues and the clients' receive queues, from /proc/net/tcp), its /metrics and its PostgreSQL sessions (pg_stat_activity by application_name) while the downloads were open; the slow reader of B, when it runs, is one of the open streams",
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
export async function defaultAdmission(service: Service, bulkPath: string) {
  const key = await service.admin.apiKey(['prices:read']);
  // The admitted downloads stay open (paused) until all ten are answered, so
  // a slot freed early cannot admit a later request.
  const all = await Promise.all(Array.from({ length: 10 }, () => openPaused(`${service.publicUrl}${bulkPath}`, { authorization: `Bearer ${key}` })));
  const refusals = await Promise.all(
    all
      .filter((d) => d.status !== 200)
      .map(async (d) => {
        const body = await drain(d, 10_000);
        let code: string;
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
  const failures =
    ok === 2 && limited === 8
      ? []
      : [
          `10 downloads from one account under the defaults gave ${ok} × 200 and ${limited} × 429 (statuses ${all.map((d) => d.status).join(', ')}); expected 2 × 200 and 8 × 429`,
        ];
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
