// intraday: a year of 1-minute bars for one 24-hour instrument, ingested
// through the admin API (which also builds the rollups); then a year of
// 1-hour bars read from the rollup (over HTTP and in SQL) against the same
// bars aggregated on the fly from the 1-minute table, in the same run.
import { benchUuid, inPieces, nextBar, prng } from './lib/data.ts';
import { benchSql } from './lib/database.ts';
import { envInt, log } from './lib/harness.ts';
import { getBody, settleUpload, type BodyRead } from './lib/http.ts';
import { resultHeader, type ScenarioContext, type ScenarioResult } from './lib/results.ts';
import { startService } from './lib/service.ts';
import { ratioSpread, round, roundOrder, summarise, timeRuns } from './lib/stats.ts';

const YEAR = { from: '2023-01-01', to: '2023-12-31' };
const AS_OF = '2024-01-01T00:00:00.000Z';
const TARGET_SPEEDUP = 1;
const TARGET_HTTP_OVER_SQL = 1.2;

/**
 * NDJSON 1-minute bars for every minute in [fromMs, toMs), in ~256 KiB
 * pieces. Each UTC day's bars depend only on the day, so any batching of the
 * span uploads the same rows.
 */
function minuteBarsNdjson(instrumentId: string, fromMs: number, toMs: number): AsyncGenerator<string> {
  return inPieces(
    (function* () {
      for (let day = fromMs; day < toMs; day += 86_400_000) {
        const rand = prng(Math.floor(day / 86_400_000));
        let close = r2(16_500 * (0.9 + rand() * 0.2));
        for (let t = day; t < Math.min(toMs, day + 86_400_000); t += 60_000) {
          const b = nextBar(rand, close);
          close = b.close;
          yield (
            `{"instrumentId":"${instrumentId}","barTimestamp":"${new Date(t).toISOString()}","openPrice":${b.open},"highPrice":${b.high},` +
            `"lowPrice":${b.low},"closePrice":${b.close},"volume":${b.volume},"quoteCurrency":"USD","quoteUnit":"USD per BTC","source":"bench","asOf":"${AS_OF}"}\n`
          );
        }
      }
    })(),
  );
}

const r2 = (x: number) => Math.round(x * 100) / 100;

interface HourBar {
  ts: string;
  o: number;
  h: number;
  l: number;
  c: number;
  v: number | null;
}

const toHourBars = (rows: readonly Record<string, unknown>[]): HourBar[] =>
  rows.map((r) => ({
    ts: (r.bar_ts as Date).toISOString(),
    o: r.open_price as number,
    h: r.high_price as number,
    l: r.low_price as number,
    c: r.close_price as number,
    v: (r.volume as number | null) ?? null,
  }));

function firstDifference(a: HourBar[], b: HourBar[]): string | null {
  if (a.length !== b.length) return `lengths differ: ${a.length} vs ${b.length}`;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (x.ts !== y.ts || x.o !== y.o || x.h !== y.h || x.l !== y.l || x.c !== y.c || x.v !== y.v) {
      return `row ${i}: ${JSON.stringify(x)} vs ${JSON.stringify(y)}`;
    }
  }
  return null;
}

export async function run(ctx: ScenarioContext): Promise<ScenarioResult> {
  const days = envInt('BENCH_INTRADAY_DAYS', 365);
  // Monthly batches, as a feed backfill would send them.
  const batchDays = envInt('BENCH_INTRADAY_BATCH_DAYS', 31);
  // The reads take tens of milliseconds, and one round's ratio of two of them
  // ranges from 0.3× to 4.8× on an idle machine (scheduling on 2 cores): the
  // two halves of one run of 61 rounds gave medians of 0.99× and 1.21×, and
  // 201 rounds gave 1.08× and 1.06× in two runs of the same code.
  const readRuns = envInt('BENCH_INTRADAY_RUNS', 201);
  // The on-the-fly aggregate takes 200 ms a read, ten times the rollup: a
  // ratio that far from its target of 1 needs few rounds.
  const aggregateRuns = envInt('BENCH_INTRADAY_AGGREGATE_RUNS', 15);
  const serverIssues: string[] = [];
  const notes: string[] = [
    'the service is a child process; 1-minute bars are posted as NDJSON to /admin/v1/bars/intraday, which maintains the rollups',
    'both SQL timings run in the bench process on postgres.js and select the same six columns (bucket, open, high, low, close, volume)',
    'HTTP timings are from request start to the last body byte (node:http, chunks kept as they arrive), the body then joined, decoded, parsed and checked outside the timing',
    "each ratio is the median of the rounds' ratios (each round reads its sides back to back, the order rotated): HTTP over the rollup from readRuns rounds of the two, the speed-ups from aggregateRuns rounds of the three; spreads holds each one's range and interquartile range",
  ];
  const fromMs = Date.parse(`${YEAR.from}T00:00:00Z`);
  /** Whole days from the start of the year to `ms`. */
  const daysTo = (ms: number) => Math.round((ms - fromMs) / 86_400_000);
  const id = benchUuid('intraday-0');
  const database = await ctx.db.createDatabase(`${ctx.runId}_intraday`);
  let service = await startService(database.url);
  const sql = benchSql(database.url);
  try {
    const status = await service.admin.status();
    const timescale = status.storageTier.startsWith('timescaledb');
    await service.admin.ok('POST', '/instruments', [
      {
        id,
        assetClass: 'crypto',
        displayName: 'Bench Coin',
        quoteCurrency: 'USD',
        quoteUnit: 'USD per BTC',
        symbols: [{ symbol: 'BENCHUSD', validFrom: '2000-01-01', validTo: null }],
      },
    ]);

    // ---- ingest (setup; timed for information)
    // Monthly batches; when one fails, or takes longer than
    // BENCH_INTRADAY_SLOW_BATCH_SEC, it is reported and the rest of the span
    // (from that batch on, if it failed) goes up in one-day batches, so the
    // reads are still measured on the whole year in bounded time.
    const slowBatchSec = envInt('BENCH_INTRADAY_SLOW_BATCH_SEC', 60);
    // The whole ingest has a time budget too: past it, what is loaded (whole
    // days from the start) is what the reads measure, and the shortfall is reported.
    const budgetSec = envInt('BENCH_INTRADAY_MAX_INGEST_SEC', 300);
    let span = days;
    const endMs = fromMs + days * 86_400_000;
    const ingestStarted = performance.now();
    const batches: { from: string; days: number; seconds: number }[] = [];
    let perBatch = batchDays;
    let switched: Record<string, unknown> | null = null;
    log(`intraday: ingesting ${span * 1_440} 1-minute bars (${span} days from ${YEAR.from}) in batches of ${batchDays} days`);
    let budgetExceeded = false;
    for (let start = fromMs; start < endMs;) {
      const elapsedSec = (performance.now() - ingestStarted) / 1000;
      if (elapsedSec > budgetSec) {
        budgetExceeded = true;
        span = daysTo(start);
        const lastSec = batches.length ? batches[batches.length - 1].seconds : NaN;
        serverIssues.push(
          `intraday ingest: after ${round(elapsedSec, 0)} s (BENCH_INTRADAY_MAX_INGEST_SEC=${budgetSec}) only ${span} of ${days} days ` +
            `(${span * 1_440} 1-minute bars) were in; the last ${perBatch}-day upload took ${lastSec} s. The reads below cover those ${span} days.`,
        );
        log(`intraday: ingest budget of ${budgetSec}s spent after ${span} days; measuring reads on those`);
        break;
      }
      const stop = Math.min(endMs, start + perBatch * 86_400_000);
      const label = `${new Date(start).toISOString().slice(0, 10)}..${new Date(stop - 1).toISOString().slice(0, 10)}`;
      const bars = (stop - start) / 60_000;
      const timeoutMs = Math.min(300, Math.max(60, budgetSec - elapsedSec)) * 1000;
      const upload = await settleUpload(
        service.admin.postStream('/bars/intraday', 'application/x-ndjson', minuteBarsNdjson(id, start, stop), { stallMs: 30_000, timeoutMs }),
      );
      const { ms } = upload;
      if (!upload.ok) {
        const { failure } = upload;
        if (perBatch === 1) {
          if (start === fromMs) throw new Error(`intraday ingest of the ${label} batch failed: ${failure}`);
          // Measure what is in; report the rest.
          span = daysTo(start);
          serverIssues.push(`intraday ingest: the one-day ${label} batch failed (${failure}); the reads cover the first ${span} days`);
          break;
        }
        serverIssues.push(`intraday ingest: the ${label} batch (${bars} 1-minute bars) failed: ${failure}`);
        switched = { after: label, reason: 'failed', seconds: round(ms / 1000, 1) };
        if (upload.hung) {
          await service.stop();
          service = await startService(database.url);
        }
        perBatch = 1;
        log(`intraday: ${label} failed (${failure.slice(0, 200)}); loading the rest in one-day batches`);
        continue; // the failed batch rolled back: load its days again
      }
      batches.push({ from: label.slice(0, 10), days: (stop - start) / 86_400_000, seconds: round(ms / 1000, 1) });
      start = stop;
      if (perBatch > 1 && ms > slowBatchSec * 1000 && start < endMs) {
        serverIssues.push(
          `intraday ingest: the ${label} batch (${bars} 1-minute bars, one instrument) took ${round(ms / 1000, 1)} s ` +
            `(over BENCH_INTRADAY_SLOW_BATCH_SEC=${slowBatchSec}); the rest of the year went up in one-day batches`,
        );
        switched = { after: label, reason: 'slow', seconds: round(ms / 1000, 1) };
        perBatch = 1;
        log(`intraday: ${label} took ${(ms / 1000).toFixed(1)}s; loading the rest in one-day batches`);
      }
    }
    if (span < 1) throw new Error('intraday: not even one day of 1-minute bars was ingested within the budget');
    const ingestSec = (performance.now() - ingestStarted) / 1000;
    const toMs = fromMs + span * 86_400_000;
    const toDate = new Date(toMs - 86_400_000).toISOString().slice(0, 10);
    const minutes = span * 1_440;
    const hours = span * 24;
    // Vacuumed and checkpointed before any read is timed: otherwise autovacuum
    // (it wakes each minute, and finds the freshly loaded chunks) and a
    // checkpoint of the load's WAL may start during the rounds, landing in
    // some rounds' reads and not others'.
    await sql`vacuum analyze`;
    await sql`checkpoint`;

    // ---- (a) the rollup, over HTTP and in SQL
    const key = await service.admin.apiKey(['prices:read']);
    const path = `/v1/instruments/${id}/intraday?interval=1hour&from=${YEAR.from}&to=${toDate}`;
    // Uncompressed, as the SQL baseline's rows are.
    const httpGet = () => getBody(service.publicUrl, key, path, { 'accept-encoding': 'identity' });
    let httpBars: HourBar[] = [];
    const checkHttp = (r: BodyRead) => {
      const text = r.text;
      if (r.status !== 200) throw new Error(`intraday read answered ${r.status}: ${text.slice(0, 300)}`);
      const body = JSON.parse(text);
      httpBars = body.data.map((b: Record<string, unknown>) => ({
        ts: b.barTimestamp,
        o: b.openPrice,
        h: b.highPrice,
        l: b.lowPrice,
        c: b.closePrice,
        v: b.volume ?? null,
      }));
    };

    const from = new Date(fromMs);
    const to = new Date(toMs - 1);
    const rollupQuery = () => sql`
      select bar_ts, open_price, high_price, low_price, close_price, volume
      from intraday_bars_1hour
      where instrument_id = ${id} and bar_ts between ${from} and ${to}
      order by bar_ts
    `;
    let rollupRows: HourBar[] = [];
    const checkRollup = (rows: readonly Record<string, unknown>[]) => (rollupRows = toHourBars(rows));

    // ---- (b) the same aggregated on the fly from the 1-minute bars, the baseline of the rollup
    const aggregateQuery = timescale
      ? () => sql`
          select time_bucket('1 hour', bar_ts) as bar_ts,
            first(open_price, bar_ts) as open_price, max(high_price) as high_price, min(low_price) as low_price,
            last(close_price, bar_ts) as close_price, sum(volume) as volume
          from intraday_bars
          where instrument_id = ${id} and bar_ts between ${from} and ${to}
          group by 1
          order by 1
        `
      : () => sql`
          select date_bin('1 hour', bar_ts, '2000-01-03T00:00:00Z') as bar_ts,
            (array_agg(open_price order by bar_ts))[1] as open_price, max(high_price) as high_price, min(low_price) as low_price,
            (array_agg(close_price order by bar_ts desc))[1] as close_price, sum(volume) as volume
          from intraday_bars
          where instrument_id = ${id} and bar_ts between ${from} and ${to}
          group by 1
          order by 1
        `;
    let aggregateRows: HourBar[] = [];
    const checkAggregate = (rows: readonly Record<string, unknown>[]) => (aggregateRows = toHourBars(rows));

    const sides = {
      http: () => timeRuns(1, 0, httpGet, checkHttp),
      rollup: () => timeRuns(1, 0, rollupQuery, checkRollup),
      aggregate: () => timeRuns(1, 0, aggregateQuery, checkAggregate),
    };
    type Side = keyof typeof sides;
    /**
     * `n` interleaved rounds: each reads every side of `order` once, back to
     * back, in an order rotated each round, so a change in the machine's load
     * falls on every side of a round's ratios alike.
     */
    const rounds = async (order: Side[], n: number) => {
      const samples: Partial<Record<Side, number[]>> = {};
      for (let i = 0; i < n; i++) for (const side of roundOrder(order, i)) (samples[side] ??= []).push(...(await sides[side]()));
      return samples as Record<Side, number[]>;
    };
    for (const side of Object.keys(sides) as Side[]) await sides[side]();
    log(`intraday: (a) 1-hour bars over HTTP and from the rollup in SQL, ${readRuns} interleaved rounds after a warm-up of each`);
    const a = await rounds(['http', 'rollup'], readRuns);
    log(
      `intraday: (b) on the fly (${timescale ? 'time_bucket' : 'date_bin'}) in SQL, against the rollup in SQL and over HTTP, ${aggregateRuns} interleaved rounds`,
    );
    const b = await rounds(['aggregate', 'rollup', 'http'], aggregateRuns);
    const httpSamples = a.http;
    const rollupSamples = a.rollup;
    const aggregateSamples = b.aggregate;

    const rollupVsAggregate = firstDifference(rollupRows, aggregateRows);
    const httpVsRollup = firstDifference(httpBars, rollupRows);
    if (rollupRows.length !== hours) serverIssues.push(`the 1-hour rollup holds ${rollupRows.length} bars for the year, expected ${hours}`);
    if (rollupVsAggregate) serverIssues.push(`rollup differs from on-the-fly aggregation: ${rollupVsAggregate}`);
    if (httpVsRollup) serverIssues.push(`HTTP 1-hour bars differ from the rollup table: ${httpVsRollup}`);

    const httpSummary = summarise(httpSamples);
    const rollupSummary = summarise(rollupSamples);
    const aggregateSummary = summarise(aggregateSamples);
    // Keyed by the path of the ratio each gives the median of.
    const spreads = {
      'ratios.speedUpSql': ratioSpread(b.aggregate, b.rollup),
      'ratios.speedUpHttp': ratioSpread(b.aggregate, b.http),
      'ratios.httpOverRollupSql': ratioSpread(httpSamples, rollupSamples),
    };
    const speedUp = spreads['ratios.speedUpSql'].median;
    const httpSpeedUp = spreads['ratios.speedUpHttp'].median;
    const httpOverSql = spreads['ratios.httpOverRollupSql'].median;
    return {
      scenario: 'intraday',
      ...resultHeader(ctx, status, service),
      config: {
        instrument: 'one crypto instrument, 24-hour market',
        span: { from: YEAR.from, to: toDate, days: span },
        requestedDays: days,
        batchDays,
        ingestBudgetSec: budgetSec,
        minuteBars: minutes,
        hourBars: hours,
        readRuns,
        aggregateRuns,
        warmups: 1,
        aggregation: timescale ? "time_bucket('1 hour') with first()/last()" : "date_bin('1 hour', bar_ts, '2000-01-03') with array_agg ordered first/last",
        rollup: status.storageTier === 'timescaledb' ? 'continuous aggregate intraday_bars_1hour' : 'table intraday_bars_1hour kept by the ingest path',
      },
      setup: {
        configuredBatchesCompleted: switched === null,
        requestedSpanLoaded: span === days,
        budgetExceeded,
        ...(switched ? { switchedToOneDayBatches: switched } : {}),
        ingestSec: round(ingestSec, 1),
        ingestRowsPerSec: Math.round(minutes / ingestSec),
        uploads: batches.length,
        slowestUpload: batches.reduce((a, b) => (b.seconds > a.seconds ? b : a)),
        monthlyUploads: batches.filter((b) => b.days > 1),
      },
      measured: {
        rollupSql: { ...rollupSummary, rows: rollupRows.length },
        rollupHttp: { ...httpSummary, bars: httpBars.length },
      },
      baseline: { onTheFlyAggregateSql: { ...aggregateSummary, rows: aggregateRows.length } },
      ratios: { speedUpSql: speedUp, speedUpHttp: httpSpeedUp, httpOverRollupSql: httpOverSql },
      spreads,
      equal: { rollupSqlVsAggregate: rollupVsAggregate === null, httpVsRollupSql: httpVsRollup === null },
      targets: {
        speedUpSql: `> ${TARGET_SPEEDUP} (the rollup is faster than aggregating 1-minute bars)`,
        httpOverRollupSql: `<= ${TARGET_HTTP_OVER_SQL} (the rollup over HTTP against the same rows in SQL)`,
        resultsEqual: true,
        requestedSpanLoaded: `${days} days within ${budgetSec} s`,
      },
      meetsTarget: {
        speedUpSql: speedUp > TARGET_SPEEDUP,
        httpOverRollupSql: httpOverSql <= TARGET_HTTP_OVER_SQL,
        resultsEqual: rollupVsAggregate === null && httpVsRollup === null,
        requestedSpanLoaded: span === days,
      },
      serverIssues,
      notes,
    };
  } finally {
    await sql.end();
    await service.stop();
    await database.drop();
  }
}
