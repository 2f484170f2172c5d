import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminRoutes, publicRouteDefinitions } from '../../server/wiring/areas.ts';
import { SCOPES } from '../../server/core/scopes.ts';
import { MACRO_SERIES_IDS } from '../../server/macro/schema.ts';
import { derivedContractId } from '../../server/options/schema.ts';
import { createInstrument, dailyBar, ingest, weekdays } from './fixtures.ts';
import { startService, type Service } from './harness.ts';
import { apiContract } from '../support/contract.ts';
import { csrfOn, DashboardClient } from '../support/dashboard-client.ts';
import { FredStub } from '../support/fred-stub.ts';
import { servedRoutes } from '../support/served-routes.ts';
import { percentEncoded } from '../support/percent-encoded.ts';
import { until } from '../support/until.ts';
import { MAX_DEPTH } from '../../server/core/validate.ts';
import { InstrumentIdSchema } from '../../server/core/ids.ts';

// Hostile input against every route of both listeners and the dashboard: no
// response may be a 5xx, every error must be the envelope with a request id
// (a dashboard refusal may be its HTML page instead), no answer or log line
// may hold a credential the requests carried, and an admin write that is
// refused must leave the database exactly as it was. The inputs come from
// fast-check with a fixed seed, so every run sends the same requests; on
// failure fast-check prints the seed and the counterexample, and the error
// lists each offending request with its response.
//
// The routes that must each answer some valid requests are read from the
// route definitions (and the dashboard's from its router), and counted from
// the service's own log lines, which name the route that served each request:
// a route added without a generator here fails the test.

const SEED = 20_261_124;
/** The most an error answer may take (docs/api.md, Limits: "Error answers"). */
const MAX_ERROR_BYTES = 8_192;
// Reads go out in concurrent batches; writes one at a time, each followed by
// a look at the database.
const READ_BATCH = 8;
const READ_BATCHES = 400;
const WRITES = 560;
const READ_BATCHES_AFTER_WRITES = 40;

/** `METHOD /path` as the log's `method` and `route` name a request's route. */
const routeKey = (method: string, path: string) => `${method.toUpperCase()} ${path}`;
const PUBLIC_ROUTES = publicRouteDefinitions().map((d) => routeKey(d.method, `/v1${d.path}`));
const ADMIN_READS = adminRoutes()
  .filter((d) => d.method === 'get')
  .map((d) => routeKey(d.method, `/admin/v1${d.path}`));
const ADMIN_WRITES = adminRoutes()
  .filter((d) => d.method === 'post')
  .map((d) => routeKey(d.method, `/admin/v1${d.path}`));

const DAY_MS = 86_400_000;
const pad = (n: number, width: number) => String(n).padStart(width, '0');
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

type Auth = 'live' | 'sandbox' | 'narrow' | 'revoked' | 'unknown' | 'none' | 'basic' | 'bare' | 'huge' | 'admin' | 'wrong-admin';

/** One request exactly as sent: the path goes out byte for byte, never normalised as a URL would be. */
interface Req {
  to: 'public' | 'admin';
  method: string;
  path: string;
  auth: Auth;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** A JSON token written as is: numbers JSON.stringify cannot write (-0, 1e400) and text that is not JSON at all. */
class Raw {
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }
}
const raw = (text: string) => new Raw(text);

function toJson(v: unknown): string {
  if (v instanceof Raw) return v.text;
  if (Array.isArray(v)) return `[${v.map(toJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.entries(v)
      .filter(([, x]) => x !== undefined)
      .map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

function csvCell(v: unknown): string {
  if (v === undefined || v === null) return '';
  const text = typeof v === 'string' ? v : v instanceof Raw ? v.text : typeof v === 'object' ? toJson(v) : String(v);
  return text === '' || /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function toCsv(rows: Record<string, unknown>[]): string {
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  return [columns.map(csvCell).join(','), ...rows.map((r) => columns.map((c) => csvCell(r[c])).join(','))].join('\n');
}

/** Every byte outside the unreserved set percent-encoded (a lone surrogate goes out as U+FFFD, as UTF-8 cannot carry it). */
function percentEncode(text: string): string {
  let out = '';
  for (const b of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Dates from year 0 to 9999, months 0..13, days 0..32: real days, impossible days and the edges of the calendar. */
const yearArb = fc.oneof(fc.constantFrom(0, 1, 2, 1969, 1970, 2000, 2024, 9998, 9999), fc.integer({ min: 0, max: 9999 }));
const dateText = fc
  .tuple(yearArb, fc.integer({ min: 0, max: 13 }), fc.integer({ min: 0, max: 32 }))
  .map(([y, m, d]) => `${pad(y, 4)}-${pad(m, 2)}-${pad(d, 2)}`);
const instantText = fc
  .tuple(
    dateText,
    fc.integer({ min: 0, max: 25 }),
    fc.integer({ min: 0, max: 61 }),
    fc.integer({ min: 0, max: 61 }),
    fc.option(fc.integer({ min: 0, max: 999 }), { nil: undefined }),
  )
  .map(([d, h, m, s, ms]) => `${d}T${pad(h, 2)}:${pad(m, 2)}:${pad(s, 2)}${ms === undefined ? '' : `.${pad(ms, 3)}`}Z`);

const CALENDAR_EDGES = ['0001-01-01', '0001-12-31', '0002-12-31', '1969-12-31', '1970-01-01', '9999-12-31'];
const INSTANT_EDGES = ['0001-01-01T00:00:00Z', '1970-01-01T00:00:00.000Z', '9999-12-31T23:59:00Z', '9999-12-31T23:59:59.999Z'];

/** A real calendar day between two years, or one of the calendar's edges. */
function realDate(fromYear: number, toYear: number) {
  return fc.oneof(
    { weight: 8, arbitrary: fc.integer({ min: Date.UTC(fromYear, 0, 1) / DAY_MS, max: Date.UTC(toYear, 11, 31) / DAY_MS }).map((d) => isoDay(d * DAY_MS)) },
    { weight: 1, arbitrary: fc.constantFrom(...CALENDAR_EDGES) },
  );
}

const FIXED_UUID = '3f2b8c1e-9a4d-4e6f-8b7a-2c1d0e9f8a7b';

// Query values and path segments as they appear on the wire. Only ASCII goes
// on the request line, as HTTP requires: Node's parser answers a raw byte
// above 0x7E itself, with a bare 400, before any of the service's code runs.
const HOSTILE_WIRE = [
  '',
  '%00',
  'a%00b',
  '%00%00',
  '%01',
  '%1F',
  '%7F',
  '%0A',
  '%0D%0A',
  '%09',
  '%FF',
  '%',
  '%%',
  '%E0%A4%A',
  '%C0%AF',
  '%ED%A0%80',
  '%F4%90%80%80',
  '%EF%BB%BF',
  '%2C',
  ',',
  ',,',
  '+',
  '%20',
  '%2B',
  'null',
  'undefined',
  'true',
  '[]',
  '{}',
  'NaN',
  'Infinity',
  '-Infinity',
  '5e-324',
  '1e308',
  '1e309',
  '-1e308',
  '-0',
  '0',
  '-1',
  '1',
  '0x1F',
  '1_000',
  '1.5',
  '9007199254740993',
  '1e-300',
  '0000-01-01',
  '0001-01-01',
  '0002-12-31',
  '9999-12-31',
  '10000-01-01',
  '-0001-01-01',
  '2024-02-29',
  '2023-02-29',
  '2024-13-01',
  '0001-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999Z',
  '9999-12-31T23:59:00Z',
  '2024-01-01T24:00:00Z',
  '2024-01-01T00:00:00%2B01:00',
  '%27%3B%20drop%20table%20accounts%3B--',
  '%5C',
  '%22',
  '%C3%A9',
  '%E2%80%AE',
];
// The service reads 64 KiB of request line and headers; past that Node
// answers 431 itself, before the service. Huge values stay within it.
const MAX_TARGET = 56 * 1024;
const HUGE_WIRE = ['x'.repeat(20_000), '%00'.repeat(5_000), Array(600).fill(FIXED_UUID).join(','), ','.repeat(10_000), `${FIXED_UUID},`.repeat(1_200)];

const hostileWire: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...HOSTILE_WIRE) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 24 }).map(percentEncode) },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom('%00', '%FF', '%', '%E0', '%A4', 'a', ',', '%2C', '%25', '+', '%0A', '%C3%A9'), maxLength: 12 }) },
  { weight: 2, arbitrary: dateText },
  { weight: 2, arbitrary: instantText.map(percentEncode) },
  { weight: 2, arbitrary: fc.oneof(fc.double(), fc.integer()).map(String) },
  { weight: 1, arbitrary: fc.constantFrom(...HUGE_WIRE) },
);

const HOSTILE_TEXT = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\u0000'.repeat(10),
  '\ud800',
  'x\udc00',
  '\udfff\ud800',
  '\ud83d\ude00',
  '\u202e',
  '\u0001',
  '\u007f',
  '\t',
  '\n',
  '\r\n',
  '\\',
  '\\N',
  '\\u0000',
  '"',
  ',',
  '%00',
  '%FF',
  "'; drop table accounts; --",
  'NaN',
  '１２',
  'x'.repeat(300),
  'x'.repeat(70_000),
];
const hostileText: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_TEXT) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  { weight: 2, arbitrary: fc.string({ unit: fc.constantFrom('\u0000', '\ud800', '\udc00', 'a', '\\', '\t', ',', '"', '\n', '\r'), maxLength: 8 }) },
  { weight: 1, arbitrary: dateText },
  { weight: 1, arbitrary: instantText },
);

// Objects with more fields, and lists with more items, than any schema takes:
// refused for their shape before anything walks them, in an error of a few KB.
const wideJson = fc
  .tuple(fc.constantFrom(30, 2_000, 50_000), fc.boolean())
  .map(([width, arrays]) =>
    raw(arrays ? `[${Array.from({ length: width }, (_, i) => i).join(',')}]` : `{${Array.from({ length: width }, (_, i) => `"f${i}":${i}`).join(',')}}`),
  );

const deepJson = fc
  .tuple(fc.constantFrom(10, 100, 1_000, 10_000, 100_000), fc.boolean())
  .map(([depth, arrays]) => raw(arrays ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`));

// -0, 5e-324 and 1e308 are valid JSON; 1e400 parses to Infinity; the rest make the body invalid JSON.
const EXTREME_NUMBERS: unknown[] = [
  0,
  raw('-0'),
  1,
  -1,
  5e-324,
  -5e-324,
  1e-300,
  1 / 1440,
  1 / 1441,
  1e308,
  -1e308,
  Number.MAX_VALUE,
  2 ** 53 + 2,
  3650,
  3650.000001,
  1e21,
  0.1,
  100_000,
  100_001,
];
const NON_JSON_NUMBERS = ['1e400', '-1e400', '1e-400', 'NaN', 'Infinity', '-Infinity', '0x10', '01', '+1', '.5', '1.', '1e', '-'].map(raw);

const hostileJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...EXTREME_NUMBERS) },
  { weight: 1, arbitrary: fc.constantFrom(...NON_JSON_NUMBERS) },
  { weight: 4, arbitrary: hostileText },
  { weight: 2, arbitrary: fc.constantFrom<unknown>(null, true, false, [], {}, [1], { a: 1 }, [null]) },
  { weight: 1, arbitrary: deepJson },
  { weight: 1, arbitrary: wideJson },
  { weight: 2, arbitrary: fc.oneof(fc.double(), fc.integer()) },
);

type Path = (string | number)[];
const DELETE = Symbol('delete');

/** A copy of `base` with a few fields replaced by hostile values, removed, or added. */
function mutated(base: Record<string, unknown>, paths: Path[]): fc.Arbitrary<Record<string, unknown>> {
  const edit = fc.oneof(
    { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...paths), hostileJson) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...paths), fc.constant<unknown>(DELETE)) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom<Path>(['extra'], ['__proto__'], ['constructor'], ['\u0000'], ['']), hostileJson) },
  );
  return fc.array(edit, { maxLength: 3 }).map((edits) => {
    const copy = structuredClone(base);
    for (const [path, value] of edits) {
      let target = copy as Record<string | number, unknown>;
      for (const step of path.slice(0, -1)) {
        if (target[step] === null || typeof target[step] !== 'object')
          Object.defineProperty(target, step, { value: {}, enumerable: true, writable: true, configurable: true });
        target = target[step] as Record<string | number, unknown>;
      }
      const last = path[path.length - 1];
      // A hostile constant ([], {}, [1]) is shared by every draw: a later edit
      // of this copy must write into a copy of it, or it would change (and
      // could nest within itself) every body that draws it afterwards.
      const own = value !== null && typeof value === 'object' && !(value instanceof Raw) ? structuredClone(value) : value;
      if (value === DELETE) delete target[last];
      else Object.defineProperty(target, last, { value: own, enumerable: true, writable: true, configurable: true });
    }
    return copy;
  });
}

let svc: Service;
let fred: FredStub;
const FRED_KEY = 'fuzz0000fred0000key0000abcdef0123';
const keys = {} as Record<'live' | 'sandbox' | 'narrow' | 'revoked', string>;
let accountId: string;
let revocableKeyIds: string[];
// Fixed dates, for the fixture and the generated requests alike, so the
// requests do not depend on the day the suite runs.
const FIXTURE_FROM = '2021-01-04';
const FIXTURE_TO = '2025-12-31';
/** Instruments with five years of bars: an equity (with a split, a dividend and a day of minutes), an index, an ETF, and an fx instrument without bars. */
let instrumentIds: string[];
/** Instruments the admin writes may change. */
let scratchIds: string[];
let optionContractIds: string[];
/** The days the fixture's option quotes were observed (an asOf that finds the chain listed). */
let optionDays: string[];
/** The dashboard logins the admin writes give the fuzz account, by password and by invitation. */
const FUZZ_LOGINS = [`fuzz-login-${randomUUID()}@example.com`, `fuzz-invited-${randomUUID()}@example.com`];
/** Ids that do not exist until an accepted write creates them. */
const freshIds = Array.from({ length: 4 }, () => randomUUID());
let publicBase: { hostname: string; port: string };
let adminBase: { hostname: string; port: string };
const agent = new http.Agent({ keepAlive: true, maxSockets: READ_BATCH * 2 });
/** Every line the service logs. */
const logLines: string[] = [];

interface DashboardCaller {
  /** The Cookie header, empty for none. */
  cookie: string;
  csrf: string;
}
/**
 * The dashboard as the fuzz reaches it: an account of its own (its revokes and
 * rolls leave the fuzz keys alone) with a few keys; one session for the pages
 * and forms, and sessions to sign out; the form cookie and token of a browser
 * not signed in; pending invitations (one per account); and the routes its
 * router serves.
 */
let dashboard: {
  login: string;
  keyIds: string[];
  /** Keys that are only ever rolled, never revoked: a revoked key cannot be rolled. */
  rollIds: string[];
  session: DashboardCaller;
  disposable: DashboardCaller[];
  form: DashboardCaller;
  invitations: string[];
  routes: string[];
};
const DASHBOARD_PASSWORD = `fuzz dashboard password ${randomUUID()}`;
/** A generated admin token's shape: the log and answers must hide it as they hide keys. */
const ADMIN_SHAPED = `adm_${randomBytes(32).toString('base64url')}`;
/** What no answer, answer header or log line may hold, in any encoding: the keys' secrets, the shaped token, the dashboard's password and session ids. */
let credentials: string[];

function authorization(auth: Auth): Record<string, string> {
  switch (auth) {
    case 'live':
    case 'sandbox':
    case 'narrow':
    case 'revoked':
      return { authorization: `Bearer ${keys[auth]}` };
    case 'unknown':
      return { authorization: `Bearer pk_live_${'A'.repeat(43)}` };
    case 'basic':
      return { authorization: 'Basic dXNlcjpwYXNz' };
    case 'bare':
      return { authorization: 'Bearer' };
    case 'huge':
      return { authorization: `Bearer ${'x'.repeat(8_000)}` };
    case 'admin':
      return { authorization: `Bearer ${svc.runtime.adminToken}` };
    case 'wrong-admin':
      return { authorization: `Bearer ${svc.runtime.adminToken}x` };
    case 'none':
      return {};
  }
}

/** Totals over the file, printed at the end for the record; each test asserts on its own counts. */
const stats = { requests: 0, byClass: {} as Record<string, number>, refusedWrites: 0, acceptedWrites: 0 };

function sendOnce(req: Req): Promise<Reply & { reusedSocket: boolean }> {
  const base = req.to === 'public' ? publicBase : adminBase;
  // All requests share kept-alive connections: the server reads and drops the
  // unread rest of a refused request's body, so its connection serves the next.
  return new Promise((resolve, reject) => {
    const request = http.request(
      { agent, hostname: base.hostname, port: base.port, method: req.method, path: req.path, headers: { ...authorization(req.auth), ...req.headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8'), reusedSocket: request.reusedSocket }),
        );
      },
    );
    request.on('error', (err) => reject(Object.assign(err, { reusedSocket: request.reusedSocket })));
    request.end(req.body);
  });
}

async function send(req: Req): Promise<Reply> {
  stats.requests++;
  let reply: Reply;
  try {
    reply = await sendOnce(req);
  } catch (err) {
    // A kept-alive socket the server closed as it was reused: Node's documented retry case, not a server fault.
    if (!((err as { reusedSocket?: boolean }).reusedSocket && (err as NodeJS.ErrnoException).code === 'ECONNRESET')) throw err;
    reply = await sendOnce(req);
  }
  const cls = `${Math.floor(reply.status / 100)}xx`;
  stats.byClass[cls] = (stats.byClass[cls] ?? 0) + 1;
  return reply;
}

const describeReq = (req: Req) => `${req.to} ${req.method} ${req.path.length > 300 ? `${req.path.slice(0, 300)}…` : req.path}`;

/** What is wrong with an error body: not JSON, or not exactly the envelope. */
function envelopeProblem(text: string): string | null {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return 'error body is not JSON';
  }
  const envelope = body as { error?: Record<string, unknown> } | undefined;
  const error = envelope?.error;
  const details = error?.details;
  const exact =
    envelope !== null &&
    typeof envelope === 'object' &&
    Object.keys(envelope).join() === 'error' &&
    error !== null &&
    typeof error === 'object' &&
    Object.keys(error).sort().join() === 'code,details,docsUrl,message' &&
    typeof error.code === 'string' &&
    typeof error.message === 'string' &&
    typeof error.docsUrl === 'string' &&
    details !== null &&
    typeof details === 'object' &&
    !Array.isArray(details) &&
    Object.values(details as object).every((m) => Array.isArray(m) && m.every((s) => typeof s === 'string'));
  if (!exact) return 'error body is not exactly { error: { code, message, docsUrl, details: { field: string[] } } }';
  // However wide, long or deep the input, an error is a few KB (docs/api.md, Errors).
  return Buffer.byteLength(text) > MAX_ERROR_BYTES ? `error body of ${Buffer.byteLength(text)} bytes, over ${MAX_ERROR_BYTES}` : null;
}

const isDashboardPath = (req: Req) => req.to === 'public' && /^\/account(?:[/?]|$)/i.test(req.path);

/**
 * A dashboard answer: a page, a redirect with its Location, or a refusal.
 * A client asking for JSON gets the envelope; a browser gets the dashboard's
 * HTML page, or the envelope for what is refused before the dashboard's own
 * handling (a path that is not valid percent-encoding, a form body the parser refuses).
 */
function dashboardProblem(req: Req, reply: Reply): string | null {
  if (reply.status < 300 || req.method === 'HEAD') return null;
  if (reply.status < 400) return reply.headers.location ? null : 'a redirect without Location';
  if (req.headers?.accept === 'application/json') return envelopeProblem(reply.text);
  if (String(reply.headers['content-type']).startsWith('text/html')) return null;
  return envelopeProblem(reply.text);
}

/** Text with %XX decoded, three times over (as a client may have encoded it), so an encoded credential shows. */
function decodedForLeaks(text: string): string {
  let decoded = text;
  for (let i = 0; i < 3; i++) decoded = decoded.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return decoded;
}

/** The credentials `text` holds, as is or percent-encoded. */
const leaksIn = (text: string) => {
  const decoded = decodedForLeaks(text);
  return credentials.filter((c) => decoded.includes(c));
};

/** What is wrong with a reply: a 5xx, no request id, an error body that is not exactly the envelope (or the dashboard's page), a credential echoed. */
function problemsOf(req: Req, reply: Reply): string[] {
  const problems: string[] = [];
  if (reply.status >= 500) problems.push(`status ${reply.status}`);
  if (!reply.headers['x-request-id']) problems.push('no X-Request-Id header');
  const malformed = isDashboardPath(req)
    ? dashboardProblem(req, reply)
    : (reply.status < 200 || reply.status >= 300) && req.method !== 'HEAD'
      ? envelopeProblem(reply.text)
      : null;
  if (malformed) problems.push(malformed);
  const leaked = leaksIn(`${JSON.stringify(reply.headers)}\n${reply.text}`);
  if (leaked.length) problems.push(`the answer holds ${leaked.length} credential(s) the request carried`);
  // A path of one listener's API sent to the other listener is no route there; the documents describe each API on its own listener.
  if (req.method !== 'HEAD' && (req.to === 'admin') === req.path.startsWith('/admin/')) {
    let body: unknown = reply.text;
    try {
      body = JSON.parse(reply.text);
    } catch {
      // checked above for errors; a success body that is not JSON fails the contract below
    }
    try {
      apiContract().check(req.method, req.path, reply.status, String(reply.headers['content-type'] ?? ''), body);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  return problems.length ? [`${describeReq(req)} → ${reply.status} ${reply.text.slice(0, 400)}\n    ${problems.join('; ')}`] : [];
}

// The tables an admin write may change. api_keys.last_used_at is left out:
// public requests set it a second later, whatever the admin API does.
const WRITTEN_TABLES = [
  'instruments',
  'instrument_symbols',
  'instrument_broker_codes',
  'daily_bars',
  'intraday_bars',
  'intraday_bars_5min',
  'intraday_bars_15min',
  'intraday_bars_30min',
  'intraday_bars_1hour',
  'corporate_action_revisions',
  'action_set_versions',
  'action_coverage_checks',
  'fx_rates',
  'fx_rate_revisions',
  'economic_events',
  'earnings_reports',
  'option_contracts',
  'option_quotes',
  'iv_snapshots',
  'news',
  'event_reactions',
  'sentiment_sources',
  'sentiment_scores',
  'sentiment_source_leads',
];
let snapshotTables: string[];
/** The fuzz account's ready export (its files by name, with their signed links' paths) and three more that DELETEs may remove. */
let exportFixture: { id: string; files: { name: string; link: string }[]; deletable: string[] };

/**
 * The database as an admin write could change it, in one query: the row count
 * of every written table (an insert or delete anywhere), and a digest of every
 * row of the instruments, account, dashboard login and keys the writes name
 * (an update). Rows of other test files are only counted, which keeps this to
 * milliseconds.
 */
async function snapshot(): Promise<Record<string, string>> {
  const digest = (rows: string) => `md5(coalesce(string_agg(${rows}::text, ',' order by ${rows}::text), ''))`;
  const tables = snapshotTables.map((table) => {
    // fx_rates names no instrument: every row is digested (the fixture's and the writes' rates, under 3,000 rows),
    // and every FX revision the writes' corrections kept.
    // Economic events are keyed by their own id, which the writes draw from the same ids as instruments.
    // Option quotes name their contract: those of the named instruments' contracts.
    const column = table === 'instruments' || table === 'economic_events' ? 'id' : 'instrument_id';
    // Sentiment sources and leads name no instrument either: a refused write must leave every one as it was.
    const rows =
      table === 'fx_rates' || table === 'fx_rate_revisions' || table === 'sentiment_sources' || table === 'sentiment_source_leads'
        ? 'true'
        : table === 'option_quotes'
          ? 't.contract_id in (select c.id from option_contracts c where c.instrument_id = any($2::uuid[]))'
          : `t.${column} = any($2::uuid[])`;
    return `(select count(*) from ${table}) || ' ' || (select ${digest('to_jsonb(t)')} from ${table} t where ${rows}) as ${table}`;
  });
  const [row] = await svc.sql.unsafe(
    `select
       (select count(*) from accounts) as accounts,
       (select count(*) from api_keys) as api_keys,
       (select ${digest("(to_jsonb(k) - 'last_used_at')")} from api_keys k where k.account_id = $1) as fuzz_keys,
       (select ${digest('to_jsonb(a)')} from accounts a where a.id = $1) as fuzz_account,
       (select ${digest('to_jsonb(l)')} from dashboard_logins l where l.account_id = $1) as fuzz_login,
       ${tables.join(',\n       ')}`,
    [accountId, [...scratchIds, ...freshIds]],
  );
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, String(v)]));
}

beforeAll(async () => {
  const limit = '1000000000';
  // FRED on loopback with every allowlisted series, so macro reads reach storage and the provider path.
  fred = await new FredStub(FRED_KEY).start();
  for (const id of MACRO_SERIES_IDS) {
    fred.series.set(id, {
      title: `${id} (fuzz)`,
      units: 'Percent',
      frequency: 'Daily',
      frequencyShort: 'D',
      observations: [
        ['2024-01-02', '4.1'],
        ['2024-01-03', '.'],
        ['2024-01-04', '-0.25'],
      ],
    });
  }
  svc = await startService(
    {
      FRED_API_KEY: FRED_KEY,
      FRED_BASE_URL: fred.url,
      RATE_LIMIT_LIVE_PER_MINUTE: limit,
      RATE_LIMIT_LIVE_PER_DAY: limit,
      RATE_LIMIT_SANDBOX_PER_MINUTE: limit,
      RATE_LIMIT_SANDBOX_PER_DAY: limit,
      DASHBOARD_SIGN_IN_PER_LOGIN_ADDRESS: limit,
      DASHBOARD_SIGN_IN_PER_LOGIN: limit,
      DASHBOARD_SIGN_IN_PER_ADDRESS: limit,
      DASHBOARD_INVITATIONS_PER_ADDRESS: limit,
      // A batch may post two or three sign-in or invitation forms at once, all
      // from one address: the second waits for none (429, one check at a time
      // per address), and with more threads the checks that do run are not
      // shed with 503 behind each other, by design but not what this tests.
      PASSWORD_HASH_THREADS: '4',
      // The export fixtures run at once rather than within the default 5 s poll.
      EXPORTS_POLL_MS: '100',
      LOG_LEVEL: 'info',
    },
    { write: (line: string) => void logLines.push(line) },
  );
  const pub = new URL(svc.runtime.publicUrl);
  const adm = new URL(svc.runtime.adminUrl);
  publicBase = { hostname: pub.hostname, port: pub.port };
  adminBase = { hostname: adm.hostname, port: adm.port };
  accountId = await svc.createAccount('fuzz');
  keys.live = (await svc.createKey(accountId, [...SCOPES], 'live')).key;
  keys.sandbox = (await svc.createKey(accountId, [...SCOPES], 'sandbox')).key;
  keys.narrow = (await svc.createKey(accountId, ['instruments:read'], 'live')).key;
  const revoked = await svc.createKey(accountId, [...SCOPES], 'live');
  await svc.admin('POST', `/keys/${revoked.id}/revoke`);
  keys.revoked = revoked.key;
  revocableKeyIds = await Promise.all(Array.from({ length: 3 }, async () => (await svc.createKey(accountId, ['prices:read'], 'sandbox')).id));

  const days = weekdays(FIXTURE_FROM, FIXTURE_TO);
  const equity = await createInstrument(svc, { brokerCodes: { ibkr: 'FUZZ1' } });
  const benchmark = await createInstrument(svc, { assetClass: 'index' });
  const etf = await createInstrument(svc, { assetClass: 'etf' });
  const fx = await createInstrument(svc, { assetClass: 'fx', quoteCurrency: 'EUR' });
  instrumentIds = [equity.id, benchmark.id, etf.id, fx.id];
  for (const [n, id] of instrumentIds.slice(0, 3).entries()) {
    await ingest(
      svc,
      '/bars/daily',
      days.map((barDate, i) => dailyBar(id, { barDate, close: 50 + n * 10 + 10 * Math.sin(i / (7 + n)) + i / 100 })),
    );
  }
  await ingest(svc, '/corporate-actions', [
    {
      instrumentId: equity.id,
      kind: 'split',
      effectiveDate: days[400],
      knowledgeDate: days[390],
      knowledgeProvenance: 'announced',
      params: { ratio: 2 },
      source: 'fuzz',
    },
    {
      instrumentId: equity.id,
      kind: 'cash_dividend',
      effectiveDate: days[600],
      knowledgeDate: days[590],
      knowledgeProvenance: 'announced',
      params: { amount: 0.5, currency: 'USD' },
      source: 'fuzz',
    },
  ]);
  const minute = Date.parse(`${days[days.length - 2]}T14:30:00Z`);
  await ingest(
    svc,
    '/bars/intraday',
    Array.from({ length: 120 }, (_, i) => intradayRow(equity.id, new Date(minute + i * 60_000).toISOString(), 20 + (i % 7))),
  );
  // An option chain on the equity: two expiries, calls and puts, quotes on two days (one with the provider's Greeks).
  optionDays = [days[days.length - 30], days[days.length - 10]];
  const contracts = [60, 70, 80].flatMap((strike) =>
    ['call', 'put'].flatMap((right) =>
      [days[days.length - 5], days[days.length - 1]].map((expiry) => ({
        instrumentId: equity.id,
        contractSymbol: `FUZZ ${expiry} ${right} ${strike}`,
        expiry,
        strike,
        right,
        multiplier: 100,
      })),
    ),
  );
  await ingest(svc, '/options/contracts', contracts);
  optionContractIds = contracts.map((c) => derivedContractId(equity.id, c.contractSymbol));
  await ingest(
    svc,
    '/options/quotes',
    optionContractIds.flatMap((contractId, i) =>
      optionDays.map((day, d) => ({
        contractId,
        observedAt: `${day}T20:00:00Z`,
        bid: 1 + (i % 5),
        ask: 1.2 + (i % 5),
        source: 'fuzz',
        greeks: d === 1 && i % 3 === 0 ? { delta: 0.5, gamma: 0.05, theta: -0.02, vega: 0.1, rho: 0.03, impliedVolatility: 0.3 } : null,
      })),
    ),
  );
  // A report every 63rd weekday (about quarterly), cycling through the four sessions.
  const sessions = ['bmo', 'amc', 'dmh', 'unknown'];
  await ingest(
    svc,
    '/earnings',
    days
      .filter((_, i) => i % 63 === 20)
      .map((reportDate, i) => ({
        instrumentId: equity.id,
        reportDate,
        session: sessions[i % 4],
        fiscalPeriod: `Q${(i % 4) + 1}`,
        fiscalYear: 2021 + Math.floor(i / 4),
        status: 'reported',
        source: 'fuzz',
      })),
  );
  await ingest(
    svc,
    '/fx',
    days.map((rateDate, i) => ({ base: 'EUR', quote: 'JPY', rateDate, rate: 130 + 10 * Math.sin(i / 9), source: 'fuzz' })),
  );
  // Implied-volatility snapshots: the equity's on every weekday (with a term
  // structure), the ETF's every fifth with null figures, so reads with an asOf
  // in the fixture's years find fresh ones; and one of the equity's dated
  // today, the only day a read without asOf counts freshness from.
  const ivSnapshot = (instrumentId: string, asOfDate: string, i: number, measured: boolean) => ({
    instrumentId,
    asOfDate,
    underlyingPrice: 50 + (i % 17),
    atmImpliedVolatility: measured ? 0.2 + (i % 9) / 100 : null,
    impliedVolatility30d: measured ? 0.21 : null,
    historicalVolatility30d: 0.18,
    parkinsonHistoricalVolatility30d: measured ? 0.17 : null,
    putCallIvRatio30d: null,
    termStructure: measured
      ? [
          { daysToExpiry: 30, atmImpliedVolatility: 0.22 },
          { daysToExpiry: 7, atmImpliedVolatility: null },
        ]
      : [],
    source: 'fuzz',
  });
  await ingest(svc, '/iv-snapshots', [
    ...days.map((d, i) => ivSnapshot(equity.id, d, i, true)),
    ...days.filter((_, i) => i % 5 === 0).map((d, i) => ivSnapshot(etf.id, d, i, false)),
    ivSnapshot(equity.id, new Date().toISOString().slice(0, 10), 0, true),
  ]);
  // News on the equity around its split, so reactions are derived and the coverage read finds it.
  await ingest(
    svc,
    '/news',
    [380, 399, 400, 401, 600, 900].map((d, i) => ({
      instrumentId: equity.id,
      eventClass: ['earnings_release', 'guidance'][i % 2],
      headline: `Fuzz news ${i}`,
      source: 'fuzz',
      url: `https://news.example.test/fuzz/${i}`,
      publishedAt: `${days[d]}T${i % 3 ? '21:30' : '14:00'}:00Z`,
      isCompanyConfirmed: i % 3 !== 2,
    })),
  );
  // Sentiment on the equity's weekdays, both subject classes, so reads and the leads find scores.
  await ingest(
    svc,
    '/sentiment',
    days.flatMap((asOfDate, i) =>
      (['business', 'market_commentary'] as const).map((subjectClass) => ({
        instrumentId: equity.id,
        source: 'fuzz',
        subjectClass,
        asOfDate,
        score: Math.sin(i / 5),
        scale: [-1, 1],
        isHeadlineOnly: i % 4 === 0,
      })),
    ),
  );
  scratchIds = [(await createInstrument(svc)).id, (await createInstrument(svc, { assetClass: 'crypto' })).id];

  const dashboardAccount = await svc.createAccount('fuzz dashboard');
  const login = `fuzz-dashboard-${randomUUID()}@example.com`;
  await svc.admin('POST', `/accounts/${dashboardAccount}/password`, { login, password: DASHBOARD_PASSWORD });
  const keyIds: string[] = [];
  for (let i = 0; i < 5; i++) keyIds.push((await svc.createKey(dashboardAccount, ['prices:read'], 'sandbox')).id);
  const rollIds = keyIds.splice(3);
  const cookieOf = (client: DashboardClient) => [...client.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  const signIn = async (): Promise<DashboardCaller> => {
    const client = new DashboardClient(svc.runtime.publicUrl);
    const res = await client.signIn(login, DASHBOARD_PASSWORD);
    if (res.status !== 303) throw new Error(`dashboard sign-in failed: ${res.status} ${res.text.slice(0, 300)}`);
    return { cookie: cookieOf(client), csrf: await client.csrfToken() };
  };
  const session = await signIn();
  const disposable: DashboardCaller[] = [];
  for (let i = 0; i < 8; i++) disposable.push(await signIn());
  const browser = new DashboardClient(svc.runtime.publicUrl);
  const form = { csrf: csrfOn((await browser.get('/account/sign-in')).text) ?? '', cookie: '' };
  form.cookie = cookieOf(browser);
  const invitations: string[] = [];
  for (let i = 0; i < 10; i++) {
    const invited = await svc.createAccount(`fuzz invited ${i}`);
    const res = await svc.admin('POST', `/accounts/${invited}/invitations`, { login: `fuzz-invited-${randomUUID()}@example.com` });
    invitations.push(new URL(res.body.data.url).searchParams.get('token')!);
  }
  // The dashboard's pages, without the origin check that runs before them on every POST (a wildcard).
  const routes = servedRoutes(svc.runtime.app('public'), '/account')
    .filter((r) => !r.includes('{*'))
    .map((r) => routeKey(r.split(' ')[0], r.split(' ')[1]));
  dashboard = { login, keyIds, rollIds, session, disposable, form, invitations, routes };
  const sessionIds = [session, ...disposable].map((c) => /mds_session=([^;]+)/.exec(c.cookie)![1]);
  credentials = [...Object.values(keys).map((k) => k.slice('pk_live_'.length)), ADMIN_SHAPED.slice('adm_'.length), DASHBOARD_PASSWORD, ...sessionIds];
  // Export jobs of the fuzz account, run to ready: one whose file the reads fetch, and three the DELETEs may remove.
  const exportBody = { dataset: 'daily-prices', instrumentIds: instrumentIds.slice(0, 2), from: FIXTURE_FROM, to: FIXTURE_TO, format: 'csv' };
  const readyExport = async () => {
    const posted = await svc.post('/v1/exports', keys.live, exportBody);
    if (posted.status !== 202) throw new Error(`export fixture: ${posted.status} ${JSON.stringify(posted.body)}`);
    return until(
      async () => {
        const job = (await svc.get(`/v1/exports/${posted.body.data.id}`, keys.live)).body.data;
        return job.status === 'ready' ? (job as { id: string; files: { name: string; url: string }[] }) : null;
      },
      { timeoutMs: 60_000, what: 'the fuzz export fixture becoming ready' },
    );
  };
  const kept = await readyExport();
  const deletable: string[] = [];
  for (let i = 0; i < 3; i++) deletable.push((await readyExport()).id);
  exportFixture = { id: kept.id, files: kept.files.map((f) => ({ name: f.name, link: new URL(f.url).pathname + new URL(f.url).search })), deletable };
  const tables = await svc.sql<
    { name: string }[]
  >`select c.relname as name from pg_class c where c.relname = any(${WRITTEN_TABLES}) and c.relkind in ('r', 'p')`;
  snapshotTables = WRITTEN_TABLES.filter((t) => tables.some((r) => r.name === t));
}, 120_000);

afterAll(async () => {
  agent.destroy();
  await svc?.stop();
  await fred?.stop();
});

function intradayRow(instrumentId: string, barTimestamp: string, close = 10) {
  return {
    instrumentId,
    barTimestamp,
    openPrice: close,
    highPrice: close + 1,
    lowPrice: close - 1,
    closePrice: close,
    volume: 100,
    quoteCurrency: 'USD',
    quoteUnit: 'USD per share',
    source: 'fuzz',
    // Known when its minute ends.
    asOf: new Date(Date.parse(barTimestamp) + 60_000).toISOString(),
  };
}

type Param = [fc.Arbitrary<string>, 'required' | 'optional'];

/** A query string: the route's parameters, mostly valid, sometimes hostile, absent, repeated or joined by unknown ones. */
function query(spec: Record<string, Param>): fc.Arbitrary<string> {
  const names = Object.keys(spec);
  const value = (n: string) => fc.oneof({ weight: 6, arbitrary: spec[n][0] }, { weight: 1, arbitrary: hostileWire });
  const present = fc.record(Object.fromEntries(names.map((n) => [n, fc.option(value(n), { nil: undefined, freq: spec[n][1] === 'required' ? 12 : 2 })])));
  const junk = fc.array(
    fc.oneof(
      fc
        .tuple(fc.constantFrom(...names, 'colour', '', '%00', '%FF', 'a[b]', '__proto__', 'constructor', 'x'.repeat(2_000)), hostileWire)
        .map(([k, v]) => `${k}=${v}`),
      fc.constantFrom(...names, '&', '=', '==', '%', '&&', `${names[0] ?? 'a'}[]=1`),
    ),
    { minLength: 1, maxLength: 3 },
  );
  return fc.tuple(present, fc.oneof({ weight: 5, arbitrary: fc.constant([] as string[]) }, { weight: 1, arbitrary: junk })).map(([p, extra]) =>
    [
      ...Object.entries(p)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => `${k}=${v}`),
      ...extra,
    ].join('&'),
  );
}

/** Path segments that are not an id: malformed percent-encoding, NUL, dot segments, a route name, the nil and max UUIDs, 3,000 characters. */
const MALFORMED_SEGMENTS = [
  '%FF',
  '%',
  '%E0%A4%A',
  '%00',
  '%2F',
  '%2e%2e',
  '..',
  '.',
  'bulk',
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  'x'.repeat(3_000),
  '%C0%80',
  '%ED%A0%80',
  ';',
  '%3B',
  "'",
  '*',
  '%20',
  '%25',
  `${FIXED_UUID}%00`,
  `${FIXED_UUID}x`,
];

/** A form body's fields, urlencoded: each mostly as given, sometimes hostile text or left out; a field given as a list is repeated. */
function formOf(fields: Record<string, fc.Arbitrary<string | string[]>>): fc.Arbitrary<string> {
  const field = (valid: fc.Arbitrary<string | string[]>) =>
    fc.oneof({ weight: 10, arbitrary: valid }, { weight: 1, arbitrary: hostileText }, { weight: 1, arbitrary: fc.constant(undefined) });
  return fc.record(Object.fromEntries(Object.entries(fields).map(([name, valid]) => [name, field(valid)]))).map((values) => {
    const form = new URLSearchParams();
    for (const [name, value] of Object.entries(values)) for (const v of value === undefined ? [] : [value].flat()) form.append(name, v);
    return form.toString();
  });
}

// Form bodies no browser sends: malformed percent-encoding, NUL, over the 16 KB and 50-field limits, JSON, a repeated csrf.
const JUNK_FORM_BODIES = [
  '',
  '=',
  '&&&',
  'csrf',
  'csrf=%FF',
  'csrf=%',
  'a=%E0%A4%A',
  'csrf=%00',
  `csrf=${'x'.repeat(20_000)}`,
  Array.from({ length: 60 }, (_, i) => `f${i}=1`).join('&'),
  '{"csrf":"x"}',
  'csrf=a&csrf=b',
  '__proto__=x&constructor=y',
];

/**
 * The dashboard's pages and forms, as a browser and as a script would send
 * them: mostly as the signed-in holder with the session's CSRF token (the
 * forms before sign-in with the form cookie's), sometimes without a session,
 * with one that does not exist or a hostile cookie, with a wrong or missing
 * token, from another origin, asking for JSON, or with a hostile body or path.
 */
function dashboardRequests(): fc.Arbitrary<Req> {
  const { session, disposable, form, invitations, keyIds, rollIds, login } = dashboard;
  const stranger = fc.constantFrom<DashboardCaller>(
    { cookie: '', csrf: '' },
    { cookie: `mds_session=${'A'.repeat(43)}`, csrf: session.csrf },
    { cookie: 'mds_session=%00; mds_session=x', csrf: '' },
    { cookie: `${session.cookie}; mds_session=${'B'.repeat(43)}`, csrf: session.csrf },
    { cookie: `mds_form=${'x'.repeat(5_000)}`, csrf: form.csrf },
  );
  const callerOf = (usual: fc.Arbitrary<DashboardCaller>) => fc.oneof({ weight: 10, arbitrary: usual }, { weight: 1, arbitrary: stranger });
  const csrfFor = (caller: DashboardCaller) =>
    fc.oneof({ weight: 12, arbitrary: fc.constant(caller.csrf) }, { weight: 1, arbitrary: fc.constantFrom('', 'x', caller.csrf.toUpperCase(), form.csrf) });
  const extraHeaders = fc.tuple(
    fc.oneof(
      { weight: 6, arbitrary: fc.constant<Record<string, string>>({}) },
      {
        weight: 1,
        arbitrary: fc.constantFrom({ accept: 'application/json' }, { accept: 'text/html' }, { accept: '*/*' }, { accept: 'application/json;q=0.1, text/html' }),
      },
    ),
    fc.oneof(
      { weight: 12, arbitrary: fc.constant<Record<string, string>>({}) },
      {
        weight: 1,
        arbitrary: fc.constantFrom({ origin: 'https://evil.example' }, { origin: 'null' }, { origin: `http://${publicBase.hostname}:${publicBase.port}` }),
      },
    ),
  );
  // A body's length is sent: Node's client frames the body of an OPTIONS or DELETE only then.
  const request = (method: string, path: string, caller: DashboardCaller, headers: Record<string, string>, body?: string): Req => ({
    to: 'public',
    method,
    path,
    auth: 'none',
    headers: {
      ...(caller.cookie ? { cookie: caller.cookie } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(body)) }),
      ...headers,
    },
    body,
  });
  const page = (path: fc.Arbitrary<string>, usual: fc.Arbitrary<DashboardCaller> = fc.constant(session)) =>
    fc
      .tuple(path, callerOf(usual), extraHeaders, fc.constantFrom('GET', 'GET', 'GET', 'HEAD'))
      .map(([p, caller, [accept], method]) => request(method, p, caller, accept));
  /** A form post; `fields` gets the caller, so it can carry the caller's CSRF token. */
  const post = (
    path: fc.Arbitrary<string>,
    usual: fc.Arbitrary<DashboardCaller>,
    fields: (caller: DashboardCaller) => Record<string, fc.Arbitrary<string | string[]>>,
  ) =>
    fc
      .tuple(path, callerOf(usual), extraHeaders)
      .chain(([p, caller, [accept, origin]]) =>
        fc
          .oneof({ weight: 12, arbitrary: formOf(fields(caller)) }, { weight: 1, arbitrary: fc.constantFrom(...JUNK_FORM_BODIES) })
          .map((body) => request('POST', p, caller, { ...accept, ...origin }, body)),
      );
  // Another account's key is not found, like one that does not exist.
  const keyIdFrom = (ids: string[]) =>
    fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom(...ids) },
      { weight: 1, arbitrary: fc.constantFrom(...revocableKeyIds, FIXED_UUID) },
      { weight: 1, arbitrary: fc.constantFrom(...MALFORMED_SEGMENTS) },
    );
  const withKey = (template: string, ids = [...keyIds, ...rollIds]) => keyIdFrom(ids).map((id) => template.replace(':id', id));
  const passwords = fc.constantFrom('a new password for the fuzz', 'short', 'x'.repeat(201), '\u0000'.repeat(12), '\ud800'.repeat(12));
  const token = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...invitations) },
    { weight: 1, arbitrary: fc.constantFrom('A'.repeat(43), '', '%00', 'x'.repeat(101)) },
  );
  const withQuery = (spec: Record<string, Param>) => query(spec).map((q) => (q ? `?${q}` : ''));
  const assets = [
    'keys.js',
    'usage.js',
    'dashboard.css',
    'uplot/uPlot.iife.min.js',
    'uplot/uPlot.min.css',
    'nonexistent.js',
    '',
    'uplot/',
    'uplot/nonexistent.js',
    '../routes.ts',
    '%2e%2e/routes.ts',
    '..%2froutes.ts',
    'keys.js%00',
    '%00',
    '%FF',
    'keys.js/x',
  ];
  return fc.oneof(
    page(
      withQuery({ welcome: [fc.constantFrom('1', '0'), 'optional'] }).map((q) => `/account/sign-in${q}`),
      fc.constant({ cookie: form.cookie, csrf: form.csrf }),
    ),
    post(fc.constant('/account/sign-in'), fc.constant({ cookie: form.cookie, csrf: form.csrf }), (caller) => ({
      login: fc.oneof(
        { weight: 3, arbitrary: fc.constant(login) },
        { weight: 1, arbitrary: fc.constantFrom(login.toUpperCase(), 'nobody@example.com', '', 'x'.repeat(300)) },
      ),
      password: fc.oneof({ weight: 3, arbitrary: fc.constant(DASHBOARD_PASSWORD) }, { weight: 1, arbitrary: passwords }),
      csrf: csrfFor(caller),
    })),
    page(
      token.map((t) => `/account/invitation?token=${encodeURIComponent(t)}`),
      fc.constant({ cookie: form.cookie, csrf: form.csrf }),
    ),
    post(fc.constant('/account/invitation'), fc.constant({ cookie: form.cookie, csrf: form.csrf }), (caller) => ({
      token,
      password: fc.constant('a new password for the fuzz'),
      confirm: fc.oneof(fc.constant('a new password for the fuzz'), passwords),
      csrf: csrfFor(caller),
    })),
    page(fc.constantFrom('/account/', '/account', '/account//', '/account/keys/')),
    page(withQuery({ revoked: [fc.oneof(fc.constantFrom(...keyIds), hostileWire), 'optional'] }).map((q) => `/account/keys${q}`)),
    post(fc.constant('/account/keys'), fc.constant(session), (caller) => ({
      name: fc.oneof({ weight: 4, arbitrary: fc.constant('fuzz dashboard key') }, { weight: 1, arbitrary: fc.constantFrom(' ', 'x'.repeat(201)) }),
      environment: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('sandbox', 'live') }, { weight: 1, arbitrary: fc.constant('staging') }),
      scopes: fc.oneof(
        { weight: 4, arbitrary: fc.subarray([...SCOPES], { minLength: 1, maxLength: 3 }) },
        { weight: 1, arbitrary: fc.constantFrom<string | string[]>([], 'all', ['prices:read', 'nope']) },
      ),
      csrf: csrfFor(caller),
    })),
    page(withKey('/account/keys/:id')),
    page(withKey('/account/keys/:id/revoke')),
    post(withKey('/account/keys/:id/revoke', keyIds), fc.constant(session), (caller) => ({ csrf: csrfFor(caller) })),
    post(withKey('/account/keys/:id/roll', rollIds), fc.constant(session), (caller) => ({ csrf: csrfFor(caller) })),
    page(withQuery({ days: [fc.constantFrom('30', '90', '400', '7', '-1', '1e2', '30.0'), 'optional'] }).map((q) => `/account/usage${q}`)),
    post(fc.constant('/account/sign-out'), fc.constantFrom(...disposable), (caller) => ({ csrf: csrfFor(caller) })),
    page(fc.constantFrom(...assets).map((a) => `/account/assets/${a}`)),
    fc
      .tuple(
        fc.constantFrom('/account/nowhere', '/account/keys/x/y/z', '/account/%FF', '/account/%00', '/account/sign-in/', '/account/assets/keys.js'),
        fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'),
        fc.constantFrom(session, form),
      )
      .map(([path, method, caller]) => request(method, path, caller, {}, method === 'GET' ? undefined : `csrf=${caller.csrf}`)),
  );
}

/**
 * Requests carrying a credential where a client might paste one by mistake:
 * a key, its bare secret or a token-shaped secret in a path segment of any
 * route (percent-encoded in full or in part, in either case, or twice), in a
 * query parameter's name or value, or as X-Request-Id; the dashboard password
 * in a dashboard path. No answer and no log line may hold it (problemsOf, leaksIn).
 */
function leakProbes(): fc.Arbitrary<Req> {
  const secret = fc.constantFrom(
    keys.live,
    keys.revoked,
    keys.sandbox,
    keys.live.slice('pk_live_'.length),
    keys.sandbox.slice('pk_test_'.length),
    ADMIN_SHAPED,
  );
  const encoded = (text: fc.Arbitrary<string>) =>
    fc
      .tuple(text, fc.constantFrom('raw', 'upper', 'lower', 'every2', 'every3-lower', 'twice', 'underscore'))
      .map(([t, how]) =>
        how === 'raw'
          ? t
          : how === 'upper'
            ? percentEncoded(t, 'upper')
            : how === 'lower'
              ? percentEncoded(t, 'lower')
              : how === 'every2'
                ? percentEncoded(t, 'upper', 2)
                : how === 'every3-lower'
                  ? percentEncoded(t, 'lower', 3)
                  : how === 'twice'
                    ? percentEncoded(percentEncoded(t, 'upper'), 'upper')
                    : t.replaceAll('_', '%5f'),
      );
  const inPublicPath = fc.tuple(
    encoded(secret),
    fc.constantFrom(
      '/v1/$',
      '/v1/instruments/$',
      '/v1/instruments/$/prices?from=2024-01-02&to=2024-01-05',
      '/v1/instruments/$%FF',
      '/v1/instruments/x/$',
      '/v1/fx/$/USD?date=2024-01-02',
      '/v1/macro/series/$',
      '/v1/options/$',
      '/v1/instruments?$=1',
      '/v1/instruments?query=$',
      '/v1/instruments?asOf=$',
      '/v1/prices/bulk?instrumentIds=$&from=2024-01-02&to=2024-01-05',
      '/$',
      '/account/$',
      '/account/keys/$',
      '/account/assets/$',
    ),
  );
  const password = encoded(fc.constant(DASHBOARD_PASSWORD).map((p) => encodeURIComponent(p)));
  const inDashboardPath = fc.tuple(password, fc.constantFrom('/account/$', '/account/keys/$', '/account/keys/$/revoke', '/account/$/x'));
  return fc.oneof(
    fc
      .tuple(fc.oneof(inPublicPath, inDashboardPath), fc.constantFrom<Auth>('live', 'none'), fc.constantFrom('GET', 'POST'))
      .map(([[text, template], auth, method]): Req => ({
        to: 'public',
        method,
        path: template.replace('$', text),
        auth,
        headers: {
          cookie: dashboard.session.cookie,
          'x-csrf-token': dashboard.session.csrf,
          ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
        },
        body: method === 'POST' ? '{}' : undefined,
      })),
    fc
      .tuple(encoded(secret), fc.constantFrom('/admin/v1/$', '/admin/v1/keys/$/revoke', '/admin/v1/accounts/$/password', '/admin/v1/usage?accountId=$'))
      .map(([text, template]): Req => ({ to: 'admin', method: template.includes('?') ? 'GET' : 'POST', path: template.replace('$', text), auth: 'admin' })),
    fc
      .tuple(encoded(secret), fc.constantFrom('', 'trace-', 'a.'))
      .map(([text, prefix]): Req => ({ to: 'public', method: 'GET', path: '/healthz', auth: 'none', headers: { 'x-request-id': `${prefix}${text}` } })),
  );
}

function publicRequests(): fc.Arbitrary<Req> {
  const known = fc.constantFrom(...instrumentIds, ...scratchIds);
  const idValue = fc.oneof(
    { weight: 6, arbitrary: known },
    { weight: 1, arbitrary: fc.uuid({ version: 4 }) },
    { weight: 1, arbitrary: known.map((s) => s.toUpperCase()) },
  );
  const segment = fc.oneof(
    { weight: 8, arbitrary: idValue },
    { weight: 2, arbitrary: fc.constantFrom(...MALFORMED_SEGMENTS) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }).map(percentEncode) },
  );
  const idList = (max: number) =>
    fc.oneof(
      { weight: 8, arbitrary: fc.array(idValue, { minLength: 1, maxLength: max }).map((ids) => ids.join(',')) },
      { weight: 1, arbitrary: fc.constantFrom(...HUGE_WIRE) },
    );
  const date = realDate(2020, 2026);
  const asOf = fc.oneof(
    { weight: 3, arbitrary: date },
    { weight: 1, arbitrary: fc.constantFrom(...INSTANT_EDGES).map(percentEncode) },
    { weight: 1, arbitrary: instantText.map(percentEncode) },
  );
  const bool = fc.constantFrom('true', 'false');
  const newsClass = fc.constantFrom('earnings_release', 'guidance', 'media_report', '%20guidance', 'x'.repeat(65));
  const int = (min: number, max: number) =>
    fc.oneof({ weight: 4, arbitrary: fc.integer({ min, max }).map(String) }, { weight: 1, arbitrary: fc.integer({ min: min - 3, max: max + 3 }).map(String) });
  const text = fc.oneof(fc.constantFrom('FUZZ', 'Test', 'T', 'a', 'Company', '%25', '_'), fc.string({ maxLength: 12 }).map(percentEncode));
  const auth = fc.oneof(
    { weight: 14, arbitrary: fc.constant<Auth>('live') },
    { weight: 2, arbitrary: fc.constant<Auth>('sandbox') },
    { weight: 2, arbitrary: fc.constantFrom<Auth>('narrow', 'revoked', 'unknown', 'none', 'basic', 'bare', 'huge', 'admin') },
  );
  const requestId = fc.oneof(
    { weight: 8, arbitrary: fc.constant<Record<string, string>>({}) },
    { weight: 1, arbitrary: fc.constantFrom('fuzz-1', 'x'.repeat(500), '../../etc/passwd', '').map((id) => ({ 'x-request-id': id })) },
  );

  const get = (path: fc.Arbitrary<string>, spec: Record<string, Param>) =>
    fc
      .tuple(path, query(spec), auth, requestId)
      .map(([p, q, a, h]): Req => ({ to: 'public', method: 'GET', path: q ? `${p}?${q}` : p, auth: a, headers: h }))
      .filter((r) => r.path.length <= MAX_TARGET);
  const withId = (template: string) => segment.map((id) => template.replace(':id', id));
  // Only the fixture's equity has an option chain, and intraday bars are served for few asset classes: the option and
  // intraday routes draw it a third of the time, so each answers some 2xx however many routes share the draws.
  const withUnderlying = (template: string) =>
    fc.oneof({ weight: 1, arbitrary: fc.constant(instrumentIds[0]) }, { weight: 2, arbitrary: segment }).map((id) => template.replace(':id', id));
  const dateRange = { from: [date, 'required'], to: [date, 'required'] } satisfies Record<string, Param>;
  // The fixture stores EUR/JPY; JPY/EUR is served as its inverse.
  const currency = fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom('EUR', 'JPY', 'eur', 'jpy', 'GBP', 'USD') },
    { weight: 2, arbitrary: fc.constantFrom(...MALFORMED_SEGMENTS, 'EU', 'EURO', 'E1R', '%C3%89UR', 'NaN') },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }).map(percentEncode) },
  );

  const analytics = fc
    .oneof(
      postJson('/v1/analytics/option-price', { spot: 100, strike: 100, expiryDays: 30, rate: 0.05, vol: 0.2, type: 'call' }, [
        ['spot'],
        ['strike'],
        ['expiryDays'],
        ['rate'],
        ['vol'],
        ['type'],
        ['dividendYield'],
      ]),
      postJson('/v1/analytics/probability', { spot: 100, target: 110, expiryDays: 30, rate: 0.05, vol: 0.2, direction: 'long' }, [
        ['spot'],
        ['target'],
        ['expiryDays'],
        ['rate'],
        ['vol'],
        ['direction'],
        ['dividendYield'],
      ]),
      postJson(
        '/v1/analytics/strategy-ev',
        {
          structure: 'bull_call_spread',
          legs: [
            { action: 'buy', type: 'call', strike: 95, quantity: 1 },
            { action: 'sell', type: 'call', strike: 105, quantity: 1 },
          ],
          spot: 100,
          expiryDays: 30,
          rate: 0.05,
          vol: 0.2,
        },
        [
          ['structure'],
          ['legs'],
          ['legs', 0],
          ['legs', 0, 'strike'],
          ['legs', 1, 'quantity'],
          ['legs', 1, 'type'],
          ['legs', 0, 'expiryDays'],
          ['spot'],
          ['expiryDays'],
          ['rate'],
          ['vol'],
          ['drift'],
          ['contractMultiplier'],
          ['dividendYield'],
        ],
      ),
    )
    .chain((body) => fc.tuple(fc.constant(body), auth).map(([b, a]) => ({ ...b, auth: a })));

  // Export jobs: posted with each field broken in turn; read, listed and deleted by the fuzz account's ids (mostly) and
  // others; files fetched with the key or by their signed links, whole or by ranges.
  const exportId = fc.oneof({ weight: 6, arbitrary: fc.constant(exportFixture.id) }, { weight: 2, arbitrary: segment });
  const fileName = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...exportFixture.files.map((f) => f.name)) },
    { weight: 1, arbitrary: fc.constantFrom('1999.csv', '..%2F1999.csv', '%00', 'x'.repeat(300)) },
  );
  const byteRange = fc.oneof(
    { weight: 4, arbitrary: fc.constant<Record<string, string>>({}) },
    {
      weight: 2,
      arbitrary: fc
        .constantFrom('bytes=0-99', 'bytes=100-', 'bytes=-50', 'bytes=99999999-', 'bytes=5-1', 'items=0-1', 'bytes=0-1,4-5')
        .map((r) => ({ range: r })),
    },
  );
  const exportRequests = () => [
    fc
      .tuple(
        postJson('/v1/exports', { dataset: 'daily-prices', instrumentIds: instrumentIds.slice(0, 2), from: '2024-01-02', to: '2024-01-31', format: 'csv' }, [
          ['dataset'],
          ['instrumentIds'],
          ['instrumentIds', 0],
          ['from'],
          ['to'],
          ['format'],
          ['compression'],
          ['interval'],
          ['asOf'],
          ['adjusted'],
        ]),
        auth,
      )
      .map(([r, a]): Req => ({ ...r, auth: a })),
    get(fc.constant('/v1/exports'), { limit: [int(1, 100), 'optional'], cursor: [text, 'optional'] }),
    get(
      exportId.map((id) => `/v1/exports/${id}`),
      {},
    ),
    fc
      .tuple(fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...exportFixture.deletable) }, { weight: 1, arbitrary: segment }), auth)
      .map(([id, a]): Req => ({ to: 'public', method: 'DELETE', path: `/v1/exports/${id}`, auth: a })),
    fc
      .tuple(exportId, fileName, auth, byteRange)
      .map(([id, name, a, range]): Req => ({ to: 'public', method: 'GET', path: `/v1/exports/${id}/files/${name}`, auth: a, headers: range })),
    fc
      .tuple(fc.constantFrom(...exportFixture.files.map((f) => f.link)), fc.constantFrom('', '&signature=AAAA', '&expires=1', 'x'), byteRange)
      .map(([link, tamper, range]): Req => ({ to: 'public', method: 'GET', path: `${link}${tamper}`, auth: 'none', headers: range })),
  ];

  return fc.oneof(
    get(fc.constant('/v1/instruments'), {
      query: [text, 'optional'],
      brokerCode: [fc.constantFrom('FUZZ1', 'x', '%00'), 'optional'],
      broker: [fc.constantFrom('ibkr', 'other'), 'optional'],
      assetClass: [fc.constantFrom('equity', 'etf', 'fx', 'bond'), 'optional'],
      asOf: [asOf, 'optional'],
      limit: [int(1, 100), 'optional'],
    }),
    get(fc.constant('/v1/instruments/bulk'), { ids: [idList(8), 'required'] }),
    get(withId('/v1/instruments/:id'), {}),
    get(withId('/v1/instruments/:id/prices'), {
      ...dateRange,
      adjusted: [bool, 'optional'],
      asOf: [asOf, 'optional'],
      includeBackfilled: [bool, 'optional'],
      actionSetVersion: [int(0, 3), 'optional'],
    }),
    get(fc.constant('/v1/prices/bulk'), {
      instrumentIds: [idList(8), 'required'],
      ...dateRange,
      adjusted: [bool, 'optional'],
      asOf: [asOf, 'optional'],
      includeBackfilled: [bool, 'optional'],
    }),
    get(withUnderlying('/v1/instruments/:id/intraday'), {
      ...dateRange,
      interval: [fc.constantFrom('1min', '5min', '15min', '30min', '1hour'), 'required'],
    }),
    get(withId('/v1/instruments/:id/corporate-actions'), {
      ...dateRange,
      asOf: [asOf, 'optional'],
      includeBackfilled: [bool, 'optional'],
      actionSetVersion: [int(0, 3), 'optional'],
    }),
    get(withId('/v1/instruments/:id/technicals'), { lookbackDays: [int(1, 1000), 'optional'], asOf: [asOf, 'optional'] }),
    get(fc.constant('/v1/correlations'), {
      instrumentIds: [idList(5), 'required'],
      lookbackDays: [int(20, 504), 'optional'],
      method: [fc.constantFrom('pearson', 'spearman'), 'optional'],
      asOf: [asOf, 'optional'],
    }),
    get(withId('/v1/instruments/:id/beta'), { benchmarkId: [idValue, 'required'], lookbackDays: [int(20, 504), 'optional'], asOf: [asOf, 'optional'] }),
    get(
      fc.tuple(currency, currency).map(([base, quote]) => `/v1/fx/${base}/${quote}`),
      // asOf: the first and last storable days too, each the end of that day.
      {
        date: [date, 'required'],
        asOf: [fc.oneof({ weight: 8, arbitrary: asOf }, { weight: 1, arbitrary: fc.constantFrom('0001-01-01', '9999-12-31') }), 'optional'],
      },
    ),
    get(
      fc
        .oneof(
          { weight: 6, arbitrary: fc.constantFrom(...MACRO_SERIES_IDS, 'dgs10', 'vixcls') },
          { weight: 2, arbitrary: fc.constantFrom('GDP', 'GS10', 'TB3MS', 'DGS7', '', '%00', '..', 'DGS10%20') },
          { weight: 1, arbitrary: segment },
        )
        .map((id) => `/v1/macro/series/${id}`),
      { start: [date, 'optional'], end: [date, 'optional'] },
    ),
    get(fc.constantFrom('/v1/rates/risk-free', '/v1/rates/risk-free/', '/v1/rates/RISK-FREE'), {}),
    get(withUnderlying('/v1/instruments/:id/options/expiries'), { asOf: [fc.oneof(asOf, fc.constantFrom(...optionDays)), 'optional'] }),
    get(withUnderlying('/v1/instruments/:id/options'), {
      expiry: [date, 'optional'],
      strike: [fc.constantFrom('60', '70', '80.0', '1e2', 'abc', '-5', '0', 'NaN', '1e400'), 'optional'],
      right: [fc.constantFrom('call', 'put', 'both'), 'optional'],
      asOf: [fc.oneof(asOf, fc.constantFrom(...optionDays)), 'optional'],
    }),
    get(
      fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...(optionContractIds ?? [])) }, { weight: 1, arbitrary: segment }).map((id) => `/v1/options/${id}`),
      { asOf: [asOf, 'optional'] },
    ),
    get(fc.constant('/v1/instruments/implied-volatility'), {
      instrumentIds: [idList(8), 'required'],
      maxAgeDays: [int(1, 30), 'optional'],
      includeTermStructure: [bool, 'optional'],
      // Freshness is counted back from asOf: the first and last storable days too.
      asOf: [fc.oneof({ weight: 8, arbitrary: date }, { weight: 1, arbitrary: fc.constantFrom('0001-01-01', '9999-12-31') }), 'optional'],
    }),
    { weight: 3, arbitrary: analytics },
    get(fc.constantFrom('/healthz', '/readyz', '/metrics', '/healthz/%FF', '/metrics/x'), {}),
    get(fc.constant('/v1/economic-events'), {
      from: [date, 'optional'],
      to: [date, 'optional'],
      eventClass: [fc.constantFrom('central_bank', 'employment', 'inflation', 'bond_auction', 'earnings'), 'optional'],
      country: [fc.constantFrom('US', 'us', 'EU', 'DE', 'USA', 'U1'), 'optional'],
      importance: [fc.constantFrom('low', 'medium', 'high', 'urgent'), 'optional'],
      limit: [int(1, 500), 'optional'],
    }),
    ...(['news', 'events'] as const).map((route) =>
      get(withId(`/v1/instruments/:id/${route}`), {
        from: [date, 'optional'],
        to: [date, 'optional'],
        eventClass: [newsClass, 'optional'],
        limit: [int(1, 500), 'optional'],
      }),
    ),
    get(withId('/v1/instruments/:id/event-reactions'), {
      eventClass: [newsClass, 'optional'],
      from: [date, 'optional'],
      to: [date, 'optional'],
    }),
    get(fc.constant('/v1/instruments/event-reaction-coverage'), {
      eventClasses: [fc.array(newsClass, { minLength: 1, maxLength: 3 }).map((c) => c.join(',')), 'optional'],
      minReactions: [int(1, 1000), 'optional'],
      minWindowDays: [int(1, 36_500), 'optional'],
      limit: [int(1, 5000), 'optional'],
    }),
    // Windows of 365 days (2024 is a leap year: to 2024-12-30), 366 days, and reversed, among the random dates.
    get(fc.constant('/v1/earnings'), {
      from: [fc.oneof(fc.constantFrom('2024-01-01', '2024-07-01'), date), 'required'],
      to: [fc.oneof(fc.constantFrom('2024-12-30', '2024-12-31', '2024-07-01'), date), 'required'],
      instrumentId: [idValue, 'optional'],
    }),
    get(withId('/v1/instruments/:id/earnings'), { from: [date, 'optional'], to: [date, 'optional'] }),
    { weight: 4, arbitrary: fc.oneof(...exportRequests()) },
    otherRoutes('public'),
    adminReads(),
    { weight: 5, arbitrary: dashboardRequests() },
    { weight: 2, arbitrary: leakProbes() },
    get(withId('/v1/instruments/:id/sentiment'), {
      from: [date, 'optional'],
      to: [date, 'optional'],
      subjectClass: [fc.constantFrom('business', 'market_commentary', 'price'), 'optional'],
      source: [fc.oneof(fc.constant('fuzz'), text), 'optional'],
    }),
    get(fc.constant('/v1/sentiment/source-leads'), {
      source: [fc.oneof(fc.constant('fuzz'), text), 'optional'],
      subjectClass: [fc.constantFrom('business', 'market_commentary', 'price'), 'optional'],
    }),
  );
}

const CONTENT_TYPES = [
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/vnd.api+json',
  'application/jsonx',
  'application/json, text/plain',
  '',
];

const JUNK_JSON_BODIES: (string | Buffer)[] = [
  '',
  'null',
  '[]',
  '"x"',
  '{',
  '{"spot":',
  '{"spot":100,}',
  '\uFEFF{}',
  Buffer.from([0xff, 0xfe, 0x00, 0x7b, 0x7d]),
  `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
  `{"a":${'{"a":'.repeat(50_000)}1${'}'.repeat(50_001)}`,
  'x'.repeat(2 * 1024 * 1024),
];

/** A JSON POST: the route's valid body, mutated; sometimes junk, another content type, or a content encoding. */
function postJson(path: string, base: Record<string, unknown>, paths: Path[]) {
  const body = fc.oneof({ weight: 9, arbitrary: mutated(base, paths).map(toJson) }, { weight: 1, arbitrary: fc.constantFrom(...JUNK_JSON_BODIES) });
  const contentType = fc.oneof({ weight: 12, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: fc.constantFrom(...CONTENT_TYPES) });
  const encoding = fc.oneof(
    { weight: 12, arbitrary: fc.constant('') },
    { weight: 1, arbitrary: fc.constantFrom('gzip', 'gzip-garbage', 'deflate', 'br', 'x-unknown') },
  );
  return fc.tuple(body, contentType, encoding).map(([b, type, enc]): Omit<Req, 'auth'> => {
    const headers: Record<string, string> = type ? { 'content-type': type } : {};
    let sent: string | Buffer = b;
    if (enc === 'gzip') {
      headers['content-encoding'] = 'gzip';
      sent = gzipSync(b);
    } else if (enc) {
      headers['content-encoding'] = enc === 'gzip-garbage' ? 'gzip' : enc;
    }
    return { to: 'public', method: 'POST', path, headers, body: sent };
  });
}

/** Unknown paths and wrong methods on either listener. */
function otherRoutes(to: 'public' | 'admin'): fc.Arbitrary<Req> {
  const paths =
    to === 'public'
      ? [
          '/',
          '/v1',
          '/v1/',
          '/v2/instruments',
          '/v1/instruments/',
          '/v1//instruments',
          '/%',
          '/%FF',
          '/v1/%FF',
          '/v1/instruments/%FF/nothing',
          '//',
          '/v1/instruments/bulk/extra',
          '/v1/analytics/option-price/%FF',
          '/admin/v1/status',
        ]
      : [
          '/',
          '/admin',
          '/admin/v1',
          '/admin/v1/',
          '/admin/v1/%FF',
          '/admin/v1/keys/',
          '/admin/v1/keys/%FF',
          '/admin/v1/bars',
          '/admin/v1/bars/weekly',
          '/v1/instruments',
          '/admin/v1/status/%',
        ];
  return fc
    .tuple(
      fc.constantFrom(...paths),
      fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'),
      fc.constantFrom<Auth>(to === 'public' ? 'live' : 'admin', 'none'),
    )
    .map(([path, method, auth]) => ({
      to,
      method,
      path,
      auth,
      ...(method === 'GET' || method === 'HEAD' ? {} : { headers: { 'content-type': 'application/json' }, body: '{}' }),
    }));
}

const adminAuth = fc.oneof(
  { weight: 12, arbitrary: fc.constant<Auth>('admin') },
  { weight: 1, arbitrary: fc.constantFrom<Auth>('wrong-admin', 'none', 'live', 'bare', 'huge') },
);

function adminReads(): fc.Arbitrary<Req> {
  const account = fc.oneof({ weight: 4, arbitrary: fc.constant(accountId) }, { weight: 1, arbitrary: fc.uuid({ version: 4 }) });
  const get = (path: string, spec: Record<string, Param>) =>
    fc
      .tuple(query(spec), adminAuth)
      .map(([q, auth]): Req => ({ to: 'admin', method: 'GET', path: `/admin/v1${path}${q ? `?${q}` : ''}`, auth }))
      .filter((r) => r.path.length <= MAX_TARGET);
  return fc.oneof(
    get('/status', {}),
    get('/accounts', {}),
    get('/keys', { accountId: [account, 'optional'] }),
    get('/usage', { accountId: [account, 'required'], days: [fc.integer({ min: -2, max: 402 }).map(String), 'optional'] }),
  );
}

type Format = 'json' | 'ndjson' | 'csv';
const FORMAT_TYPES: Record<Format, string> = { json: 'application/json', ndjson: 'application/x-ndjson', csv: 'text/csv' };

const JUNK_INGEST_BODIES: (string | Buffer)[] = [
  '',
  '[]',
  '{}',
  'null',
  '[null]',
  '[1]',
  '[[]]',
  '[{}]',
  '{"a":1}',
  '\n\n',
  'a,b\n',
  'instrumentId\n',
  ',\n,',
  '"unclosed',
  'x,"y"z\n1,2',
  '\uFEFF[]',
  Buffer.from([0xff, 0xfe, 0x00]),
  `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
  '[{"instrumentId":',
  '{"a":1}\n{',
  'a\u0000b,c\n1,2',
];

/** An ingest upload: a few rows of the kind, each perhaps mutated, in one of the three body formats (or junk, or the wrong type). */
function ingestWrite(route: string, rowFor: (id: string, variant: number) => Record<string, unknown>, paths: Path[]): fc.Arbitrary<Req> {
  const id = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...scratchIds) },
    { weight: 2, arbitrary: fc.constantFrom(...freshIds) },
    { weight: 1, arbitrary: fc.uuid({ version: 4 }) },
  );
  const row = fc.tuple(id, fc.integer({ min: 0, max: 1_000 }));
  // A third of the uploads are all valid rows, so stored data grows too; the rest carry mutated rows.
  const rows = fc.oneof(
    {
      weight: 1,
      arbitrary: fc.array(
        row.map(([i, v]) => rowFor(i, v)),
        { minLength: 1, maxLength: 4 },
      ),
    },
    {
      weight: 2,
      arbitrary: fc.array(
        row.chain(([i, v]) => fc.oneof(fc.constant(rowFor(i, v)), mutated(rowFor(i, v), paths))),
        { minLength: 1, maxLength: 4 },
      ),
    },
  );
  const upload = fc.tuple(rows, fc.constantFrom<Format>('json', 'json', 'ndjson', 'csv', 'csv')).map(([rows, format]) => ({
    body: format === 'json' ? toJson(rows) : format === 'ndjson' ? rows.map(toJson).join('\n') : toCsv(rows),
    type: FORMAT_TYPES[format],
  }));
  const junk = fc.tuple(fc.constantFrom(...JUNK_INGEST_BODIES), fc.constantFrom(...Object.values(FORMAT_TYPES))).map(([body, type]) => ({ body, type }));
  return fc
    .tuple(
      fc.oneof({ weight: 8, arbitrary: upload }, { weight: 1, arbitrary: junk }),
      fc.oneof({ weight: 12, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom(...CONTENT_TYPES) }),
      adminAuth,
    )
    .map(([u, wrongType, auth]): Req => ({
      to: 'admin',
      method: 'POST',
      path: `/admin/v1${route}`,
      auth,
      headers: wrongType ? { 'content-type': wrongType } : { 'content-type': u.type },
      body: u.body,
    }));
}

function adminWrites(): fc.Arbitrary<Req> {
  const json = (path: string, base: Record<string, unknown>, paths: Path[]) =>
    fc
      .tuple(
        fc.oneof({ weight: 8, arbitrary: mutated(base, paths).map(toJson) }, { weight: 1, arbitrary: fc.constantFrom(...JUNK_JSON_BODIES) }),
        fc.oneof({ weight: 10, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: fc.constantFrom(...CONTENT_TYPES) }),
        adminAuth,
      )
      .map(([body, type, auth]): Req => ({ to: 'admin', method: 'POST', path: `/admin/v1${path}`, auth, headers: type ? { 'content-type': type } : {}, body }));
  const day = (variant: number) => isoDay(Date.UTC(2020, 0, 1) + variant * DAY_MS);
  const revokeSegment = fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...revocableKeyIds) },
    { weight: 1, arbitrary: fc.uuid({ version: 4 }) },
    { weight: 3, arbitrary: fc.constantFrom(...MALFORMED_SEGMENTS) },
  );
  const accountSegment = fc.oneof(
    { weight: 3, arbitrary: fc.constant(accountId) },
    { weight: 1, arbitrary: fc.uuid({ version: 4 }) },
    { weight: 1, arbitrary: fc.constantFrom(...MALFORMED_SEGMENTS) },
  );
  /** A JSON write to a path with one id segment. */
  const jsonAt = (template: string, segment: fc.Arbitrary<string>, base: Record<string, unknown>, paths: Path[]) =>
    fc.tuple(segment, json(template, base, paths)).map(([id, req]): Req => ({ ...req, path: req.path.replace(':id', id) }));
  return fc.oneof(
    json('/accounts', { name: 'fuzz account' }, [['name']]),
    jsonAt('/accounts/:id/password', accountSegment, { login: FUZZ_LOGINS[0], password: 'a long fuzz password' }, [['login'], ['password']]),
    jsonAt('/accounts/:id/invitations', accountSegment, { login: FUZZ_LOGINS[1], validHours: 24 }, [['login'], ['validHours']]),
    fc.tuple(revokeSegment, adminAuth).map(([id, auth]): Req => ({ to: 'admin', method: 'POST', path: `/admin/v1/keys/${id}/roll`, auth })),
    json('/derive', { instrumentIds: [scratchIds[0]] }, [['instrumentIds'], ['instrumentIds', 0], ['instrumentIds', 1]]),
    json('/keys', { accountId, environment: 'sandbox', scopes: ['prices:read'], name: 'fuzz key' }, [
      ['accountId'],
      ['environment'],
      ['scopes'],
      ['scopes', 0],
      ['name'],
    ]),
    fc.tuple(revokeSegment, adminAuth).map(([id, auth]): Req => ({ to: 'admin', method: 'POST', path: `/admin/v1/keys/${id}/revoke`, auth })),
    ingestWrite(
      '/instruments',
      (id, v) => ({
        id,
        assetClass: 'equity',
        displayName: `Fuzz ${v}`,
        quoteCurrency: 'USD',
        quoteUnit: 'USD per share',
        isActive: true,
        brokerCodes: { ibkr: `FZ${v}` },
        symbols: [{ symbol: `FZ${v}`, validFrom: '2000-01-01', validTo: null }],
      }),
      [
        ['id'],
        ['assetClass'],
        ['displayName'],
        ['isin'],
        ['quoteCurrency'],
        ['isActive'],
        ['brokerCodes'],
        ['brokerCodes', 'ibkr'],
        ['brokerCodes', 'x'],
        ['symbols'],
        ['symbols', 0, 'symbol'],
        ['symbols', 0, 'validFrom'],
        ['symbols', 0, 'validTo'],
        ['symbols', 1],
      ],
    ),
    ingestWrite(
      '/bars/daily',
      (id, v) => {
        // Some valid bars sit at the edges: years 1 and 9999, closes of 1e-300 and 1e300.
        const close = v % 5 === 1 ? 1e-300 : v % 5 === 2 ? 1e300 : 10 + (v % 7);
        return dailyBar(id, { barDate: v % 5 === 0 ? CALENDAR_EDGES[(v / 5) % CALENDAR_EDGES.length] : day(v), close, open: close, high: close, low: close });
      },
      [
        ['instrumentId'],
        ['barDate'],
        ['openPrice'],
        ['highPrice'],
        ['lowPrice'],
        ['closePrice'],
        ['volume'],
        ['quoteCurrency'],
        ['quoteUnit'],
        ['source'],
        ['asOf'],
        ['stale'],
        ['priceBasis'],
        ['reflectsActionsThrough'],
      ],
    ),
    ingestWrite(
      '/bars/intraday',
      (id, v) =>
        intradayRow(
          id,
          v % 50 === 0 ? INSTANT_EDGES[v % INSTANT_EDGES.length] : new Date(Date.UTC(2024, 2, 4, 14, 30) + v * 60_000).toISOString(),
          10 + (v % 5),
        ),
      [['instrumentId'], ['barTimestamp'], ['openPrice'], ['highPrice'], ['lowPrice'], ['closePrice'], ['volume'], ['quoteCurrency'], ['source'], ['asOf']],
    ),
    ingestWrite(
      '/corporate-actions',
      (id, v) => ({
        instrumentId: id,
        kind: v % 2 ? 'split' : 'spinoff',
        effectiveDate: day(v),
        announcementDate: day(v - 10),
        knowledgeDate: day(v - 10),
        knowledgeProvenance: 'announced',
        params: { ratio: 2 + (v % 3), note: 'fuzz' },
        source: 'fuzz',
      }),
      [
        ['id'],
        ['instrumentId'],
        ['kind'],
        ['effectiveDate'],
        ['announcementDate'],
        ['knowledgeDate'],
        ['knowledgeProvenance'],
        ['params'],
        ['params', 'ratio'],
        ['params', 'note'],
        ['params', 'nested', 'deep'],
        ['source'],
      ],
    ),
    ingestWrite(
      '/corporate-actions/coverage-checks',
      (id, v) => ({
        instrumentId: id,
        checkedAt: new Date(Date.UTC(2024, 0, 1) + v * 60_000).toISOString(),
        source: 'fuzz',
        coveredFrom: '2000-01-01',
        actionsFound: v % 4,
      }),
      [['instrumentId'], ['checkedAt'], ['source'], ['coveredFrom'], ['actionsFound']],
    ),
    ingestWrite(
      '/options/contracts',
      (id, v) => ({
        instrumentId: id,
        contractSymbol: `FZ ${v % 13}`,
        expiry: day(v % 60),
        strike: 10 + (v % 9),
        right: v % 2 ? 'call' : 'put',
        multiplier: 100,
        listedAt: v % 3 ? null : '2020-01-01T00:00:00Z',
      }),
      [['instrumentId'], ['contractSymbol'], ['expiry'], ['strike'], ['right'], ['multiplier'], ['isActive'], ['listedAt'], ['id']],
    ),
    ingestWrite(
      '/options/quotes',
      (id, v) => ({
        // A fixture contract (stored), or one the contract writes may have made.
        contractId: v % 2 ? optionContractIds[v % optionContractIds.length] : derivedContractId(InstrumentIdSchema.parse(id), `FZ ${v % 13}`),
        observedAt: new Date(Date.UTC(2020, 0, 1, 20) + v * 3_600_000).toISOString(),
        bid: 1 + (v % 4),
        ask: 1.5 + (v % 4),
        lastPrice: v % 3 ? null : 1.2,
        volume: v % 5,
        openInterest: null,
        source: 'fuzz',
        greeks: v % 4 ? null : { delta: 0.4, gamma: 0.02, theta: -0.01, vega: 0.1, rho: 0.02, impliedVolatility: 0.35 },
      }),
      [
        ['contractId'],
        ['observedAt'],
        ['bid'],
        ['ask'],
        ['lastPrice'],
        ['volume'],
        ['greeks'],
        ['greeks', 'delta'],
        ['greeks', 'impliedVolatility'],
        ['source'],
      ],
    ),
    ingestWrite(
      '/iv-snapshots',
      (id, v) => ({
        instrumentId: id,
        asOfDate: day(v),
        underlyingPrice: 50 + (v % 10),
        atmImpliedVolatility: 0.2 + (v % 5) / 100,
        impliedVolatility30d: 0.2 + (v % 5) / 100,
        historicalVolatility30d: v % 3 ? 0.18 : null,
        parkinsonHistoricalVolatility30d: null,
        putCallIvRatio30d: 1.02,
        termStructure: v % 2 ? [{ daysToExpiry: 30, atmImpliedVolatility: 0.25 }] : [],
      }),
      [
        ['instrumentId'],
        ['asOfDate'],
        ['underlyingPrice'],
        ['atmImpliedVolatility'],
        ['termStructure'],
        ['termStructure', 0, 'daysToExpiry'],
        ['putCallIvRatio30d'],
      ],
    ),
    ingestWrite(
      '/fx',
      (_id, v) => ({
        base: ['EUR', 'GBP', 'usd'][v % 3],
        quote: 'JPY',
        rateDate: day(v),
        // Some valid rates sit at the edges: the smallest accepted (its inverse is 4.5e307) and 1e300.
        rate: v % 5 === 1 ? 2.2250738585072014e-308 : v % 5 === 2 ? 1e300 : 100 + (v % 7),
        source: 'fuzz',
        asOf: v % 4 ? '2024-01-01T00:00:00Z' : undefined,
      }),
      [['base'], ['quote'], ['rateDate'], ['rate'], ['source'], ['asOf']],
    ),
    ingestWrite(
      '/economic-events',
      (id, v) => ({
        id,
        country: ['US', 'EU', 'de', 'JP'][v % 4],
        eventClass: ['employment', 'inflation', 'central_bank', 'energy'][v % 4],
        importance: ['low', 'medium', 'high'][v % 3],
        name: `Fuzz release ${v % 7}`,
        referencePeriod: `2024-${pad(1 + (v % 12), 2)}`,
        scheduledAt: v % 50 === 0 ? INSTANT_EDGES[v % INSTANT_EDGES.length] : new Date(Date.UTC(2024, 0, 1, 13, 30) + v * DAY_MS).toISOString(),
        actual: v % 3 ? `${v / 10}%` : null,
        forecast: v % 5 ? null : ' 1,234.5 K ',
        previous: '\u22120.1%',
        source: 'fuzz',
      }),
      [['id'], ['country'], ['eventClass'], ['importance'], ['name'], ['referencePeriod'], ['scheduledAt'], ['actual'], ['forecast'], ['previous'], ['source']],
    ),
    ingestWrite(
      '/news',
      (id, v) => ({
        instrumentId: id,
        eventClass: ['earnings_release', 'guidance', 'media_report'][v % 3],
        headline: `Fuzz headline ${v}`,
        source: 'fuzz',
        url: `https://news.example.test/${v}`,
        // Some at the edges of the calendar, where no session can be placed.
        publishedAt: v % 50 === 0 ? INSTANT_EDGES[v % INSTANT_EDGES.length] : new Date(Date.UTC(2020, 0, 1, 13, 30) + v * DAY_MS).toISOString(),
        isCompanyConfirmed: v % 2 === 0,
      }),
      [['id'], ['instrumentId'], ['eventClass'], ['headline'], ['source'], ['url'], ['publishedAt'], ['isCompanyConfirmed']],
    ),
    ingestWrite(
      '/earnings',
      (id, v) => ({
        instrumentId: id,
        reportDate: day(v),
        session: ['bmo', 'amc', 'dmh', 'unknown'][v % 4],
        fiscalPeriod: ['Q1', 'Q2', 'Q3', 'Q4', 'H1', 'H2', 'FY'][v % 7],
        fiscalYear: 2020 + (v % 5),
        status: v % 3 ? 'reported' : 'scheduled',
        source: 'fuzz',
      }),
      [['id'], ['instrumentId'], ['reportDate'], ['session'], ['fiscalPeriod'], ['fiscalYear'], ['status'], ['source']],
    ),
    ingestWrite(
      '/sentiment',
      (id, v) => ({
        instrumentId: id,
        source: v % 3 ? 'fuzz' : 'fuzz-percent',
        subjectClass: v % 2 ? 'business' : 'market_commentary',
        asOfDate: v % 50 === 0 ? CALENDAR_EDGES[(v / 50) % CALENDAR_EDGES.length] : day(v),
        // Scores at and inside the scale's ends.
        score: v % 3 ? [-1, 1, 0.1 + 0.2, -0][v % 4] : v % 101,
        scale: v % 3 ? [-1, 1] : [0, 100],
        isHeadlineOnly: v % 5 === 0,
      }),
      [['instrumentId'], ['source'], ['subjectClass'], ['asOfDate'], ['score'], ['scale'], ['scale', 0], ['scale', 1], ['isHeadlineOnly']],
    ),
    otherRoutes('admin'),
  );
}

/** Sends batches of reads at once; a batch fails with every offending request listed. Returns the number of requests sent. */
async function assertReads(seed: number, batches: number) {
  let sent = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(publicRequests(), { minLength: READ_BATCH, maxLength: READ_BATCH }), async (batch) => {
      const replies = await Promise.all(batch.map(send));
      sent += batch.length;
      const problems = batch.flatMap((req, i) => problemsOf(req, replies[i]));
      if (problems.length) throw new Error(`${problems.length} of ${batch.length} requests failed:\n  ${problems.join('\n  ')}`);
    }),
    // Requests are independent and each failure is listed, so shrinking (re-sending shrunk batches) would add time, not clarity.
    { seed, numRuns: batches, endOnFailure: true },
  );
  return sent;
}

/**
 * The statuses the service logged since line `from`, by `METHOD route` (the
 * route template that served the request, as the log names it), once the
 * `sent` requests answered since then have each logged their line: a line is
 * written as its response finishes, which can follow the client's receipt of
 * the last byte by a turn of the event loop.
 */
async function loggedStatuses(from: number, sent: number): Promise<Map<string, number[]>> {
  await until(() => logLines.slice(from).filter((line) => JSON.parse(line).msg === 'request').length >= sent, {
    timeoutMs: 10_000,
    what: `the request log lines of ${sent} requests`,
  });
  const statuses = new Map<string, number[]>();
  for (const line of logLines.slice(from)) {
    const entry = JSON.parse(line) as { msg?: string; method?: string; route?: string; status?: number };
    if (entry.msg !== 'request' || !entry.method || !entry.route || entry.status === undefined) continue;
    const key = routeKey(entry.method, entry.route);
    statuses.set(key, [...(statuses.get(key) ?? []), entry.status]);
  }
  return statuses;
}

/** What differs between two snapshots, for the failure message. */
function changed(before: Record<string, string>, after: Record<string, string>) {
  return Object.keys(before)
    .filter((k) => before[k] !== after[k])
    .map((k) => `${k}: ${before[k]} → ${after[k]}`);
}

// Hostile inputs by name, each refused with 400 invalid_request naming the
// field; an admin write must also store nothing.
const MALFORMED_PERCENT = ['%FF', '%', '%E0%A4%A'];
const ID_ROUTES = [
  '/v1/instruments/:id',
  '/v1/instruments/:id/prices',
  '/v1/instruments/:id/intraday',
  '/v1/instruments/:id/corporate-actions',
  '/v1/instruments/:id/technicals',
  '/v1/instruments/:id/beta',
  '/v1/instruments/:id/news',
  '/v1/instruments/:id/events',
  '/v1/instruments/:id/event-reactions',
  '/v1/instruments/:id/earnings',
];
const OPTION_PRICE = { spot: 100, strike: 100, expiryDays: 30, rate: 0.05, vol: 0.2, type: 'call' };
const PROBABILITY = { spot: 100, target: 110, expiryDays: 30, rate: 0.05, vol: 0.2, direction: 'long' };
const STRATEGY = { structure: 'long_call', legs: [{ action: 'buy', type: 'call', strike: 100, quantity: 1 }], spot: 100, expiryDays: 30, rate: 0.05, vol: 0.2 };

const instrumentRow = (brokerCodes: unknown, symbols: unknown) => ({
  id: freshIds[0],
  assetClass: 'equity',
  displayName: 'Fuzz named case',
  quoteCurrency: 'USD',
  quoteUnit: 'USD per share',
  brokerCodes,
  symbols,
});
const actionRow = (params: unknown) => ({
  instrumentId: scratchIds[0],
  kind: 'spinoff',
  effectiveDate: '2024-01-10',
  knowledgeDate: '2024-01-02',
  knowledgeProvenance: 'announced',
  params,
  source: 'fuzz',
});
const SYMBOLS = [{ symbol: 'FZNAMED', validFrom: '2000-01-01', validTo: null }];

const get = (path: string, auth: Auth = 'live'): Req => ({ to: 'public', method: 'GET', path, auth });
const post = (path: string, body: unknown): Req => ({
  to: 'public',
  method: 'POST',
  path,
  auth: 'live',
  headers: { 'content-type': 'application/json' },
  body: toJson(body),
});
const adminPost = (path: string, body: string, type = 'application/json'): Req => ({
  to: 'admin',
  method: 'POST',
  path: `/admin/v1${path}`,
  auth: 'admin',
  headers: { 'content-type': type },
  body,
});

const NAMED: { name: string; req: () => Req; field: string }[] = [
  { name: 'GET /v1/instruments?query=%00', req: () => get('/v1/instruments?query=%00'), field: 'query' },
  { name: 'GET /v1/instruments?query=a%00b', req: () => get('/v1/instruments?query=a%00b'), field: 'query' },
  { name: 'GET /v1/instruments?brokerCode=%00&broker=ibkr', req: () => get('/v1/instruments?brokerCode=%00&broker=ibkr'), field: 'brokerCode' },
  { name: 'technicals with asOf=0001-01-01', req: () => get(`/v1/instruments/${instrumentIds[0]}/technicals?asOf=0001-01-01`), field: 'asOf' },
  {
    name: 'correlations with asOf=0001-01-01',
    req: () => get(`/v1/correlations?instrumentIds=${instrumentIds[0]},${instrumentIds[1]}&asOf=0001-01-01`),
    field: 'asOf',
  },
  {
    name: 'beta with asOf=0001-01-01',
    req: () => get(`/v1/instruments/${instrumentIds[0]}/beta?benchmarkId=${instrumentIds[1]}&asOf=0001-01-01`),
    field: 'asOf',
  },
  {
    name: 'technicals with asOf=0002-12-31&lookbackDays=1000',
    req: () => get(`/v1/instruments/${instrumentIds[0]}/technicals?asOf=0002-12-31&lookbackDays=1000`),
    field: 'lookbackDays',
  },
  {
    name: 'correlations with asOf=0002-12-31&lookbackDays=1000',
    req: () => get(`/v1/correlations?instrumentIds=${instrumentIds[0]},${instrumentIds[1]}&asOf=0002-12-31&lookbackDays=1000`),
    field: 'lookbackDays',
  },
  {
    name: 'beta with asOf=0002-12-31&lookbackDays=1000',
    req: () => get(`/v1/instruments/${instrumentIds[0]}/beta?benchmarkId=${instrumentIds[1]}&asOf=0002-12-31&lookbackDays=1000`),
    field: 'lookbackDays',
  },
  // Within their 20..504 lookback bounds, correlations and beta reach before year 1 from a later asOf.
  {
    name: 'correlations with asOf=0002-05-01&lookbackDays=504',
    req: () => get(`/v1/correlations?instrumentIds=${instrumentIds[0]},${instrumentIds[1]}&asOf=0002-05-01&lookbackDays=504`),
    field: 'asOf',
  },
  {
    name: 'beta with asOf=0002-05-01&lookbackDays=504',
    req: () => get(`/v1/instruments/${instrumentIds[0]}/beta?benchmarkId=${instrumentIds[1]}&asOf=0002-05-01&lookbackDays=504`),
    field: 'asOf',
  },
  ...ID_ROUTES.flatMap((route) =>
    MALFORMED_PERCENT.map((segment) => ({ name: `GET ${route.replace(':id', segment)}`, req: () => get(route.replace(':id', segment)), field: 'path' })),
  ),
  ...MALFORMED_PERCENT.map((segment) => ({
    name: `POST /admin/v1/keys/${segment}/revoke`,
    req: (): Req => ({ to: 'admin', method: 'POST', path: `/admin/v1/keys/${segment}/revoke`, auth: 'admin' }),
    field: 'path',
  })),
  {
    name: 'POST /v1/analytics/option-price with expiryDays 5e-324',
    req: () => post('/v1/analytics/option-price', { ...OPTION_PRICE, expiryDays: 5e-324 }),
    field: 'expiryDays',
  },
  {
    name: 'POST /v1/analytics/probability with expiryDays 5e-324',
    req: () => post('/v1/analytics/probability', { ...PROBABILITY, expiryDays: 5e-324 }),
    field: 'expiryDays',
  },
  {
    name: 'POST /v1/analytics/strategy-ev with expiryDays 5e-324',
    req: () => post('/v1/analytics/strategy-ev', { ...STRATEGY, expiryDays: 5e-324 }),
    field: 'expiryDays',
  },
  { name: 'GET /v1/earnings over 366 days', req: () => get('/v1/earnings?from=2024-01-01&to=2024-12-31'), field: 'to' },
  { name: 'GET /v1/fx/US/CHF', req: () => get('/v1/fx/US/CHF?date=2024-01-02'), field: 'base' },
  { name: 'GET /v1/fx/EUR/eur', req: () => get('/v1/fx/EUR/eur?date=2024-01-02'), field: 'quote' },
  {
    name: 'POST /admin/v1/fx with a rate of 5e-324, whose reciprocal is infinite',
    req: () => adminPost('/fx', toJson([{ base: 'EUR', quote: 'JPY', rateDate: '2024-01-02', rate: 5e-324, source: 'fuzz' }])),
    field: 'rows[0].rate',
  },
  { name: 'POST /admin/v1/accounts with a NUL in the name', req: () => adminPost('/accounts', toJson({ name: 'fuzz\u0000account' })), field: 'name' },
  {
    name: 'POST /admin/v1/keys with a NUL in the name',
    req: () => adminPost('/keys', toJson({ accountId, environment: 'live', scopes: ['prices:read'], name: 'key\u0000' })),
    field: 'name',
  },
  {
    name: 'POST /admin/v1/instruments with \\u0000 in brokerCodes',
    req: () => adminPost('/instruments', toJson([instrumentRow({ ibkr: 'FZ\u0000' }, SYMBOLS)])),
    field: 'rows[0].brokerCodes.ibkr',
  },
  {
    name: 'POST /admin/v1/instruments with \\u0000 in symbols',
    req: () => adminPost('/instruments', toJson([instrumentRow({}, [{ ...SYMBOLS[0], symbol: 'FZ\u0000' }])])),
    field: 'rows[0].symbols.0.symbol',
  },
  {
    name: 'POST /admin/v1/corporate-actions with \\u0000 in params',
    req: () => adminPost('/corporate-actions', toJson([actionRow({ note: 'a\u0000b' })])),
    field: 'rows[0].params.note',
  },
  // In CSV the same escape is text inside the cell's JSON, and becomes NUL only when the cell is parsed.
  {
    name: 'CSV POST /admin/v1/instruments with \\u0000 in brokerCodes',
    req: () => adminPost('/instruments', toCsv([instrumentRow({ ibkr: 'FZ\u0000' }, SYMBOLS)]), 'text/csv'),
    field: 'rows[0].brokerCodes.ibkr',
  },
  {
    name: 'CSV POST /admin/v1/instruments with \\u0000 in symbols',
    req: () => adminPost('/instruments', toCsv([instrumentRow({}, [{ ...SYMBOLS[0], symbol: 'FZ\u0000' }])]), 'text/csv'),
    field: 'rows[0].symbols.0.symbol',
  },
  {
    name: 'CSV POST /admin/v1/corporate-actions with \\u0000 in params',
    req: () => adminPost('/corporate-actions', toCsv([actionRow({ note: 'a\u0000b' })]), 'text/csv'),
    field: 'rows[0].params.note',
  },
];

// Request shapes whose work grows with their width or length (issue 38): each
// is refused for its shape, within MAX_ERROR_BYTES (checked by problemsOf).
const wideObject = (fields: number) => raw(`{${Array.from({ length: fields }, (_, i) => `"k${i}":${i}`).join(',')}}`);
const dailyRow = () => ({ instrumentId: scratchIds[0], barDate: '2024-03-04', open: 10, high: 11, low: 9, close: 10, volume: 100 });
// Blank lines past the 1 MiB a record may take (docs/api.md, Limits: "Uploads").
const BLANK_RUN = '\n'.repeat(1_100_000);
NAMED.push(
  // 50,000 fields make 740 KB, inside the 1 MB body limit and a 1 MiB upload record.
  { name: 'POST /v1/analytics/option-price with 50,000 unknown fields', req: () => post('/v1/analytics/option-price', wideObject(50_000)), field: '_' },
  {
    name: 'POST /v1/analytics/strategy-ev with 50,000 unknown fields in its first leg',
    req: () => post('/v1/analytics/strategy-ev', { ...STRATEGY, legs: [wideObject(50_000)] }),
    field: 'legs.0',
  },
  {
    name: 'POST /v1/analytics/strategy-ev with 10,000 legs',
    req: () => post('/v1/analytics/strategy-ev', { ...STRATEGY, legs: Array.from({ length: 10_000 }, () => STRATEGY.legs[0]) }),
    field: 'legs',
  },
  {
    name: 'GET /v1/instruments with 5,000 unknown parameters',
    req: () => get(`/v1/instruments?${Array.from({ length: 5_000 }, (_, i) => `p${i}=1`).join('&')}`),
    field: '_',
  },
  {
    name: 'NDJSON POST /admin/v1/bars/daily with a row of 50,000 unknown fields',
    req: () => adminPost('/bars/daily', `${toJson({ ...dailyRow(), extra: wideObject(50_000) })}\n${toJson(wideObject(50_000))}\n`, 'application/x-ndjson'),
    field: 'rows[0].extra',
  },
  {
    name: 'CSV POST /admin/v1/bars/daily with 50,000 columns',
    req: () => {
      const columns = [...Object.keys(dailyRow()), ...Array.from({ length: 50_000 }, (_, i) => `c${i}`)];
      return adminPost(
        '/bars/daily',
        `${columns.join(',')}\n${[...Object.values(dailyRow()), ...Array.from({ length: 50_000 }, () => '1')].join(',')}\n`,
        'text/csv',
      );
    },
    field: 'rows[0]',
  },
  {
    name: 'NDJSON POST /admin/v1/bars/daily with 1.1 million blank lines before its row',
    req: () => adminPost('/bars/daily', `${BLANK_RUN}${toJson(dailyRow())}\n`, 'application/x-ndjson'),
    field: 'body',
  },
  {
    name: 'CSV POST /admin/v1/bars/daily with 1.1 million blank lines after its header',
    req: () => adminPost('/bars/daily', `${Object.keys(dailyRow()).join(',')}${BLANK_RUN}${Object.values(dailyRow()).join(',')}\n`, 'text/csv'),
    field: 'body',
  },
);

// Hostile inputs that fast-check's generators produce, by name.
const FOUND: typeof NAMED = [
  {
    name: 'POST /admin/v1/instruments with an unpaired surrogate \\ud800 in brokerCodes',
    req: () => adminPost('/instruments', toJson([instrumentRow({ ibkr: 'FZ\ud800' }, SYMBOLS)])),
    field: 'rows[0].brokerCodes.ibkr',
  },
  {
    name: 'POST /admin/v1/corporate-actions with params nested 10,000 levels deep',
    req: () => adminPost('/corporate-actions', toJson([actionRow({ note: raw(`${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`) })])),
    field: `rows[0].params.note${'.a'.repeat(MAX_DEPTH - 2)}`,
  },
];

describe('fuzz: hostile input never gives a 5xx, every error is the envelope, and a refused write stores nothing', () => {
  const refusedByName = async ({ req, field }: (typeof NAMED)[number]) => {
    const request = req();
    const before = request.to === 'admin' ? await snapshot() : null;
    const reply = await send(request);
    expect(problemsOf(request, reply)).toEqual([]);
    expect(reply.status).toBe(400);
    const { error } = JSON.parse(reply.text);
    expect(error.code).toBe('invalid_request');
    expect(Object.keys(error.details)).toContain(field);
    if (before) expect(changed(before, await snapshot())).toEqual([]);
  };
  it.each([...NAMED, ...FOUND])('when $name, then 400 invalid_request naming $field', refusedByName);

  it('when a 1-minute bar is stamped 9999-12-31T23:59:00Z, then it is refused: no bar is known before its minute ends, and its asOf cannot be in the future', async () => {
    for (const asOf of [undefined, '9999-12-31T23:59:59Z']) {
      const bar = { ...intradayRow(scratchIds[1], '9999-12-31T23:59:00Z', 42), asOf };
      const request = adminPost('/bars/intraday', toJson([bar]));
      const reply = await send(request);
      expect(problemsOf(request, reply)).toEqual([]);
      expect(reply.status).toBe(400);
      expect(Object.keys(JSON.parse(reply.text).error.details)).toEqual(['rows[0].asOf']);
    }
    const read = await send(get(`/v1/instruments/${scratchIds[1]}/intraday?from=9999-12-31&to=9999-12-31&interval=1hour`));
    expect(read.status).toBe(200);
    expect(JSON.parse(read.text).data).toEqual([]);
  });

  it('when thousands of generated reads hit every public and admin read route and every dashboard page and form at once, then none is a 5xx, every error is the envelope (or the dashboard’s page), and no answer or log line holds a credential', async () => {
    const from = logLines.length;
    const sent = await assertReads(SEED, READ_BATCHES);
    const statuses = await loggedStatuses(from, sent);
    // Not vacuous: every route answered valid requests through its own handler,
    // so the generated values reach past validation into the database. A
    // dashboard form's success is a redirect.
    const ok = (route: string, isOk: (status: number) => boolean) => statuses.get(route)?.some(isOk);
    expect([...PUBLIC_ROUTES, ...ADMIN_READS].filter((r) => !ok(r, (s) => s >= 200 && s < 300))).toEqual([]);
    expect(dashboard.routes.length).toBeGreaterThanOrEqual(13);
    expect(dashboard.routes.filter((r) => !ok(r, (s) => s >= 200 && s < 400))).toEqual([]);
    expect(leaksIn(logLines.slice(from).join(''))).toEqual([]);
    expect(logLines.slice(from).filter((l) => JSON.parse(l).level >= 50)).toEqual([]);
  }, 300_000);

  it('when generated writes hit every admin route and ingest kind one at a time, then none is a 5xx, and each refused write leaves the database unchanged', async () => {
    const from = logLines.length;
    const sentBefore = stats.requests;
    let known: Record<string, string> | null = null;
    await fc.assert(
      fc.asyncProperty(adminWrites(), async (req) => {
        const before = known ?? (await snapshot());
        const reply = await send(req);
        const problems = problemsOf(req, reply);
        if (reply.status >= 200 && reply.status < 300) {
          stats.acceptedWrites++;
          known = null;
        } else {
          stats.refusedWrites++;
          known = await snapshot();
          const diff = changed(before, known);
          if (diff.length) problems.push(`${describeReq(req)} → ${reply.status}, yet the database changed:\n    ${diff.join('\n    ')}`);
        }
        if (problems.length) throw new Error(problems.join('\n  '));
      }),
      { seed: SEED + 1, numRuns: WRITES },
    );
    // Not vacuous: every write route both stored valid writes and refused hostile ones.
    const statuses = await loggedStatuses(from, stats.requests - sentBefore);
    const outcomes = ADMIN_WRITES.flatMap((route) => [
      ...(statuses.get(route)?.some((s) => s >= 200 && s < 300) ? [] : [`nothing stored by ${route}`]),
      ...(statuses.get(route)?.some((s) => s >= 400 && s < 500) ? [] : [`nothing refused by ${route}`]),
    ]);
    expect(outcomes).toEqual([]);
  }, 300_000);

  it('when the stored data holds bars at the edges the writes accept (year 1, the latest closed day, extreme prices), then reads of it are still never a 5xx', async () => {
    const edgeBar = (barDate: string, close: number) => dailyBar(scratchIds[0], { barDate, close, open: close, high: close, low: close });
    // A bar is known no sooner than its day: yesterday's is the latest the writes accept.
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    await ingest(svc, '/bars/daily', [edgeBar('0001-01-01', 1e-300), edgeBar('0001-12-31', 1e300), edgeBar(yesterday, 1e-300), edgeBar('2024-03-04', 1e300)]);
    const [edges] = await svc.sql`
      select
        count(*) filter (where bar_date < '0003-01-01')::int as dates,
        count(*) filter (where close_price < 1e-299 or close_price > 1e299)::int as prices
      from daily_bars
      where instrument_id = any(${scratchIds}::uuid[])
    `;
    expect(edges.dates).toBeGreaterThan(0);
    expect(edges.prices).toBeGreaterThan(0);
    const sent = await assertReads(SEED + 2, READ_BATCHES_AFTER_WRITES);
    expect(sent).toBe(READ_BATCH * READ_BATCHES_AFTER_WRITES);
    expect(leaksIn(logLines.join(''))).toEqual([]);
    console.info(
      `[fuzz] ${stats.requests} requests: ${JSON.stringify(stats.byClass)}; admin writes ${stats.acceptedWrites} stored, ${stats.refusedWrites} refused`,
    );
  }, 300_000);
});
