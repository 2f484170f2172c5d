import cluster, { type Worker } from 'node:cluster';
import os from 'node:os';
import type { Config } from '../config.ts';
import { AppError } from '../core/errors.ts';
import type { MigrationReport } from '../db/migrate.ts';
import { StreamSlots, type StreamSlot } from '../http/stream-slots.ts';
import type { Logger } from '../observability/logger.ts';
import { aggregateMetrics, forgetClosedResources, registry, webWorkerExits, webWorkersServing, type ProcessMetrics } from '../observability/metrics.ts';
import { isMessage, type SlotLimits, type ToPrimary, type ToWorker } from './primary-link.ts';
import { Runtime } from './lifecycle.ts';

// A serving process that exits while the service runs is replaced after
// 0.5 s, doubling to 30 s while replacements keep exiting; one that served
// for STEADY_MS resets the wait. A crash loop thus costs a log line and a
// fork every 30 s, not a busy loop.
const RESTART_FIRST_MS = 500;
const RESTART_MAX_MS = 30_000;
const STEADY_MS = 60_000;

// A serving process drains within SHUTDOWN_GRACE_MS and closes its pools
// within half a second; past this margin beyond the grace it is killed.
const STOP_MARGIN_MS = 5_000;

// A process busy past this answering for its metrics fails the scrape: a
// partial sum would read as a counter reset.
const METRICS_ANSWER_MS = 5_000;

/** Why the service could not start, as the one line `npm start` prints. */
export class StartRefusal extends Error {}

interface Serving {
  worker: Worker;
  pid: number;
  startedAt: number;
  publicUrl?: string;
  adminUrl?: string;
  ready: boolean;
  /** Downloads this process holds slots for, by its own slot number. */
  slots: Map<number, StreamSlot>;
  /** Its metrics at the last scrape: when it exits, its counters stay in the service's. */
  lastMetrics: ProcessMetrics | null;
}

/**
 * The primary of WEB_CONCURRENCY serving processes (node:cluster). It
 * prepares the database once (the embedded cluster, the admin token, the
 * migrations, the demo set: Runtime.prepare) and forks the serving processes
 * as soon as the database is open, so that they listen while it migrates.
 * The listeners are shared: the primary accepts each connection and hands it
 * to the serving processes in turn (cluster's round-robin). Then it:
 *
 * - replaces a serving process that exits, after a backoff, and logs it;
 * - answers /metrics for whichever process a scrape reaches, as the sum of
 *   every process's families (and the counters of those that exited, so that
 *   counters never go back);
 * - holds the download slots (StreamSlots) of every process, so that
 *   BULK_STREAMS_PER_ACCOUNT and BULK_STREAMS_MAX are exact across them;
 * - on SIGTERM or SIGINT, has every process drain, then stops the database.
 *
 * A process that cannot start makes the whole start fail with its one line.
 */
export class ServingProcesses {
  private readonly config: Config;
  private readonly logger: Logger;
  private readonly runtime: Runtime;
  private readonly serving = new Map<number, Serving>();
  private readonly slots = new Map<string, StreamSlots>();
  /** The cumulative families of processes that exited, as last scraped; folded into one now and then. */
  private readonly retired: ProcessMetrics[] = [];
  private folding: Promise<void> | null = null;
  private databaseUrl = '';
  private migration: MigrationReport | null = null;
  private restartWaitMs = RESTART_FIRST_MS;
  private readonly restarts = new Set<NodeJS.Timeout>();
  private stopping: Promise<boolean> | null = null;
  private starting: { resolve: () => void; reject: (err: Error) => void } | null = null;
  private nextRequest = 0;

  constructor(config: Config, logger: Logger) {
    this.config = config;
    this.logger = logger;
    this.runtime = new Runtime(config, logger);
    // Structured clone: a migration report's dates cross as dates.
    cluster.setupPrimary({ serialization: 'advanced' });
    cluster.on('message', (worker, message: unknown) => {
      if (isMessage<ToPrimary>(message)) this.onMessage(worker, message);
    });
    cluster.on('exit', (worker, code, signal) => this.onExit(worker, code, signal));
  }

  /** Threads of each serving process's worker pool when WORKER_THREADS is unset: the cores shared out, at least one each. */
  get threadsPerProcess(): number {
    return this.config.WORKER_THREADS ?? Math.max(1, Math.floor(os.availableParallelism() / this.config.WEB_CONCURRENCY));
  }

  /** Resolves once every serving process serves; rejects with a StartRefusal when one cannot start. */
  async start(): Promise<{ publicUrl: string; adminUrl: string; tier: string | undefined; pids: number[] }> {
    const allReady = new Promise<void>((resolve, reject) => (this.starting = { resolve, reject }));
    // A serving process that cannot listen need not wait for the migrations to be told.
    const refused = new Promise<never>((_, reject) => allReady.catch(reject));
    refused.catch(() => {});
    await Promise.race([
      this.runtime.prepare((databaseUrl) => {
        this.databaseUrl = databaseUrl;
        for (let i = 0; i < this.config.WEB_CONCURRENCY; i++) this.fork();
      }),
      refused,
    ]);
    this.migration = this.runtime.migration;
    // The pools and threads it prepared with are closed.
    forgetClosedResources();
    // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- prepare resolved: the runtime migrated, so its migration report is set
    for (const s of this.serving.values()) if (s.publicUrl) this.send(s.worker, { kind: 'prepared', migration: this.migration! });
    await allReady;
    this.starting = null;
    const first = [...this.serving.values()][0];
    // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- every serving process reported ready, and a ready process has both URLs
    return { publicUrl: first.publicUrl!, adminUrl: first.adminUrl!, tier: this.migration?.tier, pids: [...this.serving.values()].map((s) => s.pid) };
  }

  /** Drains every serving process, then stops the database; resolves whether every process stopped cleanly. */
  stop(): Promise<boolean> {
    return (this.stopping ??= this.shutDown());
  }

  private async shutDown(): Promise<boolean> {
    for (const timer of this.restarts) clearTimeout(timer);
    this.starting?.reject(new StartRefusal('the service was stopped while starting'));
    const exits = [...this.serving.values()].map(({ worker, pid }) => this.exitOf(worker, pid));
    for (const { worker } of this.serving.values()) worker.process.kill('SIGTERM');
    const clean = (await Promise.all(exits)).every(Boolean);
    await this.runtime.stop();
    return clean;
  }

  /** Resolves once `worker` has exited: whether it exited 0, killing it when it outlives the grace. */
  private exitOf(worker: Worker, pid: number): Promise<boolean> {
    if (worker.isDead()) return Promise.resolve(worker.process.exitCode === 0);
    return new Promise((resolve) => {
      const kill = setTimeout(() => {
        this.logger.error({ pid, graceMs: this.config.SHUTDOWN_GRACE_MS }, 'a serving process did not stop within its grace; killing it');
        worker.process.kill('SIGKILL');
      }, this.config.SHUTDOWN_GRACE_MS + STOP_MARGIN_MS);
      worker.once('exit', (code) => {
        clearTimeout(kill);
        resolve(code === 0);
      });
    });
  }

  private fork(): void {
    const worker = cluster.fork({
      DATABASE_URL: this.databaseUrl,
      ADMIN_TOKEN: this.runtime.adminToken,
      WORKER_THREADS: String(this.threadsPerProcess),
    });
    // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- fork spawned the process, and a spawned process has a pid
    const pid = worker.process.pid!;
    this.serving.set(worker.id, { worker, pid, startedAt: Date.now(), ready: false, slots: new Map(), lastMetrics: null });
  }

  private onMessage(worker: Worker, message: ToPrimary): void {
    const s = this.serving.get(worker.id);
    if (!s) return;
    switch (message.kind) {
      case 'listening':
        s.publicUrl = message.publicUrl;
        s.adminUrl = message.adminUrl;
        if (this.migration) this.send(worker, { kind: 'prepared', migration: this.migration });
        return;
      case 'ready':
        s.ready = true;
        webWorkersServing.set([...this.serving.values()].filter((p) => p.ready).length);
        if (this.starting) {
          if ([...this.serving.values()].every((p) => p.ready)) this.starting.resolve();
        } else {
          this.logger.info({ pid: s.pid }, 'serving process replaced');
        }
        return;
      case 'failed':
        if (this.starting) {
          this.starting.reject(new StartRefusal(message.message));
        } else {
          this.logger.error({ pid: s.pid, reason: message.message }, 'a replacement serving process could not start');
        }
        return;
      case 'service-metrics':
        this.serviceMetrics().then(
          (text) => this.send(worker, { kind: 'service-metrics', request: message.request, text }),
          (err: Error) => this.send(worker, { kind: 'service-metrics', request: message.request, failure: err.message }),
        );
        return;
      case 'own-metrics':
        return this.answers.get(message.request)?.answer(worker.id, message.metrics);
      case 'slot-admit':
        return this.admit(s, message.slot, message.route, message.limits, message.accountId);
      case 'slot-blocked':
        return s.slots.get(message.slot)?.blocked(message.waiting);
      case 'slot-release':
        s.slots.get(message.slot)?.release();
        s.slots.delete(message.slot);
        return;
    }
  }

  private admit(s: Serving, slot: number, route: string, limits: SlotLimits, accountId: string): void {
    let slots = this.slots.get(route);
    if (!slots) this.slots.set(route, (slots = new StreamSlots(route, limits)));
    try {
      const held = slots.admit(accountId, () => {
        s.slots.delete(slot);
        this.send(s.worker, { kind: 'slot-cut', slot });
      });
      s.slots.set(slot, held);
      this.send(s.worker, { kind: 'slot-admitted', slot });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      const { code, message, details, headers } = err;
      this.send(s.worker, { kind: 'slot-refused', slot, refusal: { code, message, details, headers } });
    }
  }

  private readonly answers = new Map<number, { answer(workerId: number, metrics: ProcessMetrics): void; gone(workerId: number): void }>();

  /** Every serving process's families, this process's and those of processes that exited, combined. */
  private async serviceMetrics(): Promise<string> {
    const request = this.nextRequest++;
    // A process still loading may not listen for the question yet, and has served nothing: it is asked once it listens.
    const asked = new Set([...this.serving.values()].filter((s) => s.publicUrl !== undefined && s.worker.isConnected()).map((s) => s.worker));
    const answered = new Map<number, ProcessMetrics>();
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`a serving process did not report its metrics within ${METRICS_ANSWER_MS} ms`)), METRICS_ANSWER_MS);
        const settleWhenAll = () => {
          if (answered.size < asked.size) return;
          clearTimeout(timer);
          resolve();
        };
        this.answers.set(request, {
          answer: (workerId, metrics) => {
            answered.set(workerId, metrics);
            settleWhenAll();
          },
          // A process that exits meanwhile is counted from what it reported at the last scrape (retired), not twice.
          gone: (workerId) => {
            for (const worker of asked) if (worker.id === workerId) asked.delete(worker);
            answered.delete(workerId);
            settleWhenAll();
          },
        });
        settleWhenAll();
        for (const worker of asked) this.send(worker, { kind: 'own-metrics', request });
      });
    } finally {
      this.answers.delete(request);
    }
    for (const [id, metrics] of answered) {
      const s = this.serving.get(id);
      if (s) s.lastMetrics = metrics;
    }
    return aggregateMetrics([...answered.values(), await registry.getMetricsAsJSON(), ...this.retired]).metrics();
  }

  private onExit(worker: Worker, code: number | null, signal: string | null): void {
    const s = this.serving.get(worker.id);
    if (!s) return;
    this.serving.delete(worker.id);
    for (const held of s.slots.values()) held.release();
    // Its counters and histograms as last scraped stay in the service's sums.
    if (s.lastMetrics) this.retire(s.lastMetrics);
    for (const pending of this.answers.values()) pending.gone(worker.id);
    webWorkersServing.set([...this.serving.values()].filter((p) => p.ready).length);
    if (this.stopping) return;
    const how = signal ?? `code_${code}`;
    if (this.starting) {
      // A process that fails to start says why first ('failed'); this covers one that died without a word.
      this.starting.reject(new StartRefusal(`a serving process (pid ${s.pid}) exited while starting (${how})`));
      return;
    }
    webWorkerExits.inc({ how });
    if (Date.now() - s.startedAt >= STEADY_MS) this.restartWaitMs = RESTART_FIRST_MS;
    const waitMs = this.restartWaitMs;
    this.restartWaitMs = Math.min(this.restartWaitMs * 2, RESTART_MAX_MS);
    this.logger.warn({ pid: s.pid, code, signal, restartInMs: waitMs }, 'a serving process exited; replacing it');
    const timer = setTimeout(() => {
      this.restarts.delete(timer);
      if (!this.stopping) this.fork();
    }, waitMs);
    this.restarts.add(timer);
  }

  private retire(metrics: ProcessMetrics): void {
    // prom-client's JSON names the type as a string ('counter'); its typings say an enum.
    this.retired.push(metrics.filter((m) => ['counter', 'histogram'].includes(String(m.type))));
    // A crash loop would keep one entry per exit: past 8, they are summed into one. Until the
    // sum is ready, scrapes read the entries themselves, so none is missing meanwhile.
    if (this.retired.length <= 8 || this.folding) return;
    const count = this.retired.length;
    this.folding = aggregateMetrics(this.retired.slice(0, count))
      .getMetricsAsJSON()
      .then((folded) => {
        this.retired.splice(0, count, folded);
        this.folding = null;
      });
  }

  private send(worker: Worker, message: ToWorker): void {
    if (worker.isConnected()) worker.send(message);
  }
}
