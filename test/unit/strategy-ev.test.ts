import { describe, expect, it } from 'vitest';
import { normCdf, priceOption } from '../../workers/black-scholes.ts';
import { gaussLegendre } from '../../workers/lognormal-quadrature.ts';
import { STRUCTURES, checkStructure, type OptionLeg } from '../../workers/option-structures.ts';
import { evaluateStrategy, type StrategyInput } from '../../workers/strategy-ev.ts';
import { STRUCTURE_NAMES, type StructureName } from '../../workers/contract.ts';

// Independent references used here:
//  - closed-form lognormal partial expectations written out in this file
//    (E[S_T 1{S_T>K}] = S e^{μT} N(d1), P(S_T>K) = N(d2), E[S_T² 1{S_T>K}] = S² e^{(2μ+σ²)T} N(d2 + 2σ√T));
//  - the BSM price (itself checked against mpmath in black-scholes.test.ts) for
//    leg premiums, i.e. the fair value the quadrature must reproduce;
//  - a brute-force composite Simpson rule written in this file over a fine
//    uniform grid (no splitting, no Gauss–Legendre) for the risk metrics.

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
  it.each(STRUCTURE_NAMES.map((n) => [n]))('%s', (name) => {
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

  it.each(cases)('%s', (_label, input) => {
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
    expect(info.lowerLimitZ).toBe(-12);
    expect(info.upperLimitZ).toBeCloseTo(12 + 2 * MARKET.vol * Math.sqrt(MARKET.timeYears), 12);
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
    expect(b.breakevens).toEqual(a.breakevens.map((x) => expect.closeTo(x, 10)) as unknown as number[]);
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
