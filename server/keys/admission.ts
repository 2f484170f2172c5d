import type { Database } from '../db/database.ts';
import { admissionBatchSize } from '../observability/metrics.ts';
import * as repo from './repository.ts';
import type { Scope } from '../core/scopes.ts';

/** Requests one admission statement takes at most; a fuller batch starts the next. */
const MAX_BATCH = 256;

interface Batch {
  requests: repo.AdmissionRequest[];
  resolved: Promise<(repo.ResolvedKey | null)[]>;
}

/**
 * Group admission: the key lookup and rate-limit count of every /v1 request,
 * made in batches, as a database makes group commits. A request that finds an
 * auth permit free is sent at once, as a batch of one, so an idle service adds
 * no wait. While every permit is taken, the requests that arrive join one open
 * batch, which is sent as one statement (repository.resolveKeysAndAdmit) when
 * a permit frees: one round trip, one commit and one row update per account,
 * instead of one of each per request. Every request still resolves its key in
 * the store, and limits stay exact across processes (the row lock).
 *
 * A batch waits for its permit as any unit does: at most
 * DATABASE_ACQUIRE_TIMEOUT_MS, behind at most DATABASE_MAX_WAITING units, and
 * then every request in it gets 503 `overloaded`. A batch holds at most
 * MAX_BATCH requests, so at most DATABASE_MAX_WAITING × MAX_BATCH wait.
 */
export class Admissions {
  /** The batch that later requests join: it is waiting for a permit. */
  private open: Batch | null = null;

  private readonly db: Database;
  readonly limits: repo.WindowLimits;

  constructor(db: Database, limits: repo.WindowLimits) {
    this.db = db;
    this.limits = limits;
  }

  /** The request's key, with whether it was admitted; null for an unknown key. */
  async admit(hash: Buffer, scope: Scope): Promise<repo.ResolvedKey | null> {
    let batch = this.open;
    if (batch === null || batch.requests.length >= MAX_BATCH) batch = this.start();
    const index = batch.requests.push({ hash, scope }) - 1;
    return (await batch.resolved)[index];
  }

  private start(): Batch {
    const requests: repo.AdmissionRequest[] = [];
    const batch: Batch = {
      requests,
      // The unit runs once a permit is taken (never synchronously), so the
      // caller's request is in the batch by then; taking the permit closes it.
      resolved: this.db.run((sql) => {
        if (this.open === batch) this.open = null;
        admissionBatchSize.observe(requests.length);
        return repo.resolveKeysAndAdmit(sql, requests, this.limits);
      }),
    };
    this.open = batch;
    // A refused batch stays open until its refusal: close it then too.
    batch.resolved.catch(() => {
      if (this.open === batch) this.open = null;
    });
    return batch;
  }
}
