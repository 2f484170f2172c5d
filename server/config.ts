import { isIP } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

// The only reader of process.env. Parsed once at start; a bad value stops the
// process with a message naming the variable.
const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();

// Express's named ranges (proxy-addr): loopback 127.0.0.0/8 and ::1,
// linklocal 169.254.0.0/16 and fe80::/10, uniquelocal 10.0.0.0/8,
// 172.16.0.0/12, 192.168.0.0/16 and fc00::/7.
const PROXY_RANGES = ['loopback', 'linklocal', 'uniquelocal'];

/** One entry of TRUST_PROXY's list: a named range, an IP address, or a CIDR block. */
function isProxyEntry(entry: string): boolean {
  if (PROXY_RANGES.includes(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (!family || rest.length) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}

/** The folder holding this project's package.json; a relative DATA_DIR is resolved from it, so the CLI finds the same data from any working directory. */
export const PROJECT_ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

export const ConfigSchema = z.object({
  DATABASE_URL: z.string().url().optional().describe('PostgreSQL/TimescaleDB URL; embedded PostgreSQL under DATA_DIR when absent'),
  DATABASE_REPLICA_URLS: z
    .string()
    .optional()
    .transform((list, ctx) => {
      const urls = (list ?? '')
        .split(',')
        .map((u) => u.trim())
        .filter(Boolean);
      for (const u of urls) if (!URL.canParse(u)) ctx.addIssue({ code: 'custom', message: 'must be a comma-separated list of postgres:// URLs' });
      return urls;
    })
    .describe('streaming replicas (comma-separated URLs) for the read-only routes; writes, keys, counting and sessions stay on DATABASE_URL'),
  DATABASE_REPLICA_MAX_LAG_MS: positiveInt
    .default(1000)
    .describe("a replica whose replay is further than this behind the primary's WAL serves no reads until it catches up"),
  DATABASE_POOL_MODE: z
    .enum(['session', 'transaction'])
    .default('session')
    .describe(
      'session: each pooled connection is a session of its own; transaction: a transaction-mode pooler (PgBouncer) sits in front of DATABASE_URL and the replicas, so no settings are sent at connect (the role must hold them) and prepared statements are off',
    ),
  DATABASE_PREPARED_STATEMENTS: z
    .enum(['true', 'false'])
    .optional()
    .transform((v) => (v === undefined ? undefined : v === 'true'))
    .describe(
      'named prepared statements on pooled connections; default true in session mode, false in transaction mode (PgBouncer 1.21+ with max_prepared_statements can keep them)',
    ),
  DATABASE_DIRECT_URL: z
    .string()
    .url()
    .optional()
    .describe(
      'PostgreSQL itself, bypassing any pooler, for the migrations and the CLI (they need one session); default DATABASE_URL; required in transaction mode',
    ),
  DATABASE_POOL_SIZE: positiveInt.default(10).describe('connections per pool (primary, and each replica of DATABASE_REPLICA_URLS; the auth pool has two)'),
  DATABASE_ACQUIRE_TIMEOUT_MS: positiveInt.default(1000).describe('a request waiting longer than this for a database connection gets 503 overloaded'),
  DATABASE_MAX_WAITING: positiveInt.default(200).describe('requests allowed to wait for a connection per pool; the next one gets 503 overloaded at once'),
  DATABASE_STATEMENT_TIMEOUT_MS: positiveInt
    .default(60_000)
    .describe(
      'PostgreSQL statement_timeout of every pooled connection (ingest transactions lift it); behind a transaction-mode pooler the role sets it and the start checks it',
    ),
  DATA_DIR: z
    .string()
    .default('.data')
    .describe(
      'embedded PostgreSQL data and the generated admin token live here; a relative path is resolved from the project folder, not the working directory',
    ),
  HOST: z
    .string()
    .default('127.0.0.1')
    .refine((host) => isIP(host) !== 0, 'must be an IP address: 127.0.0.1 (this machine only), 0.0.0.0 (every IPv4 interface) or :: (every interface)')
    .describe(
      "the public listener's address: this machine only by default; 0.0.0.0 or :: for every interface (a container whose port is published, a host that clients reach directly)",
    ),
  PORT: port.default(8080),
  WEB_CONCURRENCY: positiveInt
    .max(256)
    .default(1)
    .describe(
      'processes serving the public and admin listeners (node:cluster); above 1, a primary process prepares the database once and supervises them (docs/operations.md#processes)',
    ),
  ADMIN_PORT: port.default(8081),
  ADMIN_HOST: z.string().default('127.0.0.1'),
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  WORKER_THREADS: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .describe('piscina pool size; default the number of cores; 0 computes on the main thread (benchmarks only)'),
  WORKER_MAX_QUEUE: positiveInt.default(64),
  WORKER_TASK_TIMEOUT_MS: positiveInt.default(10_000),
  WORKER_NICE: z.coerce
    .number()
    .int()
    .min(0)
    .max(19)
    .default(10)
    .describe("nice increment of each worker thread (Linux); 0 leaves them at the request thread's priority"),
  PASSWORD_HASH_THREADS: positiveInt
    .default(1)
    .describe(
      'dashboard password hashes (0.2 to 0.9 s of scrypt each) that run at once, each on a thread of its own; two more per thread wait up to PASSWORD_HASH_WAIT_MS, the rest get 503',
    ),
  PASSWORD_HASH_WAIT_MS: positiveInt
    .default(2000)
    .describe('how long a sign-in or invitation waits for a password-hashing thread before 503 overloaded (a hash takes 0.2 to 0.9 s)'),
  FRED_API_KEY: z
    .string()
    .optional()
    .transform((k) => k || undefined)
    .describe('FRED API key; without one, macro series are served only from what is stored'),
  FRED_BASE_URL: z.string().url().default('https://api.stlouisfed.org/fred'),
  FRED_TIMEOUT_MS: positiveInt.default(5_000).describe('deadline of one fetch of a series from FRED (both endpoints, every page)'),
  FRED_FAILURE_BACKOFF_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(30_000)
    .describe('after a failed fetch, the series is not fetched again for this long: reads get the stored copy (stale) or 503 at once'),
  VENDOR_CODE_BROKER: z.string().default('ibkr').describe('broker whose code is echoed as Instrument.vendorCode'),
  PUBLIC_BASE_URL: z
    .string()
    .url()
    .transform((u) => u.replace(/\/+$/, ''))
    .optional()
    .describe("the public listener's address as clients reach it, for the reference links in error answers (default http://localhost:PORT)"),
  DEMO_DATA: z.enum(['auto', 'off']).default('auto').describe('auto: load the bundled demo set on first start'),
  SHUTDOWN_GRACE_MS: positiveInt.default(10_000),
  CLIENT_IDLE_TIMEOUT_MS: positiveInt
    .default(120_000)
    .describe(
      'a public request whose connection carries nothing either way for this long (a reader that stopped reading) is closed; an admin upload that sends nothing for this long is refused with 408',
    ),
  HEADERS_TIMEOUT_MS: positiveInt
    .default(10_000)
    .describe(
      'a request whose line and headers have not all arrived this long after its first byte (or after the connection opened) gets 408 and its connection is closed',
    ),
  REQUEST_TIMEOUT_MS: positiveInt
    .default(60_000)
    .describe(
      'a public request (headers and body) not all received this long after it began gets 408 and its connection is closed; at least HEADERS_TIMEOUT_MS',
    ),
  MAX_CONNECTIONS: positiveInt.default(4096).describe('open connections per listener; a connection beyond it is closed as soon as it is accepted, unanswered'),
  MAX_CONNECTIONS_PER_ADDRESS: z.coerce
    .number()
    .int()
    .min(0)
    .default(256)
    .describe(
      'open connections per listener from one client address (the TCP peer, whatever TRUST_PROXY says); a connection beyond it is closed as soon as it is accepted, unanswered; 0: no cap. A browser opens at most 6 per host and an HTTP client one per request in flight, which the rate limits (RATE_LIMIT_LIVE_PER_MINUTE, 1,200 a minute) keep to a few per account: 256 is far above both, and leaves MAX_CONNECTIONS to at least 16 addresses. Behind a proxy every client shares its address: raise it above the connections the proxy opens, or set 0',
    ),
  FIRST_BYTE_TIMEOUT_MS: positiveInt
    .default(5_000)
    .describe(
      'a new connection that has sent no byte of a request this long after it opened is closed, unanswered. A client sends its request as soon as it connects; 5 s leaves room for a lost first segment sent again twice (TCP waits 1 s, then 2 s) and for a browser that opens a connection a moment before it needs it. Takes effect when shorter than HEADERS_TIMEOUT_MS, which otherwise closes such a connection with a 408',
    ),
  TRUST_PROXY: z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value === 'false' || /^0+$/.test(value)) return false;
      if (/^\d+$/.test(value)) return Number(value);
      const entries = value.split(',').map((entry) => entry.trim());
      if (!entries.every(isProxyEntry)) {
        ctx.addIssue({
          code: 'custom',
          message:
            'must be false, the number of proxies in front of the service (1, 2, ...), or a comma-separated list of loopback, linklocal, uniquelocal, IP addresses and CIDR blocks (10.0.0.0/8)',
        });
        return z.NEVER;
      }
      return entries;
    })
    .describe(
      "Express's trust proxy: which peers' X-Forwarded-For (and X-Forwarded-Proto) is believed, so that the address the dashboard's sign-in limits count is the client's, not the proxy's. false (default): none, the TCP peer is the client; a number: that many proxies in front, the client being the address that many hops back; a list: the proxies' addresses. Never true: any client could then choose its address. MAX_CONNECTIONS_PER_ADDRESS still counts the TCP peer",
    ),
  BULK_STREAMS_PER_ACCOUNT: positiveInt.default(2).describe('concurrent bulk price downloads per account; more get 429 rate_limited'),
  BULK_STREAMS_MAX: positiveInt
    .optional()
    .describe(
      'concurrent bulk price downloads for the whole service (default: half of DATABASE_POOL_SIZE, at least 1); when full, an account holding more than the asking one, or a stalled download, gives way, else 503 overloaded',
    ),
  EXPORTS_RUNNING_PER_ACCOUNT: positiveInt
    .default(2)
    .describe('export jobs an account may have queued or running at once; one more POST /v1/exports gets 429 rate_limited'),
  EXPORTS_RUNNING_MAX: positiveInt.default(4).describe('export jobs running at once in the whole service, across every process and host; more wait queued'),
  EXPORTS_QUOTA_BYTES: positiveInt
    .default(5 * 1024 ** 3)
    .describe(
      'bytes of export files an account may hold (ready and being written); at or over it a POST /v1/exports gets 429 rate_limited until files expire or are deleted',
    ),
  EXPORTS_TTL_HOURS: positiveInt
    .default(168)
    .describe("hours an export's files are kept after it is ready; then the sweep deletes them and the job reads expired"),
  EXPORTS_DOWNLOADS_PER_ACCOUNT: positiveInt
    .default(8)
    .describe(
      'export file downloads an account may have open at once, by key or signed link (a reader such as DuckDB asks for several ranges at a time); more get 429 rate_limited',
    ),
  EXPORTS_DOWNLOADS_MAX: positiveInt
    .default(32)
    .describe(
      'export file downloads open at once in the whole service; when full, an account holding more than the asking one, or a stalled download, gives way, else 503 overloaded',
    ),
  EXPORTS_POLL_MS: positiveInt
    .default(5000)
    .describe('how often each serving process looks for a queued export job, sweeps expired files and samples the export metrics'),
  EXPORTS_LEASE_MS: positiveInt
    .default(30_000)
    .describe(
      'how long a running export job is held by its process without a heartbeat (renewed every third of it); a job whose process died is taken again after this',
    ),
  INGEST_MAX_CONCURRENT: positiveInt
    .default(4)
    .describe('admin uploads running at once (each holds a connection for its duration); more wait up to DATABASE_ACQUIRE_TIMEOUT_MS, then get 503 overloaded'),
  REQUEST_BODY_LIMIT: z.string().default('1mb'),
  RATE_LIMIT_LIVE_PER_MINUTE: positiveInt.default(1200),
  RATE_LIMIT_LIVE_PER_DAY: positiveInt.default(500_000),
  RATE_LIMIT_SANDBOX_PER_MINUTE: positiveInt.default(120),
  RATE_LIMIT_SANDBOX_PER_DAY: positiveInt.default(20_000),
  DASHBOARD_SESSION_IDLE_MINUTES: positiveInt.default(30).describe('a dashboard session unused for this long ends'),
  DASHBOARD_SESSION_MAX_HOURS: positiveInt.default(12).describe('a dashboard session ends this long after sign-in, however busy'),
  DASHBOARD_SIGN_IN_WINDOW_MINUTES: positiveInt
    .default(15)
    .describe('a dashboard sign-in count is forgotten once this long passes without an attempt it admitted'),
  DASHBOARD_SIGN_IN_PER_LOGIN_ADDRESS: positiveInt
    .default(10)
    .describe('dashboard sign-in attempts at one login from one address (or one recognised browser) per window; more get 429 rate_limited'),
  DASHBOARD_SIGN_IN_PER_LOGIN: positiveInt
    .default(30)
    .describe(
      'dashboard sign-in attempts at one login from browsers it does not recognise, all addresses together, before each further one must wait twice as long',
    ),
  DASHBOARD_SIGN_IN_PER_ADDRESS: positiveInt.default(50).describe('dashboard sign-in attempts per client address per window; more get 429 rate_limited'),
  DASHBOARD_INVITATIONS_PER_ADDRESS: positiveInt.default(10).describe('invitation forms posted per client address per window; more get 429 rate_limited'),
  DASHBOARD_DEVICE_DAYS: positiveInt.default(90).describe('how long a browser that signed in to a login is recognised by it (the mds_device cookie)'),
  DASHBOARD_INVITATION_HOURS: positiveInt.default(72).describe('how long a dashboard invitation link can be used (once)'),
});

export type Config = z.infer<typeof ConfigSchema>;

/** Where clients reach the public listener. */
export function publicBaseUrl(config: Config): string {
  return config.PUBLIC_BASE_URL ?? `http://localhost:${config.PORT}`;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = ConfigSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return { ...parsed.data, DATA_DIR: path.resolve(PROJECT_ROOT, parsed.data.DATA_DIR) };
}

export class ConfigError extends Error {}

/** For entry points: the configuration, or a message naming the bad variable and exit code 2. */
export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}
