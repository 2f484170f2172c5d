import { describe, expect, it } from 'vitest';
import { ratioSpread, roundOrder } from '../../bench/lib/stats.ts';

describe('ratios measured in interleaved rounds', () => {
  it("when five rounds measure ours and the baseline, the headline is the median of the rounds' ratios, with their range and interquartile range", () => {
    // Rounds' ratios 1.2, 1.5, 1.1, 1.1, 1.0; sorted 1.0, 1.1, 1.1, 1.2, 1.5.
    expect(ratioSpread([12, 30, 11, 22, 10], [10, 20, 10, 20, 10])).toEqual({
      median: 1.1,
      min: 1,
      max: 1.5,
      p25: 1.1,
      p75: 1.2,
      rounds: 5,
      byRound: [1.2, 1.5, 1.1, 1.1, 1],
    });
  });

  it('when a quartile falls between two rounds, it is interpolated between their ratios', () => {
    // Ratios 4, 1, 3, 2: sorted 1, 2, 3, 4; the 25th percentile sits 3/4 of the way from 1 to 2.
    const spread = ratioSpread([8, 5, 9, 4], [2, 5, 3, 2]);
    expect([spread.p25, spread.median, spread.p75]).toEqual([1.75, 2.5, 3.25]);
  });

  it('when one round is a wild outlier, the headline does not move with it', () => {
    const calm = ratioSpread([11, 11, 12, 11, 11], [10, 10, 10, 10, 10]);
    const upset = ratioSpread([11, 11, 12, 11, 50], [10, 10, 10, 10, 10]);
    expect(upset.median).toBe(calm.median);
    expect(upset.max).toBe(5);
  });

  it('when the sides have different numbers of rounds, or a round measured nothing, it refuses', () => {
    expect(() => ratioSpread([1, 2], [1])).toThrow('2 rounds of ours against 1 of the baseline');
    expect(() => ratioSpread([], [])).toThrow('no rounds');
    expect(() => ratioSpread([1, 2], [1, 0])).toThrow('round 2 measured 2 against 0');
    expect(() => ratioSpread([Number.NaN], [1])).toThrow('round 1');
  });

  it('each round rotates the order by one, so each side runs once in each position', () => {
    const sides = ['http', 'rollup', 'aggregate'];
    expect([0, 1, 2, 3].map((i) => roundOrder(sides, i))).toEqual([
      ['http', 'rollup', 'aggregate'],
      ['rollup', 'aggregate', 'http'],
      ['aggregate', 'http', 'rollup'],
      ['http', 'rollup', 'aggregate'],
    ]);
    expect([0, 1, 2].map((i) => roundOrder(['ours', 'baseline'], i))).toEqual([
      ['ours', 'baseline'],
      ['baseline', 'ours'],
      ['ours', 'baseline'],
    ]);
    expect(sides).toEqual(['http', 'rollup', 'aggregate']);
  });
});
