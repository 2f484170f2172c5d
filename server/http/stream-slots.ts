import { streamsBlocked, streamsOpen, streamsPreempted, streamsRefused } from '../observability/metrics.ts';
import { AppError } from '../core/errors.ts';
import { entryOf } from '../core/map-entry.ts';

// A client that finds no slot is asked to come back after this long: bulk
// downloads of the demo set's size finish in a few seconds.
const RETRY_AFTER_SECONDS = '5';

/**
 * A download whose client has taken nothing for this long is stalled: when
 * the service is full and every account holds as many downloads as the one
 * asking, a stalled download gives its slot up. A reader that reads at all
 * frees socket buffer within a second or two (the kernel frees it in steps of
 * up to a few MB, which 250 KB/s readers drained every few seconds here).
 */
export const STALLED_MS = 10_000;

/** One admitted download, as its slot sees it. */
export interface StreamSlot {
  /** The download is waiting for its client to take more (true) or no longer is (false). */
  blocked(waiting: boolean): void;
  /** Gives the slot back (once; a no-op after the slot was taken away). */
  release(): void;
}

interface Open {
  accountId: string;
  openedAt: number;
  /** Since when the download has waited for its client; null while it is not waiting. */
  blockedSince: number | null;
  /** Ends the download: its response is cut, and its producer's next write fails. */
  cut(): void;
  held: boolean;
}

const isBlocked = (s: Open): s is Open & { blockedSince: number } => s.blockedSince !== null;

/**
 * Admission for long streamed responses, shared fairly between accounts. An
 * account may have `perAccount` open at once (one more: 429 rate_limited).
 * The service serves `total` at once; when it is full, a download is still
 * admitted by taking a slot from another, so that readers who read do not
 * wait on those who do not:
 *
 * - from the account that holds the most, when it holds more than the asking
 *   account would after admission (its download that has waited longest for
 *   its client, or else its newest): no account keeps a second download while
 *   another has none;
 * - else from a download stalled for STALLED_MS, of an account that holds at
 *   least as many as the asking account would: a reader takes a slot from
 *   a client that does not read, never from one that does.
 *
 * Otherwise the answer is 503 overloaded. A download that loses its slot is
 * cut, as one whose client went away. A stream holds no database connection
 * while it waits for its client; the connections streams hold while they read
 * their pages are capped by their area's lane of the pool (Database.lane), and
 * what a stream holds in memory is bounded by its read-ahead, so `total`
 * bounds the memory of downloads.
 */
export class StreamSlots {
  private readonly open = new Set<Open>();

  private readonly route: string;
  private readonly limits: { perAccount: number; total: number; stalledMs?: number };

  constructor(route: string, limits: { perAccount: number; total: number; stalledMs?: number }) {
    this.route = route;
    this.limits = limits;
    streamsOpen.set({ route }, 0);
    streamsBlocked.set({ route }, 0);
  }

  /** Takes a slot for `accountId`, or throws; `cut` ends the download should its slot be given to another. */
  admit(accountId: string, cut: () => void): StreamSlot {
    const own = this.countOf(accountId);
    if (own >= this.limits.perAccount) {
      streamsRefused.inc({ route: this.route, limit: 'account' });
      throw new AppError(
        'rate_limited',
        `at most ${this.limits.perAccount} downloads from ${this.route} may be open at once per account`,
        { concurrentStreams: [`${own} of ${this.limits.perAccount} open for this account`] },
        { 'Retry-After': RETRY_AFTER_SECONDS },
      );
    }
    if (this.open.size >= this.limits.total) {
      const victim = this.victimFor(own, performance.now());
      if (!victim) {
        streamsRefused.inc({ route: this.route, limit: 'service' });
        throw new AppError(
          'overloaded',
          `the service has its maximum of ${this.limits.total} downloads from ${this.route} open; retry shortly`,
          {},
          { 'Retry-After': RETRY_AFTER_SECONDS },
        );
      }
      streamsPreempted.inc({ route: this.route, reason: victim.reason });
      this.drop(victim.stream);
      victim.stream.cut();
    }
    const stream: Open = { accountId, openedAt: performance.now(), blockedSince: null, cut, held: true };
    this.open.add(stream);
    this.report();
    return {
      blocked: (waiting) => {
        if (!stream.held) return;
        stream.blockedSince = waiting ? (stream.blockedSince ?? performance.now()) : null;
        this.report();
      },
      release: () => {
        if (stream.held) this.drop(stream);
      },
    };
  }

  private countOf(accountId: string): number {
    let n = 0;
    for (const s of this.open) if (s.accountId === accountId) n++;
    return n;
  }

  /** The download to give its slot to an account that holds `own`, and why; null when none should. */
  private victimFor(own: number, now: number): { stream: Open; reason: 'over_share' | 'stalled' } | null {
    const counts = new Map<string, number>();
    for (const s of this.open) counts.set(s.accountId, (counts.get(s.accountId) ?? 0) + 1);
    const [richest, most] = [...counts].reduce((a, b) => (b[1] > a[1] ? b : a));
    if (most > own + 1) {
      const theirs = [...this.open].filter((s) => s.accountId === richest);
      const waitingLongest = theirs.filter(isBlocked).sort((a, b) => a.blockedSince - b.blockedSince)[0];
      return { stream: waitingLongest ?? theirs.sort((a, b) => b.openedAt - a.openedAt)[0], reason: 'over_share' };
    }
    const stalled = [...this.open]
      .filter(isBlocked)
      .filter((s) => now - s.blockedSince >= (this.limits.stalledMs ?? STALLED_MS) && entryOf(counts, s.accountId) > own)
      .sort((a, b) => a.blockedSince - b.blockedSince)[0];
    return stalled ? { stream: stalled, reason: 'stalled' } : null;
  }

  private drop(stream: Open): void {
    stream.held = false;
    this.open.delete(stream);
    this.report();
  }

  private report(): void {
    streamsOpen.set({ route: this.route }, this.open.size);
    let blocked = 0;
    for (const s of this.open) if (s.blockedSince !== null) blocked++;
    streamsBlocked.set({ route: this.route }, blocked);
  }
}
