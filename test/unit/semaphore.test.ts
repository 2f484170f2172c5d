import { describe, expect, it } from 'vitest';
import { PermitRefused, Semaphore } from '../../server/core/semaphore.ts';

describe('Semaphore', () => {
  it('tryAcquire takes a free permit, and none when all are taken', () => {
    const s = new Semaphore(2, 5);
    expect(s.tryAcquire()).toBe(true);
    expect(s.tryAcquire()).toBe(true);
    expect(s.tryAcquire()).toBe(false);
    expect(s.inUse).toBe(2);
    s.release();
    expect(s.tryAcquire()).toBe(true);
  });

  it('tryAcquire never overtakes a waiter: a released permit goes to the queue first', async () => {
    const s = new Semaphore(1, 5);
    await s.acquire(1000);
    const waiter = s.acquire(1000);
    expect(s.tryAcquire()).toBe(false);
    s.release();
    await waiter;
    expect(s.inUse).toBe(1);
    expect(s.tryAcquire()).toBe(false);
    s.release();
    expect(s.inUse).toBe(0);
    expect(s.tryAcquire()).toBe(true);
  });

  it('a full queue refuses at once, and a wait past its deadline is refused', async () => {
    const s = new Semaphore(1, 1);
    expect(s.tryAcquire()).toBe(true);
    const late = s.acquire(10);
    await expect(s.acquire(1000)).rejects.toEqual(new PermitRefused('queue_full'));
    await expect(late).rejects.toEqual(new PermitRefused('timeout'));
    expect(s.waiting).toBe(0);
  });

  it('a released permit goes to the nearest deadline, and to the earliest arrival among equal ones', async () => {
    const s = new Semaphore(1, 10);
    expect(s.tryAcquire()).toBe(true);
    const granted: string[] = [];
    const wait = (name: string, ms: number) => s.acquire(ms).then(() => granted.push(name));
    const waits = [wait('long', 60_000), wait('first 1s', 1_000), wait('second 1s', 1_000), wait('medium', 10_000)];
    // release() grants the head of the queue at once, so each waiter's `.then` runs in the order of its grant.
    for (let i = 0; i < 4; i++) s.release();
    await Promise.all(waits);
    expect(granted).toEqual(['first 1s', 'second 1s', 'medium', 'long']);
  });
});
