import { describe, expect, it } from 'vitest';
import { fredObservations, fredTimestamp, ProviderFailure } from '../../server/macro/fred.ts';
import { MacroSeriesParamsSchema } from '../../server/macro/schema.ts';
import { percentToDecimal } from '../../server/macro/service.ts';

describe('percentToDecimal', () => {
  it.each([
    [4.37, 0.0437],
    [5.25, 0.0525],
    [0.05, 0.0005],
    [100, 1],
    [12.345, 0.12345],
    [-0.12, -0.0012],
    [0, 0],
  ])('when FRED publishes %s percent, then the decimal is %s, exactly as written', (percent, decimal) => {
    expect(percentToDecimal(percent)).toBe(decimal);
  });

  it('when the same figure is divided by 100 in binary floating point, then it is not the written decimal (why the point is moved instead)', () => {
    expect(1.1 / 100).toBe(0.011000000000000001);
    expect(percentToDecimal(1.1)).toBe(0.011);
  });
});

describe("FRED's formats", () => {
  it('when an observation is ".", then it is left out, never 0', () => {
    expect(
      fredObservations([
        { date: '2025-01-01', value: '.' },
        { date: '2025-01-02', value: '4.57' },
        { date: '2025-01-03', value: '-0.25' },
        { date: '2025-01-06', value: '0' },
      ]),
    ).toEqual([
      { date: '2025-01-02', value: 4.57 },
      { date: '2025-01-03', value: -0.25 },
      { date: '2025-01-06', value: 0 },
    ]);
  });

  it.each(['', 'NaN', 'Infinity', '1e5', '4,57', 'n/a'])('when a value is %j, then the answer is unreadable rather than guessed', (value) => {
    expect(() => fredObservations([{ date: '2025-01-02', value }])).toThrow(ProviderFailure);
  });

  it("when FRED writes last_updated as '2024-05-01 07:52:05-05', then it is the instant 12:52:05Z", () => {
    expect(fredTimestamp('2024-05-01 07:52:05-05')).toBe('2024-05-01T12:52:05.000Z');
    expect(fredTimestamp('2024-05-01 07:52:05+0530')).toBe('2024-05-01T02:22:05.000Z');
    expect(fredTimestamp('yesterday')).toBeNull();
    expect(fredTimestamp(undefined)).toBeNull();
  });
});

describe('the macro allowlist', () => {
  it('when an id is on it in any case, then it is accepted upper-cased; an id off it is refused', () => {
    expect(MacroSeriesParamsSchema.parse({ seriesId: 'dgs3mo' })).toEqual({ seriesId: 'DGS3MO' });
    for (const id of ['GS10', 'DGS7', 'TB3MS', 'CPIAUCNS', '']) expect(MacroSeriesParamsSchema.safeParse({ seriesId: id }).success, id).toBe(false);
  });
});
