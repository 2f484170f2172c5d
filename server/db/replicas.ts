import type postgres from 'postgres';
import type { Logger } from '../observability/logger.ts';
import { dbReplicaLag, dbReplicaServing } from '../observability/metrics.ts';
import type { Database } from './database.ts';
import { lsnBytes, newestReached, type WalSample } from './lsn.ts';
import { sqlClient } from './sql.ts';

// How often the primary's WAL position is sampled and each replica's replay
// position read. A replica that stops answering is out after at most one
// interval plus one check deadline (750 ms), inside the second the service
// promises; a connection failure in a unit of work takes it out at once.
export const CHECK_INTERVAL_MS = 250;
const CHECK_DEADLINE_MS = 500;
// Primary samples kept: a replica further behind than the oldest is judged by it (lag at least that old).
const SAMPLES_KEPT = 240;

export type ReplicaStatus = 'unchecked' | 'serving' | 'lagging' | 'unreachable' | 'not_in_recovery';

/** One replica: its gated pool, and what the last check found. */
export interface Replica {
  readonly name: string;
  readonly db: Database;
  readonly status: ReplicaStatus;
  /** The instant up to which everything the primary had committed is replayed here (the newest primary sample it has reached). */
  readonly replayedThrough: number | null;
  /** Whether it had replayed the newest primary sample at the last check. */
  readonly caughtUp: boolean;
}

/** A replica as its checks keep it: also the connection they ask it on. */
interface Checked extends Replica {
  url: string;
  monitor: MonitorSql;
  status: ReplicaStatus;
  replayedThrough: number | null;
  caughtUp: boolean;
  checking: boolean;
}

/**
 * The replicas' health, judged against the primary's WAL rather than the
 * replica's last replayed transaction time (which an idle primary makes look
 * old): every CHECK_INTERVAL_MS the primary's pg_current_wal_lsn() is sampled
 * with the time it was asked, and each replica's pg_last_wal_replay_lsn()
 * read. A replica has everything the primary had committed at the newest
 * sample whose position it has replayed; its lag is how long ago that sample
 * was asked, or 0 once it has replayed the newest sample. A replica serves
 * while it answers, is in recovery and lags at most `maxLagMs`; a failed or
 * late check, a connection failure in a unit, or promotion (no longer in
 * recovery) takes it out until a check finds it serving again.
 */
export class ReplicaMonitor {
  private readonly checked: Checked[];
  private readonly samples: WalSample[] = [];
  private sampling = false;
  private timer: NodeJS.Timeout | null = null;
  private primaryMonitor: MonitorSql;

  private readonly primaryUrl: string;
  private readonly maxLagMs: number;
  private readonly logger: Logger;

  constructor(primaryUrl: string, replicas: { name: string; url: string; db: Database }[], maxLagMs: number, logger: Logger) {
    this.primaryUrl = primaryUrl;
    this.maxLagMs = maxLagMs;
    this.logger = logger;
    this.primaryMonitor = monitorClient(primaryUrl);
    this.checked = replicas.map(({ name, url, db }) => {
      const replica: Checked = { name, url, db, monitor: monitorClient(url), status: 'unchecked', replayedThrough: null, caughtUp: false, checking: false };
      db.health.onDown(() => this.setStatus(replica, 'unreachable', 'a unit of work lost its connection'));
      dbReplicaServing.set({ replica: name }, 0);
      return replica;
    });
  }

  /** The replicas, in DATABASE_REPLICA_URLS order, as the last checks found them. */
  get replicas(): readonly Replica[] {
    return this.checked;
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

  /** Stops the checks and closes their connections (the replicas' pools are their owner's to end). */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const r of this.checked) r.db.health.stop();
    await Promise.all([this.primaryMonitor.end({ timeout: 0 }), ...this.checked.map((r) => r.monitor.end({ timeout: 0 }))]);
  }

  private async check(): Promise<void> {
    await this.samplePrimary();
    await Promise.all(this.checked.map((r) => this.checkReplica(r)));
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

  private async checkReplica(r: Checked): Promise<void> {
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
      const lagMs = lagMsOf(r);
      dbReplicaLag.set({ replica: r.name }, lagMs === null ? Number.NaN : lagMs / 1000);
      if (!r.db.health.available) return;
      if (lagMs === null) return this.setStatus(r, 'lagging', 'its replay has not reached any sampled primary position yet');
      if (lagMs > this.maxLagMs) return this.setStatus(r, 'lagging', `replay lag ${lagMs} ms > ${this.maxLagMs} ms`);
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

  private setStatus(r: Checked, status: ReplicaStatus, reason: string): void {
    if (r.status === status) return;
    const was = r.status;
    r.status = status;
    dbReplicaServing.set({ replica: r.name }, status === 'serving' ? 1 : 0);
    if (status === 'serving') this.logger.info({ replica: r.name, was, lagMs: lagMsOf(r) }, 'replica serving reads');
    // Before its first good check a replica is not serving yet, which is not news; taken out afterwards, it is.
    else if (was === 'unchecked') this.logger.info({ replica: r.name, status, reason }, 'replica not serving reads yet');
    else this.logger.warn({ replica: r.name, status, reason }, 'replica taken out of reads');
  }
}

/** How far a replica's replay is behind the primary (ms) at its last check; null before it reached any sample. */
function lagMsOf(r: Replica): number | null {
  if (r.caughtUp) return 0;
  return r.replayedThrough === null ? null : Date.now() - r.replayedThrough;
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
