import { describe, expect, it } from 'vitest';
import { lastCompletedSession, previousBusinessDay, seriesFreshness, freshness } from '../../server/core/freshness.ts';
import { roundSignificant } from '../../server/core/significant.ts';

// The session calendar behind meta.stale (docs/api.md, "Freshness"), on
// instants worked out by hand: the close is 16:00 New York, 20:00 UTC under
// EDT (summer) and 21:00 UTC under EST (winter).

const at = (iso: string) => Date.parse(iso);

describe('the last completed session', () => {
  it('when read after a summer close, then that day; a second before it, the weekday before', () => {
    // Thursday 2001-09-27; the date asOf 2001-09-27 is its end, 19:59:59.999 EDT.
    expect(lastCompletedSession(at('2001-09-27T23:59:59.999Z'))).toBe('2001-09-27');
    expect(lastCompletedSession(at('2001-09-27T20:00:00.000Z'))).toBe('2001-09-27');
    expect(lastCompletedSession(at('2001-09-27T19:59:59.999Z'))).toBe('2001-09-26');
  });

  it('when read in winter, then the close is 21:00 UTC; on a Monday before it, the Friday', () => {
    expect(lastCompletedSession(at('2024-01-08T21:00:00.000Z'))).toBe('2024-01-08');
    expect(lastCompletedSession(at('2024-01-08T20:59:59.999Z'))).toBe('2024-01-05');
  });

  it('when read at a weekend or early on the next UTC day, then the last weekday that closed', () => {
    expect(lastCompletedSession(at('2001-09-29T12:00:00Z'))).toBe('2001-09-28');
    expect(lastCompletedSession(at('2001-09-30T23:00:00Z'))).toBe('2001-09-28');
    // 02:00 UTC on Tuesday is 22:00 EDT on Monday, after Monday's close.
    expect(lastCompletedSession(at('2001-10-02T02:00:00Z'))).toBe('2001-10-01');
  });

  it('when the series is crypto, then the last whole UTC day', () => {
    expect(lastCompletedSession(at('2024-03-09T00:00:00Z'), 'crypto')).toBe('2024-03-08');
    expect(lastCompletedSession(at('2024-03-08T23:59:59Z'), 'crypto')).toBe('2024-03-07');
  });

  it('when asked for the business day before a day, then the weekday before it', () => {
    expect(previousBusinessDay(at('2024-01-08T10:00:00Z'))).toBe('2024-01-05');
    expect(previousBusinessDay(at('2024-01-06T10:00:00Z'))).toBe('2024-01-05');
    expect(previousBusinessDay(at('2024-01-10T10:00:00Z'))).toBe('2024-01-09');
  });
});

describe('series freshness', () => {
  it('when the last bar is the last completed session, then fresh; a session behind, series_behind; none, no_bars; a bar marked stale, bar_marked_stale', () => {
    expect(seriesFreshness('2001-09-27', at('2001-09-27T23:59:59.999Z'))).toEqual({ stale: false, staleReason: null });
    expect(seriesFreshness('2001-09-27', at('2001-09-28T23:59:59.999Z'))).toEqual({ stale: true, staleReason: 'series_behind' });
    expect(seriesFreshness(null, at('2001-09-28T23:59:59.999Z'))).toEqual({ stale: true, staleReason: 'no_bars' });
    expect(seriesFreshness('2001-09-27', at('2001-09-27T23:59:59.999Z'), 'equity', true)).toEqual({ stale: true, staleReason: 'bar_marked_stale' });
    expect(freshness()).toEqual({ stale: false, staleReason: null });
  });
});

describe('adjusted values as the price routes print them', () => {
  it('when a product carries representation noise, then 13 significant digits, half away from zero', () => {
    expect(roundSignificant(290.035 * 0.05)).toBe(14.50175);
    expect(roundSignificant(2.7270000000000003)).toBe(2.727);
    expect(roundSignificant(100 / 3)).toBe(33.33333333333);
    expect(roundSignificant(-100 / 3)).toBe(-33.33333333333);
    // 14 digits ending in 5: away from zero.
    expect(roundSignificant(1.0000000000005)).toBe(1.000000000001);
    expect(roundSignificant(-1.0000000000005)).toBe(-1.000000000001);
    expect(roundSignificant(9.9999999999996)).toBe(10);
    expect(roundSignificant(123.5)).toBe(123.5);
    expect(roundSignificant(5e-324)).toBe(5e-324);
    expect(roundSignificant(0)).toBe(0);
  });
});

describe('FX freshness', () => {
  it('when read on a Monday, then a rate of the Friday before is fresh and one of the Thursday is not', async () => {
    const { fxFreshness } = await import('../../server/fx/service.ts');
    const monday = at('2024-01-08T10:00:00Z');
    expect(fxFreshness('2024-01-05', monday)).toEqual({ stale: false, staleReason: null });
    expect(fxFreshness('2024-01-04', monday)).toEqual({ stale: true, staleReason: 'rate_behind' });
    expect(fxFreshness(null, monday)).toEqual({ stale: true, staleReason: 'rate_behind' });
  });
});
