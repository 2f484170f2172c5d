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

import { zeroProvenanceCounts, type Provenance } from '../actions/schema.ts';

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

const DAY_MS = 86_400_000;
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

export interface RawBar {
  barDate: string;
  openPrice: number | null;
  highPrice: number | null;
  lowPrice: number | null;
  closePrice: number;
  volume: number | null;
  priceBasis: 'raw' | 'vendor_adjusted';
  reflectsActionsThrough: string | null;
}

/** Days since 1970-01-01 of a yyyy-mm-dd date, by arithmetic (this runs per bar; no Date objects). */
export function dayNumber(date: string): number {
  let y = (date.charCodeAt(0) - 48) * 1000 + (date.charCodeAt(1) - 48) * 100 + (date.charCodeAt(2) - 48) * 10 + (date.charCodeAt(3) - 48);
  const m = (date.charCodeAt(5) - 48) * 10 + (date.charCodeAt(6) - 48);
  const d = (date.charCodeAt(8) - 48) * 10 + (date.charCodeAt(9) - 48);
  // Howard Hinnant's days_from_civil.
  if (m <= 2) y -= 1;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/** The yyyy-mm-dd date of a day number (the inverse of dayNumber). */
export const dayToDate = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

/** `reflectsActionsThrough` of a raw bar, in day-number form. */
export const NOT_VENDOR_ADJUSTED = -2_147_483_648;

/**
 * Adjusts bars in ascending date order (one at a time, so a cursor can
 * stream them, or a whole series of arrays at once), tracking which actions
 * changed something and which were already reflected by the source. Both
 * forms go through `multipliersAt`, so they give bit-identical numbers.
 */
export class BarAdjuster {
  readonly applied = new Set<string>();
  readonly alreadyReflected = new Set<string>();
  readonly bases = new Set<'raw' | 'vendor_adjusted'>();
  private readonly appliedProvenance = new Map<string, Provenance>();
  private readonly effectiveDays: number[];
  // Results of the last multipliersAt call (fields, not an object per bar).
  private price = 1;
  private volume = 1;

  constructor(private readonly factors: Factor[]) {
    this.effectiveDays = factors.map((f) => dayNumber(f.effectiveDate));
  }

  /**
   * The price and volume multipliers of a bar dated `barDay` whose source
   * reflects actions through `reflectsDay` (NOT_VENDOR_ADJUSTED for a raw
   * bar). Multiplied in ascending effective-date order for every bar, so the
   * same action set always yields bit-identical numbers.
   */
  private multipliersAt(barDay: number, reflectsDay: number): void {
    let price = 1;
    let volume = 1;
    for (let i = 0; i < this.factors.length; i++) {
      const effective = this.effectiveDays[i];
      if (effective <= barDay) continue;
      const f = this.factors[i];
      if (effective <= reflectsDay) {
        this.alreadyReflected.add(f.actionId);
        continue;
      }
      price *= f.price;
      volume *= f.volume;
      this.applied.add(f.actionId);
      this.appliedProvenance.set(f.actionId, f.provenance);
    }
    this.price = price;
    this.volume = volume;
  }

  adjust<B extends RawBar>(bar: B): B {
    this.bases.add(bar.priceBasis);
    if (this.factors.length === 0) return bar;
    this.multipliersAt(dayNumber(bar.barDate), bar.reflectsActionsThrough === null ? NOT_VENDOR_ADJUSTED : dayNumber(bar.reflectsActionsThrough));
    const { price, volume } = this;
    if (price === 1 && volume === 1) return bar;
    return {
      ...bar,
      openPrice: bar.openPrice === null ? null : bar.openPrice * price,
      highPrice: bar.highPrice === null ? null : bar.highPrice * price,
      lowPrice: bar.lowPrice === null ? null : bar.lowPrice * price,
      closePrice: bar.closePrice * price,
      volume: bar.volume === null ? null : bar.volume * volume,
    };
  }

  /**
   * Adjusts a series in place: `days` and `reflects` in day-number form,
   * `prices` the price arrays (NaN for an absent value stays NaN).
   */
  adjustSeries(days: Int32Array, reflects: Int32Array, prices: Float64Array[], volume: Float64Array | null): void {
    for (let i = 0; i < days.length; i++) {
      this.bases.add(reflects[i] === NOT_VENDOR_ADJUSTED ? 'raw' : 'vendor_adjusted');
      if (this.factors.length === 0) continue;
      this.multipliersAt(days[i], reflects[i]);
      if (this.price !== 1 || this.volume !== 1) {
        for (const p of prices) p[i] *= this.price;
        if (volume) volume[i] *= this.volume;
      }
    }
  }

  provenanceCounts(): Record<Provenance, number> {
    const counts = zeroProvenanceCounts();
    for (const p of this.appliedProvenance.values()) counts[p]++;
    return counts;
  }
}

export type PriceBasis = 'raw' | 'adjusted' | 'vendor_adjusted' | 'mixed';

/** What the returned numbers are; see the README's "Price basis" section. */
export function priceBasisOf(adjusted: boolean, bases: Set<'raw' | 'vendor_adjusted'>): PriceBasis {
  if (bases.size > 1) return 'mixed';
  if (bases.has('vendor_adjusted')) return 'vendor_adjusted';
  return adjusted ? 'adjusted' : 'raw';
}
