import { describe, expect, it } from 'vitest';
import { normCdf } from '../../workers/black-scholes.ts';
import { probabilityOfTarget, type ProbabilityInput } from '../../workers/probability.ts';

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
