import { describe, expect, it } from 'vitest';
import { normCdf } from '../../workers/normal-distribution.ts';
import type { ProbabilityInput } from '../../workers/contract.ts';
import { probabilityOfTarget } from '../../workers/probability.ts';

// Expected values are from mpmath at 30 digits (independent of the code under
// test):  d2 = (ln(S/K) + (r − q − σ²/2)T)/(σ√T);  atExpiry = ncdf(±d2);
//         touch = 2·(1 − ncdf(|ln(K/S)|/(σ√T))).

describe('probabilityOfTarget: at-expiry probability and driftless touch', () => {
  const longUp: ProbabilityInput = { spot: 100, target: 110, timeYears: 30 / 365, rate: 0.05, vol: 0.3, dividendYield: 0.01, direction: 'long' };

  it('long, target above spot: at-expiry = N(d2), touch = 2(1 − N(a))', () => {
    const r = probabilityOfTarget(longUp);
    expect(Math.abs(r.probabilityInTheMoneyAtExpiry - 0.13286673919515396699)).toBeLessThan(1e-14);
    expect(Math.abs(r.probabilityOfTouchBeforeExpiry - 0.26779121383008966488)).toBeLessThan(1e-14);
    expect(r.touchFlooredToExpiry).toBe(false);
    expect(r.targetAlreadyReached).toBe(false);
    expect(r.driftlessTouchProbability).toBe(r.probabilityOfTouchBeforeExpiry);
    // And the same thing written out from the definition with the N used by the service.
    const { spot: S, target: K, timeYears: T, rate, vol, dividendYield: q = 0 } = longUp;
    const d2 = (Math.log(S / K) + (rate - q - (vol * vol) / 2) * T) / (vol * Math.sqrt(T));
    expect(Math.abs(r.probabilityInTheMoneyAtExpiry - normCdf(d2))).toBeLessThan(1e-15);
    expect(Math.abs(r.probabilityOfTouchBeforeExpiry - 2 * (1 - normCdf(Math.abs(Math.log(K / S)) / (vol * Math.sqrt(T)))))).toBeLessThan(1e-15);
  });

  it('short, target below spot: at-expiry = N(−d2)', () => {
    const r = probabilityOfTarget({ ...longUp, target: 90, direction: 'short' });
    expect(Math.abs(r.probabilityInTheMoneyAtExpiry - 0.11118700613295952751)).toBeLessThan(1e-14);
    expect(Math.abs(r.probabilityOfTouchBeforeExpiry - 0.22056847312888978004)).toBeLessThan(1e-14);
    expect(r.touchFlooredToExpiry).toBe(false);
  });

  it('long and short at-expiry probabilities are complementary', () => {
    for (const target of [70, 95, 100, 104, 160]) {
      const a = probabilityOfTarget({ ...longUp, target, direction: 'long' }).probabilityInTheMoneyAtExpiry;
      const b = probabilityOfTarget({ ...longUp, target, direction: 'short' }).probabilityInTheMoneyAtExpiry;
      expect(Math.abs(a + b - 1)).toBeLessThan(1e-15);
    }
  });

  it('touch is independent of rate and dividend yield (driftless)', () => {
    const a = probabilityOfTarget({ ...longUp, rate: 0.0, dividendYield: 0 });
    const b = probabilityOfTarget({ ...longUp, rate: 0.03, dividendYield: 0.02 });
    expect(a.driftlessTouchProbability).toBe(b.driftlessTouchProbability);
  });

  it('target already reached → touch = 1 (long at/above, short at/below)', () => {
    expect(probabilityOfTarget({ ...longUp, target: 95 }).probabilityOfTouchBeforeExpiry).toBe(1);
    expect(probabilityOfTarget({ ...longUp, target: 100 }).probabilityOfTouchBeforeExpiry).toBe(1);
    expect(probabilityOfTarget({ ...longUp, target: 100 }).targetAlreadyReached).toBe(true);
    expect(probabilityOfTarget({ ...longUp, target: 105, direction: 'short' }).probabilityOfTouchBeforeExpiry).toBe(1);
    expect(probabilityOfTarget({ ...longUp, target: 95, direction: 'short' }).targetAlreadyReached).toBe(false);
  });
});

describe('touch >= at-expiry floor', () => {
  it('binds for long with strong positive drift (low vol, positive rate, target 20% above)', () => {
    // mpmath: N(d2) = 0.084842670681149969842 > 2(1 − N(a)) = 0.068270748109366654296
    const r = probabilityOfTarget({ spot: 100, target: 120, timeYears: 1, rate: 0.05, vol: 0.1, dividendYield: 0, direction: 'long' });
    expect(r.touchFlooredToExpiry).toBe(true);
    expect(Math.abs(r.driftlessTouchProbability - 0.068270748109366654296)).toBeLessThan(1e-14);
    expect(Math.abs(r.probabilityInTheMoneyAtExpiry - 0.084842670681149969842)).toBeLessThan(1e-14);
    expect(r.probabilityOfTouchBeforeExpiry).toBe(r.probabilityInTheMoneyAtExpiry);
  });

  it('binds for short when the dividend yield exceeds the rate (negative drift)', () => {
    // mpmath: N(−d2) = 0.164733185613854703 > 0.10412223071535913297
    const r = probabilityOfTarget({ spot: 100, target: 85, timeYears: 1, rate: 0, vol: 0.1, dividendYield: 0.06, direction: 'short' });
    expect(r.touchFlooredToExpiry).toBe(true);
    expect(Math.abs(r.probabilityOfTouchBeforeExpiry - 0.164733185613854703)).toBeLessThan(1e-14);
    expect(Math.abs(r.driftlessTouchProbability - 0.10412223071535913297)).toBeLessThan(1e-14);
  });

  it('holds on a grid of inputs', () => {
    for (const direction of ['long', 'short'] as const)
      for (const target of [50, 80, 99, 100, 101, 120, 200])
        for (const rate of [-0.01, 0, 0.05, 0.3])
          for (const vol of [0.05, 0.2, 1])
            for (const timeYears of [1 / 365, 0.25, 3]) {
              const r = probabilityOfTarget({ spot: 100, target, timeYears, rate, vol, dividendYield: 0.02, direction });
              expect(r.probabilityOfTouchBeforeExpiry).toBeGreaterThanOrEqual(r.probabilityInTheMoneyAtExpiry);
              expect(r.probabilityOfTouchBeforeExpiry).toBeLessThanOrEqual(1);
              expect(r.probabilityInTheMoneyAtExpiry).toBeGreaterThanOrEqual(0);
            }
  });
});

describe('reflection principle cross-check by simulation (independent of the closed form)', () => {
  // Driftless Brownian motion X_t = σ W_t in log-price, barrier b = ln(K/S) > 0.
  // Simulate X_T; given X_T = x < b the Brownian-bridge probability of having
  // crossed b is exp(−2 b (b − x)/(σ² T)); given x >= b it is 1. Averaging gives
  // the continuous-monitoring first-passage probability with no time
  // discretisation error; only Monte Carlo noise remains.
  function mulberry32(seed: number) {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  it('agrees within 4 standard errors', () => {
    const rand = mulberry32(12345);
    const S = 100,
      K = 112,
      T = 0.5,
      vol = 0.25;
    const b = Math.log(K / S);
    const n = 200_000;
    let sum = 0,
      sumSq = 0;
    for (let i = 0; i < n; i += 1) {
      const u1 = rand() || 1e-12,
        u2 = rand();
      const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
      const x = vol * Math.sqrt(T) * z;
      const p = x >= b ? 1 : Math.exp((-2 * b * (b - x)) / (vol * vol * T));
      sum += p;
      sumSq += p * p;
    }
    const mean = sum / n;
    const se = Math.sqrt((sumSq / n - mean * mean) / n);
    const r = probabilityOfTarget({ spot: S, target: K, timeYears: T, rate: 0.04, vol, direction: 'long' });
    expect(r.touchFlooredToExpiry).toBe(false);
    expect(Math.abs(r.probabilityOfTouchBeforeExpiry - mean)).toBeLessThan(4 * se);
  });
});

describe('over the whole range the request schema accepts (issue 31: no invented numbers at the numeric edges)', () => {
  // With σ > 0 no probability is 0: a figure below the smallest double is reported as 0 here and named in nullReasons
  // ('underflow'), which the route turns into null. References by this mpmath script (400 digits, exact double inputs):
  //   # Reference rows for test/unit/probability.test.ts ("whole double range"): mpmath 1.3.0, mp.dps = 400, exact double inputs.
  //   # atExpiry = N(±d2), d2 = (ln(S/K) + (r − q − σ²/2)T)/(σ√T); touch = max(min(1, 2·N(−|ln(K/S)|/(σ√T))), atExpiry),
  //   # 1 when the target is already reached.
  //   from mpmath import mp, mpf, ncdf, log, sqrt
  //   mp.dps = 400
  //   MIND = mpf('4.9406564584124654e-324')
  //   def fmt(x):
  //       if x != 0 and x < MIND/2: return "'underflow'"
  //       return mp.nstr(x, 17, min_fixed=-1, max_fixed=-1)
  //   def row(S,K,days,r,v,q,d,note=''):
  //       S_,K_,T,r_,v_,q_ = map(mpf,(S,K,days/365,r,v,q))
  //       s = v_*sqrt(T); d2 = (log(S_/K_) + (r_-q_-v_*v_/2)*T)/s
  //       at = ncdf(d2) if d=='long' else ncdf(-d2)
  //       reached = S>=K if d=='long' else S<=K
  //       touch = mpf(1) if reached else min(mpf(1), 2*ncdf(-abs(log(K_/S_))/s))
  //       touch = max(touch, at)
  //       print(f"    [{S!r}, {K!r}, {days!r}, {r!r}, {v!r}, {q!r}, '{d}', {fmt(at)}, {fmt(touch)}],{' // '+note if note else ''}")
  //   row(100,1e6,30,0.05,0.2,0,'long','d2 ≈ −160: both below the smallest double')
  //   row(100,160000,365,0.05,0.2,0,'long','d2 ≈ −37: about 1e-300, still a double')
  //   row(100,215000,365,0.05,0.2,0,'long','d2 ≈ −38.3: a subnormal double')
  //   row(1e-300,1e300,3650,1,5,-0.2,'long','target/spot = 1e600 (the quotient overflows), σ√T ≈ 15.8')
  //   row(1e300,1e-300,3650,-0.2,5,1,'short','spot/target = 1e600')
  //   row(1.7e308,1e-10,3650,-0.2,5,1,'short','')
  //   row(1e-320,1e-310,30,0.05,0.2,0,'long','subnormal spot')
  //   row(100,100.0001,1/1440,0.05,1e-9,0,'long','σ√T ≈ 1.4e-12: d2 ≈ −7e5')
  //   row(100,99,3650,1,0.01,-0.2,'long','strong drift: already reached')
  //   row(100,120,3650,1,0.01,-0.2,'long','the drift carries the terminal distribution past the target: touch floored')
  //   row(100,120,3650,-0.2,0.01,1,'long','drift away: at expiry below any double, touch 8e-9')
  type Want = number | 'underflow';
  const rows: Array<[number, number, number, number, number, number, 'long' | 'short', Want, Want]> = [
    [100, 1000000.0, 30, 0.05, 0.2, 0, 'long', 'underflow', 'underflow'], // d2 ≈ −160: both below the smallest double
    [100, 160000, 365, 0.05, 0.2, 0, 'long', 8.7772578369091091e-296, 8.7772578369091091e-296], // d2 ≈ −37: about 1e-300, still a double
    [100, 215000, 365, 0.05, 0.2, 0, 'long', 7.6034674820034073e-320, 7.6034674820034073e-320], // d2 ≈ −38.3: a subnormal double
    [1e-300, 1e300, 3650, 1, 5, -0.2, 'long', 'underflow', 'underflow'], // target/spot = 1e600 (the quotient overflows), σ√T ≈ 15.8
    [1e300, 1e-300, 3650, -0.2, 5, 1, 'short', 'underflow', 'underflow'], // spot/target = 1e600
    [1.7e308, 1e-10, 3650, -0.2, 5, 1, 'short', 5.543893083963136e-311, 5.543893083963136e-311],
    [1e-320, 1e-310, 30, 0.05, 0.2, 0, 'long', 'underflow', 'underflow'], // subnormal spot
    [100, 100.0001, 0.0006944444444444445, 0.05, 1e-9, 0, 'long', 'underflow', 'underflow'], // σ√T ≈ 1.4e-12: d2 ≈ −7e5
    [100, 99, 3650, 1, 0.01, -0.2, 'long', 1.0, 1.0], // strong drift: already reached
    [100, 120, 3650, 1, 0.01, -0.2, 'long', 1.0, 1.0], // the drift carries the terminal distribution past the target: touch floored
    [100, 120, 3650, -0.2, 0.01, 1, 'long', 'underflow', 8.1409410985483825e-9], // drift away: at expiry below any double, touch 8e-9
  ];
  it.each(rows)('S=%s K=%s %s days r=%s σ=%s q=%s %s', (spot, target, expiryDays, rate, vol, dividendYield, direction, atExpiry, touch) => {
    const r = probabilityOfTarget({ spot, target, timeYears: expiryDays / 365, rate, vol, dividendYield, direction });
    const check = (name: 'probabilityInTheMoneyAtExpiry' | 'probabilityOfTouchBeforeExpiry', got: number, want: Want) => {
      if (want === 'underflow') {
        expect(r.nullReasons[name], name).toBe('underflow');
        expect(got).toBe(0);
      } else {
        expect(r.nullReasons[name], name).toBeUndefined();
        // relative 1e-12 (d2 ≈ −38 magnifies the rounding of ln(S/K) about 40-fold); a subnormal as well, or to 2 units of 2^−1074
        if (want < 2.2250738585072014e-308) expect(Math.abs(got - want)).toBeLessThanOrEqual(Math.max(1e-323, 1e-12 * want));
        else expect(Math.abs(got / want - 1), name).toBeLessThan(1e-12);
      }
    };
    check('probabilityInTheMoneyAtExpiry', r.probabilityInTheMoneyAtExpiry, atExpiry);
    check('probabilityOfTouchBeforeExpiry', r.probabilityOfTouchBeforeExpiry, touch);
  });

  it('on a grid over the schema bounds, a probability is never NaN, and a 0 always carries its reason', () => {
    const prices = [5e-324, 1e-300, 1, 100, 1e300, 1.7976931348623157e308];
    for (const spot of prices)
      for (const target of prices)
        for (const expiryDays of [1 / 1440, 3650])
          for (const vol of [5e-324, 1e-9, 5])
            for (const direction of ['long', 'short'] as const) {
              const r = probabilityOfTarget({ spot, target, timeYears: expiryDays / 365, rate: 1, vol, dividendYield: -0.2, direction });
              for (const name of ['probabilityInTheMoneyAtExpiry', 'probabilityOfTouchBeforeExpiry'] as const) {
                expect(Number.isNaN(r[name])).toBe(false);
                expect(r[name] >= 0 && r[name] <= 1).toBe(true);
                if (r[name] === 0) expect(r.nullReasons[name], `${name} ${spot} ${target} ${vol}`).toBe('underflow');
              }
            }
  });
});
