// HTTP clients of the service: public routes, the admin API and streamed uploads.
import http from 'node:http';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { MB, round } from './stats.ts';

export interface Reply {
  status: number;
  body: any;
  text: string;
}

/** A reply body: its JSON when it parses, else the text. */
function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * An authenticated request to a public route; a body is sent as JSON. fetch
 * asks for gzip and deflate unless `headers` names an Accept-Encoding, and
 * decodes what it gets.
 */
export async function callRoute(
  baseUrl: string,
  key: string,
  route: { method?: string; path: string; body?: string; headers?: Record<string, string> },
): Promise<{ status: number; text: string }> {
  const res = await fetch(`${baseUrl}${route.path}`, {
    method: route.method ?? 'GET',
    headers: { authorization: `Bearer ${key}`, ...(route.body !== undefined ? { 'content-type': 'application/json' } : {}), ...route.headers },
    body: route.body,
  });
  return { status: res.status, text: await res.text() };
}

/** A body read to its last byte: the bytes as they arrived, decoded (see getBody). */
export interface BodyRead {
  status: number;
  /** Content-Encoding: identity, gzip, br or zstd. */
  encoding: string;
  /** The body's length on the wire, and decoded. */
  wireBytes: number;
  bytes: number;
  /** The body as text, joined and decoded only when asked: after the timing. */
  readonly text: string;
  /** The body's bytes, joined only when asked. */
  readonly buffer: Buffer;
}

/**
 * An authenticated GET with node:http, done when the body's last byte has
 * arrived (and, for gzip or br, has been decompressed as it arrived). The
 * chunks are kept as they came: joining 30 MB and decoding it into a string
 * is the client's work after the last byte, so it happens on `text`, outside
 * whatever times this.
 * fetch (callRoute) costs more here: its body passes through web streams, and
 * text() decodes it before it resolves.
 */
export function getBody(baseUrl: string, key: string, path: string, headers: Record<string, string> = {}): Promise<BodyRead> {
  return new Promise((resolve, reject) => {
    http
      .get(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${key}`, ...headers } }, (res) => {
        const { encoding, decoded } = decodedBody(res);
        let wireBytes = 0;
        res.on('data', (chunk: Buffer) => (wireBytes += chunk.length));
        const chunks: Buffer[] = [];
        decoded.on('data', (chunk: Buffer) => chunks.push(chunk));
        decoded.on('error', reject);
        res.on('error', reject);
        decoded.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            encoding,
            wireBytes,
            bytes: chunks.reduce((n, chunk) => n + chunk.length, 0),
            get text() {
              return Buffer.concat(chunks).toString('utf8');
            },
            get buffer() {
              return Buffer.concat(chunks);
            },
          }),
        );
      })
      .on('error', reject);
  });
}

/** A response's body as it decodes: gunzipped, brotli- or zstd-decoded as its Content-Encoding says, else the response itself. */
export function decodedBody(res: http.IncomingMessage): { encoding: string; decoded: Readable } {
  const encoding = String(res.headers['content-encoding'] ?? 'identity');
  const decoders: Record<string, () => zlib.Gunzip | zlib.BrotliDecompress | zlib.ZstdDecompress> = {
    gzip: zlib.createGunzip,
    br: zlib.createBrotliDecompress,
    zstd: zlib.createZstdDecompress,
  };
  const decoder = decoders[encoding];
  const decoded = decoder ? res.pipe(decoder()) : res;
  return { encoding, decoded };
}

/** GET /admin/v1/status, the parts the results report. */
export interface ServiceStatus {
  storageTier: string;
  timescaledbVersion: string | null;
  database: { serverVersion: string };
}

export class Admin {
  readonly url: string;
  readonly token: string;
  private readonly deadCheck?: () => Promise<string | null>;

  constructor(url: string, token: string, deadCheck?: () => Promise<string | null>) {
    this.url = url;
    this.token = token;
    this.deadCheck = deadCheck;
  }

  get auth() {
    return { authorization: `Bearer ${this.token}` };
  }

  async request(method: string, route: string, body?: unknown): Promise<Reply> {
    const res = await fetch(`${this.url}/admin/v1${route}`, {
      method,
      headers: { ...this.auth, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: parseBody(text), text };
  }

  /** Like request(), but throws unless the status is 200 or 201. */
  async ok(method: string, route: string, body?: unknown): Promise<any> {
    const res = await this.request(method, route, body);
    if (![200, 201].includes(res.status)) throw new Error(`${method} /admin/v1${route} answered ${res.status}: ${res.text.slice(0, 500)}`);
    return res.body;
  }

  /** Streams `body` as the request body (chunked); resolves with the reply once the server has answered. */
  postStream(
    route: string,
    contentType: string,
    body: Readable | AsyncIterable<string | Buffer>,
    opts?: UploadOptions,
  ): Promise<Reply & { ms: number; bytesSent: number }> {
    return postStream(`${this.url}/admin/v1${route}`, { ...this.auth, 'content-type': contentType }, body, { deadCheck: this.deadCheck, ...opts });
  }

  async status(): Promise<ServiceStatus> {
    return (await this.ok('GET', '/status')).data;
  }

  async apiKey(scopes: string[]): Promise<string> {
    const account = await this.ok('POST', '/accounts', { name: `bench-${Date.now()}` });
    const key = await this.ok('POST', '/keys', { accountId: account.data.id, environment: 'live', scopes, name: 'bench' });
    return key.data.key as string;
  }
}

/** An upload the server stopped reading, or one that outlived its time limit. */
export class UploadFailure extends Error {
  readonly bytesSent: number;
  readonly ms: number;

  constructor(message: string, bytesSent: number, ms: number) {
    super(message);
    this.bytesSent = bytesSent;
    this.ms = ms;
  }
}

/** An upload's outcome: answered 200 (with the reply's data), or not (another status, or an UploadFailure: hung). */
export type UploadOutcome<T> = { ok: true; ms: number; result: T } | { ok: false; ms: number; failure: string; hung: boolean };

export async function settleUpload<T>(upload: Promise<Reply & { ms: number }>): Promise<UploadOutcome<T>> {
  try {
    const res = await upload;
    if (res.status === 200) return { ok: true, ms: res.ms, result: res.body.data };
    return { ok: false, ms: res.ms, failure: `answered ${res.status} after ${round(res.ms / 1000, 1)} s: ${res.text.slice(0, 300)}`, hung: false };
  } catch (err) {
    if (err instanceof UploadFailure) return { ok: false, ms: err.ms, failure: err.message, hung: true };
    throw err;
  }
}

export interface UploadOptions {
  /** Fail when the server has not taken any body bytes for this long while the body is unfinished (default 30 s). */
  stallMs?: number;
  /** Fail when there is no answer after this long (default 15 min). */
  timeoutMs?: number;
  /** Polled every 2 s while the upload is unanswered; a returned reason fails it at once. */
  deadCheck?: () => Promise<string | null>;
}

/**
 * Streams `body` as a chunked POST and resolves with the reply. Rejects with
 * UploadFailure when the server stops reading the body without answering
 * (a hung upload) or when the whole exchange outlives `timeoutMs`.
 */
export function postStream(
  url: string,
  headers: Record<string, string>,
  body: Readable | AsyncIterable<string | Buffer>,
  opts: UploadOptions = {},
): Promise<Reply & { ms: number; bytesSent: number }> {
  const stallMs = opts.stallMs ?? 30_000;
  const timeoutMs = opts.timeoutMs ?? 15 * 60_000;
  const source = body instanceof Readable ? body : Readable.from(body);
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let bytesSent = 0;
    let lastProgress = started;
    let sourceEnded = false;
    let settled = false;
    const done = (err: Error | null, value?: Reply & { ms: number; bytesSent: number }) => {
      if (settled) return;
      settled = true;
      clearInterval(watchdog);
      source.unpipe(req);
      source.destroy();
      if (err) {
        req.destroy();
        reject(err);
      } else resolve(value!);
    };
    const req = http.request(url, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err) => done(err));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        done(null, { status: res.statusCode ?? 0, body: parseBody(text), text, ms: performance.now() - started, bytesSent });
      });
    });
    let checking = false;
    let lastCheck = started;
    const watchdog = setInterval(() => {
      const now = performance.now();
      if (opts.deadCheck && !checking && now - lastCheck >= 2_000) {
        checking = true;
        lastCheck = now;
        opts.deadCheck().then(
          (reason) => {
            checking = false;
            const t = performance.now();
            if (reason)
              done(
                new UploadFailure(
                  `${reason}; after ${(bytesSent / MB).toFixed(1)} MB${sourceEnded ? ' (the whole body)' : ''} in ${((t - started) / 1000).toFixed(1)}s`,
                  bytesSent,
                  t - started,
                ),
              );
          },
          () => (checking = false),
        );
      }
      const mb = (bytesSent / MB).toFixed(1);
      if (!sourceEnded && now - lastProgress > stallMs) {
        done(
          new UploadFailure(
            `the server stopped reading the request body for ${stallMs / 1000}s without answering, after ${mb} MB in ${((now - started) / 1000).toFixed(1)}s`,
            bytesSent,
            now - started,
          ),
        );
      } else if (now - started > timeoutMs) {
        done(new UploadFailure(`no answer within ${timeoutMs / 1000}s (${mb} MB sent${sourceEnded ? ', the whole body' : ''})`, bytesSent, now - started));
      }
    }, 500);
    req.on('error', (err) => done(err));
    source.on('data', (c: string | Buffer) => {
      bytesSent += typeof c === 'string' ? Buffer.byteLength(c) : c.length;
      lastProgress = performance.now();
    });
    source.on('end', () => (sourceEnded = true));
    source.on('error', (err) => done(err));
    source.pipe(req);
  });
}
