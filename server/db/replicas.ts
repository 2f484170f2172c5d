import { AsyncLocalStorage } from 'node:async_hooks';
import type postgres from 'postgres';
import client from 'prom-client';
import { AppError } from '../core/errors.ts';
import type { Logger } from '../observability/logger.ts';
import { registry } from '../observability/metrics.ts';
import { isConnectionFailure } from './health.ts';
import { shareOf, type Database, type DatabaseOptions, type Reads, type Units } from './database.ts';
import { sqlClient, type Sql } from './sql.ts';

// How often the primary's WAL position is sampled and each replica's replay
// position read. A replica that stops answering is out after at most one
// interval plus one check deadline (750 ms), inside the second the service
// promises; a connection failure in a unit of work takes it out at once.
export const CHECK_INTERVAL_MS = 250;
const CHECK_DEADLINE_MS = 500;
// Primary samples kept: a replica further behind than the oldest is judged by it (lag at least that old).
const SAMPLES_KEPT = 240;

const replicaServing = new client.Gauge({
  name: 'db_replica_serving',
  help: 'Per replica: 1 while it serves reads (reachable, in recovery, replay lag under DATABASE_REPLICA_MAX_LAG_MS), else 0',
  labelNames: ['replica'] as const,
  registers: [registry],
  aggregator: 'min',
});

const replicaLag = new client.Gauge({
  name: 'db_replica_lag_seconds',
  help: "Per replica: how far its replay is behind the primary's WAL, at the last check (0 when it has replayed the primary's last sampled position)",
  labelNames: ['replica'] as const,
  registers: [registry],
  aggregator: 'max',
});

const readUnits = new client.Counter({
  name: 'db_read_units_total',
  help: 'Units of read-only work by the server that ran them (primary, replica-N) and why a replica was not used (none_serving, as_of_not_replayed) or why it was retried on the primary (replica_failed)',
  labelNames: ['server', 'reason'] as const,
  registers: [registry],
});

type Status = 'unchecked' | 'serving' | 'lagging' | 'unreachable' | 'not_in_recovery';

/** Why a read-only unit runs on the primary (db_read_units_total's reason). */
type PrimaryReason = 'none_serving' | 'as_of_not_replayed' | 'replica_failed';

/** One replica: its gated pool, and what the last check found. */
interface Replica {
  name: string;
  url: string;
  db: Database;
  monitor: MonitorSql;
  status: Status;
  /** The instant up to which everything the primary had committed is replayed here (the newest primary sample it has reached). */
  replayedThrough: number | null;
  /** Whether it had replayed the newest primary sample at the last check. */
  caughtUp: boolean;
  checking: boolean;
}

/** What one request's reads have used so far (set per public request while replicas are configured). */
interface ReadScope {
  /** The request's asOf cut-off (ms), when it has one: only a replica that has replayed past it may answer. */
  asOf: number | null;
  /**
   * Where its units run, once the first has (on the primary: why), so that
   * one answer comes from one server: later units follow while it stays eligible.
   */
  server: Replica | PrimaryReason | null;
  /** The earliest replayedThrough of a replica that served a unit while behind the primary. */
  behindThrough: number | null;
}

const scopes = new AsyncLocalStorage<ReadScope>();

/** Runs `next` (the rest of a request) with a read scope of its own. */
export function withReadScope(next: () => void): void {
  scopes.run({ asOf: null, server: null, behindThrough: null }, next);
}

/** Records the request's asOf cut-off: its reads go to a replica only if that has replayed past it. */
export function readsAsOf(instant: Date): void {
  const scope = scopes.getStore();
  if (scope) scope.asOf = instant.getTime();
}

/**
 * The meta of an answer as served: a request without asOf answered by a
 * replica that was behind the primary is an answer as of the instant that
 * replica had replayed, so meta.asOf says that instant when it is earlier.
 * Unchanged otherwise: a replica that had replayed the primary's last sample
 * (at most CHECK_INTERVAL_MS old) answers what the primary would.
 */
export function asServed<M>(meta: M): M {
  const scope = scopes.getStore();
  if (!scope || scope.asOf !== null || scope.behindThrough === null) return meta;
  const asOf = (meta as { asOf?: unknown }).asOf;
  if (typeof asOf !== 'string' || !(Date.parse(asOf) > scope.behindThrough)) return meta;
  return { ...meta, asOf: new Date(scope.behindThrough).toISOString() };
}

/** A pg_lsn's text (`16/B374D848`) as a number of bytes. */
export function lsnBytes(lsn: string): bigint {
  const [high, low] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

export interface ReplicaRouterOptions {
  maxLagMs: number;
  gate: DatabaseOptions;
}

/**
 * Read-only units of work over the primary and its streaming replicas.
 *
 * Lag is measured against the primary's WAL, not against the replica's last
 * replayed transaction time (which an idle primary makes look old): every
 * CHECK_INTERVAL_MS the primary's pg_current_wal_lsn() is sampled with the
 * time it was asked, and each replica's pg_last_wal_replay_lsn() read. A
 * replica has everything the primary had committed at the newest sample whose
 * position it has replayed; its lag is how long ago that sample was asked, or
 * 0 once it has replayed the newest sample. A replica serves while it answers,
 * is in recovery and lags at most `maxLagMs`; a failed or late check, a
 * connection failure in a unit, or promotion (no longer in recovery) takes it
 * out until a check finds it serving again.
 *
 * A unit goes to an eligible replica (round robin), one whose replay covers
 * the request's asOf when it has one, else to the primary. A unit that fails
 * on a replica because the replica went away, or because recovery cancelled
 * its statement, runs once more on the primary: the units are read-only, so
 * running one again is safe, and no client sees a replica's failure.
 */
export class ReplicaRouter implements Reads {
  private readonly replicas: Replica[];
  private readonly samples: { at: number; lsn: bigint }[] = [];
  private sampling = false;
  private next = 0;
  private timer: NodeJS.Timeout | null = null;

  private readonly primary: Database;
  private primaryMonitor: MonitorSql;
  private readonly primaryUrl: string;
  private readonly options: ReplicaRouterOptions;
  private readonly logger: Logger;

  constructor(primary: Database, primaryUrl: string, replicas: { name: string; url: string; db: Database }[], options: ReplicaRouterOptions, logger: Logger) {
    this.primary = primary;
    this.options = options;
    this.logger = logger;
    this.primaryUrl = primaryUrl;
    this.primaryMonitor = monitorClient(primaryUrl);
    this.replicas = replicas.map(({ name, url, db }) => {
      const replica: Replica = { name, url, db, monitor: monitorClient(url), status: 'unchecked', replayedThrough: null, caughtUp: false, checking: false };
      db.health.onDown(() => this.setStatus(replica, 'unreachable', 'a unit of work lost its connection'));
      replicaServing.set({ replica: name }, 0);
      return replica;
    });
  }

  /** Starts the checks; the replicas serve from their first good one. */
  start(): void {
    const tick = () => {
      void this.check();
      this.timer = setTimeout(tick, CHECK_INTERVAL_MS);
      this.timer.unref();
    };
    tick();
  }

  async stop(closeBudgetS: number): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const r of this.replicas) r.db.health.stop();
    await Promise.all([this.primaryMonitor.end({ timeout: 0 }), ...this.replicas.flatMap((r) => [r.monitor.end({ timeout: 0 }), r.db.end(closeBudgetS)])]);
  }

  async run<T>(unit: (sql: Sql) => Promise<T>, waitMs?: number): Promise<T> {
    const scope = scopes.getStore();
    const replica = this.choose(scope);
    if (typeof replica === 'string') {
      readUnits.inc({ server: 'primary', reason: replica });
      return this.primary.run(unit, waitMs);
    }
    try {
      const result = await replica.db.run(unit, waitMs);
      readUnits.inc({ server: replica.name, reason: '' });
      return result;
    } catch (err) {
      if (!this.failedWithReplica(replica, err)) throw err;
      readUnits.inc({ server: 'primary', reason: 'replica_failed' });
      this.logger.info({ replica: replica.name, code: (err as { code?: string }).code }, 'read retried on the primary after its replica failed');
      if (scope) scope.server = 'replica_failed';
      return this.primary.run(unit, waitMs);
    }
  }

  /** On the server the request's units run on (a statement importing their snapshot must), when it has a permit free now. */
  tryRun<T>(unit: (sql: Sql) => Promise<T>): Promise<T> | null {
    const server = scopes.getStore()?.server;
    return server && typeof server === 'object' ? server.db.tryRun(unit) : this.primary.tryRun(unit);
  }

  lane(name: string, permits: number): Units {
    return shareOf(this, name, permits, this.options.gate, this.primary.health);
  }

  /** The replica a unit runs on, or why it runs on the primary. */
  private choose(scope: ReadScope | undefined): Replica | PrimaryReason {
    const eligible = (r: Replica) => r.status === 'serving' && (scope?.asOf == null || (r.replayedThrough ?? -Infinity) >= scope.asOf);
    const pinned = scope?.server;
    if (typeof pinned === 'string') return pinned;
    if (pinned && eligible(pinned)) return this.note(scope!, pinned);
    for (let i = 0; i < this.replicas.length; i++) {
      const r = this.replicas[(this.next + i) % this.replicas.length];
      if (!eligible(r)) continue;
      this.next = (this.next + i + 1) % this.replicas.length;
      return scope ? this.note(scope, r) : r;
    }
    const reason = this.replicas.some((r) => r.status === 'serving') ? 'as_of_not_replayed' : 'none_serving';
    if (scope) scope.server = reason;
    return reason;
  }

  /** Pins the request's units to `r`, and keeps the instant its answer holds when `r` is behind the primary. */
  private note(scope: ReadScope, r: Replica): Replica {
    scope.server = r;
    if (!r.caughtUp && r.replayedThrough !== null) scope.behindThrough = Math.min(scope.behindThrough ?? Infinity, r.replayedThrough);
    return r;
  }

  /** Whether `err` is the replica's failure rather than the unit's (then it runs again on the primary). */
  private failedWithReplica(replica: Replica, err: unknown): boolean {
    const code = (err as { code?: unknown })?.code;
    // A statement recovery cancelled (a conflict with the WAL it replays): the replica is fine, this read is not.
    if (code === '40001' || code === '40P01') return true;
    if (isConnectionFailure(err)) return true;
    // Refused by its gate because it was marked down after it was chosen.
    return err instanceof AppError && err.code === 'overloaded' && !replica.db.health.available;
  }

  private lagMs(r: Replica): number | null {
    if (r.caughtUp) return 0;
    return r.replayedThrough === null ? null : Date.now() - r.replayedThrough;
  }

  private async check(): Promise<void> {
    await this.samplePrimary();
    await Promise.all(this.replicas.map((r) => this.checkReplica(r)));
  }

  private async samplePrimary(): Promise<void> {
    if (this.sampling) return;
    this.sampling = true;
    const at = Date.now();
    try {
      const [row] = await withDeadline(this.primaryMonitor<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`);
      this.samples.push({ at, lsn: lsnBytes(row.lsn) });
      if (this.samples.length > SAMPLES_KEPT) this.samples.shift();
    } catch (err) {
      // The primary's own health is DatabaseHealth's; without a new sample the replicas are judged by the last one.
      if (err instanceof CheckDeadline) {
        void this.primaryMonitor.end({ timeout: 0 }).catch(() => {});
        this.primaryMonitor = monitorClient(this.primaryUrl);
      }
    } finally {
      this.sampling = false;
    }
  }

  private async checkReplica(r: Replica): Promise<void> {
    if (r.checking) {
      // The previous check has outlived an interval and its deadline is near: it decides.
      return;
    }
    r.checking = true;
    try {
      const [row] = await withDeadline(r.monitor<{ recovery: boolean; replay: string | null }[]>`
        select pg_is_in_recovery() as recovery, pg_last_wal_replay_lsn()::text as replay`);
      if (!row.recovery) return this.setStatus(r, 'not_in_recovery', 'the server is not in recovery (promoted?): it is not a replica of the primary');
      const replay = row.replay === null ? null : lsnBytes(row.replay);
      const reached = replay === null ? undefined : newestReached(this.samples, replay);
      const newest = this.samples.at(-1);
      r.replayedThrough = reached?.at ?? null;
      r.caughtUp = reached !== undefined && reached === newest;
      const lagMs = this.lagMs(r);
      replicaLag.set({ replica: r.name }, lagMs === null ? Number.NaN : lagMs / 1000);
      if (!r.db.health.available) return;
      if (lagMs === null) return this.setStatus(r, 'lagging', 'its replay has not reached any sampled primary position yet');
      if (lagMs > this.options.maxLagMs) return this.setStatus(r, 'lagging', `replay lag ${lagMs} ms > ${this.options.maxLagMs} ms`);
      this.setStatus(r, 'serving', '');
    } catch (err) {
      r.caughtUp = false;
      // A check left waiting holds the one connection: the next check gets a new one.
      if (err instanceof CheckDeadline) {
        void r.monitor.end({ timeout: 0 }).catch(() => {});
        r.monitor = monitorClient(r.url);
      }
      this.setStatus(r, 'unreachable', (err as Error).message);
    } finally {
      r.checking = false;
    }
  }

  private setStatus(r: Replica, status: Status, reason: string): void {
    if (r.status === status) return;
    const was = r.status;
    r.status = status;
    replicaServing.set({ replica: r.name }, status === 'serving' ? 1 : 0);
    if (status === 'serving') this.logger.info({ replica: r.name, was, lagMs: this.lagMs(r) }, 'replica serving reads');
    // Before its first good check a replica is not serving yet, which is not news; taken out afterwards, it is.
    else if (was === 'unchecked') this.logger.info({ replica: r.name, status, reason }, 'replica not serving reads yet');
    else this.logger.warn({ replica: r.name, status, reason }, 'replica taken out of reads');
  }
}

/** The newest sample whose WAL position `replay` has reached (samples ascend in both time and position). */
function newestReached(samples: readonly { at: number; lsn: bigint }[], replay: bigint) {
  for (let i = samples.length - 1; i >= 0; i--) if (samples[i].lsn <= replay) return samples[i];
  return undefined;
}

/**
 * A one-connection client for the checks, outside the gates (a check must not
 * wait behind requests). Nothing is sent at connect but its name and no
 * statement is prepared, so it works through a transaction-mode pooler too;
 * the deadline is kept here (withDeadline).
 */
function monitorClient(url: string): MonitorSql {
  return sqlClient(url, {
    max: 1,
    connect_timeout: CHECK_DEADLINE_MS / 1000,
    idle_timeout: 0,
    // Nothing here reads an array; without this, each new connection first asks for the array types.
    fetch_types: false,
    prepare: false,
    backoff: () => 0,
    onnotice: () => {},
    connection: { application_name: `market-data-service/replica-check/${process.pid}` },
  });
}

/** A check's client: plain postgres.js, without the pools' date type (the checks read no date). */
type MonitorSql = postgres.Sql;

class CheckDeadline extends Error {}

function withDeadline<T>(query: PromiseLike<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CheckDeadline(`no answer within ${CHECK_DEADLINE_MS} ms`)), CHECK_DEADLINE_MS);
  });
  return Promise.race([query, deadline]).finally(() => clearTimeout(timer));
}
