import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardClient } from '../support/dashboard-client.ts';
import { createInstrument, dailyBar } from './fixtures.ts';
import { startService, type Service } from './harness.ts';
import { percentEncoded } from '../support/percent-encoded.ts';
import { until } from '../support/until.ts';

// The edges of HTTP that no route's own tests reach: static files that do not
// exist, what the log and the answers may quote, request charsets and
// encodings, instants at T24, and clients that send their request slowly or
// open too many connections. Each service here keeps its log, to check it.

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One request on a new connection, its target sent byte for byte (never normalised as a URL would be). */
function send(base: string, target: string, init: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}): Promise<Answer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ hostname, port, method: init.method ?? 'GET', path: target, headers: init.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/** A service whose log lines are kept in `lines`. */
async function loggedService(env: Record<string, string> = {}) {
  const lines: string[] = [];
  const svc = await startService({ LOG_LEVEL: 'info', ...env }, { write: (line: string) => void lines.push(line) });
  return { svc, lines, log: () => lines.join('') };
}

const requestLines = (lines: string[]) => lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');

/**
 * The log lines written from `lines[from]` on, once `count` request lines are among them: a request's line is
 * written as its response ends, so it can follow the client's receipt of the answer by a turn of the event loop.
 */
const untilRequestsLogged = async (lines: string[], from: number, count: number) => {
  await until(() => requestLines(lines.slice(from)).length >= count, { timeoutMs: 5_000, what: `${count} request log lines` });
  return lines.slice(from);
};

/** `text` as a client might paste it into a URL path: as is, fully or partly percent-encoded in either case, encoded twice, `_` alone encoded. */
const encodingsOf = (text: string) => [
  text,
  percentEncoded(text),
  percentEncoded(text, 'lower'),
  percentEncoded(text, 'upper', 3),
  percentEncoded(percentEncoded(text)),
  text.replaceAll('_', '%5f'),
];

describe('dashboard assets', () => {
  let svc: Service;
  let lines: string[];
  beforeAll(async () => {
    ({ svc, lines } = await loggedService());
  });
  afterAll(() => svc.stop());

  it('when a dashboard asset does not exist, then 404: the dashboard’s page for a browser, the envelope for JSON, with no file path and nothing logged above info', async () => {
    const from = lines.length;
    for (const target of [
      '/account/assets/nonexistent.js',
      '/account/assets/',
      '/account/assets',
      '/account/assets/uplot/',
      '/account/assets/uplot/nonexistent.js',
    ]) {
      const page = await send(svc.runtime.publicUrl, target, { headers: { accept: 'text/html' } });
      expect(page.status, target).toBe(404);
      expect(page.headers['content-type'], target).toMatch(/^text\/html/);
      expect(page.headers['content-security-policy'], target).toContain("frame-ancestors 'none'");
      expect(page.text, target).toContain('dashboard asset not found');
      const json = await send(svc.runtime.publicUrl, target, { headers: { accept: 'application/json' } });
      expect(json.status, target).toBe(404);
      expect(JSON.parse(json.text).error).toMatchObject({ code: 'not_found', message: 'dashboard asset not found' });
      for (const answer of [page, json]) expect(answer.text, target).not.toContain('server/dashboard');
    }
    expect((await send(svc.runtime.publicUrl, '/account/assets/keys.js')).status).toBe(200);
    // Two requests for each of the 5 targets, and keys.js.
    const written = (await untilRequestsLogged(lines, from, 11)).map((l) => JSON.parse(l));
    expect(written.filter((l) => l.level > 30)).toEqual([]);
    expect(written.map((l) => JSON.stringify(l)).filter((l) => l.includes('server/dashboard'))).toEqual([]);
  });

  it('when an asset path tries to leave its folder (.., %2e%2e, %2f, NUL, malformed percent-encoding), then 404 every time and nothing of the file is sent', async () => {
    const targets = [
      '/account/assets/../routes.ts',
      '/account/assets/../../config.ts',
      '/account/assets/%2e%2e/routes.ts',
      '/account/assets/%2E%2E%2Froutes.ts',
      '/account/assets/..%2froutes.ts',
      '/account/assets/..%5croutes.ts',
      '/account/assets/uplot/..%2f..%2f..%2fpackage.json',
      '/account/assets/keys.js%00',
      '/account/assets/%00',
      '/account/assets/keys.js%00.css',
      '/account/assets/%FF',
      '/account/assets/%',
      '/account/assets/%E0%A4%A',
      `/account/assets/${'x'.repeat(3_000)}`,
      '/account/assets/keys.js/x',
    ];
    for (const target of targets) {
      const res = await send(svc.runtime.publicUrl, target);
      expect(res.status, target).toBe(404);
      expect(res.headers['content-type'], target).toMatch(/^text\/html/);
      expect(res.text, target).not.toMatch(/\bimport\b|"dependencies"|export function/);
    }
  });

  it('when an asset is posted to, then 405 with Allow: GET, HEAD', async () => {
    const res = await send(svc.runtime.publicUrl, '/account/assets/keys.js', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=1',
    });
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
  });
});

describe('logs and echoes', () => {
  let svc: Service;
  let lines: string[];
  let log: () => string;
  let key: string;
  beforeAll(async () => {
    ({ svc, lines, log } = await loggedService());
    key = await svc.keyWith(['instruments:read']);
  });
  afterAll(() => svc.stop());

  it('when a key or its bare secret is in a path, in any encoding, then the log and the answer hold neither it nor its encoded form', async () => {
    const secret = key.slice('pk_live_'.length);
    const forms = [...encodingsOf(key), ...encodingsOf(secret)];
    const targets = forms.flatMap((form) => [
      `/v1/${form}`,
      `/v1/instruments/${form}`,
      `/v1/instruments/${form}/prices?from=2020-01-01&to=2020-01-31`,
      // Malformed percent-encoding after it: the answer names the segment.
      `/v1/instruments/${form}%FF`,
      `/v1/instruments/x/${form}`,
      // A parameter's name is quoted back in the answer, as unknown.
      `/v1/instruments?${form}=1`,
    ]);
    const answers: string[] = [];
    const from = lines.length;
    for (const target of targets) {
      const res = await send(svc.runtime.publicUrl, target, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status, target).toBeLessThan(500);
      answers.push(JSON.stringify(res.headers), res.text);
    }
    await untilRequestsLogged(lines, from, targets.length);
    for (const text of [answers.join('\n'), log()]) {
      expect(text).not.toContain(secret);
      for (const form of forms) expect(text).not.toContain(form);
    }
    expect(log()).toContain('"path":"/v1/pk_live_[redacted]"');
    expect(log()).toContain('"path":"/v1/[redacted]"');
  });

  it('when no route serves a path, then the 404 says so without quoting the path', async () => {
    const res = await svc.get(`/v1/${key}`, key);
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ code: 'not_found', message: 'no route serves GET at this path' });
    const admin = await send(svc.runtime.adminUrl, `/admin/v1/${key}`, { headers: { authorization: `Bearer ${svc.runtime.adminToken}` } });
    expect(admin.status).toBe(404);
    expect(admin.text).not.toContain(key.slice(8));
    const wrongMethod = await send(svc.runtime.publicUrl, `/v1/instruments/${key}/prices`, { method: 'DELETE' });
    expect(wrongMethod.status).toBe(405);
    expect(JSON.parse(wrongMethod.text).error.message).toBe('DELETE is not allowed on /v1/instruments/:id/prices; allowed: GET, HEAD, OPTIONS');
  });

  it('when a holder pastes a password into a dashboard path, then the log holds the route template or /account/[unmatched], and the page does not quote it', async () => {
    const accountId = await svc.createAccount();
    const login = `edges-${randomUUID()}@example.com`;
    const password = `pasted password ${randomUUID()}`;
    expect((await svc.admin('POST', `/accounts/${accountId}/password`, { login, password })).status).toBe(200);
    const client = new DashboardClient(svc.runtime.publicUrl);
    expect((await client.signIn(login, password)).status).toBe(303);
    const csrf = await client.csrfToken();
    const pasted = encodeURIComponent(password);
    const from = lines.length;
    const answers = [
      await client.get(`/account/${pasted}`),
      await client.get(`/account/keys/${pasted}`),
      await client.get(`/account/keys/${pasted}/revoke`),
      await client.post(`/account/${pasted}`, { csrf }),
      await client.get(`/account/assets/${pasted}`),
      await new DashboardClient(svc.runtime.publicUrl).get(`/account/${pasted}`),
      await client.get(`/ACCOUNT/${pasted}`),
      // Malformed percent-encoding after it: the answer names the bad escape alone.
      await client.get(`/account/keys/${pasted}%FF`),
    ];
    expect(answers.map((a) => a.status)).toEqual([404, 400, 400, 404, 404, 303, 404, 400]);
    expect(JSON.parse(answers[7].text).error.details).toEqual({ path: ['"%FF" is not valid percent-encoded UTF-8'] });
    for (const answer of answers) expect(answer.text).not.toContain(pasted);
    const written = requestLines(await untilRequestsLogged(lines, from, answers.length));
    expect(written.map((l) => l.path)).toEqual([
      '/account/[unmatched]',
      '/account/keys/:id',
      '/account/keys/:id/revoke',
      '/account/{*any}',
      '/account/assets/*',
      '/account/[unmatched]',
      '/account/[unmatched]',
      // The URIError leaves the router before its route is recorded.
      '/account/[unmatched]',
    ]);
    for (const text of [log(), ...answers.map((a) => a.text)]) {
      expect(text).not.toContain(pasted);
      expect(text).not.toContain(password);
    }
  });

  it('when a dashboard path comes in absolute form, with doubled slashes, an encoded slash or letter, in capitals or with dot segments, then the log holds its route or /account/[unmatched], never the path as sent nor the host part of the target', async () => {
    const password = `pasted password ${randomUUID()}`;
    const pasted = encodeURIComponent(password);
    const { host, port } = new URL(svc.runtime.publicUrl);
    const originForm = [`/account/${pasted}`, `/account/keys/${pasted}`, `/account/keys/${pasted}/revoke`, '/healthz', '/v1/instruments'];
    const unrouted = [
      `//account/${pasted}`,
      `///account/keys/${pasted}`,
      `/account%2F${pasted}`,
      `/account%2f${pasted}`,
      `/account%252F${pasted}`,
      `/%61ccount/${pasted}`,
      `/ACCOUNT%2F${pasted}`,
      `/./account/${pasted}`,
      `/v1/../account/${pasted}`,
      `/account\\${pasted}`,
    ];
    const from = lines.length;
    const answers = [];
    for (const target of [
      ...originForm,
      ...originForm.map((p) => `http://${host}${p}`),
      ...originForm.map((p) => `HTTP://LOCALHOST:${port}${p}`),
      ...originForm.map((p) => `http://holder:${pasted}@${host}${p}`),
      ...unrouted,
    ]) {
      answers.push(await send(svc.runtime.publicUrl, target));
    }
    const written = requestLines(await untilRequestsLogged(lines, from, answers.length)).map((l) => l.path);
    const asOriginForm = written.slice(0, originForm.length);
    expect(asOriginForm.slice(0, 3).every((p) => p.startsWith('/account/'))).toBe(true);
    expect(asOriginForm.slice(3)).toEqual(['/healthz', '/v1/instruments']);
    // Absolute form is logged as its origin form is, whatever the scheme's case, the host or the user information.
    expect(written).toEqual([...asOriginForm, ...asOriginForm, ...asOriginForm, ...asOriginForm, ...unrouted.map(() => '/account/[unmatched]')]);
    for (const text of [log(), ...answers.map((a) => a.text)]) {
      expect(text).not.toContain(pasted);
      expect(text).not.toContain(password);
    }
    expect(log()).not.toMatch(/"path":"[^"]*(?:localhost|127\.0\.0\.1|holder)/i);
  });

  it('when a client sends X-Request-Id, then it is kept only when short, of safe characters and not shaped like a key or a secret', async () => {
    const secret = randomBytes(32).toString('base64url');
    const kept = ['client-trace.1', 'a.'.repeat(32), '0123456789abcdef0123456789abcdef', randomUUID()];
    const replaced = [
      'a.'.repeat(32) + 'x',
      key,
      key.slice('pk_live_'.length),
      `trace.${secret}`,
      secret.toLowerCase(),
      'pk_live_short',
      'has space',
      '../../etc/passwd%00',
      '',
    ];
    const from = lines.length;
    for (const id of kept) {
      const res = await svc.get('/healthz', undefined, { 'x-request-id': id });
      expect(res.headers.get('x-request-id')).toBe(id);
    }
    for (const id of replaced) {
      const res = await svc.get('/healthz', undefined, { 'x-request-id': id });
      expect(res.headers.get('x-request-id'), id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    }
    const ids = requestLines(await untilRequestsLogged(lines, from, kept.length + replaced.length)).map((l) => l.requestId);
    expect(ids.slice(0, kept.length)).toEqual(kept);
    for (const text of [log(), ids.join('\n')]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(key.slice('pk_live_'.length));
    }
  });
});

describe('headers of pages', () => {
  let svc: Service;
  beforeAll(async () => {
    ({ svc } = await loggedService());
  });
  afterAll(() => svc.stop());

  it('when a page, an asset, an icon or an error is served, then it carries X-Content-Type-Options: nosniff and Referrer-Policy: same-origin', async () => {
    const targets = [
      '/docs',
      '/docs/reference.js',
      '/docs/reference.css',
      '/docs/assets/swagger-ui.css',
      '/docs/assets/swagger-ui-bundle.js',
      '/docs/assets/nonexistent.js',
      '/docs/nonexistent',
      '/favicon.ico',
      '/favicon.svg',
      '/account/sign-in',
      '/account/assets/nonexistent.js',
      '/account/nonexistent',
      '/nonexistent',
      '/healthz',
      '/v1/instruments',
    ];
    const statuses = [];
    for (const target of targets) {
      const res = await send(svc.runtime.publicUrl, target, { headers: { accept: 'text/html' } });
      statuses.push(res.status);
      expect(res.headers['x-content-type-options'], target).toBe('nosniff');
      expect(res.headers['referrer-policy'], target).toBe('same-origin');
    }
    // Signed out, a dashboard page that does not exist sends the browser to sign in.
    expect(statuses).toEqual([200, 200, 200, 200, 200, 404, 404, 200, 200, 200, 404, 303, 404, 200, 401]);
  });
});

describe('request bodies: charsets and content encodings', () => {
  let svc: Service;
  let key: string;
  let instrumentId: string;
  beforeAll(async () => {
    svc = await startService();
    key = await svc.keyWith(['analytics:read']);
    instrumentId = (await createInstrument(svc)).id;
  });
  afterAll(() => svc.stop());

  const OPTION = JSON.stringify({ spot: 100, strike: 100, expiryDays: 30, rate: 0.05, vol: 0.2, type: 'call' });
  const postOption = (headers: Record<string, string>, body: string | Buffer = OPTION) =>
    send(svc.runtime.publicUrl, '/v1/analytics/option-price', { method: 'POST', headers: { authorization: `Bearer ${key}`, ...headers }, body });
  const upload = (route: string, headers: Record<string, string>, body: string | Buffer) =>
    send(svc.runtime.adminUrl, `/admin/v1${route}`, { method: 'POST', headers: { authorization: `Bearer ${svc.runtime.adminToken}`, ...headers }, body });
  const barsOf = async (id: string) => (await svc.sql`select count(*)::int as n from daily_bars where instrument_id = ${id}`)[0].n;
  const errorOf = (answer: Answer) => JSON.parse(answer.text).error;

  it('when a /v1 JSON body names a charset other than UTF-8, then 415; utf-8 and utf8 in any case are read', async () => {
    for (const charset of ['utf-16', 'UTF-16LE', 'latin1', 'iso-8859-1', 'us-ascii', '']) {
      const res = await postOption({ 'content-type': `application/json; charset=${charset}` });
      expect(res.status, charset).toBe(415);
      expect(errorOf(res), charset).toMatchObject({ code: 'unsupported_media_type', details: { 'content-type': [expect.stringContaining('charset')] } });
    }
    for (const charset of ['utf-8', 'UTF-8', 'utf8', 'UTF8', '"utf-8"']) {
      expect((await postOption({ 'content-type': `application/json; charset=${charset}` })).status, charset).toBe(200);
    }
    expect((await postOption({ 'content-type': 'application/json', 'content-encoding': 'gzip' }, gzipSync(OPTION))).status).toBe(200);
    expect((await postOption({ 'content-type': 'application/json', 'content-encoding': 'compress' })).status).toBe(415);
    const admin = await upload('/accounts', { 'content-type': 'application/json; charset=utf-16' }, JSON.stringify({ name: 'charset' }));
    expect(admin.status).toBe(415);
  });

  it('when an upload is sent with Content-Encoding: gzip, then it is inflated and stored, in each format', async () => {
    const bar = (barDate: string) => dailyBar(instrumentId, { barDate, close: 10 });
    const csv = (rows: ReturnType<typeof bar>[]) => {
      const columns = Object.keys(rows[0]);
      return [columns.join(','), ...rows.map((r) => columns.map((c) => String(r[c as keyof typeof r])).join(','))].join('\n');
    };
    const uploads: [string, string][] = [
      ['application/json', JSON.stringify([bar('2021-03-01'), bar('2021-03-02')])],
      ['application/x-ndjson', [bar('2021-03-03'), bar('2021-03-04')].map((r) => JSON.stringify(r)).join('\n')],
      ['text/csv; charset=UTF-8', csv([bar('2021-03-05'), bar('2021-03-08')])],
    ];
    for (const [type, body] of uploads) {
      for (const encoding of ['gzip', 'x-gzip', 'GZIP']) {
        const res = await upload('/bars/daily', { 'content-type': type, 'content-encoding': encoding }, gzipSync(body));
        expect(res.status, `${type} ${encoding}: ${res.text}`).toBe(200);
        expect(JSON.parse(res.text).data.rows).toBe(2);
      }
    }
    expect(await barsOf(instrumentId)).toBe(6);
  });

  it('when an upload names another encoding or charset, then 415; bytes that are not gzip, 400; and nothing is stored', async () => {
    const id = (await createInstrument(svc)).id;
    const body = JSON.stringify([dailyBar(id, { barDate: '2021-03-01', close: 10 })]);
    for (const encoding of ['deflate', 'br', 'compress', 'gzip, gzip', 'x-unknown']) {
      const res = await upload('/bars/daily', { 'content-type': 'application/json', 'content-encoding': encoding }, body);
      expect(res.status, encoding).toBe(415);
      expect(errorOf(res).details, encoding).toHaveProperty(['content-encoding']);
    }
    for (const charset of ['utf-16', 'UTF-16LE', 'latin1', 'windows-1252']) {
      const res = await upload('/bars/daily', { 'content-type': `application/json; charset=${charset}` }, body);
      expect(res.status, charset).toBe(415);
      expect(errorOf(res).details, charset).toHaveProperty(['content-type']);
    }
    const truncated = gzipSync(body).subarray(0, 20);
    for (const bytes of [Buffer.from(body), truncated]) {
      const res = await upload('/bars/daily', { 'content-type': 'application/json', 'content-encoding': 'gzip' }, bytes);
      expect(res.status).toBe(400);
      expect(errorOf(res)).toMatchObject({ code: 'invalid_request', message: 'the body is not valid gzip' });
    }
    expect(await barsOf(id)).toBe(0);
    expect((await upload('/bars/daily', { 'content-type': 'application/json; charset=utf8' }, body)).status).toBe(200);
  });

  it('when a gzip upload inflates past a limit, then it is refused before the rest of the body arrives: 413 for a JSON array over 64 MiB, 400 for a record over 1 MiB', async () => {
    // 100 MiB of spaces inflate from 100 KB; each body is sent whole but for its last 10 bytes, which never come.
    const bomb = gzipSync(Buffer.concat([Buffer.from('['), Buffer.alloc(100 * 1024 * 1024, ' '), Buffer.from(']')]));
    const longLine = gzipSync(`{"instrumentId":"${'x'.repeat(2 * 1024 * 1024)}"}\n`);
    for (const [type, bytes, status, message] of [
      ['application/json', bomb, 413, 'JSON bodies are limited to 64 MiB'],
      ['application/x-ndjson', longLine, 400, 'row 0 is longer than 1048576 characters'],
    ] as const) {
      const { hostname, port } = new URL(svc.runtime.adminUrl);
      const socket = connect(Number(port), hostname);
      let received = '';
      socket.on('data', (d) => (received += d));
      socket.write(
        `POST /admin/v1/bars/daily HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.runtime.adminToken}\r\nContent-Type: ${type}\r\n` +
          `Content-Encoding: gzip\r\nContent-Length: ${bytes.length + 10}\r\n\r\n`,
      );
      socket.write(bytes);
      try {
        await until(() => received.includes(message), { timeoutMs: 20_000, what: `the ${status} for ${type}` });
        expect(received.split('\r\n')[0], type).toBe(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}`);
        expect(received, type).toContain(message);
      } finally {
        socket.destroy();
      }
    }
  });
});

describe('instants', () => {
  let svc: Service;
  let key: string;
  let instrumentId: string;
  beforeAll(async () => {
    svc = await startService();
    key = await svc.keyWith(['instruments:read']);
    instrumentId = (await createInstrument(svc)).id;
  });
  afterAll(() => svc.stop());

  it('when an instant says T24:00:00, then 400 naming the field, in a query and in uploaded rows; T23:59:59.999 is read', async () => {
    const query = await svc.get('/v1/instruments?query=X&asOf=2020-01-01T24:00:00Z', key);
    expect(query.status).toBe(400);
    expect(query.body.error.details).toEqual({ asOf: ['is not a valid date or instant; received "2020-01-01T24:00:00Z"'] });
    expect((await svc.get('/v1/instruments?query=X&asOf=2020-01-01T23:59:59.999Z', key)).status).toBe(200);
    const daily = await svc.admin('POST', '/bars/daily', [dailyBar(instrumentId, { barDate: '2020-01-02', close: 10 }, { asOf: '2020-01-01T24:00:00Z' })]);
    expect(daily.status).toBe(400);
    expect(Object.keys(daily.body.error.details)).toEqual(['rows[0].asOf']);
    const minute = {
      instrumentId,
      openPrice: 10,
      highPrice: 11,
      lowPrice: 9,
      closePrice: 10,
      volume: 100,
      quoteCurrency: 'USD',
      quoteUnit: 'USD per share',
      source: 'test-fixture',
      asOf: '2024-03-05T00:00:00Z',
    };
    const intraday = await svc.admin('POST', '/bars/intraday', [{ ...minute, barTimestamp: '2024-03-04T24:00:00Z' }]);
    expect(intraday.status).toBe(400);
    expect(Object.keys(intraday.body.error.details)).toEqual(['rows[0].barTimestamp']);
    expect((await svc.admin('POST', '/bars/intraday', [{ ...minute, barTimestamp: '2024-03-04T23:59:00Z' }])).status).toBe(200);
  });
});

/** A client that opens a connection and sends `text` one byte a second, never finishing its request. */
function trickler(base: string, text: string) {
  const { hostname, port } = new URL(base);
  const socket = connect(Number(port), hostname);
  let received = '';
  let sent = 0;
  let timer: NodeJS.Timeout | undefined;
  socket.on('data', (d) => (received += d));
  socket.on('error', () => {});
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.once('connect', () => {
    timer = setInterval(() => {
      if (sent < text.length && socket.writable) socket.write(text[sent++]);
    }, 1_000);
  });
  socket.once('close', () => clearInterval(timer));
  return { socket, connected, closed, received: () => received, isClosed: () => socket.closed };
}

const within = <T>(promise: Promise<T>, ms: number, what: string) =>
  Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms))]);

describe('slow clients and the connection cap', () => {
  const HEADERS_TIMEOUT_MS = 3_000;
  const MAX_CONNECTIONS = 80;
  let svc: Service;
  let log: () => string;
  let key: string;
  beforeAll(async () => {
    ({ svc, log } = await loggedService({ HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), MAX_CONNECTIONS: String(MAX_CONNECTIONS) }));
    key = await svc.keyWith(['instruments:read']);
  });
  afterAll(() => svc.stop());

  it('when 50 clients trickle their headers a byte a second, then a normal request still answers at once, and each of them gets 408 and is closed by the headers timeout', async () => {
    // Forty send a request line and headers that never end; ten send nothing at all.
    const partial = `GET /v1/instruments?query=X HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(100)}`;
    const clients = Array.from({ length: 50 }, (_, i) => trickler(svc.runtime.publicUrl, i < 40 ? partial : ''));
    try {
      await Promise.all(clients.map((c) => c.connected));
      for (const ask of [() => svc.get('/healthz'), () => svc.get('/v1/instruments?query=X', key)]) {
        const started = Date.now();
        expect((await ask()).status).toBe(200);
        expect(Date.now() - started).toBeLessThan(1_000);
      }
      expect(clients.filter((c) => c.isClosed())).toEqual([]);
      // Node checks the deadline every second; a client is also cut a second after its 408 if it does not close.
      await within(Promise.all(clients.map((c) => c.closed)), 20_000, 'the slow clients being closed');
      for (const c of clients) expect(c.received().split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    } finally {
      for (const c of clients) c.socket.destroy();
    }
  });

  it(`when ${MAX_CONNECTIONS} connections are open, then each further one is closed at once without an answer, and the listener serves again once they close`, async () => {
    const { hostname, port } = new URL(svc.runtime.publicUrl);
    const sockets: Socket[] = [];
    const closedAt = new Map<Socket, number>();
    const opened = Date.now();
    for (let i = 0; i < MAX_CONNECTIONS + 20; i++) {
      const socket = connect(Number(port), hostname);
      let bytes = 0;
      socket.on('data', (d) => (bytes += d.length));
      socket.on('error', () => {});
      socket.once('close', () => closedAt.set(socket, bytes));
      sockets.push(socket);
      await new Promise((resolve) => socket.once('connect', resolve));
    }
    try {
      // Connections the test's own HTTP client keeps alive count too, so at least 20 are refused.
      await until(() => closedAt.size >= 20, { timeoutMs: HEADERS_TIMEOUT_MS, what: '20 connections refused' });
      // Well inside the 3 s headers timeout, which closes the others.
      expect(Date.now() - opened).toBeLessThan(HEADERS_TIMEOUT_MS);
      const dropped = sockets.filter((s) => closedAt.has(s));
      expect(dropped.length).toBeGreaterThanOrEqual(20);
      expect(dropped.map((s) => closedAt.get(s))).toEqual(dropped.map(() => 0));
      expect(log()).toContain('connection closed unanswered: the listener is at MAX_CONNECTIONS');
    } finally {
      for (const s of sockets) s.destroy();
    }
    // The listener counts a connection gone when it sees the close, a moment after the client's destroy.
    await until(async () => (await svc.get('/healthz').catch(() => null))?.status === 200, {
      timeoutMs: 5_000,
      what: 'a /healthz answer once the connections closed',
    });
  });
});
