import net from 'node:net';
import postgres from 'postgres';
import { dbPoolMax, dbQueriesInFlight, dbQueryDuration } from '../observability/metrics.ts';

/** The type mapping every pool is made with (createSql): a `date` is its `yyyy-mm-dd` text. */
type SqlTypes = { date: string };

/** A pool: it also opens transactions (`begin`), reserves connections and ends. */
export type Sql = postgres.Sql<SqlTypes>;

/**
 * Whatever runs queries: the pool, a reserved connection, a transaction or a
 * savepoint. postgres.js's own ISql, which each of those extends, so a
 * function that only queries takes an ISql and is handed any of them.
 */
export type ISql = postgres.ISql<SqlTypes>;

const DATE_OID = 1082;

/**
 * How a pool's connections reach PostgreSQL (DATABASE_POOL_MODE). `session`:
 * each connection is a session of its own, for as long as it is open.
 * `transaction`: a transaction-mode pooler (PgBouncer) stands between, and
 * lends a server connection for one transaction at a time, so two statements
 * outside a transaction may run on different sessions: nothing a session
 * keeps (SET, a prepared statement, a session lock) survives the statement
 * that made it, and the pooler refuses settings sent at connect.
 */
export type PoolMode = 'session' | 'transaction';

export interface SqlOptions {
  max: number;
  name: string;
  statementTimeoutMs: number;
  synchronousCommit?: 'on' | 'off';
  /** Default `session`. */
  poolMode?: PoolMode;
  /** Named prepared statements; default on in `session` mode, off in `transaction` mode (PgBouncer before 1.21 cannot keep them). */
  preparedStatements?: boolean;
}

/**
 * Creates a postgres.js pool. Dates stay `yyyy-mm-dd` strings end to end (a JS
 * Date would shift them by the local offset); float8 prices arrive as numbers;
 * bigint and numeric stay strings, so queries cast counts to int deliberately.
 *
 * The service never opens a cursor: postgres.js 3.4.9 answers a failed Close
 * of an abandoned cursor with a second Sync, after which the connection's next
 * query reads the previous query's reply. Long reads are paged instead
 * (prices/bulk-stream.ts, streamBulkPrices).
 *
 * Reconnection is not left to postgres.js's backoff (which grows to 20 s a
 * try while queries wait behind it): the gate in database.ts refuses work while
 * the server is down, so a connection is retried at once when work arrives.
 */
export function createSql(url: string, options: SqlOptions): Sql {
  const pooled = options.poolMode === 'transaction';
  const sql = sqlClient(url, {
    max: options.max,
    prepare: options.preparedStatements ?? !pooled,
    connect_timeout: 5,
    idle_timeout: 60,
    max_lifetime: 60 * 30,
    backoff: () => 0,
    onnotice: () => {},
    // Behind a transaction-mode pooler only application_name, which PgBouncer
    // keeps per client: the session settings come from the role instead, and
    // the service checks them at start (db/pooler.ts, checkPooledSettings).
    connection: {
      application_name: `market-data-service/${options.name}/${process.pid}`,
      ...(pooled ? {} : sessionSettings(options)),
    },
    types: {
      date: {
        to: DATE_OID,
        from: [DATE_OID],
        serialize: (x: string) => x,
        parse: (x: string) => x,
      },
    },
  });
  dbPoolMax.set({ pool: options.name }, options.max);
  return sql;
}

/**
 * What a pool in `session` mode sets at connect: settings of the whole
 * session, sent as startup parameters so they cost no round trip.
 */
function sessionSettings(options: SqlOptions): Record<string, string> {
  return {
    // Sent as text: postgres.js leaves out a parameter whose value is falsy,
    // and 0 (no timeout: the migrations, the CLI) must override a role's own.
    statement_timeout: String(options.statementTimeoutMs),
    // Shortest exact float8 text (PostgreSQL's default, set so a server
    // configured otherwise cannot round prices): the price reads write it
    // into responses (prices/bar-text-sql.ts).
    extra_float_digits: '1',
    // No JIT compilation: PostgreSQL builds with LLVM (Debian's, the
    // TimescaleDB images) compile any plan whose cost estimate passes
    // jit_above_cost. A bulk page statement's estimate passes it, and on
    // Debian's PostgreSQL 15 each of its first executions on a connection
    // spent about 0.8 s compiling a statement that runs in 30 ms: the first
    // 500-instrument bulk read took 4.5 s instead of 0.45 s. No statement
    // here runs long enough for compiled code to pay that back.
    jit: 'off',
    ...(options.synchronousCommit ? { synchronous_commit: options.synchronousCommit } : {}),
  };
}

/**
 * A postgres.js client for a connection URL. postgres.js reads host, port,
 * credentials and options from the URL itself, but a URL that names a Unix
 * socket directory as libpq does, with `host=/dir` in its query (the embedded
 * cluster's URL: postgresql://postgres:…@localhost:5432/mds?host=/…/pg), it
 * would send `host` to the server as a setting. Such a URL is read here.
 */
export function sqlClient<T extends Record<string, postgres.PostgresType> = Record<string, never>>(url: string, options: postgres.Options<T>) {
  const parsed = new URL(url);
  const socketDir = parsed.searchParams.get('host');
  if (!socketDir?.startsWith('/')) {
    // `socket` is in postgres.js's README ("Custom socket") but not in its types.
    const tcp = { socket: tcpWithoutDelay(), ...options };
    return postgres(url, tcp);
  }
  // postgres.js connects to <host>/.s.PGSQL.<port> when `host` is a path; the URL's other settings stay as they are.
  parsed.searchParams.delete('host');
  return postgres(parsed.toString(), { ...options, host: socketDir });
}

/**
 * postgres.js's connections over TCP with Nagle's algorithm off (TCP_NODELAY),
 * as libpq opens them; postgres.js leaves it on. With it on, a small message
 * written while the connection's previous bytes are unacknowledged waits for
 * their acknowledgement, which the server may delay by 40 ms: in a
 * 1,000,000-bar daily upload, the instrument lookup after each COPY batch
 * took 38 ms instead of 3 in 15 of 36 batches (npm run bench -- ingest). The
 * connection is opened here and handed to postgres.js unconnected (writes
 * wait for it); each connection of a pool with several hosts tries the next
 * host in turn, as postgres.js does, and its connect_timeout still applies.
 */
function tcpWithoutDelay(): (o: { host: string[]; port: number[] }) => net.Socket {
  let next = 0;
  return ({ host, port }) => {
    const i = next++ % host.length;
    return net.connect({ host: host[i], port: port[i] ?? port[0], noDelay: true });
  };
}

/**
 * Names as a comma-separated list of quoted identifiers ("b"."close_price"
 * for a qualified one). `sql(names)` builds the same list, but picks its
 * form (list, assignments, values) from the keyword before it in the query
 * text, and in `update set (a, b) = (...)` it finds `update`.
 */
export function identifierList(sql: ISql, names: readonly string[]) {
  return names.map((name, i) => (i ? sql`, ${sql(name)}` : sql`${sql(name)}`));
}

/** Fragments joined by commas: a select list, a function's arguments. */
export function fragmentList(sql: ISql, fragments: readonly postgres.Fragment[]) {
  return fragments.reduce((all, fragment) => sql`${all}, ${fragment}`);
}

/** Awaits a query and records its latency under a stable name (never the SQL text). */
export async function timed<T>(name: string, query: PromiseLike<T>): Promise<T> {
  const end = dbQueryDuration.startTimer({ query: name });
  dbQueriesInFlight.inc();
  try {
    const result = await query;
    end({ outcome: 'ok' });
    return result;
  } catch (err) {
    end({ outcome: 'error' });
    throw err;
  } finally {
    dbQueriesInFlight.dec();
  }
}
