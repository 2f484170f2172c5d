/** Why a permit was not granted. */
export class PermitRefused extends Error {
  readonly reason: 'queue_full' | 'timeout';

  constructor(reason: 'queue_full' | 'timeout') {
    super(reason === 'queue_full' ? 'too many waiting' : 'no permit within the deadline');
    this.reason = reason;
  }
}

interface Waiter {
  /** Lower is served first, whatever the deadlines. */
  rank: number;
  /** When its wait ends (performance.now() milliseconds); Infinity for a wait without a deadline. */
  deadline: number;
  grant(): void;
  refuse(err: Error): void;
}

/**
 * Counting semaphore whose waiters have deadlines and whose queue has a
 * bound: the building block for every "at most N at once, and nobody waits
 * for ever" limit in the service. Permits pass straight from a releaser to the
 * waiter whose deadline is nearest, in arrival order among equal deadlines:
 * among waits of one length (FIFO) a burst cannot starve an early waiter, and
 * a short wait (a request that has sent nothing yet) is served before waits
 * of minutes (a download's read-ahead), which can afford to yield to it.
 *
 * A rank, where who waits matters more than how long, comes before the
 * deadline: waiters of a lower rank are served first, and a full queue takes
 * an arrival ranked before its worst waiter by refusing that waiter
 * (PermitRefused 'queue_full', as if it had found the queue full). The
 * password-hashing slot ranks a browser the login recognises before an
 * address new to the window, and that before an address that has made many
 * attempts. Every wait still ends at its deadline, so a waiter ranked last is
 * refused in time rather than waiting for ever. Without ranks (all 0), the
 * queue is the deadline order above, and a full queue refuses the arrival.
 */
export class Semaphore {
  private used = 0;
  private readonly queue: Waiter[] = [];

  readonly permits: number;
  readonly maxWaiting: number;
  /** Called after every change, for gauges. */
  private readonly onChange: (inUse: number, waiting: number) => void;

  constructor(permits: number, maxWaiting: number, onChange: (inUse: number, waiting: number) => void = () => {}) {
    this.permits = permits;
    this.maxWaiting = maxWaiting;
    this.onChange = onChange;
  }

  get inUse(): number {
    return this.used;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Resolves with a permit (the caller must `release` it), or rejects with
   * PermitRefused. A `timeoutMs` of Infinity waits without a deadline, for
   * work bounded elsewhere (the worker pool's read slots: each request ahead
   * ends within its statement timeout and its task's timeout); such waits
   * come after every waiter of their rank that has a deadline, in arrival order.
   */
  acquire(timeoutMs: number, rank = 0): Promise<void> {
    // A free permit means an empty queue: release hands permits to waiters first.
    if (this.used < this.permits) {
      this.used++;
      this.onChange(this.used, this.queue.length);
      return Promise.resolve();
    }
    if (this.queue.length >= this.maxWaiting) {
      const worst = this.queue.at(-1);
      if (worst === undefined || worst.rank <= rank) return Promise.reject(new PermitRefused('queue_full'));
      this.queue.pop();
      worst.refuse(new PermitRefused('queue_full'));
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        rank,
        deadline: performance.now() + timeoutMs,
        grant: () => {
          clearTimeout(timer);
          resolve();
        },
        refuse: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      const timer =
        timeoutMs === Infinity
          ? undefined
          : setTimeout(() => {
              this.queue.splice(this.queue.indexOf(waiter), 1);
              this.onChange(this.used, this.queue.length);
              reject(new PermitRefused('timeout'));
            }, timeoutMs);
      let at = this.queue.length;
      const before = (other: Waiter) => other.rank > rank || (other.rank === rank && other.deadline > waiter.deadline);
      while (at > 0 && before(this.queue[at - 1])) at--;
      this.queue.splice(at, 0, waiter);
      this.onChange(this.used, this.queue.length);
    });
  }

  /** Takes a permit only when one is free and nobody is waiting for it: never queues, never refuses. */
  tryAcquire(): boolean {
    if (this.used >= this.permits || this.queue.length) return false;
    this.used++;
    this.onChange(this.used, this.queue.length);
    return true;
  }

  release(): void {
    const next = this.queue.shift();
    if (next) next.grant();
    else this.used--;
    this.onChange(this.used, this.queue.length);
  }

  /** Rejects every waiter with `err` (permits in use are unaffected). */
  refuseWaiting(err: Error): void {
    for (const waiter of this.queue.splice(0)) waiter.refuse(err);
    this.onChange(this.used, 0);
  }
}
