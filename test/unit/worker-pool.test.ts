import { describe, expect, it } from 'vitest';
import { closedForm, move, WorkerPool } from '../../workers/pool.ts';

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

describe('the typed worker boundary', () => {
  const closes = (n: number, from = 100) => Float64Array.from({ length: n }, (_, i) => from + Math.sin(i) + i / 10);
  const days = (n: number) => Int32Array.from({ length: n }, (_, i) => 18_000 + i);

  it('when an input is passed through move(), then its typed arrays are transferred to the thread and detached here; otherwise they are copied', async () => {
    const pool = new WorkerPool({ threads: 1, maxQueue: 2, taskTimeoutMs: 10_000, niceIncrement: 0 });
    try {
      const subject = { dates: days(40), close: closes(40) };
      const benchmark = { dates: days(40), close: closes(40, 50) };
      const copied = await pool.run('beta', { subject, benchmark });
      expect(subject.close.length).toBe(40);
      const moved = await pool.run('beta', move({ subject, benchmark }));
      expect(moved).toEqual(copied);
      expect([subject.close.byteLength, subject.dates.byteLength, benchmark.close.byteLength]).toEqual([0, 0, 0]);
    } finally {
      await pool.destroy();
    }
  });

  it('when the pool has no threads, then a task runs on this thread and gives what a thread gives', async () => {
    const inline = new WorkerPool({ threads: 0, maxQueue: 2, taskTimeoutMs: 10_000 });
    const threaded = new WorkerPool({ threads: 1, maxQueue: 2, taskTimeoutMs: 10_000, niceIncrement: 0 });
    try {
      const input = () => ({ subject: { dates: days(30), close: closes(30) }, benchmark: { dates: days(30), close: closes(30, 70) } });
      expect(await inline.run('beta', input())).toEqual(await threaded.run('beta', input()));
    } finally {
      await threaded.destroy();
    }
  });

  it('when a closed form is computed here, then it is the task module’s function: a call and a put satisfy put-call parity', () => {
    const common = { spot: 100, strike: 95, timeYears: 0.5, rate: 0.03, vol: 0.25, dividendYield: 0.01 };
    const call = closedForm('optionPrice', { ...common, type: 'call' }).price;
    const put = closedForm('optionPrice', { ...common, type: 'put' }).price;
    const parity = common.spot * Math.exp(-common.dividendYield * common.timeYears) - common.strike * Math.exp(-common.rate * common.timeYears);
    expect(call - put).toBeCloseTo(parity, 12);
  });

  it('when a task is called with another task’s input, then it does not compile, and forced past the compiler it rejects rather than answers', async () => {
    const pool = new WorkerPool({ threads: 0, maxQueue: 1, taskTimeoutMs: 1000 });
    // tsc checks this directive: the call must be a type error, or the directive itself is one.
    // @ts-expect-error technicals takes OHLCV bars, not a beta's series
    const wrong = () => pool.run('technicals', { subject: { dates: days(3), close: closes(3) }, benchmark: { dates: days(3), close: closes(3) } });
    // The pool trusts the types and does not validate: technicals finds no bars to read.
    await expect(wrong()).rejects.toThrow(TypeError);
  });
});
