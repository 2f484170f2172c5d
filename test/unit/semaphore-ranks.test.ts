import { describe, expect, it } from 'vitest';
import { PermitRefused, Semaphore } from '../../server/core/semaphore.ts';

/** Acquires at `rank`, recording the name when granted and `name refused (reason)` when refused. */
function waiter(s: Semaphore, log: string[], name: string, rank: number, timeoutMs = 60_000) {
  return s.acquire(timeoutMs, rank).then(
    () => void log.push(name),
    (err: PermitRefused) => void log.push(`${name} refused (${err.reason})`),
  );
}

describe('Semaphore with ranks', () => {
  it('when permits are free, then an acquire is granted at once whatever its rank', async () => {
    const s = new Semaphore(2, 0);
    await s.acquire(1000, 50);
    await s.acquire(1000, 0);
    expect(s.inUse).toBe(2);
    await expect(s.acquire(1000, 0)).rejects.toEqual(new PermitRefused('queue_full'));
  });

  it('when permits are released, then the waiters are granted lowest rank first, in arrival order among equal ranks', async () => {
    const s = new Semaphore(1, 10);
    await s.acquire(1000, 0);
    const log: string[] = [];
    const waits = [waiter(s, log, 'a3', 3), waiter(s, log, 'b1', 1), waiter(s, log, 'c3', 3), waiter(s, log, 'd0', 0), waiter(s, log, 'e1', 1)];
    expect(s.waiting).toBe(5);
    for (let i = 0; i < waits.length; i++) {
      s.release();
      // A grant settles in a microtask: wait for it before the next release.
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(waits);
    expect(log).toEqual(['d0', 'b1', 'e1', 'a3', 'c3']);
    expect(s.inUse).toBe(1);
  });

  it('when the queue is full, then an arrival ranked before the worst waiter takes its place and the latest of the worst is refused; an arrival ranked no better is refused itself', async () => {
    const s = new Semaphore(1, 2);
    await s.acquire(1000, 0);
    const log: string[] = [];
    const waits = [waiter(s, log, 'first 5', 5), waiter(s, log, 'second 5', 5)];
    const equal = waiter(s, log, 'equal 5', 5);
    const better = waiter(s, log, 'better 2', 2);
    await Promise.all([equal, waits[1]]);
    expect(log).toEqual(['equal 5 refused (queue_full)', 'second 5 refused (queue_full)']);
    expect(s.waiting).toBe(2);
    s.release();
    await better;
    s.release();
    await waits[0];
    expect(log.slice(2)).toEqual(['better 2', 'first 5']);
  });

  it('when a wait passes its deadline, then it is refused and leaves the queue, even ranked first', async () => {
    const s = new Semaphore(1, 2);
    await s.acquire(1000, 0);
    const log: string[] = [];
    const short = waiter(s, log, 'short', 0, 10);
    const long = waiter(s, log, 'long', 1);
    await short;
    expect(log).toEqual(['short refused (timeout)']);
    expect(s.waiting).toBe(1);
    s.release();
    await long;
    expect(log).toEqual(['short refused (timeout)', 'long']);
    expect(s.waiting).toBe(0);
  });
});
