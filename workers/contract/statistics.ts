// Statistics over closes: correlations, beta and the sources' leads.
// Types and constants only, as workers/contract.ts (which re-exports them).

export const CORRELATION_MIN_OBSERVATIONS = 3;
export const CORRELATION_METHODS = ['pearson', 'spearman'] as const;
export type CorrelationMethod = (typeof CORRELATION_METHODS)[number];

export const BETA_MIN_OBSERVATIONS = 3;
export const BETA_REASONS = ['insufficient_overlap', 'zero_benchmark_variance', 'zero_subject_variance'] as const;

export const MAX_LAG_DAYS = 10;
export const LAGS = MAX_LAG_DAYS + 1;
/** With two pairs a Pearson correlation is always ±1. */
export const MIN_PAIRS = 3;
/** The longest run of calendar days without a session that still reads as a market closure (the 2001-09-11 closure: 6). */
export const SESSION_LOOKBACK_DAYS = 7;

export const PROMOTION_RULE = {
  minSampleSize: 60,
  minCorrelation: 0.1,
  alpha: 0.05,
  lagsSearched: LAGS,
  minLagDays: 1,
  subjectClasses: ['business'],
} as const;

// Read and produced by source-leads.ts.
export type LeadSubjectClass = 'business' | 'market_commentary';

export interface SourceLeadsInput {
  /** The (source, subject class) pairs, by index; only the class matters here. */
  groups: { subjectClass: LeadSubjectClass }[];
  /** Per score series: its instrument (index into the bars) and its group. */
  seriesInstrument: Int32Array;
  seriesGroup: Int32Array;
  /** Series k holds scores seriesOffsets[k] .. seriesOffsets[k + 1] − 1. */
  seriesOffsets: Int32Array;
  /** Days since 1970-01-01, strictly ascending within a series. */
  scoreDays: Int32Array;
  scores: Float64Array;
  /** Instrument i's adjusted closes are barOffsets[i] .. barOffsets[i + 1] − 1, days strictly ascending. */
  barOffsets: Int32Array;
  barDays: Int32Array;
  closes: Float64Array;
}

export interface LagCorrelation {
  lagDays: number;
  correlation: number | null;
  sampleSize: number;
}

export interface SourceLead {
  bestLagDays: number | null;
  peakCorrelation: number | null;
  sampleSize: number | null;
  isPromotionEligible: boolean;
  correlationByLag: LagCorrelation[];
  /** Instruments with at least one score of the group. */
  instruments: number;
  /** The group's first and last score day (days since 1970-01-01); null for a group with no scores. */
  firstDay: number | null;
  lastDay: number | null;
}

// Read and produced by correlation.ts.
export interface DatedCloses {
  /** Days since 1970-01-01 (UTC), strictly ascending. */
  dates: Int32Array;
  close: Float64Array;
}

export interface CorrelationPair {
  /** Index into the input series (a < b). */
  a: number;
  b: number;
  /** null when either aligned return series is constant. */
  correlation: number | null;
}

export interface CorrelationInstrument {
  index: number;
  /** Log returns in the instrument's own series (usable closes − 1). */
  observations: number;
  usable: boolean;
  reason: null | 'insufficient_observations' | 'insufficient_overlap';
}

export interface CorrelationMatrixResult {
  method: CorrelationMethod;
  pairs: CorrelationPair[];
  instruments: CorrelationInstrument[];
  /** Indices of the instruments included in the pairs, input order. */
  usableIndices: number[];
  /** Aligned return rows the pairs were computed on (common dates − 1; 0 when fewer than two usable). */
  alignedObservations: number;
  /** First and last common date (days since epoch) of the usable set; null when none. */
  firstDate: number | null;
  lastDate: number | null;
}

// Read and produced by beta.ts.
export type BetaReason = (typeof BETA_REASONS)[number];

export interface BetaResult {
  beta: number | null;
  alpha: number | null;
  rSquared: number | null;
  /** Aligned log-return pairs used. */
  observations: number;
  /** Common dates with usable closes in both series. */
  alignedDates: number;
  reason: BetaReason | null;
}
