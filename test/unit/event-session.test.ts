import { describe, expect, it } from 'vitest';
import { dayNumber } from '../../server/core/day-numbers.ts';
import { isPlaceable, placeEvent, SessionClock, type ReactionSeries } from '../../server/event-reactions/session.ts';

// Which session a publication falls in, on hand-made series. The close is
// 16:00 New York: 21:00 UTC in winter (EST), 20:00 UTC in summer (EDT).

function series(bars: [date: string, close: number, multiplier?: number][], actionSetVersion = 3): ReactionSeries {
  return {
    dates: Int32Array.from(bars.map(([d]) => dayNumber(d))),
    close: Float64Array.from(bars.map(([, c]) => c)),
    priceMultiplier: Float64Array.from(bars.map(([, , m]) => m ?? 1)),
    actionSetVersion,
  };
}

const clock = new SessionClock();
const place = (s: ReactionSeries, publishedAt: string) => placeEvent(s, Date.parse(publishedAt), clock);
const sessionOf = (s: ReactionSeries, publishedAt: string) => {
  const p = place(s, publishedAt);
  return p && [p.previousSessionDate, p.eventDate];
};

// Mon 2024-01-08 .. Mon 2024-01-15 (Martin Luther King Day, no bar) .. Wed 2024-01-17.
const WINTER = series([
  ['2024-01-05', 100],
  ['2024-01-08', 101],
  ['2024-01-09', 99],
  ['2024-01-10', 102],
  ['2024-01-11', 100],
  ['2024-01-12', 98],
  ['2024-01-16', 105],
  ['2024-01-17', 104],
]);

describe('placing a publication in a session', () => {
  it('when published before the open or during the session, then it reacts in that session, against the previous bar', () => {
    expect(sessionOf(WINTER, '2024-01-09T13:00:00Z')).toEqual(['2024-01-08', '2024-01-09']);
    expect(sessionOf(WINTER, '2024-01-09T17:00:00Z')).toEqual(['2024-01-08', '2024-01-09']);
    // 00:30 New York is 05:30 UTC: before it, the instant is still the day before in New York, after that day's close.
    expect(sessionOf(WINTER, '2024-01-09T04:30:00Z')).toEqual(['2024-01-08', '2024-01-09']);
  });

  it('when published exactly at 16:00 New York, then it is that session; a millisecond later, the next (EST and EDT)', () => {
    expect(sessionOf(WINTER, '2024-01-09T21:00:00.000Z')).toEqual(['2024-01-08', '2024-01-09']);
    expect(sessionOf(WINTER, '2024-01-09T21:00:00.001Z')).toEqual(['2024-01-09', '2024-01-10']);
    const summer = series([
      ['2024-07-08', 10],
      ['2024-07-09', 11],
      ['2024-07-10', 12],
    ]);
    expect(sessionOf(summer, '2024-07-09T20:00:00.000Z')).toEqual(['2024-07-08', '2024-07-09']);
    expect(sessionOf(summer, '2024-07-09T20:00:00.001Z')).toEqual(['2024-07-09', '2024-07-10']);
    // 20:30 UTC is 16:30 EDT in July, but 15:30 EST in January.
    expect(sessionOf(summer, '2024-07-09T20:30:00Z')).toEqual(['2024-07-09', '2024-07-10']);
    expect(sessionOf(WINTER, '2024-01-09T20:30:00Z')).toEqual(['2024-01-08', '2024-01-09']);
  });

  it('when published after a Friday close, at a weekend or on a holiday, then it reacts in the next session', () => {
    expect(sessionOf(WINTER, '2024-01-05T22:00:00Z')).toEqual(['2024-01-05', '2024-01-08']);
    expect(sessionOf(WINTER, '2024-01-06T15:00:00Z')).toEqual(['2024-01-05', '2024-01-08']);
    expect(sessionOf(WINTER, '2024-01-13T12:00:00Z')).toEqual(['2024-01-12', '2024-01-16']);
    expect(sessionOf(WINTER, '2024-01-15T15:00:00Z')).toEqual(['2024-01-12', '2024-01-16']);
  });

  it('when the move is computed, then it is 100 × (session close / previous close − 1), signed, with its magnitude', () => {
    expect(place(WINTER, '2024-01-09T15:00:00Z')).toEqual({
      eventDate: '2024-01-09',
      previousSessionDate: '2024-01-08',
      previousClose: 101,
      sessionClose: 99,
      reactionPct: 100 * (99 / 101 - 1),
      absMovePct: 100 * (1 - 99 / 101),
      isCorporateAdjusted: false,
      actionSetVersion: null,
    });
  });

  it('when there is no bar on or after the session, or none before it, then there is no reaction', () => {
    expect(place(WINTER, '2024-01-17T21:30:00Z')).toBeNull();
    expect(place(WINTER, '2024-01-05T15:00:00Z')).toBeNull();
    expect(place(WINTER, '2023-12-30T15:00:00Z')).toBeNull();
  });

  it('when the session is more than 7 days after the New York day of publication or after the previous bar, then there is no reaction; 7 days is a session', () => {
    // The 9/11 closure: 2001-09-10 to 2001-09-17 is 7 days between closes.
    const closure = series([
      ['2001-09-10', 20],
      ['2001-09-17', 18],
      ['2001-09-28', 19],
    ]);
    expect(sessionOf(closure, '2001-09-11T13:00:00Z')).toEqual(['2001-09-10', '2001-09-17']);
    // 2001-09-20 to 2001-09-28 is 8 days; 2001-09-18 is 10 days before it and the previous bar 11 days.
    expect(place(closure, '2001-09-20T13:00:00Z')).toBeNull();
    expect(place(closure, '2001-09-18T13:00:00Z')).toBeNull();
    // Published on the 21st (a Friday) after the close: New York day the 21st, session 7 days later, but 11 days after the previous bar.
    expect(place(closure, '2001-09-21T21:00:00Z')).toBeNull();
  });

  it('when an action applied between the two bars (their multipliers differ), then the reaction is corporate-adjusted with the action-set version', () => {
    const split = series(
      [
        ['2024-06-03', 50, 0.5],
        ['2024-06-04', 51, 1],
        ['2024-06-05', 52, 1],
      ],
      7,
    );
    expect(place(split, '2024-06-04T15:00:00Z')).toMatchObject({ reactionPct: 100 * (51 / 50 - 1), isCorporateAdjusted: true, actionSetVersion: 7 });
    expect(place(split, '2024-06-05T15:00:00Z')).toMatchObject({ isCorporateAdjusted: false, actionSetVersion: null });
  });

  it('when a later action scaled both closes by the same factor, then the row is still corporate-adjusted with the version, and its closes print as the price routes print them', () => {
    // Raw closes 280.02 and 290.035 before a 20-for-1 split: × 0.05 they are 14.001 and 14.50175 by hand
    // (290.035 × 0.05 is 14.501750000000001 in doubles; the price routes print 13 significant digits).
    const split = series(
      [
        ['2024-06-03', 280.02 * 0.05, 0.05],
        ['2024-06-04', 290.035 * 0.05, 0.05],
        ['2024-06-05', 15, 1],
      ],
      9,
    );
    const r = place(split, '2024-06-04T15:00:00Z')!;
    expect(r).toMatchObject({ previousClose: 14.001, sessionClose: 14.50175, isCorporateAdjusted: true, actionSetVersion: 9 });
    expect(r.reactionPct).toBe(100 * (14.50175 / 14.001 - 1));
    // The raw move is the adjusted one: 290.035 / 280.02 − 1 = 3.5765302478394...%.
    expect(r.reactionPct).toBeCloseTo(100 * (290.035 / 280.02 - 1), 12);
  });

  it('when a publication is before 1900 or on the last day of the calendar, then it is not placed (New York kept local mean time before 1883)', () => {
    expect(isPlaceable(Date.parse('1899-12-31T23:59:59Z'))).toBe(false);
    expect(isPlaceable(Date.parse('1900-01-01T00:00:00Z'))).toBe(true);
    expect(isPlaceable(Date.parse('9999-12-30T23:00:00Z'))).toBe(true);
    expect(isPlaceable(Date.parse('9999-12-31T00:00:00Z'))).toBe(false);
    const edge = series([
      ['1899-12-29', 5],
      ['1900-01-02', 6],
    ]);
    expect(sessionOf(edge, '1900-01-01T12:00:00Z')).toEqual(['1899-12-29', '1900-01-02']);
    const last = series([
      ['9999-12-29', 5],
      ['9999-12-30', 6],
      ['9999-12-31', 7],
    ]);
    expect(sessionOf(last, '9999-12-30T23:00:00Z')).toEqual(['9999-12-30', '9999-12-31']);
  });
});
