import { describe, expect, it } from 'vitest';
import { dayNumber } from '../../server/core/day-numbers.ts';
import { symbolsOfDays } from '../../server/prices/symbol-runs.ts';

// The symbol column of the columnar files (server/prices/symbol-runs.ts),
// from a read's symbol runs and its bars' days.

describe('symbol runs as a column', () => {
  it('when the bars span several runs, then each bar gets its day’s symbol (null where the run has none); within one run, one value stands for every bar', () => {
    const runs = [
      { symbol: null, from: '2021-03-01', to: '2021-03-09' },
      { symbol: 'LATE', from: '2021-03-10', to: '2021-03-14' },
      { symbol: 'NEW', from: '2021-03-15', to: '2021-03-31' },
    ];
    const days = ['2021-03-01', '2021-03-09', '2021-03-10', '2021-03-12', '2021-03-15', '2021-03-31'].map(dayNumber);
    expect(symbolsOfDays(runs, () => days)).toEqual([null, null, 'LATE', 'LATE', 'NEW', 'NEW']);
    expect(symbolsOfDays(runs, () => days.slice(4))).toEqual(['NEW']);
  });

  it('when the window holds one run, or none, then one value stands for every bar without the days being read', () => {
    const unread = () => {
      throw new Error('the days were read');
    };
    expect(symbolsOfDays([{ symbol: 'ONE', from: '2021-03-01', to: '2021-03-31' }], unread)).toEqual(['ONE']);
    expect(symbolsOfDays([], unread)).toEqual([null]);
  });
});
