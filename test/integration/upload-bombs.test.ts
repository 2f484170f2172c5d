import http from 'node:http';
import { connect } from 'node:net';
import { createGzip } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockPriceHistory } from '../../server/price-history/versions-repository.ts';
import { createInstrument, dailyBar, weekdays } from './fixtures.ts';
import { startService, type Service } from './harness.ts';
import { until as untilCondition } from '../support/until.ts';

// Upload bodies that cost the service far more than they cost their sender:
// a gigabyte of newlines sent as a megabyte of gzip, which makes no rows and
// so met no row's limit, a gzip body inflating a thousandfold, and an upload
// whose client leaves before its answer. Each is refused or abandoned after a
// bounded amount of work, and stores nothing.

const MiB = 1024 * 1024;
// The spec's per-record limit (docs/api.md, Limits): a run of blank lines counts toward it as one record does.
const MAX_RECORD_CHARS = MiB;

/** `total` bytes of `unit` repeated, in pieces of about 1 MiB. */
function* repeated(unit: string, total: number): Generator<Buffer> {
  const piece = Buffer.from(unit.repeat(Math.max(1, Math.floor(MiB / unit.length))));
  for (let sent = 0; sent < total; sent += piece.length) yield sent + piece.length <= total ? piece : piece.subarray(0, total - sent);
}

/** One gzip member holding every chunk, compressed as a client would stream it. */
async function gzipOf(chunks: Iterable<Buffer>): Promise<Buffer> {
  const gzip = createGzip();
  const out: Buffer[] = [];
  gzip.on('data', (c: Buffer) => out.push(c));
  const ended = new Promise((resolve) => gzip.once('end', resolve));
  for (const chunk of chunks) if (!gzip.write(chunk)) await new Promise((resolve) => gzip.once('drain', resolve));
  gzip.end();
  await ended;
  return Buffer.concat(out);
}

interface Answer {
  status: number;
  body: any;
  /** Bytes of the body written before the answer came. */
  sent: number;
}

/**
 * An upload on a connection of its own, its body written chunk by chunk
 * until the answer arrives: a refused body is not sent to its end.
 */
function postUntilAnswered(svc: Service, route: string, headers: Record<string, string>, chunks: Iterable<Buffer>): Promise<Answer> {
  const { hostname, port } = new URL(svc.runtime.adminUrl);
  const req = http.request({
    hostname,
    port,
    method: 'POST',
    path: `/admin/v1${route}`,
    agent: false,
    headers: { authorization: `Bearer ${svc.runtime.adminToken}`, ...headers },
  });
  let answered = false;
  const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
    req.once('response', (res) => {
      answered = true;
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.once('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(parts).toString('utf8')) }));
      res.once('error', reject);
    });
    req.once('error', (err) => answered || reject(err));
  });
  return (async () => {
    let sent = 0;
    for (const chunk of chunks) {
      if (answered) break;
      sent += chunk.length;
      if (!req.write(chunk)) await Promise.race([new Promise((resolve) => req.once('drain', resolve)), answer]);
    }
    if (!answered) req.end();
    try {
      return { ...(await answer), sent };
    } finally {
      req.destroy();
    }
  })();
}

/** The value of one series on the service's /metrics (0 when it has none yet). */
async function metric(svc: Service, series: string): Promise<number> {
  const text = await (await fetch(`${svc.runtime.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

/** Polls `probe` until it returns a value `done` accepts (the suite's until, test/support/until.ts), or fails at the deadline. */
function until<T>(what: string, probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const accepted = async () => {
    const value = await probe();
    return done(value) ? { value } : null;
  };
  return untilCondition(accepted, { timeoutMs, what, intervalMs: 25 }).then((found) => found.value);
}

const CSV_HEADER = 'instrumentId,barDate,openPrice,highPrice,lowPrice,closePrice,volume,quoteCurrency,quoteUnit,source,asOf\n';

describe('bodies of blank lines', () => {
  let svc: Service;
  let bomb: Buffer;
  beforeAll(async () => {
    svc = await startService();
    // The finding's shape: 1 GB of LF, about 1 MB of gzip.
    bomb = await gzipOf(repeated('\n', 1024 * MiB));
  });
  afterAll(() => svc.stop());

  const barsStored = async () => (await svc.sql`select count(*)::int as n from daily_bars`)[0].n;

  it('when 1 GB of newlines is posted as CSV, gzip or plain, then 400 names the blank-line limit and the line that passed it, and nothing is stored', async () => {
    const before = await barsStored();
    for (const [encoding, chunks] of [
      ['gzip', [bomb]],
      ['identity', repeated('\n', 1024 * MiB)],
    ] as const) {
      const res = await postUntilAnswered(svc, '/bars/daily', { 'content-type': 'text/csv', 'content-encoding': encoding }, chunks);
      expect(res.status, encoding).toBe(400);
      // Line n ends the run of n blank characters; the first past the limit is line MAX_RECORD_CHARS + 1.
      const line = MAX_RECORD_CHARS + 1;
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.message, encoding).toContain(`CSV line ${line}:`);
      expect(res.body.error.message, encoding).toContain(`${MAX_RECORD_CHARS} characters`);
      expect(res.body.error.details.body, encoding).toEqual([expect.stringMatching(new RegExp(`^lines 1 to ${line} are blank`))]);
      if (encoding === 'identity') expect(res.sent).toBeLessThan(1024 * MiB);
    }
    expect(await barsStored()).toBe(before);
  });

  it('when 1 GB of newlines or blank lines of spaces is posted as NDJSON, gzip or plain, then 400 names the limit and the lines', async () => {
    for (const [encoding, chunks, lineChars] of [
      ['gzip', [bomb], 1],
      ['identity', repeated('\n', 1024 * MiB), 1],
      ['identity', repeated('   \r\n', 1024 * MiB), 5],
    ] as const) {
      const res = await postUntilAnswered(svc, '/bars/daily', { 'content-type': 'application/x-ndjson', 'content-encoding': encoding }, chunks);
      expect(res.status, encoding).toBe(400);
      // A blank line counts its spaces and its line ending: the run passes the limit on its first line past MAX_RECORD_CHARS characters.
      const line = Math.floor(MAX_RECORD_CHARS / lineChars) + 1;
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.message, encoding).toContain(`${MAX_RECORD_CHARS} characters`);
      expect(res.body.error.details, encoding).toEqual({ body: [expect.stringMatching(new RegExp(`^lines 1 to ${line} are blank`))] });
    }
  });

  it('when blank lines come between rows, then the run is counted from the last row: short runs are read, a long one is refused naming its lines', async () => {
    const { id } = await createInstrument(svc);
    const [a, b] = weekdays('2021-03-01', '2021-03-02');
    const row = (barDate: string) => `${id},${barDate},10,11,9,10,1000,USD,USD per share,test-fixture,${barDate}T23:59:59.999Z\n`;
    // Runs of blank lines just under the limit, each ended by a row, add up to far more than it.
    const short = '\n'.repeat(MAX_RECORD_CHARS - 1);
    let res = await postUntilAnswered(svc, '/bars/daily', { 'content-type': 'text/csv' }, [Buffer.from(CSV_HEADER + short + row(a) + short + row(b) + short)]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ rows: 2, inserted: 2 });

    // Header on line 1, one row on line 2, then the run from line 3.
    const long = '\r\n'.repeat(MAX_RECORD_CHARS / 2 + 1);
    res = await postUntilAnswered(svc, '/bars/daily', { 'content-type': 'text/csv' }, [Buffer.from(CSV_HEADER + row(a) + long + row(b))]);
    expect(res.status).toBe(400);
    expect(res.body.error.details.body).toEqual([expect.stringMatching(new RegExp(`^lines 3 to ${3 + MAX_RECORD_CHARS / 2} are blank`))]);
  });

  it('when 1 GB of whitespace is posted as JSON, gzip or plain, then 413 names the 64 MiB limit of a JSON body', async () => {
    for (const [encoding, chunks] of [
      ['gzip', [bomb]],
      ['identity', repeated('\n', 1024 * MiB)],
    ] as const) {
      const res = await postUntilAnswered(svc, '/bars/daily', { 'content-type': 'application/json', 'content-encoding': encoding }, chunks);
      expect(res.status, encoding).toBe(413);
      expect(res.body.error.message, encoding).toContain('JSON bodies are limited to 64 MiB');
    }
  });
});

describe('gzip uploads that inflate far more than price files do', () => {
  let svc: Service;
  beforeAll(async () => {
    svc = await startService();
  });
  afterAll(() => svc.stop());

  it('when one valid row repeated inflates past 100 times its gzip, then 413 names the ratio before the body is inflated, and nothing is stored', async () => {
    // Staged rows are checked against each other only once all are in: without a bound, every copy would be parsed and staged first.
    const row = 'EUR,USD,2020-01-02,1.1,test-ratio,2020-01-02T16:00:00Z\n';
    const body = await gzipOf([Buffer.from('base,quote,rateDate,rate,source,asOf\n'), ...repeated(row, 256 * MiB)]);
    for (const type of ['text/csv', 'application/x-ndjson']) {
      const chunks =
        type === 'text/csv'
          ? [body]
          : [await gzipOf(repeated(JSON.stringify({ base: 'EUR', quote: 'USD', rateDate: '2020-01-02', rate: 1.1, source: 'test-ratio' }) + '\n', 256 * MiB))];
      const res = await postUntilAnswered(svc, '/fx', { 'content-type': type, 'content-encoding': 'gzip' }, chunks);
      expect(res.status, type).toBe(413);
      expect(res.body.error.code).toBe('payload_too_large');
      expect(res.body.error.message, type).toContain('100 times');
      // The answer states what had been inflated, and from how many bytes: past the first 4 MiB, within a 16 KiB chunk of 100 times the gzip read.
      const [, inflated, compressed] = /inflated (\d+) bytes from (\d+)/.exec(res.body.error.details.body[0])!.map(Number);
      expect(inflated, type).toBeGreaterThan(4 * MiB);
      expect(inflated, type).toBeGreaterThan(100 * compressed);
      expect(inflated, type).toBeLessThanOrEqual(Math.max(4 * MiB, 100 * compressed) + 64 * 1024);
    }
    expect((await svc.sql`select count(*)::int as n from fx_rates where source = 'test-ratio'`)[0].n).toBe(0);
  });

  it('when a daily-bar history is posted as gzip in CSV and NDJSON, then it inflates within the ratio and is stored', async () => {
    // Prices that rise by one a day, with constant volume and one instrument: about 13x in gzip, more than real
    // price files (5-7x as CSV, 11x as NDJSON, measured on 20 years of S&P 500 bars).
    const { id } = await createInstrument(svc);
    const days = weekdays('1990-01-01', '2019-12-31');
    const bars = days.map((barDate, i) => dailyBar(id, { barDate, close: 100 + i }));
    const csv = CSV_HEADER + bars.map((b) => Object.values(b).join(',')).join('\n') + '\n';
    const ndjson = bars.map((b) => JSON.stringify(b)).join('\n') + '\n';
    for (const [type, text] of [
      ['text/csv', csv],
      ['application/x-ndjson', ndjson],
    ]) {
      const res = await postUntilAnswered(svc, '/bars/daily', { 'content-type': type, 'content-encoding': 'gzip' }, [await gzipOf([Buffer.from(text)])]);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data.rows).toBe(days.length);
    }
  });
});

describe('uploads whose client leaves', () => {
  let svc: Service;
  const lines: string[] = [];
  beforeAll(async () => {
    svc = await startService({ INGEST_MAX_CONCURRENT: '1', LOG_LEVEL: 'info' }, { write: (line: string) => void lines.push(line) });
  });
  afterAll(() => svc.stop());

  const barsOf = async (id: string) => (await svc.sql`select count(*)::int as n from daily_bars where instrument_id = ${id}`)[0].n;

  it('when the client leaves after sending its whole upload, then the upload stops before committing: nothing stored, its slot free, one line logged as aborted', async () => {
    const { id } = await createInstrument(svc);
    const other = await createInstrument(svc);
    const start = lines.length;
    const days = weekdays('1990-01-01', '2019-12-31');
    const csv = CSV_HEADER + days.map((barDate, i) => Object.values(dailyBar(id, { barDate, close: 100 + i })).join(',')).join('\n') + '\n';
    const abortedBefore = await metric(svc, 'http_requests_total{listener="admin",method="POST",route="/admin/v1/bars/daily",status="aborted"}');

    // The price-history lock, held here, stops the upload at its first write: by then it has read and parsed its
    // whole body (about 1 MB, its first COPY batch), so only the upload's own checks can notice that its client left.
    await svc.sql.begin(async (tx) => {
      await lockPriceHistory(tx);
      const { hostname, port } = new URL(svc.runtime.adminUrl);
      const socket = connect(Number(port), hostname);
      socket.on('error', () => {});
      socket.write(
        `POST /admin/v1/bars/daily HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.runtime.adminToken}\r\nContent-Type: text/csv\r\n` +
          `Content-Length: ${Buffer.byteLength(csv)}\r\n\r\n${csv}`,
      );
      await until(
        'the upload waiting for the price-history lock',
        async () =>
          (
            await svc.sql`
            select count(*)::int as n from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock' and wait_event = 'advisory'
          `
          )[0].n,
        (n) => n === 1,
      );
      socket.destroy();
      // The service has seen the client leave once the request is logged.
      await until(
        'the request logged',
        async () => lines.slice(start).filter((l) => l.includes('"msg":"request"') && l.includes('"route":"/admin/v1/bars/daily"')).length,
        (n) => n === 1,
      );
    });

    // The slot is free once the upload has stopped: with INGEST_MAX_CONCURRENT=1, the next upload is admitted.
    const next = await until(
      'the next upload admitted',
      () => svc.admin('POST', '/bars/daily', [dailyBar(other.id, { barDate: '2020-01-02', close: 5 })]),
      (res) => res.status !== 503,
    );
    expect(next.status).toBe(200);
    expect(await barsOf(id)).toBe(0);
    expect(await barsOf(other.id)).toBe(1);

    const after = lines.slice(start).map((l) => JSON.parse(l));
    const requestLines = after.filter((l) => l.msg === 'request' && l.route === '/admin/v1/bars/daily');
    expect(requestLines).toHaveLength(2);
    expect(requestLines[0]).toMatchObject({ aborted: true });
    expect(requestLines[1]).toMatchObject({ status: 200 });
    expect(after.filter((l) => l.level >= 40)).toEqual([]);
    expect(await metric(svc, 'http_requests_total{listener="admin",method="POST",route="/admin/v1/bars/daily",status="aborted"}')).toBe(abortedBefore + 1);
  });

  it('when the client leaves in the middle of its body, then the upload stops, nothing is stored, and the database is not taken for unreachable', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await createInstrument(svc)).id);
    const days = weekdays('1980-01-01', '2019-12-31');
    // 41,744 bars, 6 MB: the first COPY batch (1 MiB) is written while the rest is still to come.
    const bars = ids.flatMap((id) => days.map((barDate, i) => Object.values(dailyBar(id, { barDate, close: 100 + i })).join(',')));
    const csv = CSV_HEADER + bars.join('\n') + '\n';
    const start = lines.length;
    const { hostname, port } = new URL(svc.runtime.adminUrl);
    const socket = connect(Number(port), hostname);
    socket.on('error', () => {});
    // Twice the body's length is announced, so the upload is still reading when its client goes.
    socket.write(
      `POST /admin/v1/bars/daily HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.runtime.adminToken}\r\nContent-Type: text/csv\r\n` +
        `Content-Length: ${2 * Buffer.byteLength(csv)}\r\n\r\n${csv}`,
    );
    await until(
      'the upload writing its first batch',
      async () =>
        (
          await svc.sql`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid() and query ilike 'copy%' and xact_start is not null
        `
        )[0].n,
      (n) => n === 1,
    );
    socket.destroy();
    const next = await until(
      'the next upload admitted',
      () => svc.admin('POST', '/bars/daily', [dailyBar(ids[0], { barDate: '2020-01-02', close: 5 })]),
      (res) => res.status !== 503,
    );
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    expect(await barsOf(ids[0])).toBe(1);
    for (const id of ids.slice(1)) expect(await barsOf(id)).toBe(0);
    const after = lines.slice(start).map((l) => JSON.parse(l));
    expect(after.filter((l) => l.level >= 40)).toEqual([]);
    expect(await metric(svc, 'db_available{server="primary"}')).toBe(1);
  });
});
