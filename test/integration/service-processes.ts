import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { expect } from 'vitest';
import { inheritedEnv, PROJECT_ROOT } from './child-process.ts';
import { databaseUrl } from './harness.ts';
import { until } from '../support/until.ts';

// `npm start`'s entry point with WEB_CONCURRENCY=2, as a child process on
// real ports against the test file's database: a primary and two serving
// processes. Which process served a request is read from the log: with
// several processes each line carries its pid, and a request's line its id,
// which the answer's X-Request-Id gives.

/** Generous: the machine has 2 cores shared with other work. */
export const DEADLINE_MS = 60_000;

export interface LogLine {
  msg: string;
  pid?: number;
  requestId?: string;
  status?: number;
  [field: string]: unknown;
}

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * One request on a connection of its own (the primary hands each connection
 * to the next serving process in turn). With `timeoutMs`, a request no answer
 * comes to in that long is refused: a connection handed to a process just
 * killed is never answered.
 */
export function onNewConnection(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: options.method ?? 'GET', headers: options.headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      res.on('error', reject);
    });
    if (options.timeoutMs !== undefined) req.setTimeout(options.timeoutMs, () => req.destroy(new Error(`no answer from ${url} in ${options.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** `npm start` with WEB_CONCURRENCY=2 against the test file's database, its own DATA_DIR and `env`; its log lines parsed as they come. */
export class ServiceProcesses {
  readonly child: ChildProcess;
  readonly lines: LogLine[] = [];
  readonly adminToken = `service-processes-admin-${randomUUID()}`;
  readonly exited: Promise<number | null>;
  /** Resolves once every process holding the standard output (the primary and each it forked) has exited. */
  readonly outputClosed: Promise<void>;
  stderr = '';
  publicUrl = '';
  adminUrl = '';
  pids: number[] = [];

  constructor(dataDir: string, env: Record<string, string>) {
    this.child = spawn(process.execPath, ['server/main.ts'], {
      cwd: PROJECT_ROOT,
      env: {
        ...inheritedEnv(),
        DATABASE_URL: databaseUrl(),
        DATA_DIR: dataDir,
        PORT: '0',
        ADMIN_PORT: '0',
        ADMIN_TOKEN: this.adminToken,
        DEMO_DATA: 'off',
        LOG_LEVEL: 'info',
        WEB_CONCURRENCY: '2',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let partial = '';
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop()!;
      for (const line of parts) if (line.trim()) this.lines.push(JSON.parse(line));
    });
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.outputClosed = new Promise((resolve) => this.child.stdout!.once('close', () => resolve()));
  }

  async ready(): Promise<void> {
    const line = await until(
      () => {
        if (this.child.exitCode !== null) throw new Error(`npm start exited (${this.child.exitCode}): ${this.stderr}`);
        return this.lines.find((l) => l.msg === 'market-data-service ready');
      },
      { timeoutMs: DEADLINE_MS, what: 'the ready line', intervalMs: 50 },
    );
    this.publicUrl = (line.public as string).replace('0.0.0.0', '127.0.0.1');
    this.adminUrl = line.admin as string;
    this.pids = line.processes as number[];
  }

  /** An admin request; a string body is sent as it is, with `contentType`, anything else as JSON. */
  admin(method: string, route: string, body?: unknown, contentType = 'application/json'): Promise<Answer> {
    return onNewConnection(`${this.adminUrl}/admin/v1${route}`, {
      method,
      headers: { authorization: `Bearer ${this.adminToken}`, ...(body === undefined ? {} : { 'content-type': contentType }) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
  }

  async keyFor(scopes: string[], environment: 'live' | 'sandbox'): Promise<string> {
    const account = JSON.parse((await this.admin('POST', '/accounts', { name: `processes-${randomUUID()}` })).body).data.id;
    return JSON.parse((await this.admin('POST', '/keys', { accountId: account, environment, scopes, name: 'processes test' })).body).data.key;
  }

  /** The pid of the process that served each answer, from its request log line. */
  servedBy(answers: Answer[]): Promise<number[]> {
    return until(
      () => {
        const pids = answers.map((a) => this.lines.find((l) => l.msg === 'request' && l.requestId === a.headers['x-request-id'])?.pid);
        return pids.every((p) => p !== undefined) ? (pids as number[]) : undefined;
      },
      { timeoutMs: DEADLINE_MS, what: 'the request log lines', intervalMs: 50 },
    );
  }

  async metrics(): Promise<string> {
    const res = await onNewConnection(`${this.adminUrl}/metrics`);
    expect(res.status).toBe(200);
    return res.body;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    await this.exited;
  }
}
