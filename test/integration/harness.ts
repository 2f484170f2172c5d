import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { DestinationStream } from 'pino';
import { loadConfig, type Config } from '../../server/config.ts';
import { createLogger } from '../../server/observability/logger.ts';
import { startRuntime, type Runtime } from '../../server/runtime/lifecycle.ts';
import type { Scope } from '../../server/core/scopes.ts';
import { apiContract } from '../support/contract.ts';
import { fileDatabaseUrl } from './file-database.ts';

/** This test file's own database (test/integration/file-database.ts). */
export const databaseUrl = () => fileDatabaseUrl;

/**
 * Starts the real service in-process on ephemeral ports against the suite's
 * database. Its log goes nowhere (LOG_LEVEL silent) unless `log` is given:
 * then every line the logger writes goes to it (set LOG_LEVEL too).
 */
export async function startService(env: Record<string, string> = {}, log?: DestinationStream): Promise<Service> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mds-test-data-'));
  const config: Config = loadConfig({
    DATABASE_URL: databaseUrl(),
    DATA_DIR: dataDir,
    PORT: '0',
    ADMIN_PORT: '0',
    ADMIN_TOKEN: `test-admin-token-${randomUUID()}`,
    LOG_LEVEL: 'silent',
    WORKER_THREADS: '2',
    DEMO_DATA: 'off',
    ...env,
  });
  const removeDataDir = () => rm(dataDir, { recursive: true, force: true });
  const runtime = await startRuntime(config, createLogger(config.LOG_LEVEL, [], log)).catch(async (err) => {
    await removeDataDir();
    throw err;
  });
  return new Service(runtime, removeDataDir);
}

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** Every answer is checked against the OpenAPI document of its route (test/support/contract.ts). */
async function request(url: string, init: RequestInit): Promise<Reply> {
  const res = await fetch(url, init);
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // non-JSON bodies (metrics) stay text
  }
  apiContract().check(init.method ?? 'GET', url, res.status, res.headers.get('content-type'), body);
  return { status: res.status, headers: res.headers, body };
}

export class Service {
  readonly runtime: Runtime;
  private readonly removeDataDir: () => Promise<void>;

  /** `removeDataDir` deletes the temporary DATA_DIR this service was given, once it has stopped. */
  constructor(runtime: Runtime, removeDataDir: () => Promise<void>) {
    this.runtime = runtime;
    this.removeDataDir = removeDataDir;
  }

  get sql() {
    return this.runtime.sql;
  }

  async stop() {
    await this.runtime.stop();
    await this.removeDataDir();
  }

  admin(method: string, route: string, body?: unknown, contentType = 'application/json'): Promise<Reply> {
    return request(`${this.runtime.adminUrl}/admin/v1${route}`, {
      method,
      headers: { authorization: `Bearer ${this.runtime.adminToken}`, ...(body !== undefined ? { 'content-type': contentType } : {}) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
  }

  get(route: string, key?: string, headers: Record<string, string> = {}): Promise<Reply> {
    return request(`${this.runtime.publicUrl}${route}`, {
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    });
  }

  /** The answer's bytes as they came (Arrow, Parquet), checked against the document's media types. */
  async getBytes(route: string, key?: string, headers: Record<string, string> = {}): Promise<Reply<Buffer>> {
    const url = `${this.runtime.publicUrl}${route}`;
    const res = await fetch(url, { headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers } });
    const body = Buffer.from(await res.arrayBuffer());
    const type = res.headers.get('content-type');
    apiContract().check('GET', url, res.status, type, !body.length ? '' : type?.startsWith('application/json') ? JSON.parse(body.toString()) : body);
    return { status: res.status, headers: res.headers, body };
  }

  post(route: string, key: string | undefined, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
    return request(`${this.runtime.publicUrl}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  }

  async createAccount(name = `account-${randomUUID()}`): Promise<string> {
    const res = await this.admin('POST', '/accounts', { name });
    if (res.status !== 201) throw new Error(`account creation failed: ${JSON.stringify(res.body)}`);
    return res.body.data.id;
  }

  async createKey(accountId: string, scopes: Scope[], environment: 'sandbox' | 'live' = 'live'): Promise<{ id: string; key: string }> {
    const res = await this.admin('POST', '/keys', { accountId, environment, scopes, name: 'test key' });
    if (res.status !== 201) throw new Error(`key creation failed: ${JSON.stringify(res.body)}`);
    return { id: res.body.data.id, key: res.body.data.key };
  }

  /** A fresh account with one key holding `scopes`. */
  async keyWith(scopes: Scope[], environment: 'sandbox' | 'live' = 'live'): Promise<string> {
    return (await this.createKey(await this.createAccount(), scopes, environment)).key;
  }
}
