import { describe, expect, it } from 'vitest';
import { PermitRefused, Semaphore } from '../../server/semaphore.ts';

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
});
