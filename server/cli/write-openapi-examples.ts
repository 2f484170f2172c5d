// `npm run openapi:examples [-- --database-url <url>]`: the public API's
// examples, from the demo data set, with the service's own answers to them.
//
// Starts the real service in-process, on an embedded PostgreSQL in a
// temporary directory or on the database given (which should be empty or hold
// the demo set only: other rows would show in the answers), loads the demo
// set (idempotent), makes an account with a key of every scope, and sends
// each public operation its example request (server/demo/api-examples.ts).
// Any answer other than the operation's success status stops it, naming the
// request: every example set is one that "Try it out" in /docs can send.
// It writes docs/openapi/examples.json (long lists cut to their first items,
// and the cut stated) and then the OpenAPI documents, which embed it.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { loadConfig } from '../config.ts';
import { SCOPES } from '../core/scopes.ts';
import { demoApiExamples } from '../demo/api-examples.ts';
import { loadDemoData } from '../demo/load.ts';
import type { ExampleAnswer } from '../http/openapi.ts';
import { openApiPath, type RouteDefinition } from '../http/route.ts';
import { writeOpenApiFiles } from '../http/write-openapi.ts';
import { createLogger } from '../observability/logger.ts';
import { startRuntime, type Runtime } from '../runtime/lifecycle.ts';
import { EXAMPLES_FILE, type ExamplesFile, openApiFiles } from '../wiring/api-documents.ts';
import { publicRouteDefinitions } from '../wiring/areas.ts';
import { deriveAll } from '../wiring/derivations.ts';

/** A list longer than this is cut to its first items in an example answer. */
const KEPT_ITEMS = 3;

/** How long an export job of the example request may take to be ready. */
const EXPORT_DEADLINE_MS = 120_000;
const EXPORT_POLL_MS = 250;

const ABOUT =
  "The public operations' examples: each one's parameters and JSON body from the demo data set (server/demo/api-examples.ts), and the answer the service gave to that request on the demo data, each list longer than 3 items cut to its first 3 (stated in `trimmed`). Written by `npm run openapi:examples`; the OpenAPI document embeds it.";

/**
 * `body` with every list longer than KEPT_ITEMS cut to its first items,
 * except those at the paths in `whole`, and what was cut: each place as a
 * path (`data`, `data[].correlationByLag`, `data.<key>`), with its kept and
 * full lengths.
 */
function cutLists(body: unknown, whole: ReadonlySet<string>): { body: unknown; trimmed: string[] } {
  const lengths = new Map<string, number[]>();
  const cut = (value: unknown, at: PropertyKey[], where: string): unknown => {
    if (Array.isArray(value)) {
      const keep = whole.has(JSON.stringify(at)) ? value.length : KEPT_ITEMS;
      if (value.length > keep) lengths.set(where, [...(lengths.get(where) ?? []), value.length]);
      return value.slice(0, keep).map((item, i) => cut(item, [...at, i], `${where}[]`));
    }
    if (typeof value === 'object' && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, cut(child, [...at, key], where ? `${where}.${key}` : key)]));
    }
    return value;
  };
  const kept = cut(body, [], '');
  const notes = [...lengths].map(([where, counts]) => {
    const [least, most] = [Math.min(...counts), Math.max(...counts)];
    return `${where || 'the answer'}: the first ${KEPT_ITEMS} of ${least === most ? least : `${least} to ${most}`}`;
  });
  return { body: kept, trimmed: notes };
}

/**
 * The answer with its long lists cut (cutLists), but never below the length
 * the route's schema requires of a list (the 11 lags of a source lead): each
 * list the schema then finds too short is kept whole.
 */
function trimmed(route: RouteDefinition, body: unknown): { body: unknown; trimmed: string[] } {
  const { response } = route;
  const schema = response.body ?? (response.data ? z.object({ data: response.data, ...(response.meta ? { meta: response.meta } : {}) }) : undefined);
  const whole = new Set<string>();
  for (;;) {
    const answer = cutLists(body, whole);
    const result = schema?.safeParse(answer.body);
    const tooShort = (result?.error?.issues ?? [])
      .filter((issue) => issue.code === 'too_small' && issue.origin === 'array')
      .map((issue) => JSON.stringify(issue.path))
      .filter((at) => !whole.has(at));
    if (tooShort.length === 0) return answer;
    for (const at of tooShort) whole.add(at);
  }
}

interface Sent {
  request: string;
  status: number;
  body: unknown;
}

class ExampleClient {
  private readonly runtime: Runtime;
  private readonly key: string;

  constructor(runtime: Runtime, key: string) {
    this.runtime = runtime;
    this.key = key;
  }

  /** Sends `route` its example: path and query parameters from `values`, in the route's order, and `body` as JSON. */
  async send(route: RouteDefinition, values: Record<string, string | number>, body?: unknown): Promise<Sent> {
    let pathname = openApiPath('/v1', route.path);
    for (const [name, value] of Object.entries(values)) pathname = pathname.replace(`{${name}}`, encodeURIComponent(String(value)));
    const query = new URLSearchParams(
      Object.entries(values)
        .filter(([name]) => !route.path.includes(`:${name}`))
        .map(([n, v]) => [n, String(v)]),
    );
    const target = `${pathname}${query.size ? `?${query}` : ''}`;
    const res = await fetch(`${this.runtime.publicUrl}${target}`, {
      method: route.method.toUpperCase(),
      headers: { authorization: `Bearer ${this.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const request = `${route.method.toUpperCase()} ${decodeURIComponent(target)}`;
    if (res.status !== route.response.status) throw new Error(`${request} answered ${res.status}, not ${route.response.status}: ${text.slice(0, 500)}`);
    return { request, status: res.status, body: text ? JSON.parse(text) : null };
  }
}

async function adminPost(runtime: Runtime, route: string, body: unknown): Promise<{ id: string; key?: string }> {
  const res = await fetch(`${runtime.adminUrl}/admin/v1${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${runtime.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`POST /admin/v1${route} answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { data: { id: string; key?: string } }).data;
}

/** Every public operation's answer to its example, by operationId; the export jobs' in their order (create, read when ready, list, delete). */
async function answers(
  client: ExampleClient,
  routes: ReadonlyMap<string, RouteDefinition>,
  examples: ReturnType<typeof demoApiExamples>,
): Promise<Record<string, Sent>> {
  const route = (operationId: string) => {
    const found = routes.get(operationId);
    if (!found) throw new Error(`no public operation ${operationId}`);
    return found;
  };
  const sent: Record<string, Sent> = {};
  const exportsArea = new Set(['createExport', 'getExport', 'listExports', 'deleteExport', 'getExportFile']);
  for (const [operationId, r] of routes) {
    if (exportsArea.has(operationId)) continue;
    sent[operationId] = await client.send(r, examples.parameters[operationId] ?? {}, examples.bodies[operationId]);
  }
  const created = await client.send(route('createExport'), {}, examples.bodies.createExport);
  sent.createExport = created;
  const id = (created.body as { data: { id: string } }).data.id;
  const deadline = Date.now() + EXPORT_DEADLINE_MS;
  for (;;) {
    sent.getExport = await client.send(route('getExport'), { id });
    const { status } = (sent.getExport.body as { data: { status: string } }).data;
    if (status === 'ready') break;
    if (status !== 'queued' && status !== 'running') throw new Error(`the example export job ended ${status}`);
    if (Date.now() > deadline) throw new Error(`the example export job was not ready within ${EXPORT_DEADLINE_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, EXPORT_POLL_MS));
  }
  sent.listExports = await client.send(route('listExports'), examples.parameters.listExports ?? {});
  sent.deleteExport = await client.send(route('deleteExport'), { id });
  return sent;
}

const { values: args } = parseArgs({ options: { 'database-url': { type: 'string' } } });
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mds-openapi-examples-'));
const config = loadConfig({
  ...(args['database-url'] ? { DATABASE_URL: args['database-url'] } : {}),
  DATA_DIR: dataDir,
  PORT: '0',
  ADMIN_PORT: '0',
  // The links an answer carries (an export's files) name the origin `npm start` serves by default, not this run's port.
  PUBLIC_BASE_URL: 'http://localhost:8080',
  LOG_LEVEL: 'warn',
  DEMO_DATA: 'off',
});
const runtime = await startRuntime(config, createLogger(config.LOG_LEVEL));
try {
  const deps = runtime.deps;
  if (!deps) throw new Error('the service started without its dependencies');
  process.stdout.write('loading the demo data set\n');
  await loadDemoData({ db: deps.db, deriveAll: () => deriveAll(deps) });
  const account = await adminPost(runtime, '/accounts', { name: 'openapi examples' });
  const { key } = await adminPost(runtime, '/keys', { accountId: account.id, environment: 'live', scopes: SCOPES, name: 'openapi examples' });
  if (!key) throw new Error('the admin API made a key without its secret');
  const examples = demoApiExamples();
  const routes = new Map(publicRouteDefinitions().map((r) => [r.operationId, r]));
  const sent = await answers(new ExampleClient(runtime, key), routes, examples);
  const file: ExamplesFile = {
    about: ABOUT,
    ...examples,
    answers: Object.fromEntries(
      Object.entries(sent)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([operationId, { request, status, body }]): [string, ExampleAnswer] => {
          const route = routes.get(operationId);
          if (!route) throw new Error(`no public operation ${operationId}`);
          return [operationId, { request, status, ...trimmed(route, body) }];
        }),
    ),
  };
  await writeFile(EXAMPLES_FILE, `${JSON.stringify(file, null, 2)}\n`);
  process.stdout.write(`wrote ${path.relative(process.cwd(), EXAMPLES_FILE)} (${Object.keys(sent).length} answers)\n`);
  await writeOpenApiFiles(openApiFiles());
} finally {
  await runtime.stop();
  await rm(dataDir, { recursive: true, force: true });
}
