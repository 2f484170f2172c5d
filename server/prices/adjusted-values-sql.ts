import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { SIGNIFICANT_DIGITS } from '../core/significant.ts';

// A bar's values adjusted in SQL with the multipliers of the read's plan
// (price-history/adjustment.ts, multiplierSegments), and rounded as the price
// routes print them (core/significant.ts), for the CSV rows PostgreSQL writes.
// Packed series are adjusted by the service with the same steps
// (adjusted-values.ts, adjustedValue).

type Fragment = postgres.Fragment;

/**
 * `value` times the segment's `factor` (null when no segment applies: the
 * value as stored). Two magnitudes within 1e-150..1e150 multiply without
 * leaving the double range, so `*` cannot fail; anything else goes through
 * ieee_product (sql/012_price_text.sql).
 */
export function adjusted(sql: ISql, value: Fragment, factor: 'price' | 'volume'): Fragment {
  const m = sql`s.${sql(factor)}`;
  return sql`case
    when ${m} is null or ${value} is null then ${value}
    when ${within(sql, value)} and ${within(sql, m)} then ${value} * ${m}
    else ieee_product(${value}, ${m})
  end`;
}

const within = (sql: ISql, x: Fragment) => sql`abs(${x}) between 1e-150::float8 and 1e150::float8`;

/**
 * What rounding `value` times the segment's `factor` takes: null for a value
 * written as stored (no segment, a multiplier of exactly 1, or no value);
 * else 10^k, the power of ten that puts its 13th significant digit in the
 * units, when 10^k is an exact double (1e-10 ≤ |product| < 1e13); else 0, for
 * the exact path of roundedValue. Computed beside the product, so the
 * logarithm is taken once per value.
 */
export function roundingScale(sql: ISql, value: Fragment, factor: 'price' | 'volume'): Fragment {
  const m = sql`s.${sql(factor)}`;
  return sql`case
    when ${m} is null or ${m} = 1 or ${value} is null then null
    when ${within(sql, value)} and ${within(sql, m)} and abs(${value} * ${m}) >= 1e-10::float8 and abs(${value} * ${m}) < 1e13::float8
      then power(10::float8, ${SIGNIFICANT_DIGITS - 1} - floor(log(abs(${value} * ${m}))))
    else 0
  end`;
}

/**
 * `x` rounded to 13 significant digits: the shortest decimal that reads back
 * as x (PostgreSQL's float8 text with extra_float_digits 1, JavaScript's
 * String(x)) rounded half away from zero, read back as the nearest double,
 * whose shortest decimal is then the rounded one. With `scale` > 0 that is
 * |x| · scale rounded to an integer and divided by the scale again, in float8:
 * both the product and the shortest decimal lie within 0.008 of |x| · scale's
 * exact value (two half-ulps of a number below 2^44), so the two roundings
 * agree unless |x| · scale is within 0.01 of a half, when the exact path
 * (numeric, about four times slower) decides. Zero and ±Infinity stay as
 * they are.
 */
export function roundedValue(sql: ISql, x: Fragment, scale: Fragment): Fragment {
  const scaled = sql`abs(${x}) * ${scale}`;
  const decimal = sql`${x}::text::numeric`;
  return sql`case
    when ${scale} is null then ${x}
    when ${scale} > 0 and abs(${scaled} - floor(${scaled}) - 0.5::float8) >= 0.01::float8 then sign(${x}) * floor(${scaled} + 0.5::float8) / ${scale}
    when ${x} = 0 or abs(${x}) = 'Infinity'::float8 then ${x}
    else round(${decimal}, ${SIGNIFICANT_DIGITS - 1} - floor(log(abs(${decimal})))::integer)::float8
  end`;
}
