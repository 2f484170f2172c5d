// Products an adjustment rounds (docs/api.md, "Adjusted prices"), shared by
// the tests of its two twins: the SQL (test/integration/price-text.test.ts)
// and the service's (test/unit/adjusted-values.test.ts).

/** A deterministic generator, so a failure reproduces. */
function prng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1_664_525 + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

/**
 * [value, multiplier] pairs: random prices at every scale from 1e-20 to
 * 1e19 times the multipliers of splits and dividends; exact ties (a
 * 14-digit decimal ending in 5, halved and doubled back, both exact in
 * binary); 17-digit values just below and just above a half in the 14th
 * digit, whose product can round onto the half itself; and the edges (zeros,
 * a multiplier of 1, products beyond the double range, subnormals, powers of
 * ten). The last pair is [2.727, 1/3], whose product rounds to 0.909.
 */
export function productsToRound(seed: number): [number, number][] {
  const rand = prng(seed);
  const pairs: [number, number][] = [];
  for (let i = 0; i < 30_000; i++) {
    const scale = 10 ** (Math.floor(rand() * 40) - 20);
    pairs.push([Math.round(rand() * 1e6) / 100, [0.5, 1 / 3, 2, 0.25, 1 - rand() * 0.05, 1e-20, 7][i % 7] * scale]);
  }
  for (let i = 0; i < 5_000; i++) {
    const tie = Number(`${1 + Math.floor(rand() * 9)}.${String(Math.floor(rand() * 1e11)).padStart(11, '0')}5e${Math.floor(rand() * 20) - 8}`);
    pairs.push([tie / 2, 2], [-tie / 2, 2]);
  }
  for (let i = 0; i < 5_000; i++) {
    const digits = `${1 + Math.floor(rand() * 9)}${String(Math.floor(rand() * 1e12)).padStart(12, '0')}${['49999', '50000'][i % 2]}${Math.floor(rand() * 10)}`;
    const near = Number(`${digits[0]}.${digits.slice(1)}e${Math.floor(rand() * 20) - 8}`);
    pairs.push([near / 2, 2], [-near / 2, 2]);
  }
  pairs.push(
    [0, 0.5],
    [-0, 0.5],
    [3, 1],
    [2.7270000000000003, 1],
    [1e300, 1e300],
    [-1e300, 1e300],
    [1e-300, 1e-300],
    [-1e-300, 1e-300],
    [5e-324, 0.5],
    [1e160, 1e-150],
    [1.5e-7, 0.5],
    [999.9999999999999, 0.9999999999999999],
    [1e13, 0.9999999999999999],
    [1e-10, 1.0000000000000002],
    [2.727, 1 / 3],
  );
  return pairs;
}
