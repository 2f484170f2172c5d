// growth: the same instruments with 1× and 10× their history, in two
// databases of one server, each behind its own service: 500 equities with
// 10 against 100 years of daily bars (1.3 M against 13 M), 10 coins with 1
// against 10 years of 1-minute bars (5.3 M against 53 M), the history older
// than the read window compressed. The same reads of the most recent year go
// to both, alternated, and each read's time at 10× is compared with its time
// at 1× in the same run.
import { benchUuid, equity, inPieces } from './lib/data.ts';
import { benchSql } from './lib/database.ts';
import { envInt, log } from './lib/harness.ts';
import { getBody, type BodyRead } from './lib/http.ts';
import { resultHeader, type ScenarioContext, type ScenarioResult } from './lib/results.ts';
import { startService, type Service } from './lib/service.ts';
import { percentile, ratio, round, summarise } from './lib/stats.ts';
import { compressBefore, dailyCorrectionsCsv, loadDailyBars, loadMinuteBars, pauseJobs, refreshRollups, storage, type LoadStep } from './growth/history.ts';

const TARGET_RATIO = 1.1;
const DAY_MS = 86_400_000;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * The histories end where a live database's do, with yesterday's bars (UTC),
 * so the reads without asOf find fresh series, as they would in production;
 * each is read over its most recent year, which both sizes hold alike. The
 * asOf reads ask for the bars as known 3 days before the end: the last days'
 * bars are not known yet then, and corrections made since are read from the
 * kept revisions.
 */
function calendar(now: number) {
  const endMs = Math.floor(now / DAY_MS) * DAY_MS;
  return {
    endMs,
    end: new Date(endMs).toISOString(),
    last: dayOf(endMs - DAY_MS),
    window: { from: dayOf(endMs - 365 * DAY_MS), to: dayOf(endMs - DAY_MS) },
    asOf: new Date(endMs - 3 * DAY_MS).toISOString(),
  };
}
type Calendar = ReturnType<typeof calendar>;

type Size = '1x' | '10x';

export interface Database {
  size: Size;
  url: string;
  drop(): Promise<void>;
  service: Service;
  key: string;
  load: Record<string, LoadStep | { chunks: number; seconds: number } | number>;
  storage?: Awaited<ReturnType<typeof storage>>;
  pausedJobs?: string[];
}

interface Read {
  name: string;
  what: string;
  path: string;
  runs: number;
  /** The part of the answer both sizes must give alike. */
  bars: (body: { data: unknown }) => number;
}

export async function run(ctx: ScenarioContext): Promise<ScenarioResult> {
  const factor = envInt('BENCH_GROWTH_FACTOR', 10);
  const dailyInstruments = envInt('BENCH_GROWTH_DAILY_INSTRUMENTS', 500);
  const dailyYears = envInt('BENCH_GROWTH_DAILY_YEARS', 10);
  const minuteInstruments = envInt('BENCH_GROWTH_MINUTE_INSTRUMENTS', 10);
  const minuteDays = envInt('BENCH_GROWTH_MINUTE_DAYS', 365);
  const runs = envInt('BENCH_GROWTH_RUNS', 21);
  // PostgreSQL plans a prepared statement for its values five times on a
  // connection, then builds a plan for any values once, which on a long
  // history holds every chunk (measured at 130-670 ms on the 10x history):
  // a cost each pooled connection pays once, so the reads are measured past it.
  const warmups = envInt('BENCH_GROWTH_WARMUPS', 6);
  const serverIssues: string[] = [];
  const notes: string[] = [
    'two databases on one server, each with its own service (a child process started as npm start runs it); every read goes over HTTP with an API key, uncompressed (Accept-Encoding: identity), timed from the request to the last body byte',
    'the reads alternate between the sizes, the order reversed every other run, so a change in the machine load falls on both',
    'bars are written by INSERT ... SELECT over generate_series, one chunk per statement, each bar a function of its instrument and its day or minute alone: the 10x history is the 1x history with older years added, and the read windows hold the same bars',
    'about one daily bar in 1,000 is corrected through the admin API (known 5 days after its day), and one 1-minute bar in 10,000 is written corrected with its revision kept, as an intraday upload keeps it (known a day later), so the revisions grow with the history',
    'the 1-hour rollup is materialised over the whole history, the 5-, 15- and 30-minute rollups over the read window only (no read here uses them); then every chunk ending before the read window is compressed; the scheduled policies are paused so nothing changes while the databases are read',
    'each read is warmed up past the sixth execution of its statements on each pooled connection, when PostgreSQL builds its plan for any values once: the measured runs are the service in its steady state',
  ];

  const dailyIds = Array.from({ length: dailyInstruments }, (_, i) => benchUuid(`growth-daily-${i}`));
  const minuteIds = Array.from({ length: minuteInstruments }, (_, i) => benchUuid(`growth-minute-${i}`));
  const cal = calendar(Date.now());
  const years = (size: Size) => dailyYears * (size === '1x' ? 1 : factor);
  const end = new Date(cal.endMs);
  const dailyFrom = (size: Size) => dayOf(Date.UTC(end.getUTCFullYear() - years(size), end.getUTCMonth(), end.getUTCDate()));
  const minuteFromMs = (size: Size) => cal.endMs - minuteDays * (size === '1x' ? 1 : factor) * DAY_MS;

  const databases: Database[] = [];
  try {
    for (const size of ['1x', '10x'] as const) {
      const database = await ctx.db.createDatabase(`${ctx.runId}_growth_${size}`);
      const service = await startService(database.url);
      const db: Database = { size, url: database.url, drop: database.drop, service, key: '', load: {} };
      databases.push(db);
      await loadHistory(db, cal, dailyIds, dailyFrom(size), minuteIds, minuteFromMs(size));
      db.key = await service.admin.apiKey(['prices:read']);
    }
    const status = await databases[0].service.admin.status();
    if (status.storageTier !== 'timescaledb') {
      serverIssues.push(`the tier is ${status.storageTier}: the target is set on the full TimescaleDB tier (compression and continuous aggregates)`);
    }

    const bulk = `/v1/prices/bulk?instrumentIds=${dailyIds.join(',')}&from=${cal.window.from}&to=${cal.window.to}`;
    const intraday = `/v1/instruments/${minuteIds[0]}/intraday?interval=1hour&from=${cal.window.from}&to=${cal.window.to}`;
    const bulkBars = (body: { data: unknown }) => Object.values(body.data as Record<string, unknown[]>).reduce((n, bars) => n + bars.length, 0);
    const seriesBars = (body: { data: unknown }) => (body.data as unknown[]).length;
    const reads: Read[] = [
      { name: 'bulk', what: `GET /v1/prices/bulk, ${dailyInstruments} instruments × ${cal.window.from}..${cal.window.to}`, path: bulk, runs, bars: bulkBars },
      {
        name: 'bulkAsOf',
        what: `the same with asOf=${cal.asOf} (each bar as known then)`,
        path: `${bulk}&asOf=${cal.asOf}`,
        runs,
        bars: bulkBars,
      },
      {
        name: 'intraday1hour',
        what: `GET /v1/instruments/{id}/intraday?interval=1hour, one coin × ${cal.window.from}..${cal.window.to}, from the rollup`,
        path: intraday,
        runs: envInt('BENCH_GROWTH_FAST_RUNS', 41),
        bars: seriesBars,
      },
      {
        name: 'intraday1hourAsOf',
        what: `the same with asOf=${cal.asOf} (the 1-minute bars as known then, bucketed at read)`,
        path: `${intraday}&asOf=${cal.asOf}`,
        runs,
        bars: seriesBars,
      },
    ];

    const measured: Record<string, Record<Size, ReturnType<typeof summarise> & { p95Ms: number; bars: number; responseBytes: number }>> = {};
    const ratios: Record<string, number> = {};
    const p95Ratios: Record<string, number> = {};
    for (const read of reads) {
      log(`growth: ${read.name}: ${read.runs} runs at each size, alternated, after ${warmups} warm-ups of each`);
      const answers = new Map<Size, string>();
      const counts = new Map<Size, { bars: number; bytes: number }>();
      const check = (db: Database, r: BodyRead) => {
        const text = r.text;
        if (r.status !== 200) throw new Error(`${read.name} at ${db.size} answered ${r.status}: ${text.slice(0, 300)}`);
        const body = JSON.parse(text) as { data: unknown };
        const data = JSON.stringify(body.data);
        const before = answers.get(db.size);
        if (before !== undefined && before !== data) throw new Error(`${read.name} at ${db.size} gave different bars from one run to the next`);
        answers.set(db.size, data);
        counts.set(db.size, { bars: read.bars(body), bytes: r.bytes });
      };
      const once = async (db: Database) => {
        const started = performance.now();
        const r = await getBody(db.service.publicUrl, db.key, read.path, { 'accept-encoding': 'identity' });
        const ms = performance.now() - started;
        check(db, r);
        return ms;
      };
      for (let i = 0; i < warmups; i++) for (const db of databases) await once(db);
      if (answers.get('1x') !== answers.get('10x')) {
        serverIssues.push(`${read.name}: the 1x and 10x databases gave different bars for the same window`);
      }
      const samples: Record<Size, number[]> = { '1x': [], '10x': [] };
      for (let i = 0; i < read.runs; i++) {
        for (const db of i % 2 === 0 ? databases : [...databases].reverse()) samples[db.size].push(await once(db));
      }
      const summary = (size: Size) => ({
        ...summarise(samples[size]),
        p95Ms: round(percentile(samples[size], 95)),
        bars: counts.get(size)!.bars,
        responseBytes: counts.get(size)!.bytes,
      });
      measured[read.name] = { '1x': summary('1x'), '10x': summary('10x') };
      ratios[read.name] = ratio(measured[read.name]['10x'].medianMs, measured[read.name]['1x'].medianMs);
      p95Ratios[read.name] = ratio(measured[read.name]['10x'].p95Ms, measured[read.name]['1x'].p95Ms);
      log(
        `growth: ${read.name}: median ${measured[read.name]['1x'].medianMs} ms at 1x, ${measured[read.name]['10x'].medianMs} ms at 10x (${ratios[read.name]}x); ` +
          `p95 ${measured[read.name]['1x'].p95Ms} / ${measured[read.name]['10x'].p95Ms} ms`,
      );
    }

    return {
      scenario: 'growth',
      ...resultHeader(ctx, status, databases[0].service),
      config: {
        factor,
        daily: {
          instruments: dailyInstruments,
          '1x': { from: dailyFrom('1x'), to: cal.last, years: years('1x') },
          '10x': { from: dailyFrom('10x'), to: cal.last, years: years('10x') },
          window: cal.window,
          asOf: cal.asOf,
          adjusted: false,
        },
        minute: {
          instruments: minuteInstruments,
          market: '24 hours a day',
          '1x': { from: new Date(minuteFromMs('1x')).toISOString(), until: cal.end, days: minuteDays },
          '10x': { from: new Date(minuteFromMs('10x')).toISOString(), until: cal.end, days: minuteDays * factor },
          window: cal.window,
          asOf: cal.asOf,
          interval: '1hour',
        },
        reads: Object.fromEntries(reads.map((r) => [r.name, { what: r.what, runs: r.runs, warmups }])),
        compression: `chunks ending on or before ${cal.window.from} (daily_bars) and ${cal.window.from} (intraday_bars), compressed with compress_chunk; the read windows stay uncompressed at both sizes`,
        policiesWouldCompress:
          'sql/002 compresses daily chunks older than 3 years and 1-minute chunks older than 30 days: run now, they would compress every chunk of both histories, the read windows included',
      },
      setup: Object.fromEntries(databases.map((db) => [db.size, { load: db.load, storage: db.storage, pausedJobs: db.pausedJobs }])),
      measured,
      ratios,
      p95Ratios,
      targets: Object.fromEntries(reads.map((r) => [r.name, `<= ${TARGET_RATIO} (median at 10x over median at 1x)`])),
      meetsTarget: Object.fromEntries(reads.map((r) => [r.name, ratios[r.name] <= TARGET_RATIO])),
      serverIssues,
      notes,
    };
  } finally {
    for (const db of databases) {
      await db.service.stop();
      await db.drop();
    }
  }
}

/**
 * The instruments through the admin API, the bars straight into the tables
 * (growth/history.ts), the daily corrections through the admin API; then the
 * rollups, compression, VACUUM ANALYZE (what autovacuum would get to, done
 * before the reads rather than during them), and what the database holds.
 */
export async function loadHistory(
  db: Database,
  cal: Calendar,
  dailyIds: string[],
  dailyFrom: string,
  minuteIds: string[],
  minuteFromMs: number,
): Promise<void> {
  const { service, size } = db;
  // One session for the load, whose sorts (the rollups' materialisation) and
  // VACUUM get room in memory; the reads run with the service's settings.
  const sql = benchSql(db.url, 1);
  await sql`set work_mem = '256MB'`;
  await sql`set maintenance_work_mem = '1GB'`;
  try {
    await service.admin.ok(
      'POST',
      '/instruments',
      dailyIds.map((id, i) => equity(`Growth Equity ${i}`, `GR${String(i).padStart(4, '0')}`, id)),
    );
    await service.admin.ok(
      'POST',
      '/instruments',
      minuteIds.map((id, i) => ({
        id,
        assetClass: 'crypto',
        displayName: `Growth Coin ${i}`,
        quoteCurrency: 'USD',
        quoteUnit: 'USD per BTC',
        symbols: [{ symbol: `GROWTH${i}USD`, validFrom: '2000-01-01', validTo: null }],
      })),
    );
    db.pausedJobs = await pauseJobs(sql);
    const started = performance.now();
    log(`growth: ${size}: daily bars of ${dailyIds.length} instruments from ${dailyFrom} to ${cal.last}`);
    db.load.dailyBars = await loadDailyBars(sql, dailyIds, dailyFrom, cal.last);
    log(`growth: ${size}: 1-minute bars of ${minuteIds.length} instruments from ${new Date(minuteFromMs).toISOString()} until ${cal.end}`);
    // A correction is known a day after its minute: none of the last day, whose correction would be known in the future.
    db.load.minuteBars = await loadMinuteBars(sql, minuteIds, minuteFromMs, cal.endMs, new Date(cal.endMs - DAY_MS));

    // A correction is known 5 days after its bar's day, and an upload may not state an asOf in the future.
    const corrections = await dailyCorrectionsCsv(sql, dayOf(cal.endMs - 5 * DAY_MS));
    const upload = await service.admin.postStream('/bars/daily', 'text/csv', inPieces(corrections.csv.split(/(?<=\n)/)));
    if (upload.status !== 200 || upload.body.data.updated !== corrections.rows) {
      throw new Error(`the daily corrections (${corrections.rows} bars) answered ${upload.status}: ${upload.text.slice(0, 500)}`);
    }
    db.load.dailyCorrections = { rows: corrections.rows, seconds: round(upload.ms / 1000, 1), statements: 1 };
    log(`growth: ${size}: ${corrections.rows} daily corrections in ${db.load.dailyCorrections.seconds} s; materialising the rollups`);
    db.load.rollups = await refreshRollups(sql, new Date(`${cal.window.from}T00:00:00.000Z`), new Date(cal.endMs));
    log(`growth: ${size}: compressing the chunks older than the read windows`);
    db.load.compressDaily = await compressBefore(sql, 'daily_bars', cal.window.from);
    db.load.compressMinutes = await compressBefore(sql, 'intraday_bars', cal.window.from);
    const vacuumStarted = performance.now();
    await sql`vacuum analyze`;
    db.load.vacuumAnalyzeSec = round((performance.now() - vacuumStarted) / 1000, 1);
    db.load.totalSec = round((performance.now() - started) / 1000, 1);
    db.storage = await storage(sql);
    log(`growth: ${size}: loaded in ${db.load.totalSec} s; ${JSON.stringify(db.storage)}`);
  } finally {
    await sql.end();
  }
}
