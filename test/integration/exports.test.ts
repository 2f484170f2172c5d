import { createHash, createHmac, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { zstdDecompressSync, gunzipSync } from 'node:zlib';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlClient } from '../../server/db/sql.ts';
import { databaseUrl, startService, type Service } from './harness.ts';
import { createInstrument, dailyBar, ingest, minuteBar, uniqueSymbol, untilAStatementWaitsFor, weekdays } from './fixtures.ts';
import { until } from '../support/until.ts';
import { onNewConnection, ServiceProcesses } from './service-processes.ts';

// Export jobs (issue 41, item 3) on the real service and database: each
// describe block starts its own service, with the runner settings its rules
// need, one after another (they share this file's database, so a block never
// leaves a job queued for the next block's runner).

const DEADLINE_MS = 60_000;

interface ExportFile {
  name: string;
  rows: number;
  bytes: number;
  sha256: string;
  url: string;
}

async function untilStatus(svc: Service, key: string, id: string, statuses: string[]) {
  return until(
    async () => {
      const res = await svc.get(`/v1/exports/${id}`, key);
      return statuses.includes(res.body.data?.status) ? res.body.data : null;
    },
    { timeoutMs: DEADLINE_MS, what: `export ${id} reaching ${statuses.join(' or ')}`, intervalMs: 50 },
  );
}

async function download(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * Two instruments with weekday bars over 2019 and 2020 (closes 100 + day
 * index, and 50 + day index), the first renamed on 2020-01-01; `symbolOn`
 * gives an instrument's symbol on a day, from the posted periods.
 */
async function twoInstruments(svc: Service) {
  const renamed = [
    { symbol: uniqueSymbol('OLD'), validFrom: '1990-01-01', validTo: '2019-12-31' },
    { symbol: uniqueSymbol('NEW'), validFrom: '2020-01-01', validTo: null },
  ];
  const a = await createInstrument(svc, { symbols: renamed });
  const b = await createInstrument(svc);
  const days = weekdays('2019-01-01', '2020-12-31');
  await ingest(svc, '/bars/daily', [
    ...days.map((d, i) => dailyBar(a.id, { barDate: d, close: 100 + i })),
    ...days.map((d, i) => dailyBar(b.id, { barDate: d, close: 50 + i, volume: null })),
  ]);
  const symbolOn = (id: string, day: string) => (id === a.id ? renamed[day < '2020-01-01' ? 0 : 1].symbol : b.symbol);
  return { ids: [a.id, b.id].sort(), days, symbolOn };
}

/** A series' value in the metrics text (NaN when it is absent). */
const value = (text: string, series: string) =>
  Number(
    text
      .split('\n')
      .find((l) => l.startsWith(`${series} `))
      ?.split(' ')[1],
  );

describe('export jobs: accepted, run and served', { timeout: 120_000 }, () => {
  let svc: Service;
  let key: string;
  let otherKey: string;
  let ids: string[];
  let days: string[];
  let symbolOn: (id: string, day: string) => string;
  let startedAt: Date;
  const log: string[] = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        log.push(chunk.toString('utf8'));
        done();
      },
    });
    startedAt = new Date();
    svc = await startService({ EXPORTS_POLL_MS: '50', LOG_LEVEL: 'info' }, sink);
    key = await svc.keyWith(['prices:read']);
    otherKey = await svc.keyWith(['prices:read']);
    ({ ids, days, symbolOn } = await twoInstruments(svc));
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('when the body breaks the rules, then 400 names each field and its allowed values, and no job is made', async () => {
    const before = await svc.get('/v1/exports', key);
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ dataset: 'daily-prices', from: '2019-01-01', to: '2019-12-31', format: 'csv', interval: '1min' }, 'interval', /intraday-bars only/],
      [{ dataset: 'intraday-bars', from: '2019-01-01', to: '2019-01-31', format: 'csv' }, 'interval', /required for intraday-bars/],
      [{ dataset: 'daily-prices', from: '2019-01-01', to: '2019-12-31', format: 'parquet', compression: 'zstd' }, 'compression', /csv only/],
      [{ dataset: 'daily-prices', from: '1980-01-01', to: '2019-12-31', format: 'csv' }, 'to', /at most 10980 days/],
      [{ dataset: 'intraday-bars', interval: '1min', from: '2019-01-01', to: '2020-06-30', format: 'csv' }, 'to', /at most 366 days for 1min bars/],
      [{ dataset: 'daily-prices', from: '2019-12-31', to: '2019-01-01', format: 'csv' }, 'to', /on or after from/],
      [{ dataset: 'daily-prices', from: '2019-01-01', to: '2019-12-31', format: 'xlsx' }, 'format', /parquet.*arrow.*csv/],
      [{ dataset: 'daily-prices', from: '2019-01-01', to: '2019-12-31', format: 'csv', instrumentIds: ['nope'] }, 'instrumentIds.0', /UUID/i],
      [
        { dataset: 'daily-prices', from: '2019-01-01', to: '2019-12-31', format: 'csv', instrumentIds: Array.from({ length: 5001 }, () => randomUUID()) },
        'instrumentIds',
        /1 to 5000/,
      ],
      [{ dataset: 'daily-prices', from: '2019-01-01', to: '2019-12-31', format: 'csv', asOf: '2999-01-01' }, 'asOf', /not be after the time of the request/],
    ];
    for (const [body, field, message] of cases) {
      const res = await svc.post('/v1/exports', key, body);
      expect(res.status, JSON.stringify(body).slice(0, 200)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.details[field]?.join(' '), `${field} in ${JSON.stringify(res.body.error.details).slice(0, 300)}`).toMatch(message);
    }
    const after = await svc.get('/v1/exports', key);
    expect(after.body.data.length).toBe(before.body.data.length);
  });

  it('when a CSV export is posted, then 202 with Location, and once ready one file per year holds exactly the JSON read’s bars', async () => {
    const posted = await svc.post('/v1/exports', key, {
      dataset: 'daily-prices',
      instrumentIds: [ids[1], ids[0], ids[1]],
      from: '2019-01-01',
      to: '2020-12-31',
      format: 'csv',
    });
    expect(posted.status).toBe(202);
    expect(posted.headers.get('location')).toBe(`/v1/exports/${posted.body.data.id}`);
    const accepted = posted.body.data;
    expect(accepted.status).toBe('queued');
    expect(accepted.request).toMatchObject({ instrumentIds: ids, adjusted: false, includeBackfilled: false, interval: null, compression: 'none' });
    // No asOf asked for: pinned to the instant the job was accepted.
    expect(accepted.request.asOf).toBe(accepted.acceptedAt);

    const job = await untilStatus(svc, key, accepted.id, ['ready', 'failed']);
    expect(job.status).toBe('ready');
    expect(job.files.map((f: ExportFile) => f.name)).toEqual(['2019.csv', '2020.csv']);
    const perYear = (y: string) => days.filter((d) => d.startsWith(y)).length * 2;
    expect(job.files.map((f: ExportFile) => f.rows)).toEqual([perYear('2019'), perYear('2020')]);
    expect(job.progress).toMatchObject({ filesDone: 2, filesTotal: 2, instrumentsTotal: 2, rowsDone: days.length * 2 });
    expect(Object.keys(job.actionSetVersions).sort()).toEqual(ids);
    expect(Date.parse(job.expiresAt) - Date.parse(job.finishedAt)).toBe(168 * 3_600_000);

    const json = await svc.get(`/v1/prices/bulk?instrumentIds=${ids.join(',')}&from=2019-01-01&to=2020-12-31&asOf=${job.request.asOf}`, key);
    for (const file of job.files as ExportFile[]) {
      const got = await download(`${svc.runtime.publicUrl}/v1/exports/${job.id}/files/${file.name}`, { authorization: `Bearer ${key}` });
      expect(got.status).toBe(200);
      expect(got.headers.get('content-type')).toMatch(/^text\/csv/);
      expect(got.headers.get('etag')).toBe(`"${file.sha256}"`);
      expect(got.headers.get('accept-ranges')).toBe('bytes');
      expect(got.bytes.length).toBe(file.bytes);
      expect(sha256(got.bytes)).toBe(file.sha256);
      const lines = got.bytes
        .toString('utf8')
        .split('\n')
        .filter((l) => l && !l.startsWith('#'));
      const [header, ...rows] = lines;
      const columns = header.split(',');
      expect(columns.slice(0, 3)).toEqual(['instrumentId', 'symbol', 'barDate']);
      // Ordered by instrument id, then date; every value the JSON read's.
      const expected = ids.flatMap((id) =>
        (json.body.data[id] as { barDate: string }[]).filter((bar) => bar.barDate.startsWith(file.name.slice(0, 4))).map((bar) => ({ id, ...bar })),
      );
      expect(rows.length).toBe(expected.length);
      rows.forEach((row, i) => {
        const cells = row.split(',');
        const bar = expected[i] as Record<string, unknown>;
        expect(cells[0]).toBe(bar.id);
        expect(cells[1]).toBe(symbolOn(bar.id as string, bar.barDate as string));
        expect(cells[2]).toBe(bar.barDate);
        expect(Number(cells[columns.indexOf('closePrice')])).toBe(bar.closePrice);
        expect(cells[columns.indexOf('volume')]).toBe(bar.volume === null ? '' : String(bar.volume));
      });
    }
  });

  it('when the same export is posted twice with its asOf pinned, then the files are byte-identical (same sha256)', async () => {
    const body = {
      dataset: 'daily-prices',
      instrumentIds: ids,
      from: '2019-06-01',
      to: '2020-06-30',
      format: 'csv',
      compression: 'zstd',
      asOf: '2024-01-02T00:00:00Z',
    };
    const first = await untilStatus(svc, key, (await svc.post('/v1/exports', key, body)).body.data.id, ['ready', 'failed']);
    const second = await untilStatus(svc, key, (await svc.post('/v1/exports', key, body)).body.data.id, ['ready', 'failed']);
    expect(first.status).toBe('ready');
    expect(first.files.map((f: ExportFile) => f.name)).toEqual(['2019.csv.zst', '2020.csv.zst']);
    expect(second.files.map((f: ExportFile) => [f.name, f.sha256, f.bytes])).toEqual(first.files.map((f: ExportFile) => [f.name, f.sha256, f.bytes]));
    // The file is the zstd bytes: decompressed, the rows of the same window uncompressed.
    const got = await download(first.files[0].url);
    expect(got.headers.get('content-type')).toBe('application/zstd');
    const text = zstdDecompressSync(got.bytes).toString('utf8');
    const rows = text.split('\n').filter((l) => l && !l.startsWith('#') && !l.startsWith('instrumentId'));
    expect(rows.length).toBe(days.filter((d) => d >= '2019-06-01' && d <= '2019-12-31').length * 2);
  });

  it('when no instruments are named, then the export holds every instrument stored when the job was accepted, in id order', async () => {
    const posted = await svc.post('/v1/exports', key, { dataset: 'daily-prices', from: '2020-01-01', to: '2020-01-31', format: 'csv', asOf: '2024-06-01' });
    // Added after the job was accepted: not in the export, though its bars are known at its asOf.
    const later = await createInstrument(svc);
    await ingest(svc, '/bars/daily', [dailyBar(later.id, { barDate: '2020-01-02', close: 5 }, { asOf: '2020-01-02T23:59:59.999Z' })]);
    const job = await untilStatus(svc, key, posted.body.data.id, ['ready', 'failed']);
    expect(job.request.instrumentIds).toBeNull();
    const rows = (await download(job.files[0].url)).bytes
      .toString('utf8')
      .split('\n')
      .filter((l) => /^[0-9a-f-]{36},/.test(l));
    const rowIds = rows.map((l) => l.slice(0, 36));
    expect(rowIds).toEqual([...rowIds].sort());
    for (const id of ids) expect(rowIds.filter((x) => x === id).length).toBe(days.filter((d) => d.startsWith('2020-01')).length);
    expect(rowIds).not.toContain(later.id);
  });

  it('when gzip is asked for, then the file is gzip bytes that read back to the rows', async () => {
    const job = await untilStatus(
      svc,
      key,
      (
        await svc.post('/v1/exports', key, {
          dataset: 'daily-prices',
          instrumentIds: [ids[0]],
          from: '2020-01-01',
          to: '2020-03-31',
          format: 'csv',
          compression: 'gzip',
        })
      ).body.data.id,
      ['ready', 'failed'],
    );
    expect(job.files.map((f: ExportFile) => f.name)).toEqual(['2020.csv.gz']);
    const got = await download(job.files[0].url);
    expect(got.headers.get('content-type')).toBe('application/gzip');
    const rows = gunzipSync(got.bytes)
      .toString('utf8')
      .split('\n')
      .filter((l) => l.startsWith(ids[0]));
    expect(rows.length).toBe(days.filter((d) => d >= '2020-01-01' && d <= '2020-03-31').length);
  });

  it('when Parquet and Arrow are exported, then DuckDB and apache-arrow read every value of the JSON read at the same asOf, and a pinned Parquet export repeats byte for byte', async () => {
    const asOf = '2024-06-03T12:00:00Z';
    const body = { dataset: 'daily-prices', instrumentIds: ids, from: '2019-01-01', to: '2020-12-31', asOf };
    const parquet = await untilStatus(svc, key, (await svc.post('/v1/exports', key, { ...body, format: 'parquet' })).body.data.id, ['ready', 'failed']);
    const arrow = await untilStatus(svc, key, (await svc.post('/v1/exports', key, { ...body, format: 'arrow' })).body.data.id, ['ready', 'failed']);
    const again = await untilStatus(svc, key, (await svc.post('/v1/exports', key, { ...body, format: 'parquet' })).body.data.id, ['ready', 'failed']);
    expect([parquet.status, arrow.status, again.status], `${parquet.error} ${arrow.error}`).toEqual(['ready', 'ready', 'ready']);
    expect(parquet.files.map((f: ExportFile) => f.name)).toEqual(['2019.parquet', '2020.parquet']);
    expect(arrow.files.map((f: ExportFile) => f.name)).toEqual(['2019.arrow', '2020.arrow']);
    expect(again.files.map((f: ExportFile) => f.sha256)).toEqual(parquet.files.map((f: ExportFile) => f.sha256));

    const json = await svc.get(`/v1/prices/bulk?instrumentIds=${ids.join(',')}&from=2019-01-01&to=2020-12-31&asOf=${asOf}`, key);
    const expected = (year: string) =>
      ids.flatMap((id) =>
        (json.body.data[id] as Record<string, unknown>[])
          .filter((bar) => String(bar.barDate).startsWith(year))
          .map((bar) => ({ instrumentId: id, symbol: symbolOn(id, String(bar.barDate)), ...bar })),
      );
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mds-exports-test-'));
    const duck = await (await DuckDBInstance.create(':memory:')).connect();
    try {
      for (const [i, file] of (parquet.files as ExportFile[]).entries()) {
        const got = await download(file.url);
        expect(got.headers.get('content-type')).toBe('application/vnd.apache.parquet');
        expect(sha256(got.bytes)).toBe(file.sha256);
        const local = path.join(dir, file.name);
        await writeFile(local, got.bytes);
        const rows = await duck.runAndReadAll(
          `select * replace (strftime("barDate", '%Y-%m-%d') as "barDate", strftime(timezone('UTC', "asOf"), '%Y-%m-%dT%H:%M:%S.%g') || 'Z' as "asOf") from read_parquet('${local}')`,
        );
        expect(rows.getRowObjectsJS()).toEqual(expected(file.name.slice(0, 4)));
        const arrowFile: ExportFile = arrow.files[i];
        const table = tableFromIPC((await download(arrowFile.url)).bytes);
        const arrowRows = table.toArray().map((row) => {
          const r = row.toJSON() as Record<string, unknown>;
          return {
            ...r,
            barDate: new Date(Number(r.barDate)).toISOString().slice(0, 10),
            asOf: new Date(Number(r.asOf)).toISOString(),
          };
        });
        expect(arrowRows).toEqual(expected(arrowFile.name.slice(0, 4)));
        expect(JSON.parse(table.schema.metadata.get('meta') as string).actionSetVersions).toEqual(arrow.actionSetVersions);
      }
    } finally {
      duck.closeSync();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('when a file is read by ranges, then 206 carries exactly those bytes, If-Range with another ETag gets the whole, and a range past the end is 416', async () => {
    const [job] = (await svc.get('/v1/exports', key)).body.data.filter((j: { status: string; files: ExportFile[] }) => j.status === 'ready' && j.files.length);
    const file: ExportFile = job.files[0];
    const whole = (await download(file.url)).bytes;
    const part = await download(file.url, { range: 'bytes=10-99' });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 10-99/${file.bytes}`);
    expect(part.bytes.equals(whole.subarray(10, 100))).toBe(true);
    // Resuming a cut download: from an offset to the end.
    const rest = await download(file.url, { range: `bytes=${file.bytes - 5}-`, 'if-range': `"${file.sha256}"` });
    expect(rest.status).toBe(206);
    expect(rest.bytes.equals(whole.subarray(file.bytes - 5))).toBe(true);
    const suffix = await download(file.url, { range: 'bytes=-7' });
    expect(suffix.bytes.equals(whole.subarray(file.bytes - 7))).toBe(true);
    const changed = await download(file.url, { range: 'bytes=10-99', 'if-range': '"another"' });
    expect(changed.status).toBe(200);
    expect(changed.bytes.equals(whole)).toBe(true);
    const past = await download(file.url, { range: `bytes=${file.bytes}-` });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${file.bytes}`);
    expect(JSON.parse(past.bytes.toString('utf8')).error.code).toBe('range_not_satisfiable');
  });

  it('when the signed link is used without a key, then it serves the file; altered or expired, it is 403; and the signature never reaches the log', async () => {
    const [job] = (await svc.get('/v1/exports', key)).body.data.filter((j: { status: string; files: ExportFile[] }) => j.status === 'ready' && j.files.length);
    const file: ExportFile = job.files[0];
    const url = new URL(file.url);
    const signature = url.searchParams.get('signature') ?? '';
    expect(signature.length).toBeGreaterThan(10);
    expect((await download(file.url)).status).toBe(200);

    const altered = new URL(file.url);
    altered.searchParams.set('signature', `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`);
    const forged = await download(altered.toString());
    expect(forged.status).toBe(403);
    expect(JSON.parse(forged.bytes.toString('utf8')).error.code).toBe('invalid_signature');
    // Another file's name under this file's signature.
    const renamed = file.url.replace(`/files/${file.name}`, `/files/1999.csv`);
    expect((await download(renamed)).status).toBe(403);

    // A link that expired an hour ago, signed with the deployment's key as the service signs.
    const [{ secret }] = await svc.sql<{ secret: Buffer }[]>`select secret from export_link_key`;
    const expires = Math.floor(Date.now() / 1000) - 3600;
    const tag = createHmac('sha256', secret).update(`export-file\n${job.id}\n${file.name}\n${expires}`).digest().subarray(0, 16).toString('base64url');
    const expired = await download(`${svc.runtime.publicUrl}/v1/exports/${job.id}/files/${file.name}?expires=${expires}&signature=${tag}`);
    expect(expired.status).toBe(403);
    expect(JSON.parse(expired.bytes.toString('utf8')).error.message).toMatch(/expired/);

    await until(() => log.some((l) => l.includes(`/files/${file.name}`)), { timeoutMs: 5_000, what: 'the download’s log line' });
    expect(log.join('')).not.toContain(signature);
    expect(log.join('')).not.toContain(tag);
  });

  it('when an account has EXPORTS_DOWNLOADS_PER_ACCOUNT file downloads open, then one more, by key or by signed link, is 429 with Retry-After, and the open ones complete', async () => {
    const [job] = (await svc.get('/v1/exports', key)).body.data.filter((j: { status: string; files: ExportFile[] }) => j.status === 'ready' && j.files.length);
    const file: ExportFile = job.files[0];
    // A second process on the same database, allowing 2 downloads an account; its runner takes nothing.
    const small = await startService({ EXPORTS_DOWNLOADS_PER_ACCOUNT: '2', EXPORTS_POLL_MS: '600000' });
    const link = new URL(file.url);
    const onSmall = `${small.runtime.publicUrl}${link.pathname}${link.search}`;
    // The two are held reading their first bytes, behind a lock on the chunks.
    const conn = await svc.sql.reserve();
    const open: Promise<{ status: number; bytes: Buffer }>[] = [];
    let locked = true;
    const unlock = async () => {
      if (locked) await conn`rollback`;
      locked = false;
    };
    try {
      await conn`begin`;
      await conn`lock table export_chunks in access exclusive mode`;
      for (let i = 0; i < 2; i++) open.push(download(onSmall));
      await untilAStatementWaitsFor(svc, 'export_chunks', 2);
      const byLink = await download(onSmall);
      expect(byLink.status).toBe(429);
      expect(JSON.parse(byLink.bytes.toString('utf8')).error.code).toBe('rate_limited');
      const byKey = await download(`${small.runtime.publicUrl}/v1/exports/${job.id}/files/${file.name}`, { authorization: `Bearer ${key}` });
      expect(byKey.status).toBe(429);
      expect(Number(byKey.headers.get('retry-after'))).toBeGreaterThan(0);
      await unlock();
      const done = await Promise.all(open);
      expect(done.map((d) => d.status)).toEqual([200, 200]);
      for (const d of done) expect(sha256(d.bytes)).toBe(file.sha256);
      // Their slots are free again.
      expect((await download(onSmall)).status).toBe(200);
    } finally {
      await unlock();
      conn.release();
      await Promise.allSettled(open);
      await small.stop();
    }
  });

  it('when another account asks for the job or its files with its own key, then it gets 404, and its list does not show the job', async () => {
    const [job] = (await svc.get('/v1/exports', key)).body.data.filter((j: { status: string; files: ExportFile[] }) => j.status === 'ready' && j.files.length);
    expect((await svc.get(`/v1/exports/${job.id}`, otherKey)).status).toBe(404);
    const file = await download(`${svc.runtime.publicUrl}/v1/exports/${job.id}/files/${job.files[0].name}`, { authorization: `Bearer ${otherKey}` });
    expect(file.status).toBe(404);
    expect((await svc.get('/v1/exports', otherKey)).body.data).toEqual([]);
    const del = await fetch(`${svc.runtime.publicUrl}/v1/exports/${job.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${otherKey}` } });
    expect(del.status).toBe(404);
    expect((await svc.get(`/v1/exports/${job.id}`, key)).body.data.status).toBe('ready');
  });

  it('when the account lists its jobs a page at a time, then the cursor walks every job once, newest first', async () => {
    const all = (await svc.get('/v1/exports?limit=100', key)).body.data.map((j: { id: string }) => j.id);
    expect(all.length).toBeGreaterThanOrEqual(4);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: { id: string }[]; meta: { nextCursor: string | null } } } = await svc.get(
        `/v1/exports?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        key,
      );
      seen.push(...page.body.data.map((j) => j.id));
      cursor = page.body.meta.nextCursor;
    } while (cursor);
    expect(seen).toEqual(all);
  });

  it('when intraday bars are exported, then there is one file per month, each row of the month in id then time order', async () => {
    const a = await createInstrument(svc);
    const minutes = ['2024-01-31T14:30:00Z', '2024-01-31T14:31:00Z', '2024-02-01T14:30:00Z'];
    await ingest(
      svc,
      '/bars/intraday',
      minutes.map((t, i) => minuteBar(a.id, t, 10 + i)),
    );
    const job = await untilStatus(
      svc,
      key,
      (
        await svc.post('/v1/exports', key, {
          dataset: 'intraday-bars',
          interval: '1min',
          instrumentIds: [a.id],
          from: '2024-01-01',
          to: '2024-02-29',
          format: 'csv',
        })
      ).body.data.id,
      ['ready', 'failed'],
    );
    expect(job.status).toBe('ready');
    expect(job.files.map((f: ExportFile) => [f.name, f.rows])).toEqual([
      ['2024-01.csv', 2],
      ['2024-02.csv', 1],
    ]);
    const text = (await download(job.files[0].url)).bytes.toString('utf8');
    expect(
      text
        .split('\n')
        .filter((l) => l.startsWith(a.id))
        .map((l) => l.split(',').slice(1, 3)),
    ).toEqual([
      [a.symbol, '2024-01-31T14:30:00.000Z'],
      [a.symbol, '2024-01-31T14:31:00.000Z'],
    ]);
  });

  it('when jobs have run, then /metrics gives the jobs by status, the queue age, the bytes written and the durations', async () => {
    const [{ ready }] = await svc.sql<{ ready: number }[]>`select count(*)::int as ready from export_jobs where status = 'ready'`;
    // The counters are this process's: the jobs it ran, accepted since it started.
    const [mine] = await svc.sql<{ ready: number; csvBytes: number }[]>`
      select count(*) filter (where status = 'ready')::int as ready,
        coalesce(sum(bytes) filter (where request->>'format' = 'csv'), 0)::float8 as "csvBytes"
      from export_jobs
      where accepted_at >= ${startedAt}
    `;
    // Sampled every EXPORTS_POLL_MS (50 ms here): polled until the sample has caught up with the table.
    const text = await until(
      async () => {
        const t = await (await fetch(`${svc.runtime.adminUrl}/metrics`)).text();
        return value(t, 'export_jobs{status="ready"}') === ready ? t : null;
      },
      { timeoutMs: DEADLINE_MS, what: 'the ready jobs sampled' },
    );
    expect(value(text, 'export_oldest_queued_seconds')).toBe(0);
    expect(value(text, 'export_runner_polls_total')).toBeGreaterThanOrEqual(1);
    // Every stored byte was counted as written; deleted and expired files were written too.
    expect(value(text, 'export_bytes_written_total{format="csv"}')).toBeGreaterThanOrEqual(mine.csvBytes);
    expect(value(text, 'export_job_duration_seconds_count{outcome="ready"}')).toBeGreaterThanOrEqual(mine.ready);
  });

  it('when a running job is cancelled, then its runner stops, nothing it wrote is kept, and it stays cancelled', async () => {
    // The runner is held inside its first file's last transaction (a table lock on export_files) while the cancel arrives.
    const conn = await svc.sql.reserve();
    let cancel: Promise<Response> | undefined;
    try {
      await conn`begin`;
      await conn`lock table export_files in exclusive mode`;
      const posted = await svc.post('/v1/exports', key, { dataset: 'daily-prices', instrumentIds: ids, from: '2019-01-01', to: '2020-12-31', format: 'csv' });
      const id = posted.body.data.id;
      await untilAStatementWaitsFor(svc, 'export_files');
      cancel = fetch(`${svc.runtime.publicUrl}/v1/exports/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
      // The cancel itself, not the runner's lease renewal, which may wait on the job's row too.
      await untilAStatementWaitsFor(svc, "status = 'cancelled'");
      await conn`commit`;
      const res = await cancel;
      expect(res.status).toBe(200);
      expect((await res.json()).data).toMatchObject({ deleted: false, job: { status: 'cancelled' } });
      await until(() => log.some((l) => l.includes(id) && l.includes('export job stopped')), { timeoutMs: DEADLINE_MS, what: 'the runner stopping' });
      const [left] = await svc.sql<{ chunks: number; files: number }[]>`
        select (select count(*)::int from export_chunks where job_id = ${id}) as chunks, (select count(*)::int from export_files where job_id = ${id}) as files
      `;
      expect(left).toEqual({ chunks: 0, files: 0 });
      expect((await svc.get(`/v1/exports/${id}`, key)).body.data).toMatchObject({ status: 'cancelled', bytes: 0, files: [] });
    } finally {
      await cancel?.catch(() => undefined);
      conn.release();
    }
  });

  it('when a finished job is deleted, then it and its files are gone (404), and its chunks are deleted', async () => {
    const job = await untilStatus(
      svc,
      key,
      (await svc.post('/v1/exports', key, { dataset: 'daily-prices', instrumentIds: ids, from: '2020-01-01', to: '2020-01-31', format: 'csv' })).body.data.id,
      ['ready'],
    );
    const del = await fetch(`${svc.runtime.publicUrl}/v1/exports/${job.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
    expect(del.status).toBe(200);
    expect((await del.json()).data).toMatchObject({ deleted: true, job: { status: 'ready' } });
    expect((await svc.get(`/v1/exports/${job.id}`, key)).status).toBe(404);
    expect((await download(job.files[0].url)).status).toBe(404);
    const [{ n }] = await svc.sql<{ n: number }[]>`select count(*)::int as n from export_chunks where job_id = ${job.id}`;
    expect(n).toBe(0);
  });

  it('when a ready job passes its expiry, then the sweep marks it expired and deletes its files', async () => {
    const job = await untilStatus(
      svc,
      key,
      (await svc.post('/v1/exports', key, { dataset: 'daily-prices', instrumentIds: ids, from: '2020-02-01', to: '2020-02-28', format: 'csv' })).body.data.id,
      ['ready'],
    );
    // The clock is the database's: the job's expiry is moved to the past, as EXPORTS_TTL_HOURS passing would.
    await svc.sql`update export_jobs set expires_at = now() - interval '1 second' where id = ${job.id}`;
    const expired = await untilStatus(svc, key, job.id, ['expired']);
    expect(expired.files).toEqual([]);
    await until(async () => (await svc.sql<{ n: number }[]>`select count(*)::int as n from export_chunks where job_id = ${job.id}`)[0].n === 0, {
      timeoutMs: DEADLINE_MS,
      what: 'the expired job’s chunks deleted',
    });
    expect((await download(job.files[0].url)).status).toBe(404);
  });
});

describe('export jobs: limits per account and cancelling', { timeout: 120_000 }, () => {
  let svc: Service;
  let key: string;

  beforeAll(async () => {
    // The runner takes nothing after its first look, so posted jobs stay queued.
    svc = await startService({ EXPORTS_POLL_MS: '600000', EXPORTS_RUNNING_PER_ACCOUNT: '2' });
    await until(async () => (await svc.sql<{ n: number }[]>`select count(*)::int as n from export_jobs where status in ('queued', 'running')`)[0].n === 0, {
      timeoutMs: DEADLINE_MS,
      what: 'no job left running by the block before',
    });
    // Its first poll is over once it has taken what was queued then (the poll counter moves at the end of a poll):
    // a job posted before that could be taken and finish at once.
    await until(async () => value(await (await fetch(`${svc.runtime.adminUrl}/metrics`)).text(), 'export_runner_polls_total') >= 1, {
      timeoutMs: DEADLINE_MS,
      what: "the export runner's first poll",
    });
    key = await svc.keyWith(['prices:read']);
  });
  afterAll(async () => {
    await svc?.stop();
  });

  const body = { dataset: 'daily-prices', from: '2020-01-01', to: '2020-01-31', format: 'csv', instrumentIds: [randomUUID()] };

  it('when the account has EXPORTS_RUNNING_PER_ACCOUNT jobs queued, then the next POST is 429 with Retry-After, and cancelling one lets the next in', async () => {
    const first = await svc.post('/v1/exports', key, body);
    const second = await svc.post('/v1/exports', key, body);
    expect([first.status, second.status]).toEqual([202, 202]);
    const third = await svc.post('/v1/exports', key, body);
    expect(third.status).toBe(429);
    expect(third.body.error.code).toBe('rate_limited');
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(third.body.error.details.concurrentJobs[0]).toMatch(/2 queued or running; at most 2/);

    const cancel = await fetch(`${svc.runtime.publicUrl}/v1/exports/${first.body.data.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
    expect(cancel.status).toBe(200);
    const cancelled = (await cancel.json()).data;
    expect(cancelled).toMatchObject({ deleted: false, job: { status: 'cancelled' } });
    expect((await svc.post('/v1/exports', key, body)).status).toBe(202);

    // Cancelled, then deleted on a second DELETE.
    const again = await fetch(`${svc.runtime.publicUrl}/v1/exports/${first.body.data.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
    expect((await again.json()).data.deleted).toBe(true);
    expect((await svc.get(`/v1/exports/${first.body.data.id}`, key)).status).toBe(404);
  });

  it('when posts race, then no more than EXPORTS_RUNNING_PER_ACCOUNT are accepted', async () => {
    const racing = await svc.keyWith(['prices:read']);
    const answers = await Promise.all(Array.from({ length: 6 }, () => svc.post('/v1/exports', racing, body)));
    expect(answers.filter((a) => a.status === 202).length).toBe(2);
    expect(answers.filter((a) => a.status === 429).length).toBe(4);
  });

  afterAll(async () => {
    // Left queued, they would be taken by the next block's runner.
    await svc.sql`update export_jobs set status = 'cancelled' where status in ('queued', 'running')`;
  });
});

describe('export jobs: the byte quota', { timeout: 120_000 }, () => {
  let svc: Service;
  let key: string;

  beforeAll(async () => {
    svc = await startService({ EXPORTS_POLL_MS: '50', EXPORTS_QUOTA_BYTES: '1' });
    key = await svc.keyWith(['prices:read']);
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('when the account stores its quota of bytes, then a POST is 429 with Retry-After until the job is deleted', async () => {
    const { ids } = await twoInstruments(svc);
    const body = { dataset: 'daily-prices', instrumentIds: ids, from: '2020-01-01', to: '2020-01-31', format: 'csv' };
    const job = await untilStatus(svc, key, (await svc.post('/v1/exports', key, body)).body.data.id, ['ready', 'failed']);
    expect(job.bytes).toBeGreaterThan(1);
    const refused = await svc.post('/v1/exports', key, body);
    expect(refused.status).toBe(429);
    expect(refused.body.error.details.storedBytes[0]).toMatch(/at most 1$/);
    // The quota frees when the job's files expire: Retry-After says when.
    const wait = Number(refused.headers.get('retry-after'));
    expect(Math.abs(wait - (Date.parse(job.expiresAt) - Date.now()) / 1000)).toBeLessThan(60);
    await fetch(`${svc.runtime.publicUrl}/v1/exports/${job.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
    expect((await svc.post('/v1/exports', key, body)).status).toBe(202);
  });
});

describe('export jobs: a serving process killed mid-job', { timeout: 180_000 }, () => {
  let svc: ServiceProcesses;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'mds-exports-processes-'));
    // A lease of 2 s: the job is taken again 2 s after its holder's last heartbeat.
    svc = new ServiceProcesses(dataDir, { EXPORTS_POLL_MS: '100', EXPORTS_LEASE_MS: '2000' });
    await svc.ready();
  });
  afterAll(async () => {
    await svc?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('when the process running a job is killed, then another process resumes it, keeps the finished files, and the files equal a run that was not cut', async () => {
    const key = await svc.keyFor(['prices:read'], 'live');
    // 20 instruments × 30 years of weekdays (156,000 bars): 30 files, each a bulk read of its year.
    const made = await svc.admin(
      'POST',
      '/instruments',
      Array.from({ length: 20 }, (_, i) => ({
        assetClass: 'equity',
        displayName: `Exports Kill ${i}`,
        quoteCurrency: 'USD',
        quoteUnit: 'USD per share',
        isActive: true,
        brokerCodes: {},
        symbols: [{ symbol: `EK${i}${randomUUID().slice(0, 6)}`, validFrom: '1990-01-01', validTo: null }],
      })),
    );
    const ids: string[] = JSON.parse(made.body).data.ids;
    const days = weekdays('1990-01-01', '2019-12-31');
    const csv = ['instrumentId,barDate,closePrice,quoteCurrency,quoteUnit,source,asOf'];
    for (const [n, id] of ids.entries())
      for (const [i, d] of days.entries()) csv.push(`${id},${d},${10 + n + i / 100},USD,USD per share,test-fixture,2024-01-01T00:00:00Z`);
    await svc.admin('POST', '/bars/daily', `${csv.join('\n')}\n`, 'text/csv');

    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const body = JSON.stringify({ dataset: 'daily-prices', instrumentIds: ids, from: '1990-01-01', to: '2019-12-31', format: 'csv', asOf: '2024-06-01' });
    // A connection handed to a process just killed is never answered: refused after 5 s, and asked again by the caller.
    const post = async () =>
      JSON.parse((await onNewConnection(`${svc.publicUrl}/v1/exports`, { method: 'POST', headers: auth, body, timeoutMs: 5_000 })).body).data.id as string;
    const jobOf = async (id: string) => {
      const res = await onNewConnection(`${svc.publicUrl}/v1/exports/${id}`, { headers: auth, timeoutMs: 5_000 }).catch(() => null);
      return res ? JSON.parse(res.body).data : null;
    };
    // Where the job stands when its process dies is set by a table lock on export_files, which a file's last
    // transaction writes: the holder finishes its first file and is killed while it waits to finish the second.
    const db = sqlClient(databaseUrl(), { max: 3, onnotice: () => {} });
    const [first, second] = [await db.reserve(), await db.reserve()];
    const waitingOnFiles = async () =>
      (
        await db<{ n: number }[]>`
          select count(*)::int as n from pg_locks l join pg_class c on c.oid = l.relation
          where c.relname = 'export_files' and not l.granted and l.mode = 'RowExclusiveLock'
        `
      )[0].n > 0;
    try {
      await first`begin`;
      await first`lock table export_files in exclusive mode`;
      const id = await post();
      const job = () => jobOf(id);
      await until(waitingOnFiles, { timeoutMs: DEADLINE_MS, what: 'the first file waiting to finish' });
      // Queued behind the holder's wait: granted once its first file is in, before its second can be.
      const locked = (async () => {
        await second`begin`;
        await second`lock table export_files in exclusive mode`;
      })();
      await until(
        async () =>
          (await db<{ n: number }[]>`select count(*)::int as n from pg_locks where mode = 'ExclusiveLock' and not granted and locktype = 'relation'`)[0].n > 0,
        { timeoutMs: DEADLINE_MS, what: 'the second lock queued' },
      );
      await first`commit`;
      await locked;
      await until(waitingOnFiles, { timeoutMs: DEADLINE_MS, what: 'the second file waiting to finish' });
      const started = await until(() => svc.lines.find((l) => l.msg === 'export job started' && l.exportId === id), {
        timeoutMs: DEADLINE_MS,
        what: 'the job started',
      });
      const holder = Number(started.pid);
      process.kill(holder, 'SIGKILL');
      // Read from the database: a request could reach the killed process and wait out its timeout meanwhile.
      const [atKill] = await db<{ status: string; filesDone: number }[]>`select status, files_done as "filesDone" from export_jobs where id = ${id}`;
      expect(atKill).toEqual({ status: 'running', filesDone: 1 });
      // The progress a holder writes while it reads a file counts that file's rows: as written had it
      // read all of 1991 before it died. The file is written again, so its rows must not count twice.
      const inYear = (year: string) => days.filter((d) => d.startsWith(year)).length * ids.length;
      await db`update export_jobs set rows_done = ${inYear('1990') + inYear('1991')} where id = ${id}`;
      await second`commit`;
      const resumed = await until(() => svc.lines.find((l) => l.msg === 'export job started' && l.exportId === id && l.pid !== holder), {
        timeoutMs: DEADLINE_MS,
        what: 'another process taking the job',
      });
      expect(resumed.attempt).toBe('resumed');
      const ready = await until(async () => ((await job())?.status === 'ready' ? job() : null), {
        timeoutMs: DEADLINE_MS,
        what: 'the job ready',
        intervalMs: 100,
      });
      expect(ready.files.length).toBe(30);
      expect(ready.progress.rowsDone).toBe(ids.length * days.length);

      // The same pinned request, run without a cut, gives the same bytes.
      const again = await until(() => post().catch(() => null), { timeoutMs: DEADLINE_MS, what: 'the second job posted' });
      const whole = await until(
        async () => {
          const j = await jobOf(again);
          return j?.status === 'ready' ? j : null;
        },
        { timeoutMs: DEADLINE_MS, what: 'the second job ready', intervalMs: 100 },
      );
      expect(ready.files.map((f: ExportFile) => [f.name, f.sha256])).toEqual(whole.files.map((f: ExportFile) => [f.name, f.sha256]));
    } finally {
      first.release();
      second.release();
      await db.end();
    }
  });
});
