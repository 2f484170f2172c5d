// Options: the day count, the range of a double, the inputs and results of Black–Scholes pricing, an option leg, a chain's computed Greeks and an implied-volatility snapshot.
// Types and constants only, as workers/contract.ts (which re-exports them).

/** Calendar days per year under ACT/365F. */
export const DAYS_PER_YEAR = 365;
/** Name of the day-count convention used to turn expiry days into years. */
export const DAY_COUNT_CONVENTION = 'ACT/365F' as const;

/** Daily bars the historical volatility of an implied-volatility snapshot reads. */
export const VOLATILITY_WINDOW_DAYS = 30;

export const GREEKS_MISSING_INPUTS = ['spotPrice', 'riskFreeRate', 'bid', 'ask', 'quote', 'timeToExpiry', 'impliedVolatility'] as const;
export type GreeksMissingInput = (typeof GREEKS_MISSING_INPUTS)[number];

// Read and produced by vol-stats.ts.
/** One contract's solved implied volatility; null when it did not solve. */
export interface StrikeIv {
  strike: number;
  right: OptionType;
  impliedVolatility: number | null;
}

/** One point of a term structure: the ATM IV of one expiry. */
export interface AtmPoint {
  daysToExpiry: number;
  atmImpliedVolatility: number;
}

export interface ExpiryIvs {
  daysToExpiry: number;
  contracts: readonly StrikeIv[];
}

/** The figures of one instrument's snapshot, named as the bulk implied-volatility read names them. */
export interface VolatilitySnapshot {
  impliedVolatility30d: number | null;
  historicalVolatility30d: number | null;
  parkinsonHistoricalVolatility30d: number | null;
  putCallIvRatio30d: number | null;
  termStructure: AtmPoint[];
}

export interface VolatilitySnapshotInput {
  /** Underlying price the ATM strikes are measured against. */
  spot: number;
  expiries: readonly ExpiryIvs[];
  /** Daily bars ascending by date; a missing figure is null. */
  closes: ArrayLike<number | null>;
  highs: ArrayLike<number | null>;
  lows: ArrayLike<number | null>;
}

// Read and produced by black-scholes.ts.
export type OptionType = 'call' | 'put';

export interface OptionPricingInput {
  spot: number;
  strike: number;
  /** Time to expiry in years (use `yearsFromDays(expiryDays)`). */
  timeYears: number;
  /** Continuously compounded annual risk-free rate, decimal. */
  rate: number;
  /** Annual volatility, decimal (0.2 = 20%). */
  vol: number;
  /** Continuous annual dividend yield, decimal; default 0. */
  dividendYield?: number;
  type: OptionType;
}

export interface Greeks {
  /** ∂V/∂S per share. */
  delta: number;
  /** ∂²V/∂S² per share. */
  gamma: number;
  /** Value change per calendar day of time passing: −(∂V/∂T)/365. */
  theta: number;
  /** Value change per one percentage point of volatility: (∂V/∂σ)/100. */
  vega: number;
  /** Value change per one percentage point of the risk-free rate: (∂V/∂r)/100. */
  rho: number;
}

export type OptionFigure = 'price' | keyof Greeks;
export interface OptionPriceResult {
  /** Fair value per share (one underlying unit); Infinity on overflow, 0 on underflow (see nullReasons). */
  price: number;
  /** Each Greek; ±Infinity on overflow, 0 on underflow (see nullReasons). */
  greeks: Greeks;
  d1: number;
  d2: number;
  /** The figures that are not representable in double precision, and why. Empty for ordinary inputs. */
  nullReasons: Partial<Record<OptionFigure, NumericRangeReason>>;
}

// Read and produced by double-range.ts.
/** Why a figure has no double: its magnitude is above the largest double (≈1.8e308) or, not being 0, below the smallest (≈4.9e-324). */
export type NumericRangeReason = 'overflow' | 'underflow';

// Read and produced by option-structures.ts.
export type LegAction = 'buy' | 'sell';

export interface OptionLeg {
  action: LegAction;
  type: OptionType;
  strike: number;
  /** Number of contracts, > 0. */
  quantity: number;
}

// Read and produced by option-greeks.ts.
export interface ChainGreeksInput {
  /** Underlying price for each contract's quote; null when none is known. */
  spot: ArrayLike<number | null>;
  /** Continuously compounded annual risk-free rate for each contract's quote; null when none is in force. */
  rate: ArrayLike<number | null>;
  /** Continuous annual dividend yield, decimal. */
  dividendYield: number;
  strike: ArrayLike<number>;
  /** Years from the cut-off to expiry (ACT/365F, as the option-price route). */
  timeYears: ArrayLike<number>;
  right: ArrayLike<OptionType>;
  bid: ArrayLike<number | null>;
  ask: ArrayLike<number | null>;
}

export interface ComputedGreeks {
  greeksSource: 'computed';
  impliedVolatility: number;
  delta: number;
  gamma: number;
  theta: number;
  vega: number;
  rho: number;
}

export interface GreeksUnavailable {
  unavailable: { reason: 'not_supplied_and_not_computable'; missingInputs: GreeksMissingInput[]; detail: string };
}

export type ContractGreeks = ComputedGreeks | GreeksUnavailable;
