/**
 * Backward corporate-action adjustment of daily bars.
 *
 * An action with effective (ex-) date D changes every bar dated before D:
 * - split / stock_dividend with ratio R (new shares per old): prices × 1/R, volume × R;
 * - cash_dividend of amount A: prices × (1 − A / C), where C is the raw close
 *   of the last session before D (the standard backward dividend factor);
 *   volume unchanged.
 * Factors compound multiplicatively. Bars from a vendor-adjusted source
 * already reflect every action effective on or before its
 * `reflectsActionsThrough` date; those actions are counted as already
 * reflected and never applied twice.
 */

import { dayNumber } from '../core/day-numbers.ts';
import { zeroProvenanceCounts, type Provenance } from './schema.ts';

export interface ActionForAdjustment {
  id: string;
  kind: string;
  effectiveDate: string;
  knowledgeProvenance: Provenance;
  params: Record<string, unknown>;
}

export interface PriorClose {
  /** Effective date of the dividend this close belongs to. */
  effectiveDate: string;
  barDate: string;
  close: number;
  quoteCurrency: string;
}

// A dividend factor needs the close of the session right before the ex-date.
// If the stored bar before it is older than this, the series has a gap there
// and that close would be a made-up stand-in, so the dividend is not applied.
export const MAX_PRIOR_CLOSE_GAP_DAYS = 7;

export interface Factor {
  actionId: string;
  effectiveDate: string;
  provenance: Provenance;
  price: number;
  volume: number;
}

export interface NotApplied {
  actionId: string;
  reason: 'no_prior_close' | 'prior_close_gap' | 'currency_mismatch' | 'not_a_price_action' | 'invalid_params';
}

const daysBetween = (a: string, b: string) => dayNumber(b) - dayNumber(a);

/** Turns the applicable actions into price/volume factors, ascending by effective date. */
export function buildFactors(actions: ActionForAdjustment[], priorCloses: PriorClose[]): { factors: Factor[]; notApplied: NotApplied[] } {
  const closeByDate = new Map(priorCloses.map((c) => [c.effectiveDate, c]));
  const factors: Factor[] = [];
  const notApplied: NotApplied[] = [];
  for (const a of actions) {
    if (a.kind === 'split' || a.kind === 'stock_dividend') {
      const ratio = Number(a.params.ratio);
      if (!(ratio > 0) || !Number.isFinite(ratio)) {
        notApplied.push({ actionId: a.id, reason: 'invalid_params' });
        continue;
      }
      factors.push({ actionId: a.id, effectiveDate: a.effectiveDate, provenance: a.knowledgeProvenance, price: 1 / ratio, volume: ratio });
    } else if (a.kind === 'cash_dividend') {
      const amount = Number(a.params.amount);
      const prior = closeByDate.get(a.effectiveDate);
      if (!(amount > 0) || !Number.isFinite(amount)) {
        notApplied.push({ actionId: a.id, reason: 'invalid_params' });
      } else if (!prior) {
        notApplied.push({ actionId: a.id, reason: 'no_prior_close' });
      } else if (daysBetween(prior.barDate, a.effectiveDate) > MAX_PRIOR_CLOSE_GAP_DAYS) {
        notApplied.push({ actionId: a.id, reason: 'prior_close_gap' });
      } else if (typeof a.params.currency === 'string' && a.params.currency !== prior.quoteCurrency) {
        notApplied.push({ actionId: a.id, reason: 'currency_mismatch' });
      } else {
        factors.push({
          actionId: a.id,
          effectiveDate: a.effectiveDate,
          provenance: a.knowledgeProvenance,
          price: 1 - amount / prior.close,
          volume: 1,
        });
      }
    } else {
      notApplied.push({ actionId: a.id, reason: 'not_a_price_action' });
    }
  }
  factors.sort((x, y) => (x.effectiveDate < y.effectiveDate ? -1 : x.effectiveDate > y.effectiveDate ? 1 : x.actionId < y.actionId ? -1 : 1));
  return { factors, notApplied };
}

/** `reflectsActionsThrough` of a raw bar, in day-number form. */
export const NOT_VENDOR_ADJUSTED = -2_147_483_648;

/**
 * The multipliers of an action set, by the key of a bar: its date, or its
 * reflects-through date when the bar is vendor-adjusted and that is later.
 * The factors that change a bar are those effective after its key (an action
 * effective on or before the bar's date does not touch it; one effective on
 * or before the reflects-through date is already in the vendor's number): a
 * suffix of the factors in ascending effective date. So the keys fall into
 * segments between consecutive effective dates, each with one price and one
 * volume multiplier, and keys on or after the last effective date are not
 * adjusted.
 *
 * Each multiplier is its factors multiplied in ascending effective-date order
 * (ties by action id) starting from 1, so one action set always gives
 * bit-identical numbers, whether JavaScript applies them (adjustSeries, for
 * analytics) or PostgreSQL does (the price reads, prices/adjusted-values-sql.ts).
 */
export interface MultiplierSegment {
  /** The segment's first key: the effective date of the factor before it, or null from the beginning. */
  from: string | null;
  /** The keys before this date: the effective date of the segment's first factor. */
  until: string;
  price: number;
  volume: number;
}

export function multiplierSegments(factors: Factor[]): MultiplierSegment[] {
  const segments: MultiplierSegment[] = [];
  for (let j = 0; j < factors.length; j++) {
    // No key lies between two factors effective on the same date.
    if (j > 0 && factors[j].effectiveDate === factors[j - 1].effectiveDate) continue;
    let price = 1;
    let volume = 1;
    for (let i = j; i < factors.length; i++) {
      price *= factors[i].price;
      volume *= factors[i].volume;
    }
    segments.push({ from: j === 0 ? null : factors[j - 1].effectiveDate, until: factors[j].effectiveDate, price, volume });
  }
  return segments;
}

/** Each segment's `until` as a day number, for segmentOf. */
export const segmentEnds = (segments: MultiplierSegment[]) => segments.map((s) => dayNumber(s.until));

/** The segment holding a bar's key (a day number), by the segments' ends (segmentEnds); -1 past the last: no action applies. */
export function segmentOf(until: number[], key: number): number {
  let s = 0;
  while (s < until.length && until[s] <= key) s++;
  return s < until.length ? s : -1;
}

/**
 * Adjusts a series in place: `days` ascending and `reflects` in day-number
 * form (NOT_VENDOR_ADJUSTED for a raw bar), `prices` the price arrays (NaN for
 * an absent value stays NaN).
 */
export function adjustSeries(factors: Factor[], days: Int32Array, reflects: Int32Array, prices: Float64Array[], volume: Float64Array | null): void {
  const segments = multiplierSegments(factors);
  const until = segmentEnds(segments);
  for (let i = 0; i < days.length; i++) {
    const s = segmentOf(until, Math.max(days[i], reflects[i]));
    if (s < 0) continue;
    const { price, volume: volumeFactor } = segments[s];
    for (const p of prices) p[i] *= price;
    if (volume) volume[i] *= volumeFactor;
  }
}

/**
 * What a read's bars of one instrument say about its actions: the earliest
 * key (see MultiplierSegment) and, for each reflects-through date of its
 * vendor-adjusted bars, the first bar carrying it.
 */
export interface SeriesKeys {
  minKey: string | null;
  vendorSpans: { reflectsThrough: string; firstBar: string }[];
}

/**
 * The factors that changed at least one of the bars (effective after the
 * earliest key), and those a vendor-adjusted bar already reflected (effective
 * after the bar's date and on or before its reflects-through date); an action
 * can be both, for different bars.
 */
export function factorsUsed(factors: Factor[], keys: SeriesKeys): { applied: Factor[]; alreadyReflected: Factor[] } {
  const { minKey } = keys;
  return {
    applied: minKey === null ? [] : factors.filter((f) => f.effectiveDate > minKey),
    alreadyReflected: factors.filter((f) => keys.vendorSpans.some((s) => s.firstBar < f.effectiveDate && f.effectiveDate <= s.reflectsThrough)),
  };
}

/** Distinct actions by knowledge provenance. */
export function provenanceCounts(factors: Factor[]): Record<Provenance, number> {
  const counts = zeroProvenanceCounts();
  for (const f of factors) counts[f.provenance]++;
  return counts;
}

export type PriceBasis = 'raw' | 'adjusted' | 'vendor_adjusted' | 'mixed';

/** What the returned numbers are (docs/api.md, "Adjustment": meta.priceBasis.priceBasis). */
export function priceBasisOf(adjusted: boolean, bases: { raw: boolean; vendorAdjusted: boolean }): PriceBasis {
  if (bases.raw && bases.vendorAdjusted) return 'mixed';
  if (bases.vendorAdjusted) return 'vendor_adjusted';
  return adjusted ? 'adjusted' : 'raw';
}
