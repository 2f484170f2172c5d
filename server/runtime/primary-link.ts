import cluster from 'node:cluster';
import { AppError, type ErrorCode, type ErrorDetails } from '../core/errors.ts';
import type { MigrationReport } from '../db/migrate.ts';
import { StreamSlots, type StreamSlot } from '../http/stream-slots.ts';
import { registry, setMetricsSource, type ProcessMetrics } from '../observability/metrics.ts';

// A serving process's side of the messages it exchanges with its primary
// (server/runtime/processes.ts) when WEB_CONCURRENCY is above 1. The channel is
// node:cluster's IPC (structured clone), so nothing in it reaches a log.

/** The limits of a StreamSlots, as a serving process asks the primary to apply them. */
export interface SlotLimits {
  perAccount: number;
  total: number;
}

/** An AppError as it crosses between processes. */
export interface Refusal {
  code: ErrorCode;
  message: string;
  details: ErrorDetails;
  headers: Record<string, string>;
}

/** What a serving process tells its primary. */
export type ToPrimary =
  | { kind: 'listening'; publicUrl: string; adminUrl: string }
  | { kind: 'ready' }
  | { kind: 'failed'; message: string }
  | { kind: 'service-metrics'; request: number }
  | { kind: 'own-metrics'; request: number; metrics: ProcessMetrics }
  | { kind: 'slot-admit'; slot: number; route: string; limits: SlotLimits; accountId: string }
  | { kind: 'slot-blocked'; slot: number; waiting: boolean }
  | { kind: 'slot-release'; slot: number };

/** What the primary tells a serving process. */
export type ToWorker =
  | { kind: 'prepared'; migration: MigrationReport }
  | { kind: 'service-metrics'; request: number; text: string }
  | { kind: 'service-metrics'; request: number; failure: string }
  | { kind: 'own-metrics'; request: number }
  | { kind: 'slot-admitted'; slot: number }
  | { kind: 'slot-refused'; slot: number; refusal: Refusal }
  | { kind: 'slot-cut'; slot: number };

export const isMessage = <T extends { kind: string }>(message: unknown): message is T =>
  typeof message === 'object' && message !== null && typeof (message as { kind?: unknown }).kind === 'string';

/**
 * A serving process's link to its primary: it reports its listeners, waits
 * for the prepared database, answers the primary's requests for its metrics,
 * serves /metrics as the whole service's, and admits downloads through the
 * primary, so that per-account and service-wide download limits hold across
 * processes as they do within one.
 */
export class PrimaryLink {
  private readonly prepared: Promise<MigrationReport>;
  private readonly pending = new Map<number, (m: ToWorker) => void>();
  private readonly cuts = new Map<number, () => void>();
  private next = 0;

  constructor() {
    // A serving process whose primary is gone exits at once (node:cluster's
    // own rule), so nothing here waits on a primary that cannot answer.
    let resolvePrepared: (report: MigrationReport) => void;
    this.prepared = new Promise((resolve) => (resolvePrepared = resolve));
    process.on('message', (message: unknown) => {
      if (!isMessage<ToWorker>(message)) return;
      switch (message.kind) {
        case 'prepared':
          return resolvePrepared(message.migration);
        case 'own-metrics':
          return void registry.getMetricsAsJSON().then((metrics) => this.send({ kind: 'own-metrics', request: message.request, metrics }));
        case 'slot-cut':
          return this.cuts.get(message.slot)?.();
        case 'service-metrics':
        case 'slot-admitted':
        case 'slot-refused': {
          const id = 'request' in message ? message.request : message.slot;
          const answer = this.pending.get(id);
          this.pending.delete(id);
          return answer?.(message);
        }
      }
    });
    setMetricsSource(() => this.serviceMetrics());
  }

  /** Whether this process is a serving process of several. */
  static get wanted(): boolean {
    return cluster.isWorker;
  }

  /** Reports the listeners, then resolves once the primary has prepared the database. */
  preparedAfterListening(publicUrl: string, adminUrl: string): Promise<MigrationReport> {
    this.send({ kind: 'listening', publicUrl, adminUrl });
    return this.prepared;
  }

  ready(): void {
    this.send({ kind: 'ready' });
  }

  /** Tells the primary why this process could not start, then exits. */
  failed(message: string): void {
    if (!process.connected || !process.send) process.exit(1);
    process.send({ kind: 'failed', message } satisfies ToPrimary, undefined, {}, () => process.exit(1));
  }

  /** Download admission for `route`, held by the primary for every serving process. */
  streamSlots(route: string, limits: SlotLimits): { admit(accountId: string, cut: () => void): Promise<StreamSlot> } {
    return {
      admit: async (accountId, cut) => {
        const slot = this.next++;
        const answer = await this.ask(slot, { kind: 'slot-admit', slot, route, limits, accountId });
        if (answer.kind === 'slot-refused') {
          const { code, message, details, headers } = answer.refusal;
          throw new AppError(code, message, details, headers);
        }
        this.cuts.set(slot, cut);
        return {
          blocked: (waiting) => {
            if (this.cuts.has(slot)) this.send({ kind: 'slot-blocked', slot, waiting });
          },
          release: () => {
            if (this.cuts.delete(slot)) this.send({ kind: 'slot-release', slot });
          },
        };
      },
    };
  }

  private async serviceMetrics(): Promise<string> {
    const request = this.next++;
    const answer = await this.ask(request, { kind: 'service-metrics', request });
    if (answer.kind !== 'service-metrics') throw new Error(`unexpected answer ${answer.kind}`);
    if ('failure' in answer) throw new AppError('overloaded', answer.failure, {}, { 'Retry-After': '1' });
    return answer.text;
  }

  private ask(id: number, message: ToPrimary): Promise<ToWorker> {
    return new Promise((resolve, reject) => {
      if (!process.connected) return reject(new AppError('overloaded', 'the service is stopping', {}, { 'Retry-After': '1' }));
      this.pending.set(id, resolve);
      this.send(message);
    });
  }

  private send(message: ToPrimary): void {
    if (process.connected && process.send) process.send(message);
  }
}

/** The link of this process when it is one of several serving processes, else null. */
export const primaryLink: PrimaryLink | null = PrimaryLink.wanted ? new PrimaryLink() : null;

/** Download admission: this process's own, or the primary's when this is one of several serving processes. */
export function downloadSlots(route: string, limits: SlotLimits): { admit(accountId: string, cut: () => void): StreamSlot | Promise<StreamSlot> } {
  return primaryLink ? primaryLink.streamSlots(route, limits) : new StreamSlots(route, limits);
}
