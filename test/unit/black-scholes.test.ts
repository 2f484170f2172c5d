import { describe, expect, it } from 'vitest';
import { priceOption, yearsFromDays } from '../../workers/black-scholes.ts';
import { normCdf, normPdf } from '../../workers/normal-distribution.ts';
import { DAY_COUNT_CONVENTION, DAYS_PER_YEAR, type OptionPricingInput } from '../../workers/contract.ts';

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

/** A test title's account of an input: `call at S=42, K=40, T=0.5 y, r=0.1, σ=0.2, q=0`. */
const inputText = (i: OptionPricingInput) =>
  `${i.type} at S=${i.spot}, K=${i.strike}, T=${Number(i.timeYears.toFixed(4))} y, r=${i.rate}, σ=${i.vol}, q=${i.dividendYield}`;

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
  it.each(MP_CASES.map(([input, want]) => [inputText(input), input, want] as const))('%s: price and Greeks within 1e-12 of mpmath', (_text, input, want) => {
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

  it.each(inputs.map((inp) => [inputText(inp), inp] as const))('%s: each Greek within 1e-6 of its finite difference', (_text, inp) => {
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

  it('a spot near the smallest double (1e-323) far below the strike: every figure is below the double range, and says so (no NaN, no silent 0)', () => {
    // d1 = (ln(1e-323/100) + 0.0525·T)/(0.2·√T) ≈ −13,000: N(d1) and φ(d1) are e^(−8.5e7), below any double,
    // and the price is at most S = 1e-323 times that.
    const r = priceOption({ spot: 1e-323, strike: 100, timeYears: 30 / 365, rate: 0.05, vol: 0.2, type: 'call' });
    for (const g of Object.values(r.greeks)) expect(Math.abs(g)).toBe(0);
    expect(r.price).toBe(0);
    expect(r.nullReasons).toEqual({ price: 'underflow', delta: 'underflow', gamma: 'underflow', theta: 'underflow', vega: 'underflow', rho: 'underflow' });
  });

  it('rejects non-positive inputs', () => {
    expect(() => priceOption({ spot: 0, strike: 1, timeYears: 1, rate: 0, vol: 0.2, type: 'call' })).toThrow(RangeError);
    expect(() => priceOption({ spot: 1, strike: 1, timeYears: 0, rate: 0, vol: 0.2, type: 'call' })).toThrow(RangeError);
    expect(() => priceOption({ spot: 1, strike: 1, timeYears: 1, rate: 0, vol: 0, type: 'call' })).toThrow(RangeError);
  });
});

describe('over the whole range the request schema accepts (issue 31: no invented numbers at the numeric edges)', () => {
  // Spot and strike anywhere in (0, 1.8e308), 1 minute to 3650 days, rate and dividend yield in [−0.2, 1], vol in
  // (0, 5]. Reference: the BSM closed forms (price, delta = ±e^(−qT)N(±d1), gamma, theta, vega, rho as in the module
  // comment) evaluated by mpmath 1.3.0 at mp.dps = 800 on the exact double inputs (T = expiryDays/365 in double), and
  // checked to give the same 17 digits at mp.dps = 1000 (tiny σ√T makes N(d1) − N(d2) cancel at lower precision).
  // 'overflow': the true magnitude is above 1.7976931348623157e308; 'underflow': it is non-zero and below 2.5e-324 (half
  // the smallest subnormal). The script (first 12 rows chosen, the rest random with seed 31):
  //   # Generates the reference table of test/unit/black-scholes.test.ts ("whole double range").
  //   # mpmath 1.3.0, mp.dps = 800 (agreeing to 17 digits with mp.dps = 1000), BSM closed forms evaluated at the exact double inputs (T = expiryDays/365 in double).
  //   import random, sys
  //   sys.path.insert(0,'/tmp/h6')
  //   from ref import bs, mp
  //   from mpmath import mpf
  //   MAXD = mpf('1.7976931348623157e308'); MIND = mpf('4.9406564584124654e-324')
  //   def fmt(x):
  //       if abs(x) > MAXD: return "'overflow'"
  //       if x != 0 and abs(x) < MIND/2: return "'underflow'"
  //       return mp.nstr(x, 17, strip_zeros=False, min_fixed=-1, max_fixed=-1) if x != 0 else '0'
  //   rows=[]
  //   def add(S,K,days,r,v,q,typ,note=''):
  //       mp.dps = 1000
  //       hi = bs(S,K,days/365,r,v,q,typ)
  //       mp.dps = 800
  //       ref = bs(S,K,days/365,r,v,q,typ)
  //       vals = ', '.join(fmt(ref[k]) for k in ['price','delta','gamma','theta','vega','rho'])
  //       assert vals == ', '.join(fmt(hi[k]) for k in ['price','delta','gamma','theta','vega','rho']), (vals, S, K)
  //       rows.append(f"    [{S!r}, {K!r}, {days!r}, {r!r}, {v!r}, {q!r}, '{typ}', {vals}],{' // '+note if note else ''}")
  //   add(3e307,3e307,3650,-0.2,0.2,0,'call','issue 31: K·e^(−rT) overflows, the price does not')
  //   add(3e307,3e307,3650,-0.2,0.2,0,'put','the put itself is above the largest double')
  //   add(100,100,365,0,1e-300,0,'call','σ√T = 1e-300: the direct formula cancels to 0')
  //   add(1e308,1e308,365,0,5e-324,0,'put','σ√T subnormal: price = S·σ√T/sqrt(2π)')
  //   add(100,1000,1,0.05,0.1,0,'call','d2 ≈ −440: everything below the smallest double')
  //   add(1e-300,1.2e-300,30,0.05,0.2,0,'call','tiny spot')
  //   add(1e-320,1e-320,365,0.05,0.2,0.02,'put','subnormal spot and strike')
  //   add(1e300,1e-300,30,0.05,0.3,0,'call','K/S = 1e-600: deep in the money')
  //   add(1e-300,1e300,30,0.05,0.3,0,'put','S/K = 1e-600')
  //   add(1.7e308,1e308,3650,-0.2,5,-0.2,'call','e^(−qT) = e^2 on a spot near the largest double')
  //   add(100,100,1/1440,1,5,1,'call','one minute')
  //   add(100,80,3650,1,5,1,'put','σ√T ≈ 15.8, rate and yield at their maximum')
  //   random.seed(31)
  //   for i in range(24):
  //       S = 10**random.uniform(-300,307.5)
  //       K = min(max(S*10**random.uniform(-2,2), 1e-320), 1.7e308)
  //       days = random.choice([1/1440, 1, 30, 365, 3650, 10**random.uniform(-3.1,3.56)]); days=min(max(days,1/1440),3650)
  //       r = random.choice([-0.2,0,0.05,1,round(random.uniform(-0.2,1),4)])
  //       q = random.choice([-0.2,0,0.02,1,round(random.uniform(-0.2,1),4)])
  //       v = random.choice([1e-8,0.01,0.2,5,float('%.4g' % 10**random.uniform(-6,0.69))])
  //       add(S,K,days,r,v,q,random.choice(['call','put']))
  //   print('\n'.join(rows))
  type Want = number | 'overflow' | 'underflow';
  const rows: Array<[number, number, number, number, number, number, 'call' | 'put', Want, Want, Want, Want, Want, Want]> = [
    [
      3e307,
      3e307,
      3650,
      -0.2,
      0.2,
      0,
      'call',
      1.0512436116264575e304,
      2.2132629289599159e-3,
      3.6632466719771119e-310,
      1.2556839290267887e301,
      6.593844009558801e303,
      5.5885451752532897e303,
    ], // issue 31: K·e^(−rT) overflows, the price does not
    [
      3e307,
      3e307,
      3650,
      -0.2,
      0.2,
      0,
      'put',
      'overflow',
      -9.9778673707104008e-1,
      3.6632466719771119e-310,
      -1.2145137903354235e305,
      6.593844009558801e303,
      -2.2161579751616699e307,
    ], // the put itself is above the largest double
    [100, 100, 365, 0, 1e-300, 0, 'call', 3.9894228040143269e-299, 5.0e-1, 3.9894228040143267e297, -5.4649627452251053e-302, 3.9894228040143268e-1, 5.0e-1], // σ√T = 1e-300: the direct formula cancels to 0
    [
      1e308,
      1e308,
      365,
      0,
      5e-324,
      0,
      'put',
      1.9710367541991351e-16,
      -5.0e-1,
      8.0746816492806916e14,
      -2.7000503482179933e-19,
      3.9894228040143268e305,
      -5.0000000000000001e305,
    ], // σ√T subnormal: price = S·σ√T/sqrt(2π)
    [100, 1000, 1, 0.05, 0.1, 0, 'call', 'underflow', 'underflow', 'underflow', 'underflow', 'underflow', 'underflow'], // d2 ≈ −440: everything below the smallest double
    [
      1e-300,
      1.2e-300,
      30,
      0.05,
      0.2,
      0,
      'call',
      1.6262226313703917e-305,
      1.0370399231868436e-3,
      6.0716058316086015e298,
      -3.4667398662065137e-306,
      9.9807219149730441e-306,
      8.3899536729299149e-307,
    ], // tiny spot
    [
      1e-320,
      1e-320,
      365,
      0.05,
      0.2,
      0.02,
      'put',
      6.3300101559186902e-322,
      -3.9334752717199131e-1,
      'overflow',
      'underflow',
      3.7900735563354767e-323,
      -4.5664324966501611e-323,
    ], // subnormal spot and strike
    [1e300, 1e-300, 30, 0.05, 0.3, 0, 'call', 1.0000000000000001e300, 1.0, 'underflow', -1.3642449914578143e-304, 'underflow', 8.185469948746885e-304], // K/S = 1e-600: deep in the money
    [1e-300, 1e300, 30, 0.05, 0.3, 0, 'put', 9.9589884376420442e299, -1.0, 'underflow', 1.3642449914578143e296, 'underflow', -8.1854699487468852e296], // S/K = 1e-600
    [
      1.7e308,
      1e308,
      3650,
      -0.2,
      5,
      -0.2,
      'call',
      'overflow',
      7.3890560989306435,
      2.2537644194588297e-323,
      -6.8829563661273909e305,
      3.2566895861180087e293,
      1.2880664520274761e293,
    ], // e^(−qT) = e^2 on a spot near the largest double
    [
      100,
      100,
      0.0006944444444444445,
      1,
      5,
      1,
      'call',
      2.751380816322702e-1,
      5.013747391153068e-1,
      5.7844801000997313e-1,
      -1.9809787976209592e2,
      5.5027398212516474e-4,
      9.4867457819441425e-7,
    ], // one minute
    [
      100,
      80,
      3650,
      1,
      5,
      1,
      'put',
      3.6319943809987773e-3,
      -5.399857469454748e-20,
      2.7465937456830129e-22,
      9.9506695369828575e-6,
      1.3732968728415064e-18,
      -3.6319943809987827e-4,
    ], // σ√T ≈ 15.8, rate and yield at their maximum
    [
      2.8776322648254593e-293,
      8.102718265511093e-295,
      0.3283196135652039,
      -0.2,
      1e-8,
      0,
      'call',
      2.7965905039750719e-293,
      1.0,
      'underflow',
      4.4406444301582144e-298,
      'underflow',
      7.2897533164500999e-300,
    ],
    [
      9.363830410731717e-218,
      1.3004705738761672e-217,
      365,
      0.0459,
      5,
      -0.2,
      'put',
      1.2273272165002137e-217,
      -7.9453767916359836e-3,
      4.7647810747777858e214,
      1.6276733854511922e-222,
      2.088911469807211e-221,
      -1.234767132582838e-219,
    ],
    [
      3.866442495761742e-180,
      8.101196955510534e-181,
      1,
      0,
      1e-8,
      0.2996,
      'call',
      3.0531504416150694e-180,
      9.991795148643498e-1,
      'underflow',
      3.1710568029999187e-183,
      'underflow',
      2.2195060152083656e-185,
    ],
    [
      9.305671375192035e-85,
      6.083856379787566e-86,
      365,
      -0.1636,
      5,
      0,
      'put',
      6.8767563599107653e-86,
      -1.2942725159685746e-3,
      9.1656327322433427e80,
      -5.8544379711637504e-89,
      3.9685136511134623e-89,
      -6.9971971069462307e-88,
    ],
    [
      5.504498059657696e-183,
      2.0149268259660465e-182,
      0.0006944444444444445,
      0.05,
      0.2,
      1,
      'call',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
    ],
    [
      1.5194920611495735e293,
      1.431273546849672e295,
      30,
      0.8757,
      0.2,
      0.5485,
      'call',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
    ],
    [
      2.8134474507380067e-195,
      3.666650464925728e-197,
      30,
      -0.2,
      0.01,
      0.02,
      'call',
      2.7715521818016701e-195,
      9.9835751474130518e-1,
      'underflow',
      1.7433252791769457e-199,
      'underflow',
      3.0636347648537164e-200,
    ],
    [
      1.9544516509895022e-24,
      3.1131835778678514e-23,
      0.0006944444444444445,
      -0.2,
      0.01,
      -0.2,
      'put',
      2.91773952301965e-23,
      -1.0000003805175762,
      'underflow',
      -1.5987613824765206e-26,
      'underflow',
      -5.9231064735329545e-31,
    ],
    [
      4.238976095976016e-202,
      3.8711146788228055e-200,
      0.0006944444444444445,
      0.3978,
      5,
      0.02,
      'call',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
    ],
    [1.3800006600657095e219, 1.206617511733429e219, 3650, -0.2, 1e-8, 1, 'call', 'underflow', 'underflow', 'underflow', 'underflow', 'underflow', 'underflow'],
    [
      8.473655616344927e-73,
      1.1432748726607407e-73,
      0.0006944444444444445,
      -0.0414,
      0.01,
      -0.2,
      'call',
      7.3303838780066065e-73,
      1.0000003805175762,
      'underflow',
      -4.5134251635277743e-76,
      'underflow',
      2.1751806748729398e-81,
    ],
    [
      1.2547553717139599e275,
      3.6692822239556086e276,
      3650,
      0.3458,
      0.0004846,
      0.4293,
      'call',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
    ],
    [
      4.3328970299930624e135,
      3.04047920714561e135,
      365,
      0.05,
      0.2,
      0.02,
      'put',
      7.3054022233256897e132,
      -2.1205996431838058e-2,
      5.8532557023645306e-137,
      -5.1660352153507738e130,
      2.1977800615923246e132,
      -9.9188801180880288e131,
    ],
    [
      1.5647502033768073e52,
      7.2299203980335054e50,
      0.0006944444444444445,
      0,
      0.01,
      1,
      'put',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
    ],
    [
      7.468748376594544e240,
      1.2621219546578375e240,
      30,
      -0.2,
      0.2,
      -0.1604,
      'put',
      7.0799999741277908e27,
      -5.122924884320543e-211,
      'underflow',
      -1.1381235250664765e29,
      3.4018007499250972e29,
      -3.1506276914733798e27,
    ],
    [7.532206833947288e25, 4.134351299786272e25, 1, 1, 0.2, 0, 'put', 'underflow', 'underflow', 'underflow', 'underflow', 'underflow', 'underflow'],
    [
      2.783019638863804e-120,
      1.9145844252393654e-118,
      1,
      0,
      5,
      1,
      'put',
      1.8868303716113414e-118,
      -9.9726402359685929e-1,
      6.6425367528526407e63,
      -7.6038503090476591e-123,
      7.0476389636042021e-180,
      -5.2454367814777134e-123,
    ],
    [7.681854924503693e99, 3.602308018571536e99, 1, 1, 0.2, -0.2, 'put', 'underflow', 'underflow', 'underflow', 'underflow', 'underflow', 'underflow'],
    [
      3.3590756681291294e-118,
      1.501408599864895e-116,
      365,
      0,
      0.4604,
      0,
      'put',
      1.4678178431836037e-116,
      -9.9999999999999949e-1,
      2.7107300559275462e103,
      -8.8812401805878844e-136,
      1.4081896897978184e-134,
      -1.501408599864895e-118,
    ],
    [
      1.962376856620303e216,
      9.422669698395095e216,
      0.0006944444444444445,
      0.2478,
      0.03198,
      0.02,
      'put',
      7.460288474024669e216,
      -9.9999996194825034e-1,
      'underflow',
      6.2895586706607267e213,
      'underflow',
      -1.7927445311973173e209,
    ],
    [
      3.0086357438053775e-113,
      1.0689111338813171e-113,
      3650,
      1,
      0.01,
      -0.1421,
      'call',
      1.2459493218529998e-112,
      4.1412596299415569,
      'underflow',
      -4.8508203034027376e-116,
      'underflow',
      4.8528490400549837e-119,
    ],
    [
      1.6102207932266624e215,
      7.110660265491331e214,
      30,
      0.9798,
      5,
      0,
      'call',
      1.1615053511309735e215,
      9.1038201502821515e-1,
      7.0132314510505225e-217,
      -7.0445467456928805e212,
      7.4728700023747241e211,
      2.5020057472359972e211,
    ],
    [
      2.1340088776187006e165,
      3.6758241038922974e164,
      365,
      1,
      5,
      -0.2,
      'put',
      1.2882222043993015e164,
      -1.2151265856060071e-3,
      3.8361353809549283e-169,
      3.0163495394202035e161,
      8.7348685425716744e160,
      -1.3141531136104387e162,
    ],
    [
      1.2325100737652303e-135,
      1.33447029998293e-134,
      0.0006944444444444445,
      0.05,
      0.2,
      -0.2,
      'call',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
      'underflow',
    ],
  ];
  const FIGURES = ['price', 'delta', 'gamma', 'theta', 'vega', 'rho'] as const;
  it.each(rows)('S=%s K=%s %s days r=%s σ=%s q=%s %s', (spot, strike, expiryDays, rate, vol, dividendYield, type, ...want) => {
    const r = priceOption({ spot, strike, timeYears: expiryDays / 365, rate, vol, dividendYield, type });
    const got = { price: r.price, ...r.greeks };
    FIGURES.forEach((name, i) => {
      const w = want[i];
      if (typeof w === 'string') {
        expect(r.nullReasons[name], name).toBe(w);
        return;
      }
      expect(r.nullReasons[name], name).toBeUndefined();
      if (Math.abs(w) < 2.2250738585072014e-308) {
        // subnormal: 5e-12 relative as below, or a few units of 2^−1074
        expect(Math.abs(got[name] - w), name).toBeLessThanOrEqual(Math.max(2e-323, 5e-12 * Math.abs(w)));
      } else {
        // 5e-12 relative: ln(S/K) of the double inputs is itself rounded (1.1e-16 absolute), which d1²/2 magnifies
        // to a few 1e-13 in the far tails; ordinary inputs agree to about 1e-14.
        expect(Math.abs(got[name] / w - 1), name).toBeLessThanOrEqual(5e-12);
      }
    });
  });

  it('issue 31, as filed: spot = strike = 3e307, 10 years, rate −0.2: the call is 1.0512436116264575e304 (mpmath), theta and rho are numbers', () => {
    const r = priceOption({ spot: 3e307, strike: 3e307, timeYears: 3650 / 365, rate: -0.2, vol: 0.2, type: 'call' });
    expect(Math.abs(r.price / 1.0512436116264575e304 - 1)).toBeLessThan(1e-13);
    expect(r.nullReasons).toEqual({});
    expect(Number.isFinite(r.greeks.theta) && Number.isFinite(r.greeks.rho)).toBe(true);
  });

  it('homogeneity: V(c·S, c·K) = c·V(S, K), Greeks of degree 1 (theta, vega, rho), 0 (delta) and −1 (gamma), for c up to 1e306', () => {
    // An identity of the model (no reference needed): scaling spot and strike by c scales every money figure by c.
    for (const type of ['call', 'put'] as const) {
      const base = priceOption({ spot: 100, strike: 110, timeYears: 0.5, rate: 0.03, vol: 0.25, dividendYield: 0.01, type });
      for (const c of [1e-300, 1e-150, 3e-7, 1e150, 1e306]) {
        const big = priceOption({ spot: 100 * c, strike: 110 * c, timeYears: 0.5, rate: 0.03, vol: 0.25, dividendYield: 0.01, type });
        expect(big.nullReasons).toEqual({});
        // 100·c and 110·c are themselves rounded (1.1e-16), which the price carries with its elasticity (about 10).
        const close = (a: number, b: number) => expect(Math.abs(a / b - 1)).toBeLessThan(1e-13);
        close(big.price, c * base.price);
        close(big.greeks.theta, c * base.greeks.theta);
        close(big.greeks.vega, c * base.greeks.vega);
        close(big.greeks.rho, c * base.greeks.rho);
        close(big.greeks.delta, base.greeks.delta);
        close(big.greeks.gamma, base.greeks.gamma / c);
      }
    }
  });

  it('put–call parity holds near the top of the range: C − P = S·e^(−qT) − K·e^(−rT) with S, K ≈ 1e307', () => {
    // Both sides finite; the right side formed directly, in double, as an independent identity.
    const m = { spot: 1.1e307, strike: 1e307, timeYears: 2, rate: -0.1, vol: 0.4, dividendYield: 0.05 };
    const c = priceOption({ ...m, type: 'call' }).price;
    const p = priceOption({ ...m, type: 'put' }).price;
    const forward = m.spot * Math.exp(-m.dividendYield * m.timeYears) - m.strike * Math.exp(-m.rate * m.timeYears);
    expect(Math.abs((c - p) / forward - 1)).toBeLessThan(1e-12);
  });

  it('no figure is ever 0 or ±Infinity without its reason, on a grid over the schema bounds', () => {
    // BSM with σ > 0 has no zero price, delta, gamma, vega or rho: a 0 can only be an underflow, and must say so.
    const spots = [5e-324, 1e-300, 1e-10, 1, 100, 1e10, 1e300, 1.7976931348623157e308];
    for (const spot of spots)
      for (const strike of spots)
        for (const expiryDays of [1 / 1440, 30, 3650])
          for (const vol of [5e-324, 1e-9, 0.2, 5])
            for (const rate of [-0.2, 1])
              for (const type of ['call', 'put'] as const) {
                const r = priceOption({ spot, strike, timeYears: expiryDays / 365, rate, vol, dividendYield: rate === 1 ? -0.2 : 1, type });
                for (const [name, v] of Object.entries({ price: r.price, ...r.greeks }) as Array<[keyof typeof r.nullReasons, number]>) {
                  expect(Number.isNaN(v), `${name} NaN`).toBe(false);
                  if (name !== 'theta' && (v === 0 || !Number.isFinite(v))) expect(r.nullReasons[name], `${name} ${spot} ${strike} ${vol}`).toBeDefined();
                  if (!Number.isFinite(v)) expect(r.nullReasons[name]).toBe('overflow');
                  if (r.nullReasons[name] === 'underflow') expect(Math.abs(v)).toBe(0);
                }
              }
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
