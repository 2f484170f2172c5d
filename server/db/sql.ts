import postgres from 'postgres';
import { dbPoolMax, dbQueriesInFlight, dbQueryDuration, registerOpenConnectionsProbe } from '../metrics.ts';

export type Sql = postgres.Sql<{ date: string }>;

const DATE_OID = 1082;

/**
 * Creates a postgres.js pool. Dates stay `yyyy-mm-dd` strings end to end (a JS
 * Date would shift them by the local offset); float8 prices arrive as numbers;
 * bigint and numeric stay strings, so queries cast counts to int deliberately.
 */
export function createSql(url: string, options: { max: number; name: string; synchronousCommit?: 'on' | 'off' }): Sql {
  const applicationName = `market-data-service/${options.name}/${process.pid}`;
  const sql = postgres(url, {
    max: options.max,
    connect_timeout: 5,
    idle_timeout: 60,
    max_lifetime: 60 * 30,
    onnotice: () => {},
    connection: {
      application_name: applicationName,
      statement_timeout: 60_000,
      ...(options.synchronousCommit ? { synchronous_commit: options.synchronousCommit } : {}),
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
  registerOpenConnectionsProbe(options.name, async () => {
    // postgres.js exposes no pool counters, so the server is asked at scrape
    // time; application_name carries the pid, so other processes don't count.
    const [row] = await sql`
      select count(*)::int as open
      from pg_stat_activity
      where application_name = ${applicationName}
    `;
    return row.open as number;
  });
  return sql;
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
