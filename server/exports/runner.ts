import { randomUUID } from 'node:crypto';
import type { Config } from '../config.ts';
import type { Database, Lane, Reads } from '../db/database.ts';
import type { Logger } from '../observability/logger.ts';
import { exportJobDuration, exportJobs, exportOldestQueued, exportRunnerPolls } from '../observability/metrics.ts';
import { AppError } from '../core/errors.ts';
import { LeaseLost } from './file-store.ts';
import { writeJobFiles } from './job.ts';
import { sampleJobs, type JobRow } from './repository.ts';
import { claimJob, finishJob, releaseLease, renewLease, sweepExpired } from './lease-repository.ts';
import { deleteJobBytes } from './files-repository.ts';
import { EXPORT_STATUSES } from './schema.ts';

export type RunnerConfig = Pick<Config, 'EXPORTS_RUNNING_MAX' | 'EXPORTS_TTL_HOURS' | 'EXPORTS_POLL_MS' | 'EXPORTS_LEASE_MS'>;

interface Running {
  job: JobRow;
  token: string;
  /** Set when the lease is lost or the runner stops: the job's work stops at its next instrument. */
  lost: boolean;
  done: Promise<void>;
}

/**
 * The export runner of one serving process. Every EXPORTS_POLL_MS it sweeps
 * expired files, samples the job metrics, and takes queued jobs (or jobs
 * whose holder's lease ran out) while the whole service runs fewer than
 * EXPORTS_RUNNING_MAX (lease-repository.ts, claimJob). A job it runs is kept by a
 * heartbeat that renews its lease every third of EXPORTS_LEASE_MS; when a
 * renewal finds the job no longer its own (cancelled, deleted, taken after a
 * stall), the work stops at the next instrument, and a chunk write refuses
 * before that (file-store.ts). A process that dies renews nothing: after
 * EXPORTS_LEASE_MS another process takes the job and keeps its finished files.
 * `stop` gives running jobs back at once, so another process need not wait.
 */
export class ExportRunner {
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private stopped = false;
  private readonly running = new Map<string, Running>();
  private readonly pages: Lane;

  private readonly db: Database;
  private readonly readDb: Reads;
  private readonly config: RunnerConfig;
  private readonly logger: Logger;

  constructor(deps: { db: Database; readDb: Reads; config: RunnerConfig; logger: Logger }) {
    this.db = deps.db;
    this.readDb = deps.readDb;
    this.config = deps.config;
    this.logger = deps.logger;
    // Two page statements at a time for all of this process's jobs, whatever their number, as the bulk
    // downloads have: a job reads its next page while it writes the last (bulk-stream.ts), and the rest of
    // the pool stays free for requests.
    this.pages = deps.readDb.lane('exports', 2);
  }

  start(): void {
    this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick().finally(() => {
        this.ticking = null;
        this.schedule(this.config.EXPORTS_POLL_MS);
      });
    }, ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    try {
      const swept = await this.db.run((sql) => sweepExpired(sql));
      if (swept) this.logger.info({ jobs: swept }, 'export files expired: deleted');
      await this.sample();
      // Take jobs until the service runs EXPORTS_RUNNING_MAX or none is waiting.
      while (!this.stopped && this.running.size < this.config.EXPORTS_RUNNING_MAX) {
        const token = randomUUID();
        const job = await this.db.run((sql) => claimJob(sql, token, this.config.EXPORTS_LEASE_MS, this.config.EXPORTS_RUNNING_MAX));
        if (!job) break;
        this.run(job, token);
      }
    } catch (err) {
      this.logger.warn({ err }, 'export runner: a poll failed; trying again at the next');
    }
    exportRunnerPolls.inc();
  }

  private async sample(): Promise<void> {
    const { counts, oldestQueuedSeconds } = await this.db.run((sql) => sampleJobs(sql));
    for (const status of EXPORT_STATUSES) exportJobs.set({ status }, counts[status] ?? 0);
    exportOldestQueued.set(oldestQueuedSeconds);
  }

  private run(job: JobRow, token: string): void {
    const started = Date.now();
    const entry: Running = { job, token, lost: false, done: Promise.resolve() };
    const heartbeat = setInterval(
      () => {
        this.db
          .run((sql) => renewLease(sql, job.id, token, this.config.EXPORTS_LEASE_MS))
          .then((held) => {
            if (!held) entry.lost = true;
          })
          .catch((err: unknown) => this.logger.warn({ err, exportId: job.id }, 'export lease renewal failed; retrying at the next beat'));
      },
      Math.max(1, Math.floor(this.config.EXPORTS_LEASE_MS / 3)),
    );
    heartbeat.unref();
    this.logger.info({ exportId: job.id, attempt: job.filesDone ? 'resumed' : 'started' }, 'export job started');
    const checkHeld = () => {
      if (entry.lost || this.stopped) throw new LeaseLost();
    };
    const stoppedElsewhere = () => {
      exportJobDuration.observe({ outcome: 'cancelled' }, (Date.now() - started) / 1000);
      this.logger.info({ exportId: job.id }, 'export job stopped: cancelled or taken by another process');
    };
    entry.done = writeJobFiles({ db: this.db, readDb: this.readDb, pages: this.pages, checkHeld }, job, token)
      .then(async () => {
        if (await this.db.run((sql) => finishJob(sql, job.id, token, { status: 'ready', ttlHours: this.config.EXPORTS_TTL_HOURS, error: null }))) {
          exportJobDuration.observe({ outcome: 'ready' }, (Date.now() - started) / 1000);
          this.logger.info({ exportId: job.id, ms: Date.now() - started }, 'export job ready');
        } else {
          // Cancelled (or taken after a stall) while its last files were being finished: the cancel deleted them.
          stoppedElsewhere();
        }
      })
      .catch(async (err: unknown) => {
        if (err instanceof LeaseLost || entry.lost || this.stopped) {
          if (!this.stopped) return stoppedElsewhere();
          await this.db.run((sql) => releaseLease(sql, job.id, token)).catch(() => {});
          this.logger.info({ exportId: job.id }, 'export job given back: the process is stopping');
          return;
        }
        this.logger.error({ err, exportId: job.id }, 'export job failed');
        // An operational refusal says why; anything else is a fault, which the log holds under the export id.
        const reason = err instanceof AppError ? err.message : 'a fault in the service; the log holds it under this export id';
        await this.db
          .run((sql) =>
            sql.begin(async (tx) => {
              const ended = await finishJob(tx, job.id, token, { status: 'failed', ttlHours: this.config.EXPORTS_TTL_HOURS, error: reason });
              // A failed job keeps no files: its bytes stop counting against the quota.
              if (ended) await deleteJobBytes(tx, [job.id]);
              return ended;
            }),
          )
          .then((ended) => ended && exportJobDuration.observe({ outcome: 'failed' }, (Date.now() - started) / 1000))
          .catch((failure: unknown) =>
            this.logger.error({ err: failure, exportId: job.id }, 'export job failed and could not be marked failed; its lease will run out'),
          );
      })
      .finally(() => {
        clearInterval(heartbeat);
        this.running.delete(job.id);
      });
    this.running.set(job.id, entry);
  }

  /** Stops taking jobs; running ones stop at their next instrument and are given back. Resolves when they have. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.ticking;
    await Promise.all([...this.running.values()].map((r) => r.done));
  }
}
