import { errorCode } from '../core/errors.ts';
import type { Logger } from '../observability/logger.ts';
import { dbAvailable } from '../observability/metrics.ts';
import { sqlClient } from './sql.ts';

// Failures that mean the server itself is unreachable or going away, as
// opposed to one statement failing: socket errors (ENOENT: a Unix socket
// that is not there, as when the embedded cluster is stopped), postgres.js's connection
// errors, and SQLSTATE classes 57P (admin shutdown, crash shutdown, cannot
// connect now) and 08 (connection exception). A full server (53300) is busy,
// not down, and CONNECTION_ENDED/DESTROYED are this process's own shutdown.
const CONNECTION_FAILURES = new Set([
  'ECONNREFUSED',
  'ENOENT',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'CONNECTION_CLOSED',
  'CONNECT_TIMEOUT',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);

export function isConnectionFailure(err: unknown): boolean {
  const code = errorCode(err);
  return code !== undefined && CONNECTION_FAILURES.has(code);
}

// Probing twice a second finds a returning server within half a second of
// it accepting connections, at the cost of two connection attempts a second
// while it is away; each attempt gets a second before it counts as failed.
const PROBE_INTERVAL_MS = 500;
const PROBE_TIMEOUT_S = 1;

/**
 * Whether one database server is reachable, as a circuit breaker. Any unit of
 * work that fails with a connection failure marks the server down; from then
 * on every caller is refused at once (server/db/database.ts) instead of
 * queueing behind postgres.js's reconnect backoff, which grows to 20 s a try.
 * A probe on its own short-lived connection tries `select 1` every
 * PROBE_INTERVAL_MS and marks the server up on the first success.
 */
export class DatabaseHealth {
  private down: { since: number; reason: string } | null = null;
  private probing: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly listeners: (() => void)[] = [];

  private readonly url: string;
  readonly name: string;
  private readonly logger: Logger;

  /** What callers get while it is down, for the log line. */
  private readonly whileDown: string;

  constructor(url: string, name: string, logger: Logger, whileDown = 'refusing requests with 503 until a probe succeeds') {
    this.url = url;
    this.name = name;
    this.logger = logger;
    this.whileDown = whileDown;
    dbAvailable.set({ server: name }, 1);
  }

  get available(): boolean {
    return this.down === null;
  }

  /** Called once on every transition to down (the gates refuse their waiters). */
  onDown(listener: () => void): void {
    this.listeners.push(listener);
  }

  markDown(err: unknown): void {
    if (this.down || this.stopped) return;
    const reason = describe(err);
    this.down = { since: Date.now(), reason };
    dbAvailable.set({ server: this.name }, 0);
    this.logger.warn({ server: this.name, reason }, `database unreachable: ${this.whileDown}`);
    for (const listener of this.listeners) listener();
    this.scheduleProbe(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.probing) clearTimeout(this.probing);
    this.probing = null;
  }

  private scheduleProbe(delayMs: number): void {
    if (this.stopped) return;
    this.probing = setTimeout(() => void this.probe(), delayMs);
    this.probing.unref();
  }

  private async probe(): Promise<void> {
    this.probing = null;
    // Unnamed statements: through a transaction-mode pooler a named one would
    // stay behind on whichever server connection ran it.
    const client = sqlClient(this.url, { max: 1, prepare: false, connect_timeout: PROBE_TIMEOUT_S, idle_timeout: 1, backoff: () => 0, onnotice: () => {} });
    let ok = false;
    try {
      const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('probe timed out')), PROBE_TIMEOUT_S * 1000).unref());
      await Promise.race([client`select 1`, timeout]);
      ok = true;
    } catch {
      // still down
    } finally {
      void client.end({ timeout: 0 }).catch(() => {});
    }
    if (this.stopped || !this.down) return;
    if (!ok) return this.scheduleProbe(PROBE_INTERVAL_MS);
    this.logger.info({ server: this.name, downMs: Date.now() - this.down.since }, 'database reachable again');
    this.down = null;
    dbAvailable.set({ server: this.name }, 1);
  }
}

function describe(err: unknown): string {
  return [errorCode(err), err instanceof Error ? err.message : undefined].filter(Boolean).join(': ') || String(err);
}
