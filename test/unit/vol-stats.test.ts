import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { atmIv, atmTermStructure, atmVolAt, historicalVolatility, parkinsonVolatility, putCallIvRatio, volatilitySnapshot } from '../../workers/vol-stats.ts';
import type { ExpiryIvs, StrikeIv } from '../../workers/contract.ts';

/** Closes starting at 100 whose successive log returns are `returns`. */
function closesFrom(returns: number[]): number[] {
  const closes = [100];
  for (const r of returns) closes.push(closes[closes.length - 1] * Math.exp(r));
  return closes;
}

describe('close-to-close historical volatility', () => {
  it('when 30 daily log returns alternate +1 % and −1 %, then σ = √(30·0.01²/29 · 252) = 0.16145886633208280', () => {
    // Mean 0; sum of squared deviations 30·1e-4; sample variance 3e-3/29; × 252 → 0.026068965…; √ → 0.161458866332082796 (mpmath, 30 digits).
    const closes = closesFrom(Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? 0.01 : -0.01)));
    expect(Math.abs(historicalVolatility(closes)! - 0.161458866332082796)).toBeLessThan(1e-12);
  });

  it('when the returns do not average zero, then the sample mean is subtracted (window 4, by hand)', () => {
    // Closes 100, 102, 101, 104, 103: returns 0.0198026, −0.0098523, 0.0292706, −0.0096619; mean 0.00738975;
    // squared deviations sum 1.220903e-3; /3 = 4.06968e-4; √ = 0.0201734; × √252 = 0.320243
    // (Python statistics.stdev × √252: 0.3202415766767408).
    expect(Math.abs(historicalVolatility([100, 102, 101, 104, 103], 4)! - 0.3202415766767408)).toBeLessThan(1e-12);
  });

  it('when older closes precede the window, then only the last 31 closes count', () => {
    const recent = closesFrom(Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? 0.01 : -0.01)));
    const withHistory = [500, 20, null, 7, ...recent.map((c) => c * 3)];
    expect(Math.abs(historicalVolatility(withHistory)! - 0.161458866332082796)).toBeLessThan(1e-12);
  });

  it('when fewer than 31 closes or a close in the window is missing or not positive, then null', () => {
    const closes: (number | null)[] = closesFrom(Array.from({ length: 30 }, () => 0.01));
    expect(historicalVolatility(closes.slice(1))).toBeNull();
    for (const bad of [null, 0, -1, Number.NaN]) {
      const broken = [...closes];
      broken[5] = bad;
      expect(historicalVolatility(broken)).toBeNull();
    }
  });
});

describe('Parkinson volatility', () => {
  it('when every day’s ln(H/L) is 0.02, then σ = √(0.02²/(4 ln 2) · 252) = 0.19067227126774852', () => {
    // 0.0004 / 2.7725887 = 1.4426950e-4; × 252 = 0.036355914; √ = 0.190672271 (mpmath: 0.190672271267748520).
    const lows = Array.from({ length: 30 }, (_, i) => 50 + i);
    const highs = lows.map((l) => l * Math.exp(0.02));
    expect(Math.abs(parkinsonVolatility(highs, lows)! - 0.19067227126774852)).toBeLessThan(1e-12);
  });

  it('when ranges alternate ln(H/L) = 0.01 and 0.03, then the mean square is 5e-4 and σ = 0.21317807998948285', () => {
    // (1e-4 + 9e-4)/2 = 5e-4; / (4 ln 2) = 1.8033688e-4; × 252 = 0.045444894; √ = 0.2131781 (mpmath: 0.213178079989482848).
    const lows = Array.from({ length: 40 }, () => 80);
    const highs = lows.map((l, i) => l * Math.exp(i % 2 === 0 ? 0.01 : 0.03));
    expect(Math.abs(parkinsonVolatility(highs, lows)! - 0.21317807998948285)).toBeLessThan(1e-12);
  });

  it('when a high or low in the window is missing, or a high is below its low, then null; a gap before the window does not matter', () => {
    const lows = Array.from({ length: 31 }, () => 80);
    const highs: (number | null)[] = lows.map((l) => l * 1.02);
    highs[0] = null;
    expect(parkinsonVolatility(highs, lows)).not.toBeNull();
    expect(parkinsonVolatility(highs.slice(2), lows.slice(2))).toBeNull();
    const crossed = [...highs];
    crossed[20] = 79;
    expect(parkinsonVolatility(crossed, lows)).toBeNull();
    const gap: (number | null)[] = [...lows];
    gap[30] = null;
    expect(parkinsonVolatility(highs, gap)).toBeNull();
  });
});

describe('realised volatility of real demo bars (MSFT, 2001-08-09 to 2001-09-27, unadjusted)', () => {
  // Computed independently in Python from the same CSV rows:
  //   rets = [log(c[i]/c[i-1]) for the last 30 returns]; statistics.stdev(rets)*sqrt(252) = 0.4868845680605208
  //   sqrt(sum(log(h/l)**2 for the last 30 rows)/(4*log(2)*30))*sqrt(252) = 0.42103496737092827
  const rows = readFileSync(new URL('../../server/demo/data/msft_daily_2000_2001.csv', import.meta.url), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => line.split(',').map(Number));
  it('when the last 31 closes and 30 high–low ranges are used, then both match Python to 1e-12', () => {
    expect(Math.abs(historicalVolatility(rows.map((r) => r[4]))! - 0.4868845680605208)).toBeLessThan(1e-12);
    expect(
      Math.abs(
        parkinsonVolatility(
          rows.map((r) => r[2]),
          rows.map((r) => r[3]),
        )! - 0.42103496737092827,
      ),
    ).toBeLessThan(1e-12);
  });
});

describe('ATM implied volatility of one expiry', () => {
  // Strike 100: call 0.22, put 0.24 (mean 0.23); 105: call 0.20, put unsolved; 110: put 0.21; 95: call 0.25, put 0.27 (0.26).
  const chain: StrikeIv[] = [
    { strike: 95, right: 'call', impliedVolatility: 0.25 },
    { strike: 95, right: 'put', impliedVolatility: 0.27 },
    { strike: 100, right: 'call', impliedVolatility: 0.22 },
    { strike: 100, right: 'put', impliedVolatility: 0.24 },
    { strike: 105, right: 'call', impliedVolatility: 0.2 },
    { strike: 105, right: 'put', impliedVolatility: null },
    { strike: 110, right: 'put', impliedVolatility: 0.21 },
  ];

  it('when the spot lies between strikes, then the call–put mean at each is interpolated in strike', () => {
    // Spot 102: 0.23 + (0.20 − 0.23)·(102 − 100)/(105 − 100) = 0.23 − 0.012 = 0.218.
    const got = atmIv(chain, 102);
    expect(got).toMatchObject({ strikes: [100, 105] });
    expect(Math.abs(got.vol! - 0.218)).toBeLessThan(1e-15);
  });

  it('when only calls or only puts are asked for, then only they count', () => {
    // Calls: 0.22 + (0.20 − 0.22)·2/5 = 0.212. Puts: 105 did not solve, so 100 → 110: 0.24 + (0.21 − 0.24)·2/10 = 0.234.
    expect(Math.abs(atmIv(chain, 102, 'call').vol! - 0.212)).toBeLessThan(1e-15);
    const puts = atmIv(chain, 102, 'put');
    expect(puts).toMatchObject({ strikes: [100, 110] });
    expect(Math.abs(puts.vol! - 0.234)).toBeLessThan(1e-15);
  });

  it('when the spot is a strike, then that strike’s IV', () => {
    const got = atmIv(chain, 100);
    expect(got).toMatchObject({ strikes: [100, 100] });
    expect(Math.abs(got.vol! - 0.23)).toBeLessThan(1e-15);
  });

  it('when the spot is outside the strikes, or nothing solved, then null with a reason (no extrapolation)', () => {
    expect(atmIv(chain, 120)).toEqual({
      vol: null,
      reason: 'spot_outside_strikes',
      detail: 'spot 120 is outside the contract strikes with an implied volatility (95 to 110); the ATM IV is not extrapolated',
    });
    expect(atmIv(chain, 90, 'put')).toMatchObject({ vol: null, reason: 'spot_outside_strikes' });
    expect(atmIv([{ strike: 100, right: 'call', impliedVolatility: null }], 100)).toMatchObject({ vol: null, reason: 'no_implied_volatility' });
  });
});

describe('ATM implied volatility at 30 days, in total variance', () => {
  it('when expiries at 20 and 41 days bracket 30, then w is interpolated linearly in time: σ30 = 0.26852034299690332', () => {
    // In vol²·days: w20 = 0.30²·20 = 1.8, w41 = 0.25²·41 = 2.5625;
    // w30 = 1.8 + 0.7625·10/21 = 2.1630952381; σ = √(w30/30) = √0.0721031746 = 0.268520343 (mpmath: 0.268520342996903315).
    const term = [
      { daysToExpiry: 60, atmImpliedVolatility: 0.4 },
      { daysToExpiry: 41, atmImpliedVolatility: 0.25 },
      { daysToExpiry: 20, atmImpliedVolatility: 0.3 },
      { daysToExpiry: 7, atmImpliedVolatility: 0.5 },
    ];
    const got = atmVolAt(term);
    expect(got).toMatchObject({ daysToExpiry: [20, 41] });
    expect(Math.abs(got.vol! - 0.268520342996903315)).toBeLessThan(1e-15);
  });

  it('when an expiry is exactly 30 days out, then its IV as is', () => {
    expect(atmVolAt([{ daysToExpiry: 30, atmImpliedVolatility: 0.31 }])).toEqual({ vol: 0.31, daysToExpiry: [30, 30] });
  });

  it('when no expiry lies on one side of 30 days, then null with not_bracketed (no extrapolation)', () => {
    expect(atmVolAt([{ daysToExpiry: 45, atmImpliedVolatility: 0.2 }])).toEqual({
      vol: null,
      reason: 'not_bracketed',
      detail: 'no expiry with an ATM implied volatility at or before 30 days; the 30-day IV is not extrapolated',
    });
    expect(atmVolAt([{ daysToExpiry: 10, atmImpliedVolatility: 0.2 }])).toMatchObject({ vol: null, reason: 'not_bracketed' });
    expect(atmVolAt([])).toMatchObject({ vol: null, reason: 'not_bracketed' });
  });
});

describe('put/call IV ratio and the snapshot', () => {
  // Spot 100 is a strike of both expiries. 20 days: put 0.32, call 0.28; 41 days: put 0.26, call 0.24.
  const expiries: ExpiryIvs[] = [20, 41].map((daysToExpiry) => {
    const [put, call] = daysToExpiry === 20 ? [0.32, 0.28] : [0.26, 0.24];
    return {
      daysToExpiry,
      contracts: [
        { strike: 100, right: 'put', impliedVolatility: put },
        { strike: 100, right: 'call', impliedVolatility: call },
      ],
    };
  });

  it('when puts and calls are each taken to 30 days in total variance, then the ratio is 1.1088471017532409', () => {
    // Puts: w = 0.1024·20 + (0.0676·41 − 2.048)·10/21 = 2.3925714; σ = √(w/30) = 0.2824046.
    // Calls: w = 0.0784·20 + (0.0576·41 − 1.568)·10/21 = 1.9459048; σ = 0.2546831.
    // Ratio (mpmath): 1.10884710175324093.
    expect(Math.abs(putCallIvRatio(expiries, 100)! - 1.10884710175324093)).toBeLessThan(1e-14);
  });

  it('when the puts do not reach 30 days, then the ratio is null', () => {
    const callsOnlyLate = expiries.map((e) => (e.daysToExpiry === 41 ? { ...e, contracts: e.contracts.filter((c) => c.right === 'call') } : e));
    expect(putCallIvRatio(callsOnlyLate, 100)).toBeNull();
  });

  it('when a snapshot is taken, then its term structure is the call–put mean per expiry and its 30-day IV interpolates it', () => {
    // Means: 20 d (0.32 + 0.28)/2 = 0.30, 41 d (0.26 + 0.24)/2 = 0.25: the bracket of the total-variance test, 0.268520342996903315.
    const snapshot = volatilitySnapshot({ spot: 100, expiries, closes: [100, 101], highs: [], lows: [] });
    expect(snapshot.termStructure.map((p) => p.daysToExpiry)).toEqual([20, 41]);
    expect(Math.abs(snapshot.termStructure[0].atmImpliedVolatility - 0.3)).toBeLessThan(1e-15);
    expect(Math.abs(snapshot.termStructure[1].atmImpliedVolatility - 0.25)).toBeLessThan(1e-15);
    expect(Math.abs(snapshot.impliedVolatility30d! - 0.268520342996903315)).toBeLessThan(1e-15);
    expect(snapshot.historicalVolatility30d).toBeNull();
    expect(snapshot.parkinsonHistoricalVolatility30d).toBeNull();
    expect(atmTermStructure(expiries, 100, 'put').map((p) => p.atmImpliedVolatility)).toEqual([0.32, 0.26]);
  });
});
