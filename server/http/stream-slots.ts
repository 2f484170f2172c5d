import { streamsOpen, streamsRefused } from '../metrics.ts';
import { AppError } from './errors.ts';

// A client that finds no slot is asked to come back after this long: bulk
// downloads of the demo set's size finish in a few seconds.
const RETRY_AFTER_SECONDS = '5';

/**
 * Admission for long streamed responses: at most `perAccount` open at once
 * per account (more: 429 rate_limited) and `total` for the whole service
 * (more: 503 overloaded). A stream holds no database connection while it
 * waits for its client; the connections streams hold while they read their
 * pages are capped by their area's lane of the pool (Database.lane).
 */
export class StreamSlots {
  private open = 0;
  private readonly byAccount = new Map<string, number>();

  constructor(
    private readonly route: string,
    private readonly limits: { perAccount: number; total: number },
  ) {
    streamsOpen.set({ route }, 0);
  }

  /** Takes a slot for `accountId`, or throws; the returned function gives it back (once). */
  admit(accountId: string): () => void {
    const own = this.byAccount.get(accountId) ?? 0;
    if (own >= this.limits.perAccount) {
      streamsRefused.inc({ route: this.route, limit: 'account' });
      throw new AppError(
        'rate_limited',
        `at most ${this.limits.perAccount} downloads from ${this.route} may be open at once per account`,
        { concurrentStreams: [`${own} of ${this.limits.perAccount} open for this account`] },
        { 'Retry-After': RETRY_AFTER_SECONDS },
      );
    }
    if (this.open >= this.limits.total) {
      streamsRefused.inc({ route: this.route, limit: 'service' });
      throw new AppError(
        'overloaded',
        `the service has its maximum of ${this.limits.total} downloads from ${this.route} open; retry shortly`,
        {},
        { 'Retry-After': RETRY_AFTER_SECONDS },
      );
    }
    this.byAccount.set(accountId, own + 1);
    this.open++;
    streamsOpen.set({ route: this.route }, this.open);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.byAccount.get(accountId) ?? 1) - 1;
      if (left === 0) this.byAccount.delete(accountId);
      else this.byAccount.set(accountId, left);
      this.open--;
      streamsOpen.set({ route: this.route }, this.open);
    };
  }
}
