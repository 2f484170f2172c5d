import { describe, expect, it } from 'vitest';
import { normCdf, normPdf, priceOption, yearsFromDays, type OptionPricingInput } from '../../workers/black-scholes.ts';
import { DAY_COUNT_CONVENTION, DAYS_PER_YEAR } from '../../workers/contract.ts';

// Reference values below are INDEPENDENT of the code under test: they were
// computed with mpmath at 40–50 significant digits, e.g.
//   from mpmath import mp, mpf, ncdf; mp.dps = 40; print(ncdf(mpf('-3')))
// and, for options, by evaluating the BSM formula in mpmath and differentiating
// it with mpmath.diff (high-precision numerical derivatives), or are
// published textbook figures (Hull, "Options, Futures, and Other Derivatives",
// Example 15.6 / 13.6 depending on edition).

describe('normCdf against high-precision references', () => {
  // [x, Φ(x)] from mpmath.ncdf at 40 digits.
  const table: Array<[number, number]> = [
    [0, 0.5],
    [0.5, 0.6914624612740131036377046],
    [1, 0.8413447460685429485852325],
    [-1, 0.1586552539314570514147675],
    [-3, 0.001349898031630094526651815],
    [2.5, 0.9937903346742238648330219],
    [-0.3, 0.382088577811047362693471],
    [0.6744, 0.7499714786270593854770377],
    [0.7, 0.7580363477769269852506496],
    [-5, 2.866515718791939116737523e-7],
    [-5.7, 5.990371401063534429833946e-9],
    [6, 0.9999999990134123549623019],
    [3.2, 0.9993128620620841515448823],
    [1e-9, 0.5000000003989422804014327],
    // both sides of the algorithm's region boundaries (0.67448975 and sqrt(32))
    [-0.67448975, 0.2500000000623101843248493],
    [0.67448976, 0.7500000031154555322196438],
    [5.65685, 0.9999999922911802664397946],
    [5.6569, 0.9999999922934247549286019],
  ];

  it.each(table)('Φ(%s) to 1e-15 absolute', (x, want) => {
    expect(Math.abs(normCdf(x) - want)).toBeLessThanOrEqual(1e-15);
  });

  it('published 16-digit values of Φ(1), Φ(−3) and Φ(0.5)', () => {
    expect(Math.abs(normCdf(1) - 0.8413447460685429)).toBeLessThan(1e-15);
    expect(Math.abs(normCdf(-3) - 0.0013498980316301)).toBeLessThan(1e-15);
    expect(Math.abs(normCdf(0.5) - 0.6914624612740131)).toBeLessThan(1e-15);
  });

  // Far lower tail: relative accuracy matters (these become tiny probabilities).
  const tails: Array<[number, number]> = [
    [-8.3, 5.205569744890285157995882e-17],
    [-10, 7.619853024160526065973343e-24],
    [-20, 2.753624118606233695075623e-89],
    [-37, 5.725571222524576822683193e-300],
  ];
  it.each(tails)('Φ(%s) to 1e-13 relative in the far tail', (x, want) => {
    expect(Math.abs(normCdf(x) / want - 1)).toBeLessThan(1e-13);
  });

  it('symmetry Φ(x) + Φ(−x) = 1 and monotonicity on a fine grid', () => {
    let prev = -1;
    for (let x = -9; x <= 9; x += 0.0137) {
      expect(Math.abs(normCdf(x) + normCdf(-x) - 1)).toBeLessThanOrEqual(2.3e-16);
      const v = normCdf(x);
      expect(v).toBeGreaterThanOrEqual(prev);
      prev = v;
    }
  });

  it('limits and NaN', () => {
    expect(normCdf(Infinity)).toBe(1);
    expect(normCdf(-Infinity)).toBe(0);
    expect(normCdf(-40)).toBe(0);
    expect(Number.isNaN(normCdf(NaN))).toBe(true);
  });

  it('normPdf against mpmath.npdf', () => {
    expect(Math.abs(normPdf(0) - 0.3989422804014326779399461)).toBeLessThan(1e-16);
    expect(Math.abs(normPdf(1) - 0.2419707245191433497978301)).toBeLessThan(1e-16);
    expect(Math.abs(normPdf(-2.5) / 0.01752830049356853736215832 - 1)).toBeLessThan(1e-14);
    expect(Math.abs(normPdf(30) / 1.473646134878547519049493e-196 - 1)).toBeLessThan(1e-13);
    expect(normPdf(Infinity)).toBe(0);
  });

  it('normPdf is the derivative of normCdf (central difference)', () => {
    // For x > 0 differentiate the lower tail Φ(−x) instead: 1 − tiny has no
    // digits left to difference.
    for (const x of [-4, -1.3, -0.2, 0, 0.6, 0.7, 2.2, 5.7]) {
      const h = 1e-5;
      const fd = x <= 0 ? (normCdf(x + h) - normCdf(x - h)) / (2 * h) : (normCdf(-x + h) - normCdf(-x - h)) / (2 * h);
      expect(Math.abs(fd / normPdf(x) - 1)).toBeLessThan(1e-8);
    }
  });
});

describe('day count', () => {
  it('ACT/365F', () => {
    expect(DAY_COUNT_CONVENTION).toBe('ACT/365F');
    expect(DAYS_PER_YEAR).toBe(365);
    expect(yearsFromDays(365)).toBe(1);
    expect(yearsFromDays(73)).toBeCloseTo(0.2, 15);
  });
});

describe('Black–Scholes–Merton: Hull example (S=42, K=40, r=10%, σ=20%, T=0.5)', () => {
  const base = { spot: 42, strike: 40, timeYears: 0.5, rate: 0.1, vol: 0.2, dividendYield: 0 };
  const call = priceOption({ ...base, type: 'call' });
  const put = priceOption({ ...base, type: 'put' });

  it('call 4.76 and put 0.81 to the cent (Hull)', () => {
    expect(Math.round(call.price * 100) / 100).toBe(4.76);
    expect(Math.round(put.price * 100) / 100).toBe(0.81);
  });

  it('more precise published 4.7594 / 0.8086, and mpmath to 1e-12', () => {
    expect(Math.abs(call.price - 4.7594)).toBeLessThan(5e-5);
    expect(Math.abs(put.price - 0.8086)).toBeLessThan(5e-5);
    expect(Math.abs(call.price - 4.7594223928715333951)).toBeLessThan(1e-12);
    expect(Math.abs(put.price - 0.80859937290009365311)).toBeLessThan(1e-12);
  });

  it('d1 = 0.7693, d2 = 0.6278 as printed in Hull', () => {
    expect(call.d1).toBeCloseTo(0.7693, 4);
    expect(call.d2).toBeCloseTo(0.6278, 4);
  });
});

// mpmath references: [input, price, delta, gamma, theta/day, vega/pt, rho/pt]
const MP_CASES: Array<[OptionPricingInput, number[]]> = [
  [
    { spot: 42, strike: 40, timeYears: 0.5, rate: 0.1, vol: 0.2, dividendYield: 0, type: 'call' },
    [4.7594223928715333951, 0.7791312909426689359, 0.049962670405911853469, -0.012490663546829114336, 0.088134150596028514411, 0.13982045913360280956],
  ],
  [
    { spot: 42, strike: 40, timeYears: 0.5, rate: 0.1, vol: 0.2, dividendYield: 0, type: 'put' },
    [0.80859937290009365311, -0.2208687090573310641, 0.049962670405911853469, -0.0020662314975062205358, 0.088134150596028514411, -0.050425425766539991726],
  ],
  [
    { spot: 100, strike: 110, timeYears: 90 / 365, rate: 0.045, vol: 0.35, dividendYield: 0.02, type: 'call' },
    [3.4982621787870448735, 0.33339433503728925796, 0.020859921779984330892, -0.036856893506269060581, 0.18002398248479626888, 0.073580970390267651589],
  ],
  [
    { spot: 100, strike: 110, timeYears: 90 / 365, rate: 0.045, vol: 0.35, dividendYield: 0.02, type: 'put' },
    [12.776397483990785649, -0.6616862980290739126, 0.020859921779984330892, -0.02889739303667981116, 0.18002398248479626888, -0.19465897139235166909],
  ],
  [
    { spot: 50, strike: 45, timeYears: 2, rate: 0.03, vol: 0.6, dividendYield: 0.05, type: 'call' },
    [15.868753864433342706, 0.62607261280151073961, 0.0075037196536527916668, -0.0062316126449568352748, 0.22511158960958374167, 0.30869753551284388549],
  ],
  [
    { spot: 50, strike: 45, timeYears: 2, rate: 0.03, vol: 0.6, dividendYield: 0.05, type: 'put' },
    [13.006286973926556322, -0.27876480523444882853, 0.0075037196536527916668, -0.0089458905209874197468, 0.22511158960958374167, -0.53889054471297995498],
  ],
];

describe('price and Greeks against mpmath (independent high-precision evaluation)', () => {
  it.each(MP_CASES)('%o', (input, want) => {
    const r = priceOption(input);
    const got = [r.price, r.greeks.delta, r.greeks.gamma, r.greeks.theta, r.greeks.vega, r.greeks.rho];
    got.forEach((g, i) => expect(Math.abs(g / want[i] - 1)).toBeLessThan(1e-12));
  });
});

describe('put–call parity with dividend yield', () => {
  const cases = [
    { spot: 42, strike: 40, timeYears: 0.5, rate: 0.1, vol: 0.2, dividendYield: 0 },
    { spot: 100, strike: 110, timeYears: 90 / 365, rate: 0.045, vol: 0.35, dividendYield: 0.02 },
    { spot: 50, strike: 45, timeYears: 2, rate: 0.03, vol: 0.6, dividendYield: 0.05 },
    { spot: 250, strike: 180, timeYears: 5, rate: 0.07, vol: 0.15, dividendYield: 0.01 },
    { spot: 10, strike: 30, timeYears: 1 / 365, rate: -0.005, vol: 1.2, dividendYield: 0.03 },
  ];
  it.each(cases)('C − P = S e^{−qT} − K e^{−rT}  (%o)', (c) => {
    const call = priceOption({ ...c, type: 'call' }).price;
    const put = priceOption({ ...c, type: 'put' }).price;
    const rhs = c.spot * Math.exp(-c.dividendYield * c.timeYears) - c.strike * Math.exp(-c.rate * c.timeYears);
    expect(Math.abs(call - put - rhs)).toBeLessThan(1e-10);
  });
});

describe('every Greek equals a central finite difference of the price (1e-6 relative)', () => {
  // Bump sizes. A central difference has truncation error ~ h²·f'''/6 and
  // rounding error ~ ε·|V|/h (ε ≈ 1.1e-16); the second difference for gamma has
  // rounding error ~ 4ε·|V|/h². With h_S = 1e-4·S, h_T = 1e-5 y, h_σ = h_r = 1e-5,
  // truncation is ~1e-9 relative for these inputs, rounding is ≤ 1e-10
  // (gamma: ~4e-16·V/(1e-8·S²) ≤ 1e-9 relative), both far below the 1e-6
  // tolerance, while the bumps are still large enough that the price changes by
  // many ulps. Unit scalings: theta = −dV/dT / 365 (calendar time passing),
  // vega = dV/dσ / 100, rho = dV/dr / 100.
  const inputs: OptionPricingInput[] = [];
  for (const type of ['call', 'put'] as const) {
    inputs.push({ spot: 42, strike: 40, timeYears: 0.5, rate: 0.1, vol: 0.2, dividendYield: 0, type });
    inputs.push({ spot: 100, strike: 110, timeYears: 90 / 365, rate: 0.045, vol: 0.35, dividendYield: 0.02, type });
    inputs.push({ spot: 50, strike: 45, timeYears: 2, rate: 0.03, vol: 0.6, dividendYield: 0.05, type });
    inputs.push({ spot: 1200, strike: 1150, timeYears: 14 / 365, rate: 0.05, vol: 0.25, dividendYield: 0.015, type });
  }
  const rel = (a: number, b: number) => Math.abs(a - b) / Math.abs(b);

  it.each(inputs)('%o', (inp) => {
    const v = (o: Partial<OptionPricingInput>) => priceOption({ ...inp, ...o }).price;
    const g = priceOption(inp).greeks;
    const hS = 1e-4 * inp.spot;
    const hT = 1e-5;
    const hV = 1e-5;
    const hR = 1e-5;
    const fdDelta = (v({ spot: inp.spot + hS }) - v({ spot: inp.spot - hS })) / (2 * hS);
    const fdGamma = (v({ spot: inp.spot + hS }) - 2 * v({}) + v({ spot: inp.spot - hS })) / (hS * hS);
    const fdTheta = -(v({ timeYears: inp.timeYears + hT }) - v({ timeYears: inp.timeYears - hT })) / (2 * hT) / 365;
    const fdVega = (v({ vol: inp.vol + hV }) - v({ vol: inp.vol - hV })) / (2 * hV) / 100;
    const fdRho = (v({ rate: inp.rate + hR }) - v({ rate: inp.rate - hR })) / (2 * hR) / 100;
    expect(rel(fdDelta, g.delta)).toBeLessThan(1e-6);
    expect(rel(fdGamma, g.gamma)).toBeLessThan(1e-6);
    expect(rel(fdTheta, g.theta)).toBeLessThan(1e-6);
    expect(rel(fdVega, g.vega)).toBeLessThan(1e-6);
    expect(rel(fdRho, g.rho)).toBeLessThan(1e-6);
  });
});

describe('numerical sanity', () => {
  it('tiny σ√T gives the discounted intrinsic value of the forward, finite Greeks', () => {
    const r = priceOption({ spot: 100, strike: 90, timeYears: 1 / 365, rate: 0.05, vol: 1e-9, dividendYield: 0, type: 'call' });
    const T = 1 / 365;
    expect(r.price).toBeCloseTo(100 - 90 * Math.exp(-0.05 * T), 10);
    expect(r.greeks.delta).toBeCloseTo(1, 12);
    for (const g of Object.values(r.greeks)) expect(Number.isFinite(g)).toBe(true);
  });

  it('deep out-of-the-money put keeps its tiny price to 1e-10 relative (mpmath 4.9965290907225844780e-60)', () => {
    const r = priceOption({ spot: 100, strike: 20, timeYears: 0.25, rate: 0.05, vol: 0.2, dividendYield: 0, type: 'put' });
    expect(Math.abs(r.price / 4.996529090722584478e-60 - 1)).toBeLessThan(1e-10);
  });

  it('a spot near the smallest double (1e-323) gives gamma 0, not NaN: φ(d1) is 0 and S·σ√T underflows to 0', () => {
    const r = priceOption({ spot: 1e-323, strike: 100, timeYears: 30 / 365, rate: 0.05, vol: 0.2, type: 'call' });
    expect(r.greeks).toEqual({ delta: 0, gamma: 0, theta: 0, vega: 0, rho: 0 });
  });

  it('rejects non-positive inputs', () => {
    expect(() => priceOption({ spot: 0, strike: 1, timeYears: 1, rate: 0, vol: 0.2, type: 'call' })).toThrow(RangeError);
    expect(() => priceOption({ spot: 1, strike: 1, timeYears: 0, rate: 0, vol: 0.2, type: 'call' })).toThrow(RangeError);
    expect(() => priceOption({ spot: 1, strike: 1, timeYears: 1, rate: 0, vol: 0, type: 'call' })).toThrow(RangeError);
  });
});

describe('second reference: jStat (npm jstat) normal distribution', () => {
  it('normCdf agrees with jStat.normal.cdf to 1e-15 absolute on [-8, 8]', async () => {
    const { jStat } = await import('jstat');
    let worst = 0;
    for (let x = -8; x <= 8; x += 0.01) worst = Math.max(worst, Math.abs(normCdf(x) - jStat.normal.cdf(x, 0, 1)));
    expect(worst).toBeLessThan(1e-15);
  });

  it('a Black–Scholes–Merton price written on jStat gives the same call and put to 1e-12', async () => {
    const { jStat } = await import('jstat');
    const N = (x: number) => jStat.normal.cdf(x, 0, 1);
    for (const [S, K, T, r, v, q] of [
      [42, 40, 0.5, 0.1, 0.2, 0],
      [100, 120, 2, 0.03, 0.45, 0.02],
      [50, 35, 0.05, -0.01, 0.9, 0.05],
    ]) {
      const d1 = (Math.log(S / K) + (r - q + (v * v) / 2) * T) / (v * Math.sqrt(T));
      const d2 = d1 - v * Math.sqrt(T);
      const call = S * Math.exp(-q * T) * N(d1) - K * Math.exp(-r * T) * N(d2);
      const put = K * Math.exp(-r * T) * N(-d2) - S * Math.exp(-q * T) * N(-d1);
      expect(Math.abs(priceOption({ spot: S, strike: K, timeYears: T, rate: r, vol: v, dividendYield: q, type: 'call' }).price - call)).toBeLessThan(1e-12);
      expect(Math.abs(priceOption({ spot: S, strike: K, timeYears: T, rate: r, vol: v, dividendYield: q, type: 'put' }).price - put)).toBeLessThan(1e-12);
    }
  });
});
