import { spawn } from 'node:child_process';
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardClient } from '../support/dashboard-client.ts';
import { PROJECT_ROOT } from './child-process.ts';
import { startService, type Service } from './harness.ts';
import { until } from '../support/until.ts';

// Who may hold the public listener's connections: one address at most
// MAX_CONNECTIONS_PER_ADDRESS of them, a connection that sends nothing at
// most FIRST_BYTE_TIMEOUT_MS; and which address a request is taken to come
// from behind a proxy (TRUST_PROXY). Clients come from other loopback
// addresses (127.0.0.2, 127.0.0.3, ...), each a different client to the service.

const ATTACKER = '127.0.0.2';
const BYSTANDER = '127.0.0.3';

/** A service whose log lines are kept. */
async function loggedService(env: Record<string, string>) {
  const lines: string[] = [];
  const svc = await startService({ LOG_LEVEL: 'info', ...env }, { write: (line: string) => void lines.push(line) });
  return { svc, lines };
}

const portOf = (svc: Service) => Number(new URL(svc.runtime.publicUrl).port);

/** The value of one series on the service's /metrics (0 when it has none yet). */
async function metric(svc: Service, series: string): Promise<number> {
  const text = await (await fetch(`${svc.runtime.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}
const dropped = (reason: string) => `http_connections_dropped_total{listener="public",reason="${reason}"}`;

/** A connection from `localAddress` to the public listener on 127.0.0.1 that sends `text` (nothing by default) and then waits. */
function openSocket(port: number, localAddress: string, text = '') {
  const socket: Socket = connect({ port, host: '127.0.0.1', localAddress });
  let received = '';
  socket.on('data', (d) => (received += d));
  socket.on('error', () => {});
  const connected = new Promise<void>((resolve) => socket.once('connect', () => (text && socket.write(text), resolve())));
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
  return { socket, connected, closed };
}

/** One GET on a new connection from `localAddress`: its status, or the error that ended it. */
function get(
  port: number,
  target: string,
  localAddress: string,
  headers: Record<string, string> = {},
): Promise<{ status?: number; error?: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: target, localAddress, headers, agent: false, timeout: 10_000 }, (res) => {
      res.resume();
      res.once('end', () => resolve({ status: res.statusCode, ms: performance.now() - started }));
      res.once('error', (err) => resolve({ error: err.message, ms: performance.now() - started }));
    });
    req.once('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.once('error', (err) => resolve({ error: (err as NodeJS.ErrnoException).code ?? err.message, ms: performance.now() - started }));
    req.end();
  });
}

describe('connections per address', () => {
  const CAP = 20;
  let svc: Service;
  let lines: string[];
  beforeAll(async () => {
    // On every interface, IPv6 included: an IPv4 client then arrives as ::ffff:127.0.0.2, and is counted as 127.0.0.2.
    // The deadlines are far off, so that only the cap closes a connection here.
    ({ svc, lines } = await loggedService({
      HOST: '::',
      MAX_CONNECTIONS_PER_ADDRESS: String(CAP),
      FIRST_BYTE_TIMEOUT_MS: '60000',
      HEADERS_TIMEOUT_MS: '60000',
      REQUEST_TIMEOUT_MS: '60000',
    }));
  });
  afterAll(() => svc.stop());

  it('when HOST is ::, then the public listener is on every interface', () => {
    expect(new URL(svc.runtime.publicUrl).hostname).toBe('[::]');
  });

  it(`when one address has ${CAP} connections open, then each further one from it is closed at once unanswered, counted and logged, while another address is served; once they close, the first is served again`, async () => {
    const port = portOf(svc);
    const before = await metric(svc, dropped('per_address'));
    const sockets: ReturnType<typeof openSocket>[] = [];
    for (let i = 0; i < CAP + 10; i++) {
      const s = openSocket(port, ATTACKER);
      await s.connected;
      sockets.push(s);
    }
    try {
      const isClosed = () => sockets.filter((s) => s.socket.closed);
      await until(() => isClosed().length >= 10, { timeoutMs: 20_000, what: '10 connections closed' });
      // The listener accepts in order, so by this answer it has dealt with all 30.
      expect((await get(port, '/healthz', BYSTANDER)).status).toBe(200);
      expect(isClosed()).toHaveLength(10);
      expect(await Promise.all(isClosed().map((s) => s.closed))).toEqual(Array(10).fill(''));
      const refused = await get(port, '/healthz', ATTACKER);
      expect(refused.status).toBeUndefined();
      expect(await metric(svc, dropped('per_address'))).toBe(before + 11);
      const warned = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'connection closed unanswered: its address has MAX_CONNECTIONS_PER_ADDRESS open');
      expect(warned).toHaveLength(1);
      expect(warned[0]).toMatchObject({ level: 40, listener: 'public', address: ATTACKER, maxConnectionsPerAddress: CAP });
    } finally {
      for (const s of sockets) s.socket.destroy();
    }
    await until(async () => (await get(port, '/healthz', ATTACKER)).status === 200, { timeoutMs: 20_000, what: 'the address served again' });
  });
});

describe('the first byte of a request', () => {
  let svc: Service;
  beforeAll(async () => {
    ({ svc } = await loggedService({ FIRST_BYTE_TIMEOUT_MS: '1000', HEADERS_TIMEOUT_MS: '8000' }));
  });
  afterAll(() => svc.stop());

  it('when HOST is unset, then the public listener is on 127.0.0.1 only', () => {
    expect(new URL(svc.runtime.publicUrl).hostname).toBe('127.0.0.1');
  });

  it('when a new connection sends nothing for FIRST_BYTE_TIMEOUT_MS, then it is closed unanswered and counted; one that has begun its request is held to HEADERS_TIMEOUT_MS and answered 408', async () => {
    const port = portOf(svc);
    const before = await metric(svc, dropped('first_byte_timeout'));
    const silent = openSocket(port, ATTACKER);
    const begun = openSocket(port, ATTACKER, 'GET /healthz HTTP/1.1\r\nHost: x\r\n');
    await Promise.all([silent.connected, begun.connected]);
    try {
      expect(await silent.closed).toBe('');
      // 1 s against 8 s: the one that began its request is still waiting for its headers.
      expect(begun.socket.closed).toBe(false);
      expect((await begun.closed).split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
      expect(await metric(svc, dropped('first_byte_timeout'))).toBe(before + 1);
    } finally {
      silent.socket.destroy();
      begun.socket.destroy();
    }
  });
});

describe('idle sockets from one address', () => {
  // Above MAX_CONNECTIONS' default (4,096): enough to fill the listener were there no cap per address.
  const IDLE = 4_150;
  const PROBES = 300;
  const PROBE_INTERVAL_MS = 50;
  let svc: Service;
  let key: string;
  beforeAll(async () => {
    svc = await startService();
    key = await svc.keyWith(['instruments:read']);
  });
  afterAll(() => svc.stop());

  it(
    `when ${IDLE} idle sockets from one address are reopened as soon as they are closed, then every request from another address is answered`,
    { timeout: 180_000 },
    async () => {
      const port = portOf(svc);
      const flood = spawn(process.execPath, [path.join(PROJECT_ROOT, 'bench/lib/idle-flood.ts')], {
        env: { PATH: process.env.PATH, PORT: String(port), HOST: '127.0.0.1', LOCAL_ADDRESS: ATTACKER, COUNT: String(IDLE) },
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      let out = '';
      flood.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      const exited = new Promise<void>((resolve) => flood.once('exit', () => resolve()));
      let answers: Awaited<ReturnType<typeof get>>[];
      try {
        await until(() => out.includes('"ready":true'), { timeoutMs: 60_000, what: `all ${IDLE} sockets accepted once` });
        // On schedule, whether or not earlier ones have been answered, each on a connection of its own.
        const pending: ReturnType<typeof get>[] = [];
        const started = performance.now();
        for (let i = 0; i < PROBES; i++) {
          const wait = started + i * PROBE_INTERVAL_MS - performance.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
          pending.push(get(port, '/v1/instruments?query=X', BYSTANDER, { authorization: `Bearer ${key}` }));
        }
        answers = await Promise.all(pending);
      } finally {
        flood.stdin!.end();
        await exited;
      }
      const counts = JSON.parse(out.trim().split('\n').at(-1)!) as { connects: number; closes: number };
      // The flood was real: every socket was accepted, and the service kept closing them while it was reopening them.
      expect(counts.connects).toBeGreaterThanOrEqual(IDLE);
      expect(counts.closes).toBeGreaterThan(0);
      expect(answers.filter((a) => a.error)).toEqual([]);
      expect(answers.map((a) => a.status)).toEqual(Array(PROBES).fill(200));
      const ms = answers.map((a) => a.ms).sort((a, b) => a - b);
      const at = (p: number) => ms[Math.min(ms.length - 1, Math.ceil((p / 100) * ms.length) - 1)].toFixed(1);
      console.info(`idle flood: ${counts.connects} connects, ${counts.closes} closes; another address: p50 ${at(50)} ms, p99 ${at(99)} ms, max ${at(100)} ms`);
    },
  );
});

describe('TRUST_PROXY', () => {
  const PROXY = BYSTANDER;
  const PER_ADDRESS = 2;
  let svc: Service;
  beforeAll(async () => {
    svc = await startService({ TRUST_PROXY: PROXY, DASHBOARD_SIGN_IN_PER_ADDRESS: String(PER_ADDRESS) });
  });
  afterAll(() => svc.stop());

  const attempt = (client: DashboardClient, forwardedFor: string) =>
    client.signIn(`guess-${randomUUID()}@example.com`, 'guessed password', { 'x-forwarded-for': forwardedFor, accept: 'application/json' });

  it('when the peer is the trusted proxy, then the sign-in limit per address counts the address it forwards; any other peer is counted as itself, whatever X-Forwarded-For it sends', async () => {
    const proxy = new DashboardClient(svc.runtime.publicUrl, PROXY);
    const client = '203.0.113.7';
    for (let i = 0; i < PER_ADDRESS; i++) expect((await attempt(proxy, client)).status).toBe(401);
    const refused = await attempt(proxy, client);
    expect(refused.status).toBe(429);
    expect(Object.keys(JSON.parse(refused.text).error.details)).toEqual(['address']);
    // Another client behind the same proxy has counts of its own.
    expect((await attempt(proxy, '203.0.113.8')).status).toBe(401);

    // A peer that is not the proxy cannot pick a fresh address for each attempt.
    const direct = new DashboardClient(svc.runtime.publicUrl, '127.0.0.4');
    const statuses = [];
    for (let i = 0; i <= PER_ADDRESS; i++) statuses.push((await attempt(direct, `198.51.100.${i + 1}`)).status);
    expect(statuses).toEqual([...Array(PER_ADDRESS).fill(401), 429]);
  });
});
