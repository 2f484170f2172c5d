/**
 * Greeks of an option chain computed from quotes: per contract, the implied
 * volatility solved from the quote's mid (workers/implied-vol.ts), then
 * `priceOption` at that volatility, the call the option-price route makes
 * (server/analytics/service.ts), so the Greeks carry the same units:
 * per share; theta per calendar day; vega and rho per percentage point.
 *
 * Pure: no I/O, no imports from server/. Runs as the `chainGreeks` task.
 *
 * Rules:
 *  - mid = (bid + ask) / 2.
 *  - Inputs are columns, one entry per contract (plain arrays or typed
 *    arrays; a Float64Array marks a missing bid or ask with NaN). A bid or ask
 *    that is null or not a finite number is missing; a spot that is null, not
 *    finite or not positive is missing; a rate that is null or not finite is
 *    missing.
 *  - A contract whose Greeks cannot be computed is `unavailable`, naming every
 *    missing input: `spotPrice`, `riskFreeRate`, `bid`, `ask`, `quote` (bid
 *    and ask both 0: no market), `timeToExpiry` (timeYears ≤ 0: at or past
 *    expiry), and `impliedVolatility` when every input is present but the mid
 *    has no implied volatility (outside the no-arbitrage bounds; the detail is
 *    the solver's). Unavailable carries no Greek at all, never a zero.
 */
import { priceOption } from './black-scholes.ts';
import { impliedVolatility } from './implied-vol.ts';
import type { GreeksMissingInput, ContractGreeks, GreeksUnavailable, ChainGreeksInput, OptionType } from './contract.ts';

const usable = (x: number | null): x is number => x !== null && Number.isFinite(x);

/** Greeks of one contract; see the module comment for the rules. */
export function contractGreeks(
  spot: number | null,
  rate: number | null,
  dividendYield: number,
  strike: number,
  timeYears: number,
  right: OptionType,
  bid: number | null,
  ask: number | null,
): ContractGreeks {
  const missing: GreeksMissingInput[] = [];
  const reasons: string[] = [];
  const hasSpot = usable(spot) && spot > 0;
  if (!hasSpot) {
    missing.push('spotPrice');
    reasons.push("no underlying close is known at the quote's instant");
  }
  if (!usable(rate)) {
    missing.push('riskFreeRate');
    reasons.push("no risk-free rate is known at the quote's instant");
  }
  if (!usable(bid) || !usable(ask)) {
    for (const [side, value] of [
      ['bid', bid],
      ['ask', ask],
    ] as const) {
      if (usable(value)) continue;
      missing.push(side);
      reasons.push(`the quote has no ${side}`);
    }
  } else if (bid === 0 && ask === 0) {
    missing.push('quote');
    reasons.push('bid and ask are both 0, so there is no market to take a mid from');
  }
  if (!(timeYears > 0)) {
    missing.push('timeToExpiry');
    reasons.push(`the contract is at or past expiry (time to expiry ${timeYears} years)`);
  }
  if (missing.length > 0) return unavailable(missing, reasons);

  // Every input is present (the checks above narrowed each one).
  const S = spot as number;
  const r = rate as number;
  const mid = ((bid as number) + (ask as number)) / 2;
  const iv = impliedVolatility({ spot: S, strike, timeYears, rate: r, dividendYield, right, price: mid, priceName: 'mid' });
  if (!iv.ok) return unavailable(['impliedVolatility'], [`the implied volatility does not solve: ${iv.detail}`]);
  const { greeks } = priceOption({ spot: S, strike, timeYears, rate: r, vol: iv.vol, dividendYield, type: right });
  return { greeksSource: 'computed', impliedVolatility: iv.vol, ...greeks };
}

function unavailable(missingInputs: GreeksMissingInput[], reasons: string[]): GreeksUnavailable {
  return { unavailable: { reason: 'not_supplied_and_not_computable', missingInputs, detail: `Greeks cannot be computed: ${reasons.join('; ')}.` } };
}

/** Greeks of every contract of a chain, in input order. */
export function chainGreeks(input: ChainGreeksInput): ContractGreeks[] {
  const n = input.strike.length;
  for (const [name, column] of Object.entries({
    spot: input.spot,
    rate: input.rate,
    timeYears: input.timeYears,
    right: input.right,
    bid: input.bid,
    ask: input.ask,
  })) {
    if (column.length !== n) throw new RangeError(`chainGreeks: ${name} has ${column.length} entries, strike has ${n}`);
  }
  if (!Number.isFinite(input.dividendYield)) throw new RangeError('dividendYield must be a finite number');
  const out = new Array<ContractGreeks>(n);
  for (let i = 0; i < n; i++) {
    out[i] = contractGreeks(input.spot[i], input.rate[i], input.dividendYield, input.strike[i], input.timeYears[i], input.right[i], input.bid[i], input.ask[i]);
  }
  return out;
}
