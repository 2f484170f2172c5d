/**
 * An adjusted price as the price routes print it (docs/api.md, "Adjusted
 * prices"; the SQL of server/prices/adjusted-values-sql.ts, roundedValue): the
 * shortest decimal that reads back as `x` (JavaScript's String(x), the text
 * PostgreSQL writes for a float8) rounded to 13 significant digits, half away
 * from zero, read back as the nearest double. 290.035 × 0.05 is
 * 14.501750000000001, printed 14.50175. Zero, ±Infinity and NaN stay as they
 * are; a value of 13 significant digits or fewer is returned unchanged.
 */
export const SIGNIFICANT_DIGITS = 13;
// Why 13 (docs/api.md, "Adjusted prices"): a return between two rounded values is within (1 + r) · 1e-12 of the
// unrounded one. The SQL the price reads use (prices/adjusted-values-sql.ts) rounds to the same count.

export function roundSignificant(x: number, digits = SIGNIFICANT_DIGITS): number {
  if (x === 0 || !Number.isFinite(x)) return x;
  // toExponential() without a count gives the shortest digits that read back as x.
  const [mantissa, exponentText] = Math.abs(x).toExponential().split('e');
  const all = mantissa.replace('.', '');
  if (all.length <= digits) return x;
  let kept = BigInt(all.slice(0, digits));
  let exponent = Number(exponentText);
  // Half away from zero on the magnitude: the first dropped digit decides (the shortest decimal is exact).
  if (all.charCodeAt(digits) >= 0x35) kept += 1n;
  let text = kept.toString();
  if (text.length > digits) {
    // 9.999…95 rounds up to 10.000…: one more digit before the point.
    text = text.slice(0, digits);
    exponent += 1;
  }
  const rounded = Number(`${text[0]}.${text.slice(1)}e${exponent}`);
  return x < 0 ? -rounded : rounded;
}
