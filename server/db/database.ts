import { dbAcquireWait, dbConnectionsInUse, dbRefused, dbUnitsWaiting } from '../observability/metrics.ts';
import { isConnectionFailure, type DatabaseHealth } from './health.ts';
import type { Sql } from './sql.ts';
import { AppError } from '../core/errors.ts';
import { PermitRefused, Semaphore } from '../core/semaphore.ts';

export interface DatabaseOptions {
  /** The pool's size: at most this many units of work run at once. */
  connections: number;
  /** How long a unit may wait for a free connection before it is refused. */
  acquireTimeoutMs: number;
  /** Units allowed to wait at once; one more is refused without waiting. */
  maxWaiting: number;
}

type Refusal = 'unavailable' | 'queue_full' | 'timeout';

/**
 * Connection permits in front of a pool, or a share of one: a bounded,
 * deadlined semaphore that also refuses at once, waiters included, while the
 * server is marked down. Every refusal is a 503 `overloaded`, counted under
 * the permits' name.
 */
class Permits {
  private readonly semaphore: Semaphore;

  readonly name: string;
  readonly count: number;
  private readonly maxWaiting: number;
  private readonly health: DatabaseHealth;

  constructor(name: string, count: number, maxWaiting: number, health: DatabaseHealth, onChange?: (inUse: number, waiting: number) => void) {
    this.name = name;
    this.count = count;
    this.maxWaiting = maxWaiting;
    this.health = health;
    this.semaphore = new Semaphore(count, maxWaiting, onChange);
    health.onDown(() => this.semaphore.refuseWaiting(this.refused('unavailable', 0)));
  }

  async take(waitMs: number): Promise<void> {
    if (!this.health.available) throw this.refused('unavailable', waitMs);
    try {
      await this.semaphore.acquire(waitMs);
    } catch (err) {
      throw err instanceof PermitRefused ? this.refused(err.reason, waitMs) : err;
    }
  }

  /** A permit when one is free now (and the server is reachable), else false; a miss is not a refusal. */
  tryTake(): boolean {
    return this.health.available && this.semaphore.tryAcquire();
  }

  release(): void {
    this.semaphore.release();
  }

  private refused(reason: Refusal, waitMs: number): AppError {
    dbRefused.inc({ pool: this.name, reason });
    const message = {
      unavailable: 'the database is unavailable',
      queue_full: `all ${this.count} database permits of ${this.name} are taken and ${this.maxWaiting} requests are waiting`,
      timeout: `no database connection of ${this.name} became free within ${waitMs} ms`,
    }[reason];
    return new AppError('overloaded', `${message}; retry shortly`, {}, { 'Retry-After': '1' });
  }
}

/**
 * One postgres.js pool behind a gate. All database work goes through `run`:
 * a unit of work (a few queries: one request's reads, one page of a bulk
 * stream, one ingest transaction) holds one of `connections` permits while it
 * runs and gives it back before anything waits on a client.
 *
 * postgres.js has no deadline on waiting for a connection: a query that finds
 * every connection busy is pipelined behind another's statement, however long
 * that takes, and while the server is down it waits out a reconnect backoff
 * that grows to 20 s a try. The gate puts the deadlines in front of it:
 * - more than `maxWaiting` waiting, or a wait longer than `acquireTimeoutMs`:
 *   503 `overloaded` with Retry-After;
 * - the server marked down (DatabaseHealth): 503 at once, for those waiting
 *   too, until a probe finds it back.
 * With at most `connections` units at once, a unit's queries never queue
 * behind another unit's on the client side.
 */
export class Database {
  private readonly permits: Permits;
  // Label children resolved once: every unit updates them twice.
  private readonly acquireWait;

  readonly name: string;
  private readonly sql: Sql;
  readonly health: DatabaseHealth;
  private readonly options: DatabaseOptions;

  constructor(name: string, sql: Sql, health: DatabaseHealth, options: DatabaseOptions) {
    this.name = name;
    this.sql = sql;
    this.health = health;
    this.options = options;
    const inUse = dbConnectionsInUse.labels({ pool: name });
    const waiting = dbUnitsWaiting.labels({ pool: name });
    this.acquireWait = dbAcquireWait.labels({ pool: name });
    this.permits = new Permits(name, options.connections, options.maxWaiting, health, (used, queued) => {
      inUse.set(used);
      waiting.set(queued);
    });
    inUse.set(0);
    waiting.set(0);
  }

  /** Runs one unit of work with the pool, holding one connection permit for its duration; waits at most `waitMs` for it. */
  async run<T>(unit: (sql: Sql) => Promise<T>, waitMs = this.options.acquireTimeoutMs): Promise<T> {
    const queuedAt = performance.now();
    await this.permits.take(waitMs);
    this.acquireWait.observe((performance.now() - queuedAt) / 1000);
    return this.holdingPermit(unit);
  }

  /**
   * Runs `unit` only when a connection permit is free now, for work that can
   * be done another way when the pool is busy (a read split to run in
   * parallel, say); null when none is free.
   */
  tryRun<T>(unit: (sql: Sql) => Promise<T>): Promise<T> | null {
    if (!this.permits.tryTake()) return null;
    this.acquireWait.observe(0);
    return this.holdingPermit(unit);
  }

  /** Runs `unit` with a permit already taken, and gives the permit back after. */
  private async holdingPermit<T>(unit: (sql: Sql) => Promise<T>): Promise<T> {
    try {
      return await unit(this.sql);
    } catch (err) {
      if (isConnectionFailure(err)) this.health.markDown(err);
      throw err;
    } finally {
      this.permits.release();
    }
  }

  /** One round trip through the gate: resolves when the pool can reach the server. */
  async ping(): Promise<void> {
    await this.run((sql) => sql`select 1`);
  }

  /** Closes the pool's connections, waiting at most `timeoutSeconds` for running queries. */
  end(timeoutSeconds: number): Promise<void> {
    return this.sql.end({ timeout: timeoutSeconds });
  }

  /**
   * A share of this pool: units run through it hold one of its `permits` as
   * well as a connection permit, so together they never hold more than
   * `permits` connections, and the rest of the pool stays free for other work.
   */
  lane(name: string, permits: number): Lane {
    return shareOf(this, name, permits, this.options, this.health);
  }
}

/**
 * Units run through `units` holding one of `permits` of a share named `name`
 * as well (Database.lane, ReadRouter.lane); tryRun runs one only when both a
 * permit of the share and a connection are free now.
 */
export function shareOf(units: Lane, name: string, permits: number, options: DatabaseOptions, health: DatabaseHealth): Lane {
  const share = new Permits(name, permits, options.maxWaiting, health);
  return {
    run: async (unit, waitMs = options.acquireTimeoutMs) => {
      await share.take(waitMs);
      try {
        return await units.run(unit, waitMs);
      } finally {
        share.release();
      }
    },
    tryRun: (unit) => {
      if (!share.tryTake()) return null;
      const running = units.tryRun(unit);
      if (!running) {
        share.release();
        return null;
      }
      return running.finally(() => share.release());
    },
  };
}

/** What a service needs to run units of work: a Database or a lane of one. */
export type Units = Pick<Database, 'run'>;

/** A share of a pool (Database.lane): units that wait for a permit, and units run only when one is free now. */
export type Lane = Pick<Database, 'run' | 'tryRun'>;

/**
 * What the read-only routes run on: the primary's Database, or the router
 * over the primary and its streaming replicas (db/replica-router.ts).
 */
export type Reads = Pick<Database, 'run' | 'tryRun' | 'lane'>;
