import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StreamSlots } from '../../server/http/stream-slots.ts';
import { AppError } from '../../server/core/errors.ts';

/** Slots whose downloads record being cut. */
function slotsOf(limits: { perAccount: number; total: number; stalledMs?: number }) {
  const slots = new StreamSlots('/v1/prices/bulk', limits);
  const cut: string[] = [];
  const admit = (account: string, name: string) => slots.admit(account, () => cut.push(name));
  return { admit, cut };
}

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof AppError ? [err.status, err.code] : err;
  }
  return null;
};

describe('bulk stream slots: fair sharing', () => {
  it('when an account is at its own limit, then one more is 429, whatever the service holds', () => {
    const { admit } = slotsOf({ perAccount: 2, total: 10 });
    admit('a', 'a1');
    admit('a', 'a2');
    expect(refusal(() => admit('a', 'a3'))).toEqual([429, 'rate_limited']);
  });

  it('when the service is full and an account holds two while the asking one has none, then that account gives up the download that has waited longest for its client', () => {
    const { admit, cut } = slotsOf({ perAccount: 2, total: 3 });
    const a1 = admit('a', 'a1');
    const a2 = admit('a', 'a2');
    admit('b', 'b1');
    a2.blocked(true);
    a1.blocked(true);
    admit('c', 'c1');
    expect(cut).toEqual(['a2']);
    // a2's slot is gone: releasing it later gives nothing back twice.
    a2.release();
    expect(refusal(() => admit('d', 'd1'))).toEqual([503, 'overloaded']);
  });

  it('when the account holding more has no download waiting for its client, then its newest gives way', () => {
    const { admit, cut } = slotsOf({ perAccount: 2, total: 2 });
    admit('a', 'a1');
    admit('a', 'a2');
    admit('b', 'b1');
    expect(cut).toEqual(['a2']);
  });
});

describe('bulk stream slots: stalled downloads', () => {
  // StreamSlots measures a stall with performance.now(); faking that clock passes 60 ms of a 50 ms stall window
  // exactly, whatever the machine's load.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('when every account holds as many as the asking one would, then only a download stalled long enough gives way, and never to take a second', () => {
    const { admit, cut } = slotsOf({ perAccount: 2, total: 2, stalledMs: 50 });
    const a1 = admit('a', 'a1');
    admit('b', 'b1');
    a1.blocked(true);
    expect(refusal(() => admit('c', 'c1'))).toEqual([503, 'overloaded']);
    vi.advanceTimersByTime(60);
    // b asking for its second: a holds one, as many as b has now, so a's stalled download keeps its slot.
    expect(refusal(() => admit('b', 'b2'))).toEqual([503, 'overloaded']);
    admit('c', 'c1');
    expect(cut).toEqual(['a1']);
  });

  it('when a download reads again, then it is no longer stalled', () => {
    const { admit, cut } = slotsOf({ perAccount: 2, total: 1, stalledMs: 50 });
    const a1 = admit('a', 'a1');
    a1.blocked(true);
    vi.advanceTimersByTime(60);
    a1.blocked(false);
    expect(refusal(() => admit('b', 'b1'))).toEqual([503, 'overloaded']);
    expect(cut).toEqual([]);
  });
});
