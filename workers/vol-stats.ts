/**
 * The figures of an implied-volatility snapshot: realised volatility from
 * daily bars, the at-the-money implied volatility of each expiry, its 30-day
 * point and the put/call ratio there. Pure: no I/O, no imports from server/.
 *
 * Conventions:
 *  - Series are ascending by date, one entry per trading day; the window is
 *    the most recent `window` days. Realised volatility is annualised by √252
 *    (trading days per year).
 *  - historicalVolatility (close to close): the sample standard deviation
 *    (divisor window − 1) of the last `window` daily log returns ln(Cᵢ/Cᵢ₋₁),
 *    × √252. Needs the last window + 1 closes, each finite and > 0; else null.
 *  - parkinsonVolatility: √( Σ ln(Hᵢ/Lᵢ)² / (4·ln 2 · window) ) × √252 over
 *    the last `window` days (Parkinson 1980). Null when fewer than `window`
 *    days, or any high or low in the window is missing, not > 0, or H < L.
 *  - atmIv, the at-the-money IV of one expiry: at each strike the mean of the
 *    call and put IVs that solved (one when only one did; averaging cancels
 *    the opposite errors that a misestimated dividend or borrow rate puts on
 *    call and put IVs through put–call parity), then linear interpolation in
 *    strike between the nearest strikes at or below and at or above the spot.
 *    At the money means strike = spot: for 30 days at r − q = 5 % the forward
 *    is 0.4 % above spot, less than a strike interval of a liquid chain. A
 *    spot outside the strikes with an IV gives null (no extrapolation).
 *  - atmVolAt, the IV at `targetDays` (30): linear interpolation in total
 *    variance w = σ²·T between the expiries nearest below and above the
 *    target, σ = √(w_target / T_target); an expiry at the target is used as
 *    is. T is in ACT/365F years, though the day count cancels out of σ. With
 *    no expiry on one side, null (no extrapolation).
 *  - putCallIvRatio: the put-only ATM IV over the call-only ATM IV, each
 *    taken to the 30-day point by atmVolAt; null when either is null.
 */
import {
  VOLATILITY_WINDOW_DAYS,
  type AtmPoint,
  type VolatilitySnapshotInput,
  type ExpiryIvs,
  type StrikeIv,
  type VolatilitySnapshot,
  type OptionType,
} from './contract.ts';

export const TRADING_DAYS_PER_YEAR = 252;
export const ATM_TARGET_DAYS = 30;

const ANNUALISE = Math.sqrt(TRADING_DAYS_PER_YEAR);
const positive = (x: number | null): x is number => x !== null && Number.isFinite(x) && x > 0;

function assertWindow(window: number, least: number): void {
  if (!Number.isInteger(window) || window < least) throw new RangeError(`window must be an integer ≥ ${least}`);
}

/** Close-to-close volatility of the last `window` daily log returns, annualised (see the module comment). */
export function historicalVolatility(closes: ArrayLike<number | null>, window = VOLATILITY_WINDOW_DAYS): number | null {
  assertWindow(window, 2);
  const n = closes.length;
  if (n < window + 1) return null;
  const returns = new Float64Array(window);
  for (let i = 0; i < window; i++) {
    const prev = closes[n - window - 1 + i];
    const next = closes[n - window + i];
    if (!positive(prev) || !positive(next)) return null;
    returns[i] = Math.log(next / prev);
  }
  let mean = 0;
  for (const r of returns) mean += r;
  mean /= window;
  let squares = 0;
  for (const r of returns) squares += (r - mean) * (r - mean);
  return Math.sqrt(squares / (window - 1)) * ANNUALISE;
}

/** Parkinson high–low volatility of the last `window` days, annualised (see the module comment). */
export function parkinsonVolatility(highs: ArrayLike<number | null>, lows: ArrayLike<number | null>, window = VOLATILITY_WINDOW_DAYS): number | null {
  assertWindow(window, 1);
  if (highs.length !== lows.length) throw new RangeError(`parkinsonVolatility: ${highs.length} highs but ${lows.length} lows`);
  const n = highs.length;
  if (n < window) return null;
  let sum = 0;
  for (let i = n - window; i < n; i++) {
    const h = highs[i];
    const l = lows[i];
    if (!positive(h) || !positive(l) || h < l) return null;
    const range = Math.log(h / l);
    sum += range * range;
  }
  return Math.sqrt(sum / (4 * Math.LN2 * window)) * ANNUALISE;
}

export type AtmIvResult = { vol: number; strikes: [number, number] } | { vol: null; reason: 'no_implied_volatility' | 'spot_outside_strikes'; detail: string };

/** ATM implied volatility of one expiry: `right` limits it to calls or puts (see the module comment). */
export function atmIv(contracts: readonly StrikeIv[], spot: number, right?: OptionType): AtmIvResult {
  const byStrike = new Map<number, { sum: number; count: number }>();
  for (const c of contracts) {
    if ((right !== undefined && c.right !== right) || !positive(c.impliedVolatility)) continue;
    const at = byStrike.get(c.strike) ?? { sum: 0, count: 0 };
    at.sum += c.impliedVolatility;
    at.count++;
    byStrike.set(c.strike, at);
  }
  const which = right === undefined ? 'contract' : right;
  if (byStrike.size === 0) return { vol: null, reason: 'no_implied_volatility', detail: `no ${which} of this expiry has an implied volatility` };
  let below: number | null = null;
  let above: number | null = null;
  for (const k of byStrike.keys()) {
    if (k <= spot && (below === null || k > below)) below = k;
    if (k >= spot && (above === null || k < above)) above = k;
  }
  if (below === null || above === null) {
    const strikes = [...byStrike.keys()];
    return {
      vol: null,
      reason: 'spot_outside_strikes',
      detail: `spot ${spot} is outside the ${which} strikes with an implied volatility (${Math.min(...strikes)} to ${Math.max(...strikes)}); the ATM IV is not extrapolated`,
    };
  }
  const ivAt = (k: number) => {
    // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- called with below and above, keys of byStrike
    const { sum, count } = byStrike.get(k)!;
    return sum / count;
  };
  if (below === above) return { vol: ivAt(below), strikes: [below, above] };
  const lowIv = ivAt(below);
  return { vol: lowIv + ((ivAt(above) - lowIv) * (spot - below)) / (above - below), strikes: [below, above] };
}

/** ATM IV of each expiry with one (see atmIv), ascending by days to expiry. */
export function atmTermStructure(expiries: readonly ExpiryIvs[], spot: number, right?: OptionType): AtmPoint[] {
  const points: AtmPoint[] = [];
  for (const e of expiries) {
    const atm = atmIv(e.contracts, spot, right);
    if (atm.vol !== null) points.push({ daysToExpiry: e.daysToExpiry, atmImpliedVolatility: atm.vol });
  }
  return points.sort((a, b) => a.daysToExpiry - b.daysToExpiry);
}

export type AtmVolAtResult = { vol: number; daysToExpiry: [number, number] } | { vol: null; reason: 'not_bracketed'; detail: string };

/** ATM IV at `targetDays`, interpolated in total variance (see the module comment). */
export function atmVolAt(termStructure: readonly AtmPoint[], targetDays = ATM_TARGET_DAYS): AtmVolAtResult {
  if (!(targetDays > 0)) throw new RangeError('targetDays must be > 0');
  let below: AtmPoint | null = null;
  let above: AtmPoint | null = null;
  for (const p of termStructure) {
    if (!(p.daysToExpiry > 0) || !positive(p.atmImpliedVolatility)) continue;
    if (p.daysToExpiry <= targetDays && (below === null || p.daysToExpiry > below.daysToExpiry)) below = p;
    if (p.daysToExpiry >= targetDays && (above === null || p.daysToExpiry < above.daysToExpiry)) above = p;
  }
  if (below === null || above === null) {
    const side = below === null ? `at or before ${targetDays} days` : `at or after ${targetDays} days`;
    return { vol: null, reason: 'not_bracketed', detail: `no expiry with an ATM implied volatility ${side}; the ${targetDays}-day IV is not extrapolated` };
  }
  if (below === above) return { vol: below.atmImpliedVolatility, daysToExpiry: [below.daysToExpiry, above.daysToExpiry] };
  // Total variance in vol²·days: the 1/365 of ACT/365F years multiplies every w and T alike and cancels.
  const wBelow = below.atmImpliedVolatility ** 2 * below.daysToExpiry;
  const wAbove = above.atmImpliedVolatility ** 2 * above.daysToExpiry;
  const w = wBelow + ((wAbove - wBelow) * (targetDays - below.daysToExpiry)) / (above.daysToExpiry - below.daysToExpiry);
  return { vol: Math.sqrt(w / targetDays), daysToExpiry: [below.daysToExpiry, above.daysToExpiry] };
}

/** ATM put IV / ATM call IV at `targetDays`, or null (see the module comment). */
export function putCallIvRatio(expiries: readonly ExpiryIvs[], spot: number, targetDays = ATM_TARGET_DAYS): number | null {
  const put = atmVolAt(atmTermStructure(expiries, spot, 'put'), targetDays).vol;
  const call = atmVolAt(atmTermStructure(expiries, spot, 'call'), targetDays).vol;
  return put === null || call === null ? null : put / call;
}

/** The figures of one instrument's snapshot (VolatilitySnapshot in contract.ts). */
export function volatilitySnapshot(input: VolatilitySnapshotInput): VolatilitySnapshot {
  const termStructure = atmTermStructure(input.expiries, input.spot);
  return {
    impliedVolatility30d: atmVolAt(termStructure).vol,
    historicalVolatility30d: historicalVolatility(input.closes),
    parkinsonHistoricalVolatility30d: parkinsonVolatility(input.highs, input.lows),
    putCallIvRatio30d: putCallIvRatio(input.expiries, input.spot),
    termStructure,
  };
}
