import { describe, expect, it } from 'vitest';
import { optionPrice } from '../../server/analytics/service.ts';
import { WorkerPool } from '../../workers/pool.ts';
import type { ChainGreeksInput, ComputedGreeks, ContractGreeks, OptionType } from '../../workers/contract.ts';
import { priceOption, yearsFromDays } from '../../workers/black-scholes.ts';
import { chainGreeks, contractGreeks } from '../../workers/option-greeks.ts';
import { dispatch } from '../../workers/tasks.ts';

const SPOT = 100;
const RATE = 0.045;
const DIVIDEND_YIELD = 0.013;

/** A chain quoted around BSM prices on a smile: σ = 0.25 + 0.4·ln(K/S)², half-spread 2 % of the price. */
function smileChain(expiryDays: number[], strikes: number[]) {
  const rows: { strike: number; expiryDays: number; right: OptionType; vol: number; bid: number; ask: number }[] = [];
  for (const days of expiryDays) {
    for (const strike of strikes) {
      for (const right of ['call', 'put'] as const) {
        const vol = 0.25 + 0.4 * Math.log(strike / SPOT) ** 2;
        const price = priceOption({ spot: SPOT, strike, timeYears: yearsFromDays(days), rate: RATE, vol, dividendYield: DIVIDEND_YIELD, type: right }).price;
        rows.push({ strike, expiryDays: days, right, vol, bid: price * 0.98, ask: price * 1.02 });
      }
    }
  }
  return rows;
}

function computed(g: ContractGreeks): ComputedGreeks {
  if (!('greeksSource' in g)) throw new Error(`expected computed Greeks, got ${JSON.stringify(g)}`);
  return g;
}

describe('computed Greeks are the option-price route’s Greeks', () => {
  it('when a chain’s Greeks are computed, then each equals what the option-price route answers for the same spot, strike, expiry, rate, dividend yield and the solved vol, to 1e-12', () => {
    // From 14 days out, a strike 20 % in the money keeps enough time value for σ to be identifiable to 1e-8 (see implied-vol.test.ts).
    const rows = smileChain([14, 30, 91, 365], [80, 90, 95, 100, 105, 110, 120, 130]);
    const result = chainGreeks({
      spot: rows.map(() => SPOT),
      rate: rows.map(() => RATE),
      dividendYield: DIVIDEND_YIELD,
      strike: rows.map((r) => r.strike),
      timeYears: rows.map((r) => yearsFromDays(r.expiryDays)),
      right: rows.map((r) => r.right),
      bid: rows.map((r) => r.bid),
      ask: rows.map((r) => r.ask),
    });
    expect(result).toHaveLength(64);
    rows.forEach((row, i) => {
      const got = computed(result[i]);
      // The mid is the BSM price at the smile vol (bid and ask sit ±2 % around it), so the solved vol is the smile's.
      expect(Math.abs(got.impliedVolatility - row.vol)).toBeLessThan(1e-8);
      const route = optionPrice({
        spot: SPOT,
        strike: row.strike,
        expiryDays: row.expiryDays,
        rate: RATE,
        vol: got.impliedVolatility,
        type: row.right,
        dividendYield: DIVIDEND_YIELD,
      });
      expect(route.nullReasons).toEqual({});
      for (const greek of ['delta', 'gamma', 'theta', 'vega', 'rho'] as const) {
        expect(Math.abs(got[greek] - route.greeks[greek]!), `${greek} of row ${i}`).toBeLessThanOrEqual(1e-12);
      }
    });
  });

  it('when the chain is computed as the chainGreeks task, on a pool thread and in line, then the answer is the same as the direct call', async () => {
    const rows = smileChain([30], [90, 100, 110]);
    const input = (): ChainGreeksInput => ({
      spot: Float64Array.from(rows, () => SPOT),
      rate: Float64Array.from(rows, () => RATE),
      dividendYield: DIVIDEND_YIELD,
      strike: Float64Array.from(rows, (r) => r.strike),
      timeYears: Float64Array.from(rows, (r) => yearsFromDays(r.expiryDays)),
      right: rows.map((r) => r.right),
      // A Float64Array marks a missing bid with NaN: the last row has none.
      bid: Float64Array.from(rows, (r, i) => (i === rows.length - 1 ? Number.NaN : r.bid)),
      ask: Float64Array.from(rows, (r) => r.ask),
    });
    const direct = chainGreeks(input());
    expect(direct.filter((g) => 'greeksSource' in g)).toHaveLength(5);
    expect(direct[5]).toMatchObject({ unavailable: { missingInputs: ['bid'] } });
    expect(dispatch({ task: 'chainGreeks', input: input(), queuedAt: 0 }).result).toEqual(direct);
    const pool = new WorkerPool({ threads: 1, maxQueue: 1, taskTimeoutMs: 30_000 });
    try {
      expect(await pool.run('chainGreeks', input())).toEqual(direct);
    } finally {
      await pool.destroy();
    }
  });
});

describe('unavailable Greeks name each missing input', () => {
  // S 100, K 90, T 0.5 y, r 0.05, q 0.02; a fair call is worth 13.65 at 25 % vol.
  interface Contract {
    spot: number | null;
    rate: number | null;
    q: number;
    strike: number;
    t: number;
    right: OptionType;
    bid: number | null;
    ask: number | null;
  }
  const ok: Contract = { spot: 100, rate: 0.05, q: 0.02, strike: 90, t: 0.5, right: 'call', bid: 13.4, ask: 13.6 };
  const greeksOf = (o: Partial<Contract>) => {
    const c = { ...ok, ...o };
    return contractGreeks(c.spot, c.rate, c.q, c.strike, c.t, c.right, c.bid, c.ask);
  };
  const missingOf = (g: ContractGreeks) => ('unavailable' in g ? g.unavailable.missingInputs : 'computed');

  it('when every input is present, then the Greeks are computed', () => {
    expect(greeksOf({})).toMatchObject({ greeksSource: 'computed' });
  });

  it('when the spot is null, then spotPrice is missing and the detail says no underlying close is known', () => {
    expect(greeksOf({ spot: null })).toEqual({
      unavailable: {
        reason: 'not_supplied_and_not_computable',
        missingInputs: ['spotPrice'],
        detail: "Greeks cannot be computed: no underlying close is known at the quote's instant.",
      },
    });
  });

  it('when the rate, the bid or the ask is null, then each is named', () => {
    expect(missingOf(greeksOf({ rate: null }))).toEqual(['riskFreeRate']);
    expect(missingOf(greeksOf({ bid: null }))).toEqual(['bid']);
    expect(missingOf(greeksOf({ ask: null }))).toEqual(['ask']);
    expect(missingOf(greeksOf({ bid: null, ask: null }))).toEqual(['bid', 'ask']);
  });

  it('when bid and ask are both 0, then quote is missing; a zero bid alone is a market', () => {
    expect(missingOf(greeksOf({ bid: 0, ask: 0 }))).toEqual(['quote']);
    // Bid 0, ask 0.02 on a far out-of-the-money call: mid 0.01 solves.
    expect(greeksOf({ strike: 200, bid: 0, ask: 0.02 })).toMatchObject({ greeksSource: 'computed' });
  });

  it('when the contract is at or past expiry, then timeToExpiry is missing', () => {
    expect(missingOf(greeksOf({ t: 0 }))).toEqual(['timeToExpiry']);
    expect(missingOf(greeksOf({ t: -1 / 365 }))).toEqual(['timeToExpiry']);
  });

  it('when several inputs are missing, then all are named, each with its sentence', () => {
    const g = greeksOf({ spot: null, rate: null, ask: null, t: 0 });
    expect(g).toEqual({
      unavailable: {
        reason: 'not_supplied_and_not_computable',
        missingInputs: ['spotPrice', 'riskFreeRate', 'ask', 'timeToExpiry'],
        detail:
          "Greeks cannot be computed: no underlying close is known at the quote's instant; no risk-free rate is known at the quote's instant; the quote has no ask; the contract is at or past expiry (time to expiry 0 years).",
      },
    });
  });

  it('when the mid is below the discounted intrinsic value, then impliedVolatility is missing and the detail names the mid and the bound', () => {
    // Mid (10.9 + 11.1)/2 = 11; discounted intrinsic 100·e^(−0.01) − 90·e^(−0.025) = 11.2270912923669 (mpmath).
    expect(greeksOf({ bid: 10.9, ask: 11.1 })).toEqual({
      unavailable: {
        reason: 'not_supplied_and_not_computable',
        missingInputs: ['impliedVolatility'],
        detail:
          'Greeks cannot be computed: the implied volatility does not solve: mid 11 is at or below the discounted intrinsic value 11.2271 (S·e^(−qT) − K·e^(−rT)): no volatility prices a call that low; check the quote and the spot.',
      },
    });
  });

  it('when unavailable, then no Greek is present at all', () => {
    const g = greeksOf({ spot: null });
    for (const key of ['delta', 'gamma', 'theta', 'vega', 'rho', 'impliedVolatility', 'greeksSource']) expect(g).not.toHaveProperty(key);
  });

  it('when the columns differ in length, then a RangeError', () => {
    expect(() =>
      chainGreeks({
        spot: [100, 100],
        rate: [0.05, 0.05],
        dividendYield: 0,
        strike: [90, 100],
        timeYears: [0.5],
        right: ['call', 'put'],
        bid: [1, 1],
        ask: [2, 2],
      }),
    ).toThrow('timeYears has 1 entries, strike has 2');
  });
});
