import { describe, expect, it } from 'vitest';
import { WorkerPool } from '../../server/worker-pool.ts';

/** A promise and the function that settles it. */
function latch() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe('read slots: bar-reading requests served readSlots at a time', () => {
  it('when more requests arrive than slots plus queue, then readSlots run at once, the queue waits in order, and the excess is refused at once with overloaded', async () => {
    const maxQueue = 3;
    const pool = new WorkerPool({ threads: 0, maxQueue, taskTimeoutMs: 1000 });
    const slots = pool.readSlots;
    expect(slots).toBeGreaterThanOrEqual(1);
    let running = 0;
    let mostAtOnce = 0;
    const started: number[] = [];
    const latches = Array.from({ length: slots + maxQueue + 2 }, latch);
    const outcomes = latches.map((l, i) =>
      pool
        .withReadSlot('correlations', async () => {
          started.push(i);
          running++;
          mostAtOnce = Math.max(mostAtOnce, running);
          await l.opened;
          running--;
          return i;
        })
        .then(
          (value) => ({ value }),
          (err) => ({ code: (err as { code?: string }).code, headers: (err as { headers?: Record<string, string> }).headers }),
        ),
    );
    // The two beyond slots + queue are refused before anything is released.
    const refused = await Promise.all(outcomes.slice(slots + maxQueue));
    for (const r of refused) expect(r).toMatchObject({ code: 'overloaded', headers: { 'Retry-After': '1' } });
    expect(started).toEqual(Array.from({ length: slots }, (_, i) => i));
    // Release one at a time: each frees the slot for the next in line, never more than `slots` at once.
    for (let i = 0; i < slots + maxQueue; i++) {
      latches[i].open();
      expect(await outcomes[i]).toEqual({ value: i });
    }
    expect(started).toEqual(Array.from({ length: slots + maxQueue }, (_, i) => i));
    expect(mostAtOnce).toBe(slots);
    // A failing request frees its slot too.
    await expect(
      pool.withReadSlot('beta', async () => {
        throw new Error('read failed');
      }),
    ).rejects.toThrow('read failed');
    expect(await pool.withReadSlot('beta', async () => 'after')).toBe('after');
    await pool.destroy();
  });
});
