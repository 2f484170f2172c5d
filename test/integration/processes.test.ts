import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT, runNode } from './child-process.ts';
import { databaseUrl } from './harness.ts';
import { until } from '../support/until.ts';
import { type Answer, DEADLINE_MS, onNewConnection, ServiceProcesses } from './service-processes.ts';

// `npm start`'s entry point with WEB_CONCURRENCY=2 (service-processes.ts):
// limits, counts, downloads, restarts and shutdown across its processes.

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The sum of a counter's series whose labels include every one of `labels`. */
function counterSum(text: string, name: string, labels: string[]): number {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && labels.every((label) => l.includes(label)))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** A bulk download of 100,000 bars, many MB: far more than the sockets buffer, so a client that does not read holds it open. */
async function largeBulkDownload(svc: ServiceProcesses): Promise<string> {
  const instruments = Array.from({ length: 20 }, (_, i) => ({
    assetClass: 'equity',
    displayName: `Processes Bulk ${i}`,
    symbols: [{ symbol: `PB${i}${randomUUID().slice(0, 8)}`, validFrom: '1990-01-01' }],
  }));
  const ids: string[] = JSON.parse((await svc.admin('POST', '/instruments', instruments)).body).data.ids;
  const dates: string[] = [];
  for (let t = Date.parse('2000-01-03'); dates.length < 5_000; t += 86_400_000) {
    const day = new Date(t).getUTCDay();
    if (day !== 0 && day !== 6) dates.push(new Date(t).toISOString().slice(0, 10));
  }
  const csv = ['instrumentId,barDate,closePrice,quoteCurrency,quoteUnit,source,asOf'];
  for (const id of ids) for (const d of dates) csv.push(`${id},${d},10,USD,USD per share,test-fixture,2024-01-01T00:00:00Z`);
  const upload = await onNewConnection(`${svc.adminUrl}/admin/v1/bars/daily`, {
    method: 'POST',
    headers: { authorization: `Bearer ${svc.adminToken}`, 'content-type': 'text/csv' },
    body: `${csv.join('\n')}\n`,
  });
  expect(upload.status).toBe(200);
  return `${svc.publicUrl}/v1/prices/bulk?instrumentIds=${ids.join(',')}&from=2000-01-01&to=2020-01-01`;
}

/** A download asked for and, once its headers arrive, not read: the service holds it open until it is cut. */
function holdDownload(url: string, key: string): Promise<{ status: number; request: http.ClientRequest }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: { authorization: `Bearer ${key}` }, agent: false }, (res) => {
      res.pause();
      resolve({ status: res.statusCode!, request });
    });
    request.on('error', () => {});
    request.once('error', reject);
  });
}

/** A WEB_CONCURRENCY=2 service started before the describe block's tests and stopped after them, with its own DATA_DIR. */
function startedForTheBlock(stem: string, env: Record<string, string>): { readonly svc: ServiceProcesses } {
  let svc: ServiceProcesses | undefined;
  const started = {
    get svc(): ServiceProcesses {
      if (!svc) throw new Error(`the block's service (${stem}) has not started`);
      return svc;
    },
  };
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), stem));
    svc = new ServiceProcesses(dataDir, env);
    await svc.ready();
  }, DEADLINE_MS * 2);
  afterAll(async () => {
    await started.svc?.stop();
    await rm(dataDir, { recursive: true, force: true });
  }, DEADLINE_MS);
  return started;
}

describe('npm start with WEB_CONCURRENCY=2', () => {
  const started = startedForTheBlock('mds-processes-', { RATE_LIMIT_SANDBOX_PER_DAY: '5', BULK_STREAMS_PER_ACCOUNT: '1' });

  it('when it is ready, then a primary and two serving processes run, and the ready line names the two', () => {
    expect(started.svc.pids).toHaveLength(2);
    expect(new Set([...started.svc.pids, started.svc.child.pid]).size).toBe(3);
    for (const pid of started.svc.pids) expect(alive(pid)).toBe(true);
  });

  it(
    'when a sandbox account with a day limit of 5 sends 12 requests spread over both processes, then exactly 5 are admitted, and /metrics counts all 12 once',
    async () => {
      const key = await started.svc.keyFor(['instruments:read'], 'sandbox');
      const before = counterSum(await started.svc.metrics(), 'http_requests_total', ['listener="public"', 'route="/v1/instruments"']);
      const answers: Answer[] = [];
      for (let i = 0; i < 12; i++)
        answers.push(await onNewConnection(`${started.svc.publicUrl}/v1/instruments?query=none`, { headers: { authorization: `Bearer ${key}` } }));
      expect(answers.map((a) => a.status).sort()).toEqual([...Array(5).fill(200), ...Array(7).fill(429)]);
      expect(new Set(await started.svc.servedBy(answers))).toEqual(new Set(started.svc.pids));
      const after = counterSum(await started.svc.metrics(), 'http_requests_total', ['listener="public"', 'route="/v1/instruments"']);
      expect(after - before).toBe(12);
      const text = await started.svc.metrics();
      expect(text).toMatch(/^web_workers_serving 2$/m);
      // Summed over the processes: each has its own auth pool of 2 connections.
      expect(text).toMatch(/^db_pool_max_connections\{pool="auth"\} 4$/m);
    },
    DEADLINE_MS * 2,
  );

  it(
    'when an account holds its one bulk download in one process, then another from the account is refused with 429 in either process, and admitted once the first ends',
    async () => {
      const bulk = await largeBulkDownload(started.svc);
      const key = await started.svc.keyFor(['prices:read'], 'live');
      const held = await holdDownload(bulk, key);
      expect(held.status).toBe(200);
      const refused: Answer[] = [];
      for (let i = 0; i < 4; i++) refused.push(await onNewConnection(bulk, { headers: { authorization: `Bearer ${key}` } }));
      expect(refused.map((a) => a.status)).toEqual([429, 429, 429, 429]);
      expect(JSON.parse(refused[0].body).error.details.concurrentStreams).toHaveLength(1);
      expect(new Set(await started.svc.servedBy(refused))).toEqual(new Set(started.svc.pids));

      held.request.destroy();
      const admitted = await until(
        async () => {
          const status = await new Promise<number>((resolve, reject) => {
            const req = http.get(bulk, { headers: { authorization: `Bearer ${key}` }, agent: false }, (res) => {
              req.destroy();
              resolve(res.statusCode!);
            });
            req.on('error', reject);
          });
          return status === 200 ? status : undefined;
        },
        { timeoutMs: DEADLINE_MS, what: 'a download admitted after the first ended', intervalMs: 50 },
      );
      expect(admitted).toBe(200);
    },
    DEADLINE_MS * 3,
  );

  it(
    'when a serving process is killed, then the primary logs it, replaces it, and counts the exit',
    async () => {
      const [victim, survivor] = started.svc.pids;
      // The downloads the test before dropped are counted when the service sees
      // them close, which may come after that test ends: once none is open and
      // two scrapes in a row agree, each is. Scraped before the kill, so the
      // victim's counts are known to the primary.
      const publicCount = async () => counterSum(await started.svc.metrics(), 'http_requests_total', ['listener="public"']);
      await until(async () => (counterSum(await started.svc.metrics(), 'http_streams_open', []) === 0 ? true : undefined), {
        timeoutMs: DEADLINE_MS,
        what: 'every download closed',
        intervalMs: 50,
      });
      let publicBefore = await publicCount();
      await until(async () => (publicBefore === (publicBefore = await publicCount()) ? true : undefined), {
        timeoutMs: DEADLINE_MS,
        what: 'the public count settled',
        intervalMs: 50,
      });
      process.kill(victim, 'SIGKILL');
      const replaced = await until(() => started.svc.lines.find((l) => l.msg === 'serving process replaced'), {
        timeoutMs: DEADLINE_MS,
        what: 'the replacement',
        intervalMs: 50,
      });
      const exit = started.svc.lines.find((l) => l.msg === 'a serving process exited; replacing it');
      expect(exit).toMatchObject({ pid: victim, signal: 'SIGKILL' });
      const replacement = replaced.pid!;
      expect([victim, survivor, started.svc.child.pid]).not.toContain(replacement);
      const answers: Answer[] = [];
      for (let i = 0; i < 6; i++) answers.push(await onNewConnection(`${started.svc.publicUrl}/healthz`));
      expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
      expect(new Set(await started.svc.servedBy(answers))).toEqual(new Set([survivor, replacement]));
      const text = await started.svc.metrics();
      expect(text).toMatch(/^web_worker_exits_total\{how="SIGKILL"\} 1$/m);
      // The victim's requests stay counted: the six since are added to them, not to nothing.
      expect(counterSum(text, 'http_requests_total', ['listener="public"'])).toBe(publicBefore + 6);
      expect(text).toMatch(/^web_workers_serving 2$/m);
      started.svc.pids = [survivor, replacement];
    },
    DEADLINE_MS * 2,
  );

  it(
    'when SIGTERM arrives while an upload is in flight, then the upload completes and every process exits, the primary with 0',
    async () => {
      const created = await started.svc.admin('POST', '/instruments', [
        { assetClass: 'equity', displayName: 'Processes Drain', symbols: [{ symbol: `PD${Date.now()}`, validFrom: '2000-01-01' }] },
      ]);
      const [id] = JSON.parse(created.body).data.ids;
      const row = (d: string) => `${id},${d},10,USD,USD per share,test-fixture,2024-01-01T00:00:00Z\n`;
      let continued!: () => void;
      const serving = new Promise<void>((resolve) => (continued = resolve));
      const answer = new Promise<Answer>((resolve, reject) => {
        const req = http.request(
          `${started.svc.adminUrl}/admin/v1/bars/daily`,
          {
            method: 'POST',
            agent: false,
            // A serving process answers 100 Continue once it hands the request to its handler: from then on it is in flight.
            headers: { authorization: `Bearer ${started.svc.adminToken}`, 'content-type': 'text/csv', expect: '100-continue' },
          },
          (res) => {
            let body = '';
            res.setEncoding('utf8').on('data', (c: string) => (body += c));
            res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
          },
        );
        req.on('error', reject);
        req.on('continue', () => {
          req.write(`instrumentId,barDate,closePrice,quoteCurrency,quoteUnit,source,asOf\n${row('2020-01-02')}`);
          continued();
          void stopping.then(() => req.end(row('2020-01-03')));
        });
      });
      let signalled!: () => void;
      const stopping = new Promise<void>((resolve) => (signalled = resolve));
      await serving;
      started.svc.child.kill('SIGTERM');
      await until(() => started.svc.lines.find((l) => l.msg === 'shutting down' && l.pid === started.svc.child.pid), {
        timeoutMs: DEADLINE_MS,
        what: 'the primary shutting down',
        intervalMs: 50,
      });
      signalled();
      const res = await answer;
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body).data).toMatchObject({ rows: 2, inserted: 2 });
      expect(await started.svc.exited).toBe(0);
      await started.svc.outputClosed;
      for (const pid of started.svc.pids) expect(alive(pid)).toBe(false);
      // The primary hands the serving processes the admin token and the database URL in their environment; no log line holds either.
      const output = JSON.stringify(started.svc.lines) + started.svc.stderr;
      expect(output).not.toContain(started.svc.adminToken);
      const password = decodeURIComponent(new URL(databaseUrl()).password);
      if (password) expect(output).not.toContain(password);
    },
    DEADLINE_MS * 2,
  );
});

describe('npm start with WEB_CONCURRENCY=2: downloads shared fairly across processes', () => {
  const started = startedForTheBlock('mds-processes-slots-', { BULK_STREAMS_PER_ACCOUNT: '2', BULK_STREAMS_MAX: '2' });

  it(
    "when one account holds both of the service's download slots and another asks, then one of the first account's downloads is cut in whichever process serves it, and the other account is admitted",
    async () => {
      const bulk = await largeBulkDownload(started.svc);
      const [greedy, other] = [await started.svc.keyFor(['prices:read'], 'live'), await started.svc.keyFor(['prices:read'], 'live')];
      const held = [await holdDownload(bulk, greedy), await holdDownload(bulk, greedy)];
      expect(held.map((h) => h.status)).toEqual([200, 200]);
      const admitted = await holdDownload(bulk, other);
      expect(admitted.status).toBe(200);
      // A client that does not read never sees its connection end; the serving process that cut it logs so.
      const cut = await until(() => started.svc.lines.find((l) => l.msg.startsWith('download cut')), {
        timeoutMs: DEADLINE_MS,
        what: 'the cut',
        intervalMs: 50,
      });
      expect(started.svc.pids).toContain(cut.pid);
      expect(await started.svc.metrics()).toMatch(/^http_streams_preempted_total\{route="\/v1\/prices\/bulk",reason="over_share"\} 1$/m);
      for (const h of [...held, admitted]) h.request.destroy();
    },
    DEADLINE_MS * 3,
  );
});

describe('npm start with WEB_CONCURRENCY=2: a start that fails', () => {
  it(
    'when PORT is taken by another process, then the start fails with the one line a single process prints, and no process is left',
    async () => {
      const taken = net.createServer();
      const port = await new Promise<number>((resolve) => taken.listen(0, '127.0.0.1', () => resolve((taken.address() as net.AddressInfo).port)));
      const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mds-processes-busy-'));
      try {
        const svc = new ServiceProcesses(dataDir, { PORT: String(port) });
        const code = await svc.exited;
        expect(code).toBe(1);
        expect(svc.stderr.trimEnd().split('\n')).toEqual([
          `market-data-service could not start: port ${port} (PORT) is already in use on 127.0.0.1: stop the process using it or set PORT to a free port`,
        ]);
        await svc.outputClosed;
      } finally {
        taken.close();
        await rm(dataDir, { recursive: true, force: true });
      }
    },
    DEADLINE_MS,
  );
});

describe('npm start: WEB_CONCURRENCY', () => {
  it.each(['0', 'two', '1.5'])('when WEB_CONCURRENCY is %s, then the service refuses to start, naming the variable', async (value) => {
    const run = await runNode(['server/main.ts'], {
      cwd: PROJECT_ROOT,
      env: { WEB_CONCURRENCY: value, DATABASE_URL: databaseUrl(), PORT: '0', ADMIN_PORT: '0' },
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^ {2}WEB_CONCURRENCY: /m);
  });
});
