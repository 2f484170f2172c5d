import { AppError, errorCode } from '../core/errors.ts';
import type { Logger } from '../observability/logger.ts';
import { dbReadUnits } from '../observability/metrics.ts';
import { shareOf, type Database, type DatabaseOptions, type Lane, type Reads } from './database.ts';
import { isConnectionFailure } from './health.ts';
import { currentReadScope, type PrimaryReason, type ReadScope } from './read-scope.ts';
import { ReplicaMonitor, type Replica } from './replicas.ts';
import type { Sql } from './sql.ts';

export interface ReplicaRouterOptions {
  maxLagMs: number;
  gate: DatabaseOptions;
}

/**
 * Read-only units of work over the primary and its streaming replicas, which
 * a ReplicaMonitor (db/replicas.ts) checks and takes in and out of service.
 *
 * A unit goes to an eligible replica (round robin), one whose replay covers
 * the request's asOf when it has one, else to the primary. A request's units
 * follow its first (db/read-scope.ts), so one answer comes from one server. A
 * unit that fails on a replica because the replica went away, or because
 * recovery cancelled its statement, runs once more on the primary: the units
 * are read-only, so running one again is safe, and no client sees a
 * replica's failure.
 */
export class ReplicaRouter implements Reads {
  private readonly monitor: ReplicaMonitor;
  private next = 0;

  private readonly primary: Database;
  private readonly options: ReplicaRouterOptions;
  private readonly logger: Logger;

  constructor(primary: Database, primaryUrl: string, replicas: { name: string; url: string; db: Database }[], options: ReplicaRouterOptions, logger: Logger) {
    this.primary = primary;
    this.options = options;
    this.logger = logger;
    this.monitor = new ReplicaMonitor(primaryUrl, replicas, options.maxLagMs, logger);
  }

  /** Starts the checks; the replicas serve from their first good one. */
  start(): void {
    this.monitor.start();
  }

  async stop(closeBudgetS: number): Promise<void> {
    await Promise.all([this.monitor.stop(), ...this.monitor.replicas.map((r) => r.db.end(closeBudgetS))]);
  }

  async run<T>(unit: (sql: Sql) => Promise<T>, waitMs?: number): Promise<T> {
    const scope = currentReadScope();
    const replica = this.choose(scope);
    if (typeof replica === 'string') {
      dbReadUnits.inc({ server: 'primary', reason: replica });
      return this.primary.run(unit, waitMs);
    }
    try {
      const result = await replica.db.run(unit, waitMs);
      dbReadUnits.inc({ server: replica.name, reason: '' });
      return result;
    } catch (err) {
      if (!failedWithReplica(replica, err)) throw err;
      dbReadUnits.inc({ server: 'primary', reason: 'replica_failed' });
      this.logger.info({ replica: replica.name, code: errorCode(err) }, 'read retried on the primary after its replica failed');
      if (scope) scope.server = 'replica_failed';
      return this.primary.run(unit, waitMs);
    }
  }

  /** On the server the request's units run on (a statement importing their snapshot must), when it has a permit free now. */
  tryRun<T>(unit: (sql: Sql) => Promise<T>): Promise<T> | null {
    const server = currentReadScope()?.server;
    return server && typeof server === 'object' ? server.db.tryRun(unit) : this.primary.tryRun(unit);
  }

  lane(name: string, permits: number): Lane {
    return shareOf(this, name, permits, this.options.gate, this.primary.health);
  }

  /** The replica a unit runs on, or why it runs on the primary. */
  private choose(scope: ReadScope | undefined): Replica | PrimaryReason {
    const eligible = (r: Replica) => r.status === 'serving' && (scope?.asOf == null || (r.replayedThrough ?? -Infinity) >= scope.asOf);
    const pinned = scope?.server;
    if (typeof pinned === 'string') return pinned;
    if (scope && pinned && eligible(pinned)) return note(scope, pinned);
    const { replicas } = this.monitor;
    for (let i = 0; i < replicas.length; i++) {
      const r = replicas[(this.next + i) % replicas.length];
      if (!eligible(r)) continue;
      this.next = (this.next + i + 1) % replicas.length;
      return scope ? note(scope, r) : r;
    }
    const reason = replicas.some((r) => r.status === 'serving') ? 'as_of_not_replayed' : 'none_serving';
    if (scope) scope.server = reason;
    return reason;
  }
}

/** Pins the request's units to `r`, and keeps the instant its answer holds when `r` is behind the primary. */
function note(scope: ReadScope, r: Replica): Replica {
  scope.server = r;
  if (!r.caughtUp && r.replayedThrough !== null) scope.behindThrough = Math.min(scope.behindThrough ?? Infinity, r.replayedThrough);
  return r;
}

/** Whether `err` is the replica's failure rather than the unit's (then it runs again on the primary). */
function failedWithReplica(replica: Replica, err: unknown): boolean {
  const code = errorCode(err);
  // A statement recovery cancelled (a conflict with the WAL it replays): the replica is fine, this read is not.
  if (code === '40001' || code === '40P01') return true;
  if (isConnectionFailure(err)) return true;
  // Refused by its gate because it was marked down after it was chosen.
  return err instanceof AppError && err.code === 'overloaded' && !replica.db.health.available;
}
