import { afterAll, describe, expect, it } from 'vitest';
import { optionPrice, probability, strategyEv } from '../../server/analytics/service.ts';
import { OptionPriceSchema, ProbabilitySchema, StrategyEvSchema } from '../../server/analytics/schema.ts';
import { OptionPriceDataSchema, ProbabilityDataSchema, StrategyEvDataSchema } from '../../server/analytics/responses.ts';
import { WorkerPool } from '../../workers/pool.ts';

// Issue 31, point 6: the three POST analytics answers over the corners of what their request schemas accept. What is
// checked is the rule, not values (the values are checked against mpmath in black-scholes.test.ts, probability.test.ts
// and strategy-ev.test.ts): every answer is valid by its response schema, carries no NaN or ±Infinity (which
// JSON.stringify would silently turn into null), and a figure is null exactly when nullReasons names it.

const pool = new WorkerPool({ threads: 0, maxQueue: 4, taskTimeoutMs: 60_000 });
afterAll(() => pool.destroy());

const PRICES = [5e-324, 1e-300, 1e-8, 1, 100, 1e8, 1e300, 1.7976931348623157e308];
const DAYS = [1 / 1440, 30, 3650];
const VOLS = [5e-324, 1e-9, 0.2, 5];
const RATES = [-0.2, 1];

/**
 * Every corner of the request schemas: a spot, a second price (the strike or the target), an expiry, a volatility and a
 * rate from the lists above, for each of `kinds`, with a dividend yield of −0.2 at rate 1 and of 1 otherwise.
 */
function* corners<K>(kinds: readonly K[]) {
  for (const spot of PRICES)
    for (const price of PRICES)
      for (const expiryDays of DAYS)
        for (const vol of VOLS)
          for (const rate of RATES) {
            const dividendYield = rate === 1 ? -0.2 : 1;
            for (const kind of kinds) yield { spot, price, expiryDays, vol, rate, kind, dividendYield };
          }
}

/** Every number anywhere in v is finite. */
function allFinite(v: unknown, where = 'data'): void {
  if (typeof v === 'number') expect(Number.isFinite(v), where).toBe(true);
  else if (Array.isArray(v)) v.forEach((x, i) => allFinite(x, `${where}.${i}`));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) allFinite(x, `${where}.${k}`);
}

describe('option-price over the schema bounds', () => {
  it('is valid, finite, and null exactly where nullReasons says, on every corner', () => {
    let nulls = 0;
    for (const { spot, price: strike, expiryDays, vol, rate, kind: type, dividendYield } of corners(['call', 'put'] as const)) {
      const body = OptionPriceSchema.parse({ spot, strike, expiryDays, rate, vol, type, dividendYield });
      const data = optionPrice(body);
      OptionPriceDataSchema.parse(data);
      allFinite(data);
      const figures: Record<string, number | null> = { price: data.price };
      for (const [k, v] of Object.entries(data.greeks)) figures[`greeks.${k}`] = v;
      for (const [path, v] of Object.entries(figures)) {
        expect(v === null, `${path} ${JSON.stringify(body)}`).toBe(path in data.nullReasons);
        if (v === null) nulls += 1;
        // With σ > 0 no price, delta, gamma, vega or rho is 0 (theta can be, at one point of a continuum).
        if (path !== 'greeks.theta' && v !== null) expect(v, `${path} ${JSON.stringify(body)}`).not.toBe(0);
      }
    }
    expect(nulls).toBeGreaterThan(0); // the corners do reach both ends of the range
  });
});

describe('probability over the schema bounds', () => {
  it('is valid, finite, and null exactly where nullReasons says, on every corner', () => {
    for (const { spot, price: target, expiryDays, vol, rate, kind: direction, dividendYield } of corners(['long', 'short'] as const)) {
      const body = ProbabilitySchema.parse({ spot, target, expiryDays, rate, vol, direction, dividendYield });
      const data = probability(body);
      ProbabilityDataSchema.parse(data);
      allFinite(data);
      for (const k of ['probabilityInTheMoneyAtExpiry', 'probabilityOfTouchBeforeExpiry'] as const) {
        expect(data[k] === null, `${k} ${JSON.stringify(body)}`).toBe(k in data.nullReasons);
        expect(data[k], `${k} ${JSON.stringify(body)}`).not.toBe(0);
      }
    }
  });
});

describe('strategy-ev over the schema bounds', () => {
  it('is valid, finite, and a dollar figure is null only with its reason (or, for maxProfit/maxLoss, when unbounded), on every corner', async () => {
    const legsFor = (k: number) => ({
      long_call: [{ action: 'buy', type: 'call', strike: k, quantity: 1 }],
      short_put: [{ action: 'sell', type: 'put', strike: k, quantity: 100_000 }],
      iron_condor: [
        { action: 'buy', type: 'put', strike: k * 0.8, quantity: 3 },
        { action: 'sell', type: 'put', strike: k * 0.9, quantity: 3 },
        { action: 'sell', type: 'call', strike: k * 1.1, quantity: 3 },
        { action: 'buy', type: 'call', strike: k * 1.2, quantity: 3 },
      ],
    });
    const spots = [5e-324, 1e-300, 100, 1e154, 1e300, 1e306];
    const reasons = new Set<string>();
    for (const spot of spots)
      for (const expiryDays of [1 / 1440, 3650])
        for (const vol of [1e-9, 5])
          for (const [structure, legs] of Object.entries(legsFor(Math.max(spot, 1e-300))))
            for (const contractMultiplier of [1, 10_000]) {
              const body = StrategyEvSchema.parse({ structure, legs, spot, expiryDays, rate: 0.05, vol, contractMultiplier, drift: 0.3 });
              const data = await strategyEv(pool, body);
              StrategyEvDataSchema.parse(data);
              allFinite(data);
              const why = data.nullReasons as Record<string, string>;
              for (const r of [...Object.values(why), ...data.legs.flatMap((l) => Object.values(l.nullReasons))]) reasons.add(r);
              const where = JSON.stringify(body);
              for (const k of ['netCreditDebit', 'trueExpectedValue', 'expectedPayoffAtExpiry'] as const)
                expect(data[k] === null, `${k} ${where}`).toBe(k in why);
              expect(data.maxProfit === null, where).toBe(data.maxProfitUnbounded || 'maxProfit' in why);
              expect(data.maxLoss === null, where).toBe(data.maxLossUnbounded || 'maxLoss' in why);
              for (const k of ['standardDeviation', 'downsideDeviation'] as const)
                expect(data.riskMetrics[k] === null, `${k} ${where}`).toBe(`riskMetrics.${k}` in why);
              if (data.breakevens.includes(null)) expect(why.breakevens).toBeDefined();
              for (const leg of data.legs)
                for (const k of ['fairValuePerShare', 'premium', 'cashFlow'] as const) expect(leg[k] === null, `${k} ${where}`).toBe(k in leg.nullReasons);
              expect(Number.isFinite(data.probabilityOfProfit)).toBe(true);
            }
    expect([...reasons].sort()).toEqual(['overflow', 'underflow']); // the corners reach both ends of the range
  }, 120_000);
});
