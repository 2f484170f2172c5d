import { describe, expect, it } from 'vitest';
import { bsmD1D2, priceOption, yearsFromDays } from '../../workers/black-scholes.ts';
import type { OptionType } from '../../workers/contract.ts';
import { normCdf } from '../../workers/normal-distribution.ts';
import { formatApart, impliedVolatility } from '../../workers/implied-vol.ts';

const SPOT = 100;
const MONEYNESS = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1, 1.05, 1.1, 1.25, 1.5, 1.75, 2];
const EXPIRY_DAYS = [1, 2, 7, 14, 30, 60, 91, 182, 365, 730];
const VOLS = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3];
const RATES = [
  { rate: 0.05, dividendYield: 0.02 },
  { rate: -0.01, dividendYield: 0.03 },
];
const RIGHTS: OptionType[] = ['call', 'put'];
const TOLERANCE = 1e-8;

/**
 * Whether σ is identifiable to TOLERANCE from a float64 BSM price.
 * The price is the difference of two terms, S·e^(−qT)·N(±d1) and
 * K·e^(−rT)·N(±d2), each rounded to about ε of its size, so the price itself
 * is uncertain by a few ε·(sum of both terms). Moving σ by TOLERANCE moves the
 * price by ∂V/∂σ · TOLERANCE. The point is kept when that move is at least
 * 16 such rounding units; below it a σ within TOLERANCE of the truth and one
 * outside it give prices that float64 cannot tell apart (deep in- or
 * out-of-the-money at short expiries and low vols, where the price is the
 * intrinsic value or 0 to the last bit). A price of 0 (underflow) is never
 * identifiable.
 */
function identifiable(spot: number, strike: number, timeYears: number, rate: number, dividendYield: number, vol: number, right: OptionType): boolean {
  const { d1, d2 } = bsmD1D2(spot, strike, timeYears, rate, vol, dividendYield);
  const sign = right === 'call' ? 1 : -1;
  const terms = spot * Math.exp(-dividendYield * timeYears) * normCdf(sign * d1) + strike * Math.exp(-rate * timeYears) * normCdf(sign * d2);
  const { price, greeks } = priceOption({ spot, strike, timeYears, rate, vol, dividendYield, type: right });
  return price > 0 && greeks.vega * 100 * TOLERANCE >= 16 * Number.EPSILON * terms;
}

describe('implied volatility recovers the volatility that priced the option', () => {
  it('when the BSM price of a grid of options (K/S 0.5–2, 1 day–2 years, 5 %–300 % vol, calls and puts, r and q non-zero) is inverted, then every identifiable point gives its vol back to 1e-8', () => {
    let checked = 0;
    let skipped = 0;
    let worst = 0;
    for (const { rate, dividendYield } of RATES) {
      for (const m of MONEYNESS) {
        for (const days of EXPIRY_DAYS) {
          for (const vol of VOLS) {
            for (const right of RIGHTS) {
              const strike = m * SPOT;
              const timeYears = yearsFromDays(days);
              if (!identifiable(SPOT, strike, timeYears, rate, dividendYield, vol, right)) {
                skipped++;
                continue;
              }
              const price = priceOption({ spot: SPOT, strike, timeYears, rate, vol, dividendYield, type: right }).price;
              const got = impliedVolatility({ spot: SPOT, strike, timeYears, rate, dividendYield, right, price });
              if (!got.ok) throw new Error(`K/S ${m}, ${days} d, σ ${vol}, ${right}, r ${rate}: ${got.reason}: ${got.detail}`);
              const error = Math.abs(got.vol - vol);
              if (error > TOLERANCE) throw new Error(`K/S ${m}, ${days} d, σ ${vol}, ${right}, r ${rate}: got ${got.vol}, error ${error}`);
              worst = Math.max(worst, error);
              checked++;
            }
          }
        }
      }
    }
    // 5,200 points; the rule above skips 783 of them (counted when this test
    // was written, and pinned so that a change to the rule or the grid shows).
    expect(checked + skipped).toBe(5200);
    expect(skipped).toBe(783);
    expect(worst).toBeLessThanOrEqual(TOLERANCE);
  });

  it('when the rule skips a point, then the point really is unidentifiable: the price is 0 or within rounding of its bound', () => {
    // K/S 0.5, 1 day, 5 % vol: d2 ≈ −266, so the put is worth e^(−35,000) = 0 in float64.
    const put = priceOption({ spot: SPOT, strike: 50, timeYears: yearsFromDays(1), rate: 0.05, vol: 0.05, dividendYield: 0.02, type: 'put' }).price;
    expect(identifiable(SPOT, 50, yearsFromDays(1), 0.05, 0.02, 0.05, 'put')).toBe(false);
    expect(put).toBe(0);
    expect(impliedVolatility({ spot: SPOT, strike: 50, timeYears: yearsFromDays(1), rate: 0.05, dividendYield: 0.02, right: 'put', price: put })).toMatchObject(
      {
        ok: false,
        reason: 'non_positive_price',
      },
    );
    // The call at the same point is S·e^(−qT) − K·e^(−rT) to the last bit: no time value left to invert.
    expect(identifiable(SPOT, 50, yearsFromDays(1), 0.05, 0.02, 0.05, 'call')).toBe(false);
    const call = priceOption({ spot: SPOT, strike: 50, timeYears: yearsFromDays(1), rate: 0.05, vol: 0.05, dividendYield: 0.02, type: 'call' }).price;
    const t = yearsFromDays(1);
    // mpmath, 40 digits: S·e^(−qT) − K·e^(−rT) = 50.00136954402318252389…, whose nearest double is 50.001369544023184
    // (the direct double formula rounds to the neighbour below, 50.00136954402318).
    expect(call).toBe(50.001369544023184);
    expect(Math.abs(call - (SPOT * Math.exp(-0.02 * t) - 50 * Math.exp(-0.05 * t)))).toBeLessThanOrEqual(2 ** -46); // 1 ulp at 50
  });

  it("when the price is Hull's implied-volatility example, then the published 23.5 % comes back", () => {
    // Hull, "Options, Futures, and Other Derivatives" (8th ed., section 14.11
    // "Implied volatilities"; 15.11 in the 9th): a European call on a
    // non-dividend-paying stock worth 1.875 with S0 = 21, K = 20, r = 0.1,
    // T = 0.25 has implied volatility 0.235 (interval bisection, 3 decimals).
    // To more digits (mpmath findroot on the BSM formula at 40 digits):
    // 0.23451291399764378654843.
    const got = impliedVolatility({ spot: 21, strike: 20, timeYears: 0.25, rate: 0.1, dividendYield: 0, right: 'call', price: 1.875 });
    if (!got.ok) throw new Error(got.detail);
    expect(Math.abs(got.vol - 0.235)).toBeLessThan(0.0005);
    expect(Math.abs(got.vol - 0.23451291399764378654843)).toBeLessThan(1e-12);
  });

  it('when a put on a dividend payer is priced at 12.5, then the vol matches an independent high-precision root', () => {
    // S 100, K 110, T 0.5, r 0.03, q 0.015, put 12.5. mpmath findroot at 40
    // digits on K·e^(−rT)·N(−d2) − S·e^(−qT)·N(−d1) = 12.5 gives
    // σ = 0.24036407355471462422396.
    const got = impliedVolatility({ spot: 100, strike: 110, timeYears: 0.5, rate: 0.03, dividendYield: 0.015, right: 'put', price: 12.5 });
    if (!got.ok) throw new Error(got.detail);
    expect(Math.abs(got.vol - 0.24036407355471462422396)).toBeLessThan(1e-12);
    expect(got.iterations).toBeGreaterThan(0);
  });
});

describe('implied volatility refuses prices outside the no-arbitrage bounds, naming the numbers', () => {
  // S 100, K 90, T 0.5, r 0.05, q 0.02. By hand (mpmath, 30 digits):
  // S·e^(−qT) = 100·e^(−0.01) = 99.0049833749168,
  // K·e^(−rT) = 90·e^(−0.025) = 87.7778920825499,
  // discounted intrinsic of the call = 11.2270912923669.
  const base = { spot: 100, strike: 90, timeYears: 0.5, rate: 0.05, dividendYield: 0.02 };

  it('when a call is priced below its discounted intrinsic value, then below_intrinsic names the price and the bound', () => {
    const got = impliedVolatility({ ...base, right: 'call', price: 11, priceName: 'mid' });
    expect(got).toEqual({
      ok: false,
      reason: 'below_intrinsic',
      detail:
        'mid 11 is at or below the discounted intrinsic value 11.2271 (S·e^(−qT) − K·e^(−rT)): no volatility prices a call that low; check the quote and the spot',
    });
  });

  it('when a price is below intrinsic by less than six digits show, then the detail prints enough digits to tell them apart', () => {
    const got = impliedVolatility({ ...base, right: 'call', price: 11.22709 });
    expect(got.ok).toBe(false);
    if (got.ok) return;
    expect(got.reason).toBe('below_intrinsic');
    expect(got.detail).toContain('price 11.22709 is at or below the discounted intrinsic value 11.227091 ');
  });

  it('when a put is priced below K·e^(−rT) − S·e^(−qT), then below_intrinsic', () => {
    // K 120: 120·e^(−0.025) − 99.0049833749168 = 18.0322060684831 (mpmath).
    const got = impliedVolatility({ ...base, strike: 120, right: 'put', price: 18 });
    expect(got).toMatchObject({ ok: false, reason: 'below_intrinsic' });
    if (!got.ok) expect(got.detail).toContain('price 18 is at or below the discounted intrinsic value 18.0322 (K·e^(−rT) − S·e^(−qT))');
  });

  it('when a call is priced at or above S·e^(−qT), then above_upper_bound', () => {
    const got = impliedVolatility({ ...base, right: 'call', price: 99.1 });
    expect(got).toMatchObject({ ok: false, reason: 'above_upper_bound' });
    if (!got.ok) expect(got.detail).toContain('price 99.1 is at or above the call');
    if (!got.ok) expect(got.detail).toContain('upper bound 99.005 (S·e^(−qT))');
  });

  it('when a put is priced at or above K·e^(−rT), then above_upper_bound', () => {
    const got = impliedVolatility({ ...base, right: 'put', price: 88 });
    expect(got).toMatchObject({ ok: false, reason: 'above_upper_bound' });
    if (!got.ok) expect(got.detail).toContain('upper bound 87.7779 (K·e^(−rT))');
  });

  it('when the option has expired or the price is not positive, then expired or non_positive_price', () => {
    expect(impliedVolatility({ ...base, timeYears: 0, right: 'call', price: 10 })).toMatchObject({ ok: false, reason: 'expired' });
    expect(impliedVolatility({ ...base, timeYears: -0.01, right: 'call', price: 10 })).toMatchObject({ ok: false, reason: 'expired' });
    expect(impliedVolatility({ ...base, right: 'put', price: 0 })).toMatchObject({ ok: false, reason: 'non_positive_price' });
  });

  it('when a price is above intrinsic but below the BSM price at σ = 1e-8, then no_convergence says so', () => {
    // S = K = 100, r = q = 0, T = 1: the at-the-money call is worth about S·σ·√T/√(2π) ≈ 4e-7 at σ = 1e-8,
    // so a price of 1e-9 (above the intrinsic value 0) implies a volatility below 1e-8.
    const got = impliedVolatility({ spot: 100, strike: 100, timeYears: 1, rate: 0, dividendYield: 0, right: 'call', price: 1e-9 });
    expect(got).toMatchObject({ ok: false, reason: 'no_convergence' });
    if (!got.ok) expect(got.detail).toContain('price 1e-9 is below the BSM price at σ = 1e-8: no volatility in [1e-8, 1000] reproduces it');
  });

  it('when an input is not a finite number, then a RangeError (the caller validates first)', () => {
    expect(() => impliedVolatility({ ...base, right: 'call', price: Number.NaN })).toThrow(RangeError);
    expect(() => impliedVolatility({ ...base, spot: 0, right: 'call', price: 12 })).toThrow(RangeError);
  });

  it('formatApart prints two numbers with the fewest digits that differ', () => {
    expect(formatApart(1.2, 1.35)).toEqual(['1.2', '1.35']);
    // At 6 digits both read 1.23457; at 7 they round to 1.234567 and 1.234568.
    expect(formatApart(1.2345671, 1.2345679)).toEqual(['1.234567', '1.234568']);
    expect(formatApart(3, 3)).toEqual(['3', '3']);
  });
});
