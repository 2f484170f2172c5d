import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlClient } from '../../server/db/sql.ts';
import { admissionBatchSize, streamsBlocked } from '../../server/observability/metrics.ts';
import { databaseUrl, Service, startService } from './harness.ts';
import { createInstrument, dailyBar, ingest, untilAStatementWaitsFor, weekdays } from './fixtures.ts';
import { until } from '../support/until.ts';

// Clients that stall, pause, vanish or crowd the service, against the real
// app and database. The statement timeout is 10 s here (60 s by default), so
// that a stall outlives it within a test's time, while a download's first page
// still fits in it: one instrument's 30 years took 0.4-0.8 s on TimescaleDB
// with this file alone, and more than 3 s in a CI run of the whole suite.
const STATEMENT_TIMEOUT_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Bulk downloads of the newest service whose response waits for its client (http_streams_blocked). */
const bulkStreamsBlocked = async () => (await streamsBlocked.get()).values.find((v) => v.labels.route === '/v1/prices/bulk')?.value ?? 0;

/** Resolves once at least `count` bulk downloads wait for their clients: each has its plan read and its bars flowing. */
const untilBulkStreamsBlocked = (count: number) =>
  until(async () => (await bulkStreamsBlocked()) >= count, { timeoutMs: 30_000, what: `${count} bulk downloads waiting for their clients` });

const CSV_COLUMNS = ['instrumentId', 'barDate', 'openPrice', 'highPrice', 'lowPrice', 'closePrice', 'volume', 'quoteCurrency', 'quoteUnit', 'source', 'asOf'];
const csvOf = (rows: Record<string, unknown>[]) =>
  [CSV_COLUMNS.join(','), ...rows.map((r) => CSV_COLUMNS.map((c) => (r[c] === null ? '' : String(r[c]))).join(','))].join('\n');

// 8 instruments × 7,826 weekdays ≈ 62,600 bars, a ~14 MB bulk response: far
// more than a paused reader's socket buffers take in (~4-5 MB here), so the
// server really waits for the reader.
const DAYS = weekdays('1991-01-01', '2020-12-31');
const BULK_INSTRUMENTS = 8;

interface Held {
  /** Resolves with the status once the response head arrives. */
  status: Promise<number>;
  /** Starts reading; resolves with the whole body. */
  readAll(): Promise<string>;
  /** Resolves when the connection closes. */
  closed: Promise<void>;
  drop(): void;
}

/** A GET whose response is not read until `readAll` (the socket fills and the server must wait). */
function holdGet(url: string, key: string): Held {
  let resolveStatus!: (s: number) => void;
  let rejectStatus!: (e: unknown) => void;
  const status = new Promise<number>((res, rej) => ((resolveStatus = res), (rejectStatus = rej)));
  let response: http.IncomingMessage | null = null;
  const req = http.get(url, { headers: { authorization: `Bearer ${key}` } }, (res) => {
    response = res;
    res.pause();
    resolveStatus(res.statusCode!);
  });
  req.on('error', rejectStatus);
  const closed = new Promise<void>((resolve) => req.on('close', () => resolve()));
  return {
    status,
    closed,
    async readAll() {
      await status;
      const chunks: Buffer[] = [];
      for await (const chunk of response!) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
    drop: () => req.destroy(),
  };
}

let svc: Service;
let key: string;
let bulkIds: string[];
const small: { id: string; symbol: string; displayName: string }[] = [];

const bulkUrl = (ids: string[], extra = '') => `${svc.runtime.publicUrl}/v1/prices/bulk?instrumentIds=${ids.join(',')}&from=1991-01-01&to=2020-12-31${extra}`;

beforeAll(async () => {
  svc = await startService({
    DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
    DATABASE_POOL_SIZE: '4',
    // Up to 165 reads at once share the 4 connections: on 2 loaded cores the
    // last in line waited past the default 1 s and got 503 (a CI run beside a
    // benchmark). What these tests check is which reply each read gets, not
    // how long it waits for a connection.
    DATABASE_ACQUIRE_TIMEOUT_MS: '10000',
    BULK_STREAMS_PER_ACCOUNT: '6',
    BULK_STREAMS_MAX: '6',
    RATE_LIMIT_LIVE_PER_MINUTE: '100000',
  });
  key = await svc.keyWith(['instruments:read', 'prices:read']);
  bulkIds = await Promise.all(Array.from({ length: BULK_INSTRUMENTS }, async () => (await createInstrument(svc)).id));
  const rows = bulkIds.flatMap((id, k) => DAYS.map((barDate, i) => dailyBar(id, { barDate, close: 50 + k + i / 100 })));
  const loaded = await svc.admin('POST', '/bars/daily', csvOf(rows), 'text/csv');
  expect(loaded.status).toBe(200);
  for (let i = 0; i < 30; i++) {
    const displayName = `Reader Check ${i} Corp`;
    const created = await createInstrument(svc, { displayName });
    small.push({ ...created, displayName });
  }
}, 120_000);
afterAll(() => svc.stop());

/** Reads each instrument by id and checks that the answer is that instrument, field by field. */
async function readsAreOwnInstruments(count: number) {
  const picks = Array.from({ length: count }, (_, i) => small[i % small.length]);
  const replies = await Promise.all(picks.map((p) => svc.get(`/v1/instruments/${p.id}`, key)));
  replies.forEach((reply, i) => {
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.data).toMatchObject({
      id: picks[i].id,
      displayName: picks[i].displayName,
      currentSymbol: picks[i].symbol,
      quoteCurrency: 'USD',
      quoteUnit: 'USD per share',
      assetClass: 'equity',
      isActive: true,
    });
  });
}

describe('resilience: stalled, paused and vanished readers', () => {
  it('when as many bulk downloads as pooled connections stall past the statement timeout and are then dropped, then every read made during and after the stall answers with its own instrument', async () => {
    // As in the reproduction, as many stalled downloads as the pool has
    // connections (4 here): had the downloads held connections, the reads
    // below would queue behind them and go out the moment the downloads are
    // dropped, which is when a connection that lost its place in the protocol
    // answers them with another statement's reply. Three rounds, since that
    // moment is a race.
    for (let round = 0; round < 3; round++) {
      // The previous round's downloads have let go of their slots.
      await until(async () => (await bulkStreamsBlocked()) === 0, { timeoutMs: 10_000, what: 'no bulk download waiting' });
      // One after another, so that each download gets to its bars (its head comes with its first page) before the
      // next starts.
      const stalled: Held[] = [];
      for (let i = 0; i < 4; i++) {
        stalled.push(holdGet(bulkUrl(bulkIds), key));
        expect(await stalled[i].status).toBe(200);
      }
      await untilBulkStreamsBlocked(4);
      // The stall under test: every statement a download ran began before it waited for its client, so from here
      // the statement timeout has passed for each of them; 200 ms more for the server's timer firing late under load.
      await sleep(STATEMENT_TIMEOUT_MS + 200);

      const admittedBefore = await admittedRequests();
      const during = readsAreOwnInstruments(30);
      const keysDuring = svc.admin('GET', '/keys');
      // Every read admitted, so each one's statement is queued or in flight when the downloads drop.
      await until(async () => (await admittedRequests()) >= admittedBefore + 30, { timeoutMs: 10_000, what: 'the 30 reads admitted' });
      for (const s of stalled) s.drop();
      await Promise.all(stalled.map((s) => s.closed));
      await during;
      const keys = await keysDuring;
      expect(keys.status).toBe(200);
      expect(keys.body.data.length).toBeGreaterThan(0);

      await readsAreOwnInstruments(165);
      const again = await svc.admin('GET', '/keys');
      expect(again.status).toBe(200);
      expect(again.body.data.map((k: any) => [k.id, k.name, k.prefix])).toEqual(keys.body.data.map((k: any) => [k.id, k.name, k.prefix]));
    }
  }, 150_000);

  it('when a reader pauses past the statement timeout and then resumes, then it receives the whole body, the same bars as an uninterrupted read', async () => {
    const reference = await svc.get(bulkUrl(bulkIds).slice(svc.runtime.publicUrl.length), key);
    expect(reference.status).toBe(200);
    await until(async () => (await bulkStreamsBlocked()) === 0, { timeoutMs: 10_000, what: 'no bulk download waiting' });
    const paused = holdGet(bulkUrl(bulkIds), key);
    expect(await paused.status).toBe(200);
    await untilBulkStreamsBlocked(1);
    // The pause under test: its statements began before it waited for the reader, so from here the statement timeout
    // has passed for each; 200 ms more for the server's timer firing late under load.
    await sleep(STATEMENT_TIMEOUT_MS + 200);
    const body = JSON.parse(await paused.readAll());
    expect(Object.keys(body.data)).toEqual([...bulkIds].sort());
    expect(body.data).toEqual(reference.body.data);
    expect(Object.values(body.data).reduce((n: number, bars: any) => n + bars.length, 0)).toBe(BULK_INSTRUMENTS * DAYS.length);
  }, 60_000);
});

describe('resilience: admission and deadlines', () => {
  it('when an account has its bulk downloads open, then one more gets 429 with Retry-After, while another account is served', async () => {
    // Admission is what is tested, not the acquire deadline: on a starved CI machine another download's page statements
    // ran past the default 1 s that the second download's first page may wait for the bulk lane, and it got 503.
    const capped = await startService({ BULK_STREAMS_PER_ACCOUNT: '1', BULK_STREAMS_MAX: '2', DATABASE_ACQUIRE_TIMEOUT_MS: '10000' });
    try {
      const [a, b, c] = [await capped.keyWith(['prices:read']), await capped.keyWith(['prices:read']), await capped.keyWith(['prices:read'])];
      const url = (k: string) => holdGet(`${capped.runtime.publicUrl}/v1/prices/bulk?instrumentIds=${bulkIds.join(',')}&from=1991-01-01&to=2020-12-31`, k);
      const first = url(a);
      expect(await first.status).toBe(200);
      const second = await capped.get(`/v1/prices/bulk?instrumentIds=${bulkIds[0]}&from=2020-01-01&to=2020-01-31`, a);
      expect(second.status).toBe(429);
      expect(second.body.error).toMatchObject({ code: 'rate_limited', details: { concurrentStreams: [expect.any(String)] } });
      expect(second.headers.get('retry-after')).toMatch(/^\d+$/);

      const other = url(b);
      expect(await other.status).toBe(200);
      // The service-wide cap (2) is reached: a third account is shed with 503.
      const third = await capped.get(`/v1/prices/bulk?instrumentIds=${bulkIds[0]}&from=2020-01-01&to=2020-01-31`, c);
      expect(third.status).toBe(503);
      expect(third.body.error.code).toBe('overloaded');
      expect(third.headers.get('retry-after')).toMatch(/^\d+$/);

      first.drop();
      other.drop();
      await Promise.all([first.closed, other.closed]);
      // The server frees a slot when it sees its connection close, which may follow the client's close by a turn.
      await until(async () => (await capped.get(`/v1/prices/bulk?instrumentIds=${bulkIds[0]}&from=2020-01-01&to=2020-01-31`, a)).status === 200, {
        timeoutMs: 5_000,
        what: 'a bulk read served once the downloads closed',
      });
    } finally {
      await capped.stop();
    }
  }, 60_000);

  it('when 4 accounts hold 3 stalled downloads each, then a fifth account’s small bulk read gets 200 within 1 s, every time in a row of five', async () => {
    // The default admission: 2 downloads per account, 5 for the service (half of a 10-connection pool).
    const fair = await startService({ DATABASE_POOL_SIZE: '10', RATE_LIMIT_LIVE_PER_MINUTE: '100000' });
    const held: Held[] = [];
    let holding = true;
    try {
      const holders = await Promise.all(Array.from({ length: 4 }, () => fair.keyWith(['prices:read'])));
      const reader = await fair.keyWith(['prices:read']);
      // Each holder keeps three downloads asked for: one cut is asked for again at once, unread; one refused, after a second.
      const hold = async (k: string) => {
        while (holding) {
          const download = holdGet(`${fair.runtime.publicUrl}/v1/prices/bulk?instrumentIds=${bulkIds.join(',')}&from=1991-01-01&to=2020-12-31`, k);
          held.push(download);
          const status = await download.status.catch(() => 0);
          if (status !== 200) {
            download.drop();
            await sleep(1_000);
          }
          await download.closed;
        }
      };
      const loops = holders.flatMap((k) => [hold(k), hold(k), hold(k)]);
      // The service is full, and every download it holds waits for a client that does not read.
      await untilBulkStreamsBlocked(5);
      expect(await bulkStreamsBlocked()).toBe(5);
      for (let i = 0; i < 5; i++) {
        const started = performance.now();
        const read = await fair.get(`/v1/prices/bulk?instrumentIds=${bulkIds[0]},${bulkIds[1]}&from=2020-01-01&to=2020-01-31`, reader);
        const ms = performance.now() - started;
        expect(read.status, JSON.stringify(read.body)).toBe(200);
        expect(Object.keys(read.body.data)).toEqual([bulkIds[0], bulkIds[1]].sort());
        expect(ms).toBeLessThan(1_000);
      }
      holding = false;
      for (const download of held) download.drop();
      await Promise.all(loops);
    } finally {
      holding = false;
      for (const download of held) download.drop();
      await fair.stop();
    }
  }, 90_000);

  it('when every pooled connection is busy past the acquire deadline, then the next request gets 503 overloaded with Retry-After, and service resumes once they free', async () => {
    const tight = await startService({ DATABASE_POOL_SIZE: '2', DATABASE_ACQUIRE_TIMEOUT_MS: '300' });
    const k = await tight.keyWith(['instruments:read']);
    const lock = sqlClient(databaseUrl(), { max: 1, onnotice: () => {} });
    try {
      await lock`begin`;
      await lock`lock table instruments in access exclusive mode`;
      // Two reads take both primary connections and wait on the lock.
      const blocked = [tight.get(`/v1/instruments/${small[0].id}`, k), tight.get(`/v1/instruments/${small[1].id}`, k)];
      await untilAStatementWaitsFor(svc, 'instruments', 2);
      const shed = await tight.get(`/v1/instruments/${small[2].id}`, k);
      expect(shed.status).toBe(503);
      expect(shed.body.error).toMatchObject({ code: 'overloaded', message: expect.stringContaining('no database connection of primary became free') });
      expect(shed.headers.get('retry-after')).toMatch(/^\d+$/);
      await lock`rollback`;
      for (const reply of await Promise.all(blocked)) expect(reply.status).toBe(200);
      expect((await tight.get(`/v1/instruments/${small[2].id}`, k)).status).toBe(200);
    } finally {
      await lock.end();
      await tight.stop();
    }
  }, 30_000);

  it('when a statement runs past the statement timeout, then the request gets 503 overloaded with Retry-After, and the next one is served', async () => {
    const brief = await startService({ DATABASE_STATEMENT_TIMEOUT_MS: '1000' });
    const k = await brief.keyWith(['instruments:read']);
    const lock = sqlClient(databaseUrl(), { max: 1, onnotice: () => {} });
    try {
      await lock`begin`;
      await lock`lock table instruments in access exclusive mode`;
      const timedOut = await brief.get(`/v1/instruments/${small[0].id}`, k);
      expect(timedOut.status).toBe(503);
      expect(timedOut.body.error).toMatchObject({ code: 'overloaded', message: expect.stringContaining('statement timeout') });
      expect(timedOut.headers.get('retry-after')).toBe('1');
      await lock`rollback`;
      expect((await brief.get(`/v1/instruments/${small[0].id}`, k)).status).toBe(200);
    } finally {
      await lock.end();
      await brief.stop();
    }
  }, 30_000);

  it('when a reader takes nothing for the idle timeout, then the server closes its stream and counts it', async () => {
    // The timeout also runs while the server prepares the response head: with two cores under a load average of 16,
    // 500 ms passed before the head of this 62,600-bar download, and on a starved CI machine more than 3 s, so the
    // client saw a hang-up instead of a 200.
    const idle = await startService({ CLIENT_IDLE_TIMEOUT_MS: '6000' });
    try {
      const k = await idle.keyWith(['prices:read']);
      const before = await idleClosedCount(idle);
      const stalled = holdGet(`${idle.runtime.publicUrl}/v1/prices/bulk?instrumentIds=${bulkIds.join(',')}&from=1991-01-01&to=2020-12-31`, k);
      expect(await stalled.status).toBe(200);
      // The paused client does not see the close; the server's count does, 6 s after the client last took bytes.
      const closed = await until(
        async () => {
          const count = await idleClosedCount(idle);
          return count !== before && count;
        },
        { timeoutMs: 20_000, what: 'the idle download closed', intervalMs: 100 },
      );
      expect(closed).toBe(before + 1);
      stalled.drop();
    } finally {
      await idle.stop();
    }
  }, 45_000);
});

/** Requests the key admission has counted (auth_admission_batch_size's sum), in this process. */
async function admittedRequests(): Promise<number> {
  return (await admissionBatchSize.get()).values.find((v) => v.metricName?.endsWith('_sum'))?.value ?? 0;
}

async function idleClosedCount(s: Service): Promise<number> {
  const text = await (await fetch(`${s.runtime.adminUrl}/metrics`)).text();
  const m = /^http_idle_closed_total\{listener="public",route="\/v1\/prices\/bulk"\} (\d+)$/m.exec(text);
  return m ? Number(m[1]) : 0;
}

describe('resilience: what a bulk read guarantees while corrections land', () => {
  // This test is about consistency, not deadlines, so its service has the
  // default statement timeout (60 s). Right after the 62,600-bar correction,
  // each one-instrument page statement took 0.4-0.8 s on TimescaleDB with this
  // file running alone: under a 1 s timeout a loaded machine cut the download.
  let standard: Service;
  let standardKey: string;
  beforeAll(async () => {
    standard = await startService({ RATE_LIMIT_LIVE_PER_MINUTE: '100000' });
    standardKey = await standard.keyWith(['prices:read']);
  });
  afterAll(() => standard.stop());

  it('when an action and a bar correction land while a download is paused, then every series is the version meta reports: the bars and actions from before both', async () => {
    const ids = await Promise.all(Array.from({ length: BULK_INSTRUMENTS }, async () => (await createInstrument(standard)).id));
    const base = ids.flatMap((id) => DAYS.map((barDate, i) => dailyBar(id, { barDate, close: 100 + i / 100 }, { source: 'generation-1' })));
    expect((await standard.admin('POST', '/bars/daily', csvOf(base), 'text/csv')).status).toBe(200);
    const url = `${standard.runtime.publicUrl}/v1/prices/bulk?instrumentIds=${ids.join(',')}&from=1991-01-01&to=2020-12-31&adjusted=true`;
    const paused = holdGet(url, standardKey);
    // The plan (versions and actions) is read before the first byte (prices/bulk-stream.ts), so once the head is here
    // it is read; and the body, ~14 MB, is more than the paused reader's buffers take in, so pages remain to be read
    // after the writes below.
    expect(await paused.status).toBe(200);

    // A 2-for-1 split in 2000 (bumps each version to 1) and new closes for every bar of every instrument (version 2).
    await ingest(
      standard,
      '/corporate-actions',
      ids.map((id) => ({
        instrumentId: id,
        kind: 'split',
        effectiveDate: '2000-01-03',
        knowledgeDate: '1999-12-01T00:00:00Z',
        knowledgeProvenance: 'announced',
        params: { ratio: 2 },
        source: 'test-fixture',
      })),
    );
    const corrected = ids.flatMap((id) => DAYS.map((barDate, i) => dailyBar(id, { barDate, close: 200 + i / 100 }, { source: 'generation-2' })));
    expect((await standard.admin('POST', '/bars/daily', csvOf(corrected), 'text/csv')).status).toBe(200);

    const body = JSON.parse(await paused.readAll());
    expect(body.meta.actionSetVersions).toEqual(Object.fromEntries(ids.map((id) => [id, 0])));
    for (const id of ids) {
      const bars = body.data[id];
      expect(bars).toHaveLength(DAYS.length);
      // Version 0: the first generation's bars, also for the instruments whose pages were read after the correction.
      const sources = new Set(bars.map((b: any) => b.source));
      expect([...sources], `instrument ${id}`).toEqual(['generation-1']);
      // Version 0 has no split: nothing before 2000 is halved.
      expect(bars[0].closePrice).toBe(100);
    }

    const fresh = await standard.get(url.slice(standard.runtime.publicUrl.length), standardKey);
    expect(fresh.status, JSON.stringify(fresh.body.error)).toBe(200);
    expect(fresh.body.meta.actionSetVersions).toEqual(Object.fromEntries(ids.map((id) => [id, 2])));
    // Version 2: the second generation, halved before the split.
    for (const id of ids) expect(fresh.body.data[id][0].closePrice).toBe(100);
    for (const id of ids) expect(fresh.body.data[id][0].source).toBe('generation-2');
  }, 120_000);
});
