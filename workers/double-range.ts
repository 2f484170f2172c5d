/**
 * Arithmetic at the ends of the double range: exact scaling by powers of two,
 * e^L·2^n formed without an intermediate overflow or underflow, and signed
 * sums of such exponentials.
 *
 * Pure functions over numbers: no I/O, no imports from server/. Safe to run
 * inside piscina worker threads.
 */
import type { NumericRangeReason } from './contract.ts';

// ln 2 in two parts (fdlibm): j·LN2_HI is exact for |j| < 2^20.
const LN2_HI = 6.9314718036912381649e-1;
const LN2_LO = 1.9082149292705877e-10;

/** v·2^n, exact whenever the result is a normal double, without an intermediate overflow or underflow. */
export function ldexp(v: number, n: number): number {
  if (v === 0 || !Number.isFinite(v)) return v;
  let e = Math.round(n);
  if (e > 2200) return v * Infinity;
  if (e < -2200) return v * 0;
  while (e > 1023) {
    v *= 2 ** 1023;
    e -= 1023;
  }
  while (e < -1022) {
    v *= 2 ** -1022;
    e += 1022;
  }
  return v * 2 ** e;
}

/** The binary exponent of a positive finite double (subnormals included): v = m·2^e, 1 ≤ m < 2. */
export function binaryExponent(v: number): number {
  let e = Math.floor(Math.log2(v));
  // log2 can round across a power of two; settle it exactly.
  if (ldexp(v, -e) >= 2) e += 1;
  else if (ldexp(v, -e) < 1) e -= 1;
  return e;
}

/** e^L · 2^n: ±0 on underflow, Infinity on overflow, else accurate to the rounding of L. */
export function expTimesPow2(L: number, n: number): number {
  if (Number.isNaN(L)) return NaN;
  if (L === -Infinity) return 0;
  if (L === Infinity) return Infinity;
  if (n === 0 && L > -708 && L < 709) return Math.exp(L);
  const total = L + n * Math.LN2;
  if (total > 710) return Infinity;
  if (total < -746) return 0;
  const j = Math.round(L / Math.LN2);
  const rem = L - j * LN2_HI - j * LN2_LO;
  return ldexp(Math.exp(rem), j + n);
}

/** One term sign·e^ln of a signed sum. */
export interface Term {
  sign: number;
  ln: number;
}

/**
 * Σ sign·e^{ln + shiftLn} · 2^k, formed relative to the largest term so no
 * term overflows or underflows on its own. An exact cancellation gives 0 (a
 * true zero up to rounding); when every term is below the smallest double the
 * reason is 'underflow'.
 */
export function signedSum(terms: readonly Term[], k: number, shiftLn: number): { value: number; reason: NumericRangeReason | null } {
  const live = terms.filter((t) => t.ln > -Infinity && !Number.isNaN(t.ln));
  if (live.length === 0) return { value: 0, reason: 'underflow' };
  const top = Math.max(...live.map((t) => t.ln));
  // Each of the (at most 3) terms below e^−760: their sum is below the smallest double.
  if (top + shiftLn + k * Math.LN2 < -760) return { value: 0, reason: 'underflow' };
  let acc = 0;
  for (const t of live) acc += t.sign * Math.exp(t.ln - top);
  if (acc === 0) return { value: 0, reason: null };
  const value = Math.sign(acc) * expTimesPow2(top + Math.log(Math.abs(acc)) + shiftLn, k);
  if (!Number.isFinite(value)) return { value, reason: 'overflow' };
  if (value === 0) return { value, reason: 'underflow' };
  return { value, reason: null };
}
