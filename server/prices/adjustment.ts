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

export type Provenance = 'observed' | 'vendor_pit' | 'announced' | 'backfilled';
export const PROVENANCES: readonly Provenance[] = ['observed', 'vendor_pit', 'announced', 'backfilled'];

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
const daysBetween = (a: string, b: string) => (Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / DAY_MS;

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

/**
 * Adjusts bars one at a time in ascending date order (so a cursor can stream
 * them), tracking which actions changed something and which were already
 * reflected by the source.
 */
export class BarAdjuster {
  readonly applied = new Set<string>();
  readonly alreadyReflected = new Set<string>();
  readonly bases = new Set<'raw' | 'vendor_adjusted'>();
  private readonly appliedProvenance = new Map<string, Provenance>();

  constructor(private readonly factors: Factor[]) {}

  adjust<B extends RawBar>(bar: B): B {
    this.bases.add(bar.priceBasis);
    let price = 1;
    let volume = 1;
    // Multiplied in ascending effective-date order for every bar, so the same
    // action set always yields bit-identical numbers.
    for (const f of this.factors) {
      if (f.effectiveDate <= bar.barDate) continue;
      if (bar.reflectsActionsThrough !== null && f.effectiveDate <= bar.reflectsActionsThrough) {
        this.alreadyReflected.add(f.actionId);
        continue;
      }
      price *= f.price;
      volume *= f.volume;
      this.applied.add(f.actionId);
      this.appliedProvenance.set(f.actionId, f.provenance);
    }
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

  provenanceCounts(): Record<Provenance, number> {
    const counts = { observed: 0, vendor_pit: 0, announced: 0, backfilled: 0 };
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
