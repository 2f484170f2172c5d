import { describe, expect, it } from 'vitest';
import { priceOption } from '../../workers/black-scholes.ts';
import { gaussLegendre } from '../../workers/lognormal-quadrature.ts';
import { normCdf } from '../../workers/normal-distribution.ts';
import { STRUCTURES, checkStructure } from '../../workers/option-structures.ts';
import { evaluateStrategy as evaluateRaw } from '../../workers/strategy-ev.ts';
import { STRUCTURE_NAMES, type StructureName, type OptionLeg, type StrategyInput, type StrategyResult } from '../../workers/contract.ts';

// Independent references used here:
//  - closed-form lognormal partial expectations written out in this file
//    (E[S_T 1{S_T>K}] = S e^{μT} N(d1), P(S_T>K) = N(d2), E[S_T² 1{S_T>K}] = S² e^{(2μ+σ²)T} N(d2 + 2σ√T));
//  - the BSM price (itself checked against mpmath in black-scholes.test.ts) for
//    leg premiums, i.e. the fair value the quadrature must reproduce;
//  - a brute-force composite Simpson rule written in this file over a fine
//    uniform grid (no splitting, no Gauss–Legendre) for the risk metrics.

/** The result with every figure a double, as for any ordinary input: asserted (nullReasons empty). */
type Finite = Omit<StrategyResult, 'legs' | 'netCreditDebit' | 'expectedPayoffAtExpiry' | 'trueExpectedValue' | 'breakevens' | 'riskMetrics'> & {
  legs: Array<StrategyResult['legs'][number] & { fairValuePerShare: number; premium: number; cashFlow: number }>;
  netCreditDebit: number;
  expectedPayoffAtExpiry: number;
  trueExpectedValue: number;
  breakevens: number[];
  riskMetrics: StrategyResult['riskMetrics'] & { standardDeviation: number; downsideDeviation: number };
};
function evaluateStrategy(input: StrategyInput): Finite {
  const r = evaluateRaw(input);
  expect(r.nullReasons).toEqual({});
  for (const leg of r.legs) expect(leg.nullReasons).toEqual({});
  return r as Finite;
}

const MARKET = { spot: 100, timeYears: 45 / 365, rate: 0.045, vol: 0.28, dividendYield: 0.015 };
const M = 100; // default contract multiplier

const buy = (type: 'call' | 'put', strike: number, quantity = 1): OptionLeg => ({ action: 'buy', type, strike, quantity });
const sell = (type: 'call' | 'put', strike: number, quantity = 1): OptionLeg => ({ action: 'sell', type, strike, quantity });

// Realistic legs for every structure the API names, plus a custom one.
const EXAMPLES: Record<StructureName, OptionLeg[]> = {
  long_call: [buy('call', 105)],
  long_put: [buy('put', 95)],
  short_call: [sell('call', 110, 2)],
  short_put: [sell('put', 92)],
  bull_call_spread: [buy('call', 100, 3), sell('call', 110, 3)],
  bear_put_spread: [buy('put', 100), sell('put', 90)],
  bull_put_spread: [sell('put', 97), buy('put', 90)],
  bear_call_spread: [sell('call', 103), buy('call', 112)],
  long_straddle: [buy('call', 100), buy('put', 100)],
  short_straddle: [sell('put', 100), sell('call', 100)],
  long_strangle: [buy('put', 90), buy('call', 110)],
  short_strangle: [sell('put', 88), sell('call', 112)],
  iron_condor: [buy('put', 85), sell('put', 92), sell('call', 108), buy('call', 115)],
  iron_butterfly: [buy('put', 90), sell('put', 100), sell('call', 100), buy('call', 110)],
  butterfly: [buy('call', 95), sell('call', 100, 2), buy('call', 105)],
  // a 1×3 call ratio with a put hedge: unbounded loss, three strikes, odd quantities
  custom: [buy('call', 100), sell('call', 108, 3), buy('put', 90, 2)],
};

const premiumPerShare = (leg: OptionLeg, m = MARKET) => priceOption({ ...m, strike: leg.strike, type: leg.type }).price;
const sumAbsPremiums = (legs: readonly OptionLeg[], mult = M) => legs.reduce((a, l) => a + premiumPerShare(l) * l.quantity * mult, 0);
const netCredit = (legs: readonly OptionLeg[], mult = M, m = MARKET) =>
  legs.reduce((a, l) => a + (l.action === 'sell' ? 1 : -1) * premiumPerShare(l, m) * l.quantity * mult, 0);

function run(structure: StructureName, extra: Partial<StrategyInput> = {}) {
  return evaluateStrategy({ structure, legs: EXAMPLES[structure], ...MARKET, ...extra });
}

describe('structure table', () => {
  it('has exactly the 16 structure names the API accepts', () => {
    expect([...STRUCTURE_NAMES].sort()).toEqual(
      [
        'long_call',
        'long_put',
        'short_call',
        'short_put',
        'bull_call_spread',
        'bear_put_spread',
        'bull_put_spread',
        'bear_call_spread',
        'long_straddle',
        'short_straddle',
        'long_strangle',
        'short_strangle',
        'iron_condor',
        'iron_butterfly',
        'butterfly',
        'custom',
      ].sort(),
    );
    expect(Object.keys(STRUCTURES).sort()).toEqual([...STRUCTURE_NAMES].sort());
  });

  it.each(STRUCTURE_NAMES.map((n) => [n]))('%s accepts its example legs (in any order)', (name) => {
    expect(checkStructure(name, EXAMPLES[name])).toEqual([]);
    expect(checkStructure(name, [...EXAMPLES[name]].reverse())).toEqual([]);
  });

  it('rejects wrong shapes with readable problems', () => {
    const cases: Array<[StructureName, OptionLeg[]]> = [
      ['long_call', [sell('call', 100)]],
      ['long_call', [buy('call', 100), buy('put', 90)]],
      ['bull_call_spread', [buy('call', 110), sell('call', 100)]], // strikes inverted (that is a bear call spread)
      ['bull_call_spread', [buy('call', 100, 2), sell('call', 110, 1)]], // unequal quantities
      ['long_straddle', [buy('call', 100), buy('put', 95)]], // different strikes
      ['long_strangle', [buy('put', 110), buy('call', 90)]], // put strike above call strike
      ['iron_condor', [buy('put', 85), sell('put', 92), sell('call', 108)]], // missing wing
      ['iron_condor', [buy('put', 92), sell('put', 85), sell('call', 108), buy('call', 115)]], // K1 > K2
      ['iron_condor', [buy('put', 85), sell('put', 100), sell('call', 100), buy('call', 115)]], // K2 = K3 is an iron butterfly
      ['iron_butterfly', [buy('put', 90), sell('put', 100), sell('call', 102), buy('call', 110)]],
      ['butterfly', [buy('call', 95), sell('call', 100), buy('call', 105)]], // middle quantity not 2×
      ['butterfly', [buy('call', 95), sell('call', 100, 2), buy('call', 110)]], // broken wing
      ['butterfly', [buy('call', 95), sell('put', 100, 2), buy('call', 105)]], // mixed types
    ];
    for (const [name, legs] of cases) {
      const problems = checkStructure(name, legs);
      expect(problems.length, `${name} ${JSON.stringify(legs)}`).toBeGreaterThan(0);
      for (const p of problems) expect(typeof p).toBe('string');
    }
    expect(checkStructure('condor_of_doom', [buy('call', 100)])[0]).toMatch(/unknown structure/);
  });

  it('merges duplicate legs before matching (two 1-lots at the body of a butterfly)', () => {
    expect(checkStructure('butterfly', [buy('put', 95), sell('put', 100), sell('put', 100), buy('put', 105)])).toEqual([]);
  });

  it('custom accepts anything', () => {
    expect(STRUCTURES.custom.check(EXAMPLES.custom)).toEqual([]);
  });
});

describe('risk-neutral EV of every fairly priced structure is ≈ 0', () => {
  it.each(STRUCTURE_NAMES.map((n) => [n]))('%s at fair prices: risk-neutral EV 0 (within 1e-6 of the premiums), omega 1, Kelly 0', (name) => {
    const legs = EXAMPLES[name];
    const r = run(name);
    const scale = sumAbsPremiums(legs);
    expect(r.assumptions.measure).toBe('risk_neutral');
    expect(r.assumptions.driftUsed).toBeCloseTo(MARKET.rate - MARKET.dividendYield, 15);
    expect(Math.abs(r.trueExpectedValue)).toBeLessThanOrEqual(1e-6 * scale);
    // the same without the service's snapping of rounding-level amounts to 0
    const raw = Math.exp(-MARKET.rate * MARKET.timeYears) * r.expectedPayoffAtExpiry + r.netCreditDebit;
    expect(Math.abs(raw)).toBeLessThanOrEqual(1e-6 * scale);
    // netCreditDebit = Σ (sell ? + : −) premium × quantity × multiplier
    expect(Math.abs(r.netCreditDebit - netCredit(legs))).toBeLessThan(1e-9 * scale);
    // EV = e^{−rT} E[payoff] + netCreditDebit
    expect(r.trueExpectedValue).toBeCloseTo(Math.exp(-MARKET.rate * MARKET.timeYears) * r.expectedPayoffAtExpiry + r.netCreditDebit, 9);
    // With EV = 0 the gains and losses balance: omega = 1, Kelly bets nothing.
    if (r.riskMetrics.omegaRatio !== null) expect(Math.abs(r.riskMetrics.omegaRatio - 1)).toBeLessThan(1e-9);
    if (r.riskMetrics.kellyFraction !== null) expect(r.riskMetrics.kellyFraction).toBeLessThan(1e-9);
  });

  it('holds at much tighter tolerance and across extreme inputs too', () => {
    const markets = [
      { spot: 100, timeYears: 1 / 365, rate: 0.05, vol: 0.1, dividendYield: 0 },
      { spot: 3.5, timeYears: 2, rate: 0.01, vol: 1.5, dividendYield: 0.04 },
      { spot: 4000, timeYears: 10, rate: 0.08, vol: 0.6, dividendYield: 0.02 },
    ];
    for (const mk of markets) {
      // strikes at −2, −0.5, +0.5, +2 standard deviations of ln S_T, so every leg has a real premium
      const sd = mk.vol * Math.sqrt(mk.timeYears);
      const [k1, k2, k3, k4] = [-2, -0.5, 0.5, 2].map((k) => mk.spot * Math.exp(k * sd));
      const legs = [buy('put', k1), sell('put', k2), sell('call', k3), buy('call', k4)];
      const r = evaluateStrategy({ structure: 'iron_condor', legs, ...mk });
      const scale = legs.reduce((a, l) => a + priceOption({ ...mk, strike: l.strike, type: l.type }).price * M, 0);
      expect(Math.abs(r.trueExpectedValue)).toBeLessThan(1e-11 * scale);
      const raw = Math.exp(-mk.rate * mk.timeYears) * r.expectedPayoffAtExpiry + r.netCreditDebit;
      expect(Math.abs(raw)).toBeLessThan(1e-11 * scale);
    }
  });
});

describe('single long call', () => {
  const K = 105;
  const legs = [buy('call', K)];

  it('integrated undiscounted payoff = S e^{(r−q)T} N(d1) − K N(d2) to 1e-8 relative', () => {
    const { spot: S, timeYears: T, rate: r, vol: v, dividendYield: q } = MARKET;
    const d1 = (Math.log(S / K) + (r - q + (v * v) / 2) * T) / (v * Math.sqrt(T));
    const d2 = d1 - v * Math.sqrt(T);
    const forwardValue = S * Math.exp((r - q) * T) * normCdf(d1) - K * normCdf(d2);
    const res = evaluateStrategy({ structure: 'long_call', legs, ...MARKET, contractMultiplier: 1 });
    expect(Math.abs(res.expectedPayoffAtExpiry / forwardValue - 1)).toBeLessThan(1e-8);
  });

  it('also under a real-world drift μ: S e^{μT} N(d1μ) − K N(d2μ)', () => {
    const { spot: S, timeYears: T, rate: r, vol: v } = MARKET;
    const mu = 0.25;
    const d1 = (Math.log(S / K) + (mu + (v * v) / 2) * T) / (v * Math.sqrt(T));
    const d2 = d1 - v * Math.sqrt(T);
    const expected = S * Math.exp(mu * T) * normCdf(d1) - K * normCdf(d2);
    const res = evaluateStrategy({ structure: 'long_call', legs, ...MARKET, drift: mu });
    expect(Math.abs(res.expectedPayoffAtExpiry / (expected * M) - 1)).toBeLessThan(1e-8);
    const premium = premiumPerShare(legs[0]) * M;
    expect(Math.abs(res.trueExpectedValue - (Math.exp(-r * T) * expected * M - premium))).toBeLessThan(1e-8 * premium);
  });

  it('max loss = premium (bounded), max profit unbounded, debit is negative', () => {
    const res = run('long_call');
    const premium = premiumPerShare(legs[0]) * M;
    expect(res.netCreditDebit).toBeCloseTo(-premium, 10);
    expect(res.maxLossUnbounded).toBe(false);
    expect(res.maxProfitUnbounded).toBe(true);
    expect(res.maxProfit).toBeNull();
    expect(res.naivePopTimesMaxProfit).toBeNull();
    expect(res.maxLoss).toBeCloseTo(premium, 10);
    expect(res.breakevens).toHaveLength(1);
    expect(res.breakevens[0]).toBeCloseTo(K + premium / M, 10);
  });

  it('probabilityOfProfit = P(S_T > K + premium per share) in closed form', () => {
    const { spot: S, timeYears: T, rate: r, vol: v, dividendYield: q } = MARKET;
    const be = K + premiumPerShare(legs[0]);
    for (const mu of [r - q, 0.3, -0.2]) {
      const pop = normCdf((Math.log(S / be) + (mu - (v * v) / 2) * T) / (v * Math.sqrt(T)));
      const res = evaluateStrategy({ structure: 'long_call', legs, ...MARKET, drift: mu === r - q ? undefined : mu });
      expect(Math.abs(res.probabilityOfProfit - pop)).toBeLessThan(1e-14);
    }
  });

  it('standard deviation matches the closed-form lognormal second moment', () => {
    const { spot: S, timeYears: T, rate: r, vol: v, dividendYield: q } = MARKET;
    const mu = r - q;
    const s = v * Math.sqrt(T);
    const d2 = (Math.log(S / K) + (mu - (v * v) / 2) * T) / s;
    const e1 = S * Math.exp(mu * T) * normCdf(d2 + s) - K * normCdf(d2); // E[(S−K)+]
    const e2 = S * S * Math.exp((2 * mu + v * v) * T) * normCdf(d2 + 2 * s) - 2 * K * S * Math.exp(mu * T) * normCdf(d2 + s) + K * K * normCdf(d2); // E[((S−K)+)²]
    const sd = Math.exp(-r * T) * Math.sqrt(e2 - e1 * e1) * M;
    const res = run('long_call');
    expect(Math.abs(res.riskMetrics.standardDeviation / sd - 1)).toBeLessThan(1e-8);
  });
});

describe('max profit / max loss / breakevens, hand-computed', () => {
  it('short put: credit is max profit, max loss = (K − premium) × 100', () => {
    const res = run('short_put');
    const p = premiumPerShare(EXAMPLES.short_put[0]);
    expect(res.netCreditDebit).toBeCloseTo(p * M, 10);
    expect(res.maxProfitUnbounded).toBe(false);
    expect(res.maxLossUnbounded).toBe(false);
    expect(res.maxProfit).toBeCloseTo(p * M, 10);
    expect(res.maxLoss).toBeCloseTo((92 - p) * M, 9);
    expect(res.breakevens).toHaveLength(1);
    expect(res.breakevens[0]).toBeCloseTo(92 - p, 10);
    expect(res.naivePopTimesMaxProfit).toBeCloseTo(res.probabilityOfProfit * p * M, 10);
  });

  it('iron condor: max profit = net credit, max loss = wider wing − credit, two breakevens', () => {
    const legs = EXAMPLES.iron_condor; // 85 / 92 / 108 / 115
    const [p85, p92, p108, p115] = legs.map((l) => premiumPerShare(l));
    const credit = p92 + p108 - p85 - p115; // per share
    expect(credit).toBeGreaterThan(0);
    const res = run('iron_condor');
    expect(res.netCreditDebit).toBeCloseTo(credit * M, 10);
    expect(res.maxProfitUnbounded).toBe(false);
    expect(res.maxLossUnbounded).toBe(false);
    expect(res.maxProfit).toBeCloseTo(credit * M, 10);
    expect(res.maxLoss).toBeCloseTo((7 - credit) * M, 9);
    expect(res.breakevens).toHaveLength(2);
    expect(res.breakevens[0]).toBeCloseTo(92 - credit, 10);
    expect(res.breakevens[1]).toBeCloseTo(108 + credit, 10);
    // POP = P(92 − c < S_T < 108 + c), closed form, risk-neutral
    const { spot: S, timeYears: T, rate: r, vol: v, dividendYield: q } = MARKET;
    const z = (x: number) => (Math.log(x / S) - (r - q - (v * v) / 2) * T) / (v * Math.sqrt(T));
    expect(res.probabilityOfProfit).toBeCloseTo(normCdf(z(108 + credit)) - normCdf(z(92 - credit)), 14);
    expect(res.naivePopTimesMaxProfit).toBeCloseTo(res.probabilityOfProfit * credit * M, 9);
    expect(res.riskMetrics.expectedReturn).toBeCloseTo(res.trueExpectedValue / ((7 - credit) * M), 14);
  });

  it('iron condor with unequal wings uses the wider wing', () => {
    const legs = [buy('put', 80), sell('put', 92), sell('call', 108), buy('call', 113)];
    const credit = netCredit(legs, 1);
    const res = evaluateStrategy({ structure: 'iron_condor', legs, ...MARKET });
    expect(res.maxLoss).toBeCloseTo((12 - credit) * M, 9);
  });

  it('short call, short straddle and the 1×3 custom ratio: loss unbounded → maxLoss, expectedReturn, kelly null', () => {
    for (const name of ['short_call', 'short_straddle', 'custom'] as const) {
      const res = run(name);
      expect(res.maxLossUnbounded).toBe(true);
      expect(res.maxLoss).toBeNull();
      expect(res.riskMetrics.expectedReturn).toBeNull();
      expect(res.riskMetrics.kellyFraction).toBeNull();
    }
    const sc = run('short_call');
    expect(sc.maxProfit).toBeCloseTo(premiumPerShare(EXAMPLES.short_call[0]) * 2 * M, 10);
  });

  it('long straddle: profit unbounded, max loss = both premiums, breakevens K ± total premium', () => {
    const res = run('long_straddle');
    const tot = premiumPerShare(buy('call', 100)) + premiumPerShare(buy('put', 100));
    expect(res.maxProfitUnbounded).toBe(true);
    expect(res.maxLoss).toBeCloseTo(tot * M, 10);
    expect(res.breakevens[0]).toBeCloseTo(100 - tot, 10);
    expect(res.breakevens[1]).toBeCloseTo(100 + tot, 10);
  });

  it('butterfly: max profit = body width − debit at the body strike, max loss = debit', () => {
    const res = run('butterfly');
    const debit = -netCredit(EXAMPLES.butterfly, 1);
    expect(res.maxProfit).toBeCloseTo((5 - debit) * M, 9);
    expect(res.maxLoss).toBeCloseTo(debit * M, 10);
  });
});

describe('real-world drift', () => {
  it('positive drift gives a long call positive EV; the measure and drift are reported', () => {
    const res = run('long_call', { drift: 0.3 });
    expect(res.assumptions.measure).toBe('real_world');
    expect(res.assumptions.driftUsed).toBe(0.3);
    expect(res.trueExpectedValue).toBeGreaterThan(0);
    expect(res.riskMetrics.kellyFraction).toBeGreaterThan(0);
    expect(res.riskMetrics.omegaRatio).toBeGreaterThan(1);
    // premiums do not depend on the measure
    expect(res.netCreditDebit).toBeCloseTo(run('long_call').netCreditDebit, 12);
  });

  it('negative drift makes it negative, and Kelly says bet nothing', () => {
    const res = run('long_call', { drift: -0.3 });
    expect(res.trueExpectedValue).toBeLessThan(0);
    expect(res.riskMetrics.kellyFraction).toBe(0);
    expect(res.riskMetrics.sortinoRatio).toBeLessThan(0);
  });

  it('drift equal to r − q reproduces the risk-neutral numbers', () => {
    const a = run('iron_condor');
    const b = run('iron_condor', { drift: MARKET.rate - MARKET.dividendYield });
    expect(b.assumptions.measure).toBe('real_world');
    expect(b.trueExpectedValue).toBeCloseTo(a.trueExpectedValue, 12);
    expect(b.probabilityOfProfit).toBeCloseTo(a.probabilityOfProfit, 14);
  });
});

// ── Brute-force reference for the risk metrics ───────────────────────────────
// Composite Simpson's rule on a uniform grid in z = (ln S_T − m)/s over
// [−14, 14 + 2s] with 200 000 intervals; no splitting at kinks, so it converges
// only as O(h²) there (h ≈ 1.4e-4 → ~1e-8 relative), which is ample for the
// 1e-6 tolerance used below.
function bruteForce(input: StrategyInput) {
  const { spot: S, timeYears: T, rate: r, vol: v } = input;
  const q = input.dividendYield ?? 0;
  const mult = input.contractMultiplier ?? M;
  const mu = input.drift ?? r - q;
  const m = Math.log(S) + (mu - (v * v) / 2) * T;
  const s = v * Math.sqrt(T);
  let ncd = 0;
  for (const l of input.legs) {
    const p = priceOption({ spot: S, strike: l.strike, timeYears: T, rate: r, vol: v, dividendYield: q, type: l.type }).price;
    ncd += (l.action === 'sell' ? 1 : -1) * p * l.quantity * mult;
  }
  const pv = (x: number) => {
    let pay = 0;
    for (const l of input.legs) {
      const intrinsic = l.type === 'call' ? Math.max(x - l.strike, 0) : Math.max(l.strike - x, 0);
      pay += (l.action === 'buy' ? 1 : -1) * l.quantity * mult * intrinsic;
    }
    return Math.exp(-r * T) * pay + ncd;
  };
  const a = -14;
  const b = 14 + 2 * s;
  const n = 200_000;
  const h = (b - a) / n;
  const zs = new Float64Array(n + 1);
  const ws = new Float64Array(n + 1);
  const xs = new Float64Array(n + 1);
  for (let i = 0; i <= n; i += 1) {
    const z = a + i * h;
    zs[i] = z;
    ws[i] = ((((i === 0 || i === n ? 1 : i % 2 ? 4 : 2) * h) / 3) * Math.exp(-0.5 * z * z)) / Math.sqrt(2 * Math.PI);
    xs[i] = pv(Math.exp(m + s * z));
  }
  const E = (f: (x: number) => number) => {
    let acc = 0;
    for (let i = 0; i <= n; i += 1) acc += ws[i] * f(xs[i]);
    return acc;
  };
  const ev = E((x) => x);
  const sd = Math.sqrt(E((x) => (x - ev) ** 2));
  const dd = Math.sqrt(E((x) => Math.min(x, 0) ** 2));
  const omega = E((x) => Math.max(x, 0)) / E((x) => Math.max(-x, 0));
  // Kelly: maximise E[ln(1 + f x / C)] by golden-section search (G is concave).
  const kellyOf = (C: number) => {
    const G = (f: number) => E((x) => Math.log(1 + (f * x) / C));
    let lo = 0;
    let hi = 1 - 1e-9;
    const gr = (Math.sqrt(5) - 1) / 2;
    for (let it = 0; it < 45; it += 1) {
      const c = hi - gr * (hi - lo);
      const d = lo + gr * (hi - lo);
      if (G(c) > G(d)) hi = d;
      else lo = c;
    }
    return (lo + hi) / 2;
  };
  return { ev, sd, dd, omega, kellyOf };
}

describe('risk metrics against a brute-force Simpson integration', () => {
  const cases: Array<[string, StrategyInput]> = [
    ['long call, bullish drift', { structure: 'long_call', legs: EXAMPLES.long_call, ...MARKET, drift: 0.35 }],
    ['iron condor, mild drift', { structure: 'iron_condor', legs: EXAMPLES.iron_condor, ...MARKET, drift: 0.0 }],
    ['bull call spread ×3, bullish', { structure: 'bull_call_spread', legs: EXAMPLES.bull_call_spread, ...MARKET, drift: 0.5, contractMultiplier: 10 }],
    ['custom ratio, bearish', { structure: 'custom', legs: EXAMPLES.custom, ...MARKET, drift: -0.1 }],
  ];
  const rel = (a: number, b: number) => Math.abs(a - b) / Math.max(Math.abs(b), 1e-12);

  it.each(cases)('%s: EV, deviations, omega, Sortino and Kelly match the integration', (_label, input) => {
    const res = evaluateStrategy(input);
    const ref = bruteForce(input);
    const scale = sumAbsPremiums(input.legs, input.contractMultiplier ?? M);
    expect(Math.abs(res.trueExpectedValue - ref.ev)).toBeLessThan(1e-6 * scale);
    expect(rel(res.riskMetrics.standardDeviation, ref.sd)).toBeLessThan(1e-6);
    expect(rel(res.riskMetrics.downsideDeviation, ref.dd)).toBeLessThan(1e-6);
    expect(rel(res.riskMetrics.omegaRatio as number, ref.omega)).toBeLessThan(1e-6);
    expect(rel(res.riskMetrics.sortinoRatio as number, ref.ev / ref.dd)).toBeLessThan(1e-5);
    if (res.maxLoss !== null) {
      expect(res.riskMetrics.expectedReturn).toBeCloseTo(res.trueExpectedValue / res.maxLoss, 12);
      const kRef = res.trueExpectedValue > 0 ? ref.kellyOf(res.maxLoss) : 0;
      expect(Math.abs((res.riskMetrics.kellyFraction as number) - kRef)).toBeLessThan(1e-5);
    }
  });
});

describe('integration metadata and quadrature', () => {
  it('reports Gauss–Legendre with the truncation bound 2Φ(−12)', () => {
    const info = run('iron_condor').assumptions.integration;
    expect(info.method).toBe('gauss-legendre');
    expect(info.pointsPerPanel).toBe(32);
    // [−12, 12 + 2σ√T] widened to 12 below the lowest and 12 + 2σ√T above the highest split point (strike or zero of
    // the present-value P&L); the iron condor's strikes are 85 and 115, its P&L zeros between them.
    const sd = MARKET.vol * Math.sqrt(MARKET.timeYears);
    const m = Math.log(MARKET.spot) + (MARKET.rate - MARKET.dividendYield - MARKET.vol ** 2 / 2) * MARKET.timeYears;
    expect(info.lowerLimitZ).toBeCloseTo((Math.log(85) - m) / sd - 12, 12);
    expect(info.upperLimitZ).toBeCloseTo((Math.log(115) - m) / sd + 12 + 2 * sd, 12);
    // Φ(−12) = 1.7764821120776e-33 (mpmath)
    expect(info.truncationRelativeErrorBound).toBeCloseTo(2 * 1.7764821120776e-33, 45);
    expect(info.truncationBoundHonoured).toBe(true);
  });

  it('Gauss–Legendre rule integrates polynomials of degree 2n−1 exactly', () => {
    const { nodes, weights } = gaussLegendre(32);
    // ∫₋₁¹ x^d dx = 2/(d + 1) for even d, 0 for odd d; 2n − 1 = 63.
    for (const deg of [0, 1, 2, 10, 40, 62, 63]) {
      let acc = 0;
      for (let i = 0; i < 32; i += 1) acc += weights[i] * nodes[i] ** deg;
      expect(Math.abs(acc - (deg % 2 ? 0 : 2 / (deg + 1))), `degree ${deg}`).toBeLessThan(1e-14);
    }
  });

  it('quantity and multiplier scale every dollar figure linearly', () => {
    const a = evaluateStrategy({ structure: 'iron_condor', legs: EXAMPLES.iron_condor, ...MARKET, drift: 0.2, contractMultiplier: 1 });
    const legs5 = EXAMPLES.iron_condor.map((l) => ({ ...l, quantity: 5 }));
    const b = evaluateStrategy({ structure: 'iron_condor', legs: legs5, ...MARKET, drift: 0.2, contractMultiplier: 100 });
    for (const k of ['netCreditDebit', 'trueExpectedValue', 'maxProfit', 'maxLoss', 'naivePopTimesMaxProfit'] as const) {
      expect(b[k] as number).toBeCloseTo((a[k] as number) * 500, 7);
    }
    expect(b.riskMetrics.standardDeviation).toBeCloseTo(a.riskMetrics.standardDeviation * 500, 7);
    expect(b.probabilityOfProfit).toBeCloseTo(a.probabilityOfProfit, 14);
    expect(b.riskMetrics.kellyFraction as number).toBeCloseTo(a.riskMetrics.kellyFraction as number, 10);
    expect(b.breakevens).toEqual(a.breakevens.map((x) => expect.closeTo(x, 10)));
  });

  it('legs are echoed with their fair values and cash flows', () => {
    const res = run('bull_put_spread');
    expect(res.legs).toHaveLength(2);
    for (const leg of res.legs) {
      const p = premiumPerShare(leg);
      expect(leg.fairValuePerShare).toBeCloseTo(p, 14);
      expect(leg.premium).toBeCloseTo(p * leg.quantity * M, 10);
      expect(leg.cashFlow).toBeCloseTo((leg.action === 'sell' ? 1 : -1) * p * leg.quantity * M, 10);
    }
    expect(res.netCreditDebit).toBeGreaterThan(0); // a credit spread
  });
});

describe('over the whole range the request schema accepts (issue 31: no invented numbers at the numeric edges)', () => {
  // References: the long-call closed forms below, evaluated by mpmath 1.3.0 at mp.dps = 60 with this script
  // (long_call(S, K, expiryDays, r, vol, q, drift, quantity, multiplier)):
  //   # References for the long-call rows of test/unit/strategy-ev.test.ts ("whole double range"), mpmath 1.3.0, mp.dps = 60.
  //   # ln S_T ~ N(m, s²), m = ln S + (μ − σ²/2)T, s = σ√T; partial moments M(n, a, b) = E[S_T^n 1{a < S_T < b}]
  //   #   = e^{n·m + n²s²/2}·(Φ((ln b − m)/s − n·s) − Φ((ln a − m)/s − n·s)).
  //   # Premium P = BSM call × qty × mult; X = c·(S_T − K)^+ − P with c = e^{−rT}·qty·mult (present-value P&L).
  //   from mpmath import mp, mpf, ncdf, log, exp, sqrt, inf
  //   mp.dps = 60
  //   def M(n, a, b, m, s):
  //       za = -inf if a == 0 else (log(a) - m)/s - n*s
  //       zb = inf if b == inf else (log(b) - m)/s - n*s
  //       return exp(n*m + n*n*s*s/2)*(ncdf(zb) - ncdf(za))
  //   def long_call(S, K, days, r, vol, q, drift, qty, mult):
  //       S, K, r, vol, q = map(mpf, (S, K, r, vol, q)); T = mpf(days/365)
  //       mu = mpf(drift) if drift is not None else r - q
  //       s = vol*sqrt(T)
  //       d1 = (log(S/K) + (r - q)*T)/s + s/2
  //       fair = S*exp(-q*T)*ncdf(d1) - K*exp(-r*T)*ncdf(d1 - s)
  //       qm = qty*mult; P = fair*qm; c = exp(-r*T)*qm
  //       m = log(S) + (mu - vol*vol/2)*T
  //       EP = M(1, K, inf, m, s) - K*M(0, K, inf, m, s)                 # E[(S_T − K)^+]
  //       E2 = M(2, K, inf, m, s) - 2*K*M(1, K, inf, m, s) + K*K*M(0, K, inf, m, s)
  //       EV = c*EP - P
  //       std = c*sqrt(E2 - EP*EP)
  //       B = K + P/c                                                   # X = 0 here
  //       lossK = P*P*M(0, 0, K, m, s)
  //       # (c(S − K) − P)² = c²S² − 2c(cK + P)S + (cK + P)² on (K, B)
  //       A = c*K + P
  //       lossKB = c*c*M(2, K, B, m, s) - 2*c*A*M(1, K, B, m, s) + A*A*M(0, K, B, m, s)
  //       down = sqrt(lossK + lossKB)
  //       Xplus = c*M(1, B, inf, m, s) - A*M(0, B, inf, m, s)
  //       Xminus = Xplus - EV
  //       pop = M(0, K + P/qm, inf, m, s)
  //       out = dict(fair=fair, premium=P, ev=EV, expectedPayoff=qm*EP, std=std, downside=down, pop=pop, breakeven=K + P/qm,
  //                  maxLoss=P, expectedReturn=EV/P, sortino=EV/down, omega=Xplus/Xminus)
  //       return {k: mp.nstr(v, 20) for k, v in out.items()}
  const longCall = (spot: number, expiryDays: number, vol: number, drift: number | null, quantity = 1, contractMultiplier = 100) =>
    evaluateRaw({
      structure: 'long_call',
      legs: [buy('call', spot, quantity)],
      spot,
      timeYears: expiryDays / 365,
      rate: 0.05,
      vol,
      dividendYield: 0,
      drift,
      contractMultiplier,
    });
  const rel = (got: number | null, want: number, tol = 1e-12) => {
    expect(got).not.toBeNull();
    expect(Math.abs((got as number) / want - 1)).toBeLessThan(tol);
  };

  it('issue 31, as filed: a long call at spot = strike = 1e154 has a standard deviation (mpmath 3.6001692133093484407e154), as at spot 100', () => {
    const r = longCall(1e154, 30, 0.2, null);
    expect(r.nullReasons).toEqual({});
    // long_call(1e154, 1e154, 30, 0.05, 0.2, 0, None, 1, 100)
    rel(r.riskMetrics.standardDeviation, 3.6001692133093484407e154);
    rel(r.riskMetrics.downsideDeviation, 1.832646371755493442e154);
    rel(r.expectedPayoffAtExpiry, 2.5036446573022507756e154);
    rel(r.maxLoss, 2.4933768194037392297e154);
    rel(r.breakevens[0], 1.0249337681940374292e154);
    rel(r.probabilityOfProfit, 0.34955661871249358273);
    // A fairly priced structure under the risk-neutral measure: EV 0 by the documented snap (mpmath: 2e-58 of the
    // premium, the rounding of its 60 digits), so expectedReturn and sortinoRatio are a true 0 and omega is 1.
    expect(r.trueExpectedValue).toBe(0);
    expect(r.riskMetrics.sortinoRatio).toBe(0);
    expect(r.riskMetrics.expectedReturn).toBe(0);
    expect(Math.abs((r.riskMetrics.omegaRatio as number) - 1)).toBeLessThan(1e-12);
  });

  it('with a drift, every figure at spot 1e154 matches mpmath, and the spot-100 answer scaled by 1e152', () => {
    const big = longCall(1e154, 30, 0.2, 0.3);
    const small = longCall(100, 30, 0.2, 0.3);
    expect(big.nullReasons).toEqual({});
    // long_call(1e154, 1e154, 30, 0.05, 0.2, 0, 0.3, 1, 100)
    rel(big.legs[0].premium, 2.4933768194037392297e154);
    rel(big.trueExpectedValue, 1.2658555918911181716e154);
    rel(big.expectedPayoffAtExpiry, 3.7747130994610515536e154);
    rel(big.riskMetrics.standardDeviation, 4.334319307516163509e154);
    rel(big.riskMetrics.downsideDeviation, 1.5753196040905131521e154);
    rel(big.breakevens[0], 1.0249337681940374292e154);
    rel(big.maxLoss, 2.4933768194037392297e154);
    rel(big.probabilityOfProfit, 0.48876969543559952737);
    rel(big.riskMetrics.expectedReturn, 0.50768723846315061013);
    rel(big.riskMetrics.sortinoRatio, 0.80355477618901383006);
    rel(big.riskMetrics.omegaRatio, 2.18831064994733943);
    // Scale-free figures equal the spot-100 ones; the Kelly fraction (no closed form) by the same identity.
    rel(big.riskMetrics.kellyFraction, small.riskMetrics.kellyFraction as number, 1e-10);
  });

  it('a σ√T of 15.8 (vol 5, 10 years): the standard deviation is e^130-sized, computed (mpmath 1.9355760420357225687e58)', () => {
    const r = longCall(100, 3650, 5, null);
    expect(r.nullReasons).toEqual({});
    rel(r.riskMetrics.standardDeviation, 1.9355760420357225687e58);
    rel(r.riskMetrics.downsideDeviation, 9999.999999999972225);
    rel(r.expectedPayoffAtExpiry, 16487.212707001247731);
    rel(r.probabilityOfProfit, 1.2076818931184559939e-15, 1e-10);
    expect(r.assumptions.integration.truncationBoundHonoured).toBe(true);
  });

  it.each([
    // long_call(100, K, 30, 0.05, 0.2, 0, 0.3, 1, 100) at mp.dps = 400 (at 60 digits the strike-300 row cancels to 0):
    // [K, premium, EV, expected payoff, standard deviation, downside deviation, probability of profit, omega, sortino]
    [
      150, 1.2350360112019684431e-10, 1.4640924112720246999e-9, 1.5941338041839431368e-9, 0.00062446623961563704338, 1.2350360111940754389e-10,
      1.2781820322200348658e-11, 12.854653613426595645, 11.854653613350833619,
    ],
    [
      300, 8.1157618526160026454e-80, 7.4578057430980709452e-77, 7.4966665055375525374e-77, 1.1663687223687106153e-37, 8.1157618526160026454e-80,
      8.1965528388987225058e-79, 919.92860812496010777, 918.92860812496010777,
    ],
  ])(
    'a deep out-of-the-money long call (spot 100, strike %s, 30 days, drift 0.3) keeps its tiny EV, downside and ratios instead of a snapped or truncated 0',
    (strike, premium, ev, payoff, sd, down, pop, omega, sortino) => {
      const r = evaluateStrategy({
        structure: 'long_call',
        legs: [buy('call', strike)],
        spot: 100,
        timeYears: 30 / 365,
        rate: 0.05,
        vol: 0.2,
        dividendYield: 0,
        drift: 0.3,
      });
      rel(r.legs[0].premium, premium);
      rel(r.trueExpectedValue, ev, 1e-12);
      rel(r.expectedPayoffAtExpiry, payoff, 1e-12);
      rel(r.riskMetrics.standardDeviation, sd, 1e-12);
      rel(r.riskMetrics.downsideDeviation, down, 1e-12);
      rel(r.probabilityOfProfit, pop, 1e-10);
      rel(r.riskMetrics.omegaRatio, omega, 1e-12);
      rel(r.riskMetrics.sortinoRatio, sortino, 1e-12);
    },
  );

  it('dollar figures above the largest double are null with reason overflow; the scale-free ones are still computed', () => {
    // 100,000 contracts of 10,000 shares at spot = strike = 1e306: the premium is 2.49e313 (mpmath
    // long_call(1e306, 1e306, 30, 0.05, 0.2, 0, None, 100000, 10000)), above 1.8e308; so are the expected payoff
    // (2.50e313), the deviations (3.60e313, 1.83e313) and maxLoss. The breakeven (1.0249e306) is a double.
    const r = longCall(1e306, 30, 0.2, null, 100_000, 10_000);
    expect(r.legs[0]).toMatchObject({ premium: null, cashFlow: null, nullReasons: { premium: 'overflow', cashFlow: 'overflow' } });
    rel(r.legs[0].fairValuePerShare, 2.4933768194037391805e304);
    expect(r.nullReasons).toEqual({
      netCreditDebit: 'overflow',
      expectedPayoffAtExpiry: 'overflow',
      maxLoss: 'overflow',
      'riskMetrics.standardDeviation': 'overflow',
      'riskMetrics.downsideDeviation': 'overflow',
    });
    for (const path of ['netCreditDebit', 'expectedPayoffAtExpiry', 'maxLoss'] as const) expect(r[path]).toBeNull();
    expect(r.riskMetrics.standardDeviation).toBeNull();
    rel(r.breakevens[0], 1.024933768194037409e306);
    rel(r.probabilityOfProfit, 0.34955661871249358273);
    expect(r.trueExpectedValue).toBe(0); // fair under risk-neutral: the documented exact 0
  });

  it('a per-share value below the smallest double is null with reason underflow, while the position premium is a (subnormal) double', () => {
    // long_call(1e-323, 1e-323, 30, 0.05, 0.2, 0, None, 1, 100): fair 2.46e-325 per share (below 4.9e-324),
    // premium 2.4637836572086e-323 (5 units of 2^−1074: 2.5e-323), standard deviation 3.557e-323.
    const r = longCall(1e-323, 30, 0.2, null);
    expect(r.legs[0].fairValuePerShare).toBeNull();
    expect(r.legs[0].nullReasons).toEqual({ fairValuePerShare: 'underflow' });
    expect(Math.abs((r.legs[0].premium as number) - 2.4637836572086030501e-323)).toBeLessThanOrEqual(5e-324);
    expect(Math.abs((r.riskMetrics.standardDeviation as number) - 3.5574398550229113306e-323)).toBeLessThanOrEqual(5e-324);
    rel(r.probabilityOfProfit, 0.34955661871249358273);
    expect(r.nullReasons).toEqual({});
  });

  it.each(STRUCTURE_NAMES)('%s is homogeneous: spot and strikes × 1e150 (and × 1e-150) scale every dollar figure and keep every ratio', (name) => {
    // An identity of the model: nothing in it has a unit of price but spot and strikes.
    const base = evaluateStrategy({ structure: name, legs: EXAMPLES[name], ...MARKET, drift: 0.12 });
    for (const c of [1e150, 1e-150]) {
      const scaled = evaluateRaw({
        structure: name,
        legs: EXAMPLES[name].map((l) => ({ ...l, strike: l.strike * c })),
        ...MARKET,
        spot: MARKET.spot * c,
        drift: 0.12,
      });
      expect(scaled.nullReasons).toEqual({});
      // 100·c and K·c are rounded (1.1e-16 relative), which a figure carries with its elasticity: 1e-11 relative to the
      // position's notional scale covers it.
      const scale = base.legs.reduce((a, l) => a + l.premium + l.quantity * M * l.strike, 0);
      const near = (got: number | null, want: number | null, unit: number) => {
        if (want === null) return expect(got).toBeNull();
        expect(Math.abs((got as number) - want * unit)).toBeLessThanOrEqual(1e-11 * scale * unit);
      };
      for (const k of ['netCreditDebit', 'trueExpectedValue', 'expectedPayoffAtExpiry', 'maxProfit', 'maxLoss', 'naivePopTimesMaxProfit'] as const)
        near(scaled[k], base[k], c);
      near(scaled.riskMetrics.standardDeviation, base.riskMetrics.standardDeviation, c);
      near(scaled.riskMetrics.downsideDeviation, base.riskMetrics.downsideDeviation, c);
      scaled.breakevens.forEach((b, i) => near(b, base.breakevens[i], c));
      expect(Math.abs(scaled.probabilityOfProfit - base.probabilityOfProfit)).toBeLessThan(1e-11);
      for (const k of ['expectedReturn', 'sortinoRatio', 'omegaRatio', 'kellyFraction'] as const) {
        const want = base.riskMetrics[k];
        if (want === null) expect(scaled.riskMetrics[k]).toBeNull();
        else expect(Math.abs((scaled.riskMetrics[k] as number) - want)).toBeLessThan(1e-9 * Math.max(1, Math.abs(want)));
      }
    }
  });
});
