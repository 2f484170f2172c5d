import { z } from 'zod';
import { DirectionSchema, LegActionSchema, OptionTypeSchema } from './schema.ts';
import { EMPTY_WINDOW_REASONS, type EmptyWindowReason } from './series.ts';
import {
  ATR_SIGNALS,
  BETA_MIN_OBSERVATIONS,
  BETA_REASONS,
  type BetaReason,
  BOLLINGER_SIGNALS,
  CANDLESTICK_PATTERNS,
  type CandlestickPatternName,
  type CandlestickSignal,
  CHART_PATTERN_TYPES,
  type ChartPatternSignal,
  CORRELATION_METHODS,
  CORRELATION_MIN_OBSERVATIONS,
  type CorrelationInstrument,
  DAY_COUNT_CONVENTION,
  ICHIMOKU_SIGNALS,
  MA_TRENDS,
  MACD_CROSSOVERS,
  MACD_TRENDS,
  type NumericRangeReason,
  RSI_SIGNALS,
  STOCHASTIC_SIGNALS,
  type StrategyAssumptions,
  type StrategyFigure,
  STRUCTURE_NAMES,
  TECHNICALS_NULL_REASONS,
  TREND_DIRECTIONS,
  VWAP_SIGNALS,
} from '../../workers/contract.ts';

// The `data` of each analytics answer, field for field as the services build
// it (service.ts, market-service.ts). Closed objects: a renamed or extra field
// fails the contract check the integration tests run on every answer.

/** The members of a union a worker defines as a type only: a key missing or extra here fails tsc. */
const members = <T extends string>(set: Record<T, true>) => Object.keys(set) as [T, ...T[]];
const CANDLESTICK_SIGNALS = members<CandlestickSignal>({ bullish: true, bearish: true, neutral: true });
const CHART_PATTERN_SIGNALS = members<ChartPatternSignal>({ bullish: true, bearish: true, neutral: true });
const MEASURES = members<StrategyAssumptions['measure']>({ risk_neutral: true, real_world: true });
const NUMERIC_RANGE_REASONS = members<NumericRangeReason>({ overflow: true, underflow: true });
const STRATEGY_FIGURES = members<StrategyFigure>({
  netCreditDebit: true,
  expectedPayoffAtExpiry: true,
  trueExpectedValue: true,
  breakevens: true,
  maxProfit: true,
  maxLoss: true,
  naivePopTimesMaxProfit: true,
  'riskMetrics.standardDeviation': true,
  'riskMetrics.downsideDeviation': true,
});
const CORRELATION_EXCLUSIONS = members<NonNullable<CorrelationInstrument['reason']>>({ insufficient_observations: true, insufficient_overlap: true });

/** What each reason for a missing figure over a window of bars means (docs/api.md, "When there is not enough data"). */
const EMPTY_WINDOW_MEANINGS: Record<EmptyWindowReason, string> = {
  no_stored_bars: 'no bar of the instrument is stored in the window',
  not_yet_known: 'bars of the instrument are stored in the window, but none was known at asOf (each bar counts from its asOf, its knowledge time)',
};
const meanings = (values: readonly string[], of: Record<string, string>) => values.map((r) => `${r}: ${of[r]}`).join('; ');
const CORRELATION_EXCLUSION_MEANINGS: Record<(typeof CORRELATION_EXCLUSIONS)[number] | EmptyWindowReason, string> = {
  ...EMPTY_WINDOW_MEANINGS,
  insufficient_observations: `fewer than ${CORRELATION_MIN_OBSERVATIONS} log returns in its own series over the window`,
  insufficient_overlap: `left out, the one with the fewest returns, while the usable instruments shared fewer than ${CORRELATION_MIN_OBSERVATIONS} aligned returns`,
};
const BETA_REASON_MEANINGS: Record<BetaReason | EmptyWindowReason, string> = {
  ...EMPTY_WINDOW_MEANINGS,
  insufficient_overlap: `fewer than ${BETA_MIN_OBSERVATIONS} aligned return pairs`,
  zero_benchmark_variance: "the benchmark's aligned returns do not vary: beta, alpha and rSquared are null",
  zero_subject_variance: "the instrument's aligned returns do not vary: beta is 0 and alpha its mean return, rSquared is null",
};

const count = z.int().min(0);
const fraction = z.number().min(0).max(1);
// Formats without zod's long patterns: these schemas only describe answers,
// and the document's format is what a client (and the contract check) reads.
const date = (description: string) => z.string().meta({ format: 'date', description });
const InstrumentId = z.string().meta({ format: 'uuid', description: 'instrument id' });

/** The inputs the three closed-form routes echo, with the year fraction derived from them. */
const marketInputs = {
  spot: z.number(),
  expiryDays: z.number(),
  timeToExpirationYears: z.number().describe('expiryDays / 365'),
  dayCount: z.literal(DAY_COUNT_CONVENTION),
  riskFreeRate: z.number().describe('continuously compounded annual rate, decimal'),
  volatility: z.number().describe('annualised, decimal'),
  dividendYield: z.number().describe('continuous annual yield, decimal'),
};

/** Why a figure is null although it has a value: outside the range of a double. */
const RangeReason = z
  .enum(NUMERIC_RANGE_REASONS)
  .describe(
    'overflow: the magnitude is above the largest double (about 1.8e308); underflow: the value is not 0 but its magnitude is below the smallest positive double (about 4.9e-324)',
  );
const outOfRange = ' null only when the value is outside the double range, the reason in nullReasons';
const nullReasons = <K extends string>(keys: readonly K[], description: string) =>
  z.strictObject(Object.fromEntries(keys.map((key) => [key, RangeReason.optional()])) as Record<K, z.ZodOptional<typeof RangeReason>>).describe(description);

export const OptionPriceDataSchema = z.strictObject({
  price: z.number().min(0).nullable().describe(`fair value per share (one underlying unit), in the price unit of spot;${outOfRange}`),
  greeks: z.strictObject({
    delta: z.number().nullable().describe(`∂V/∂S: value change per 1 unit of spot, per share;${outOfRange}`),
    gamma: z.number().nullable().describe(`∂²V/∂S²: delta change per 1 unit of spot, per share;${outOfRange}`),
    theta: z.number().nullable().describe(`value change per calendar day of time passing, per share; negative when the option loses value;${outOfRange}`),
    vega: z.number().nullable().describe(`value change per 1 percentage point of volatility, per share;${outOfRange}`),
    rho: z.number().nullable().describe(`value change per 1 percentage point of the rate, per share;${outOfRange}`),
  }),
  nullReasons: nullReasons(
    ['price', 'greeks.delta', 'greeks.gamma', 'greeks.theta', 'greeks.vega', 'greeks.rho'],
    'each figure that is null, by its path, with the reason; empty when every figure is a number',
  ),
  assumptions: z.strictObject({
    model: z.literal('black-scholes'),
    ...marketInputs,
    strike: z.number(),
    optionType: OptionTypeSchema,
    exercise: z.literal('european'),
    greekUnits: z.strictObject({ delta: z.string(), gamma: z.string(), theta: z.string(), vega: z.string(), rho: z.string() }),
  }),
});

export const ProbabilityDataSchema = z.strictObject({
  probabilityInTheMoneyAtExpiry: fraction
    .nullable()
    .describe(
      `risk-neutral probability of finishing at or beyond the target (in \`direction\`) at expiry;${outOfRange} (underflow: positive but below about 4.9e-324)`,
    ),
  probabilityOfTouchBeforeExpiry: fraction
    .nullable()
    .describe(
      `probability of reaching the target at any time before expiry: driftless first passage, never below the at-expiry figure;${outOfRange} (underflow: positive but below about 4.9e-324)`,
    ),
  nullReasons: nullReasons(
    ['probabilityInTheMoneyAtExpiry', 'probabilityOfTouchBeforeExpiry'],
    'each probability that is null, with the reason; empty when both are numbers',
  ),
  assumptions: z.strictObject({
    model: z.literal('lognormal-terminal'),
    ...marketInputs,
    target: z.number(),
    direction: DirectionSchema,
    directionMeaning: z.string(),
    expiryMeasure: z.literal('risk_neutral'),
    touchMeasure: z.literal('driftless'),
    touchFlooredToExpiry: z.boolean().describe('true when the at-expiry figure exceeded the driftless touch figure and is reported as the touch probability'),
    targetAlreadyReached: z.boolean().describe('true when spot is already at or beyond the target (touch = 1)'),
  }),
});

const dollarsOrNull = (description: string) => z.number().nullable().describe(`${description}; dollars, whole position;${outOfRange}`);

export const StrategyEvDataSchema = z.strictObject({
  structure: z.enum(STRUCTURE_NAMES),
  legs: z.array(
    z.strictObject({
      action: LegActionSchema,
      type: OptionTypeSchema,
      strike: z.number(),
      quantity: z.int().min(1).describe('contracts'),
      fairValuePerShare: z.number().min(0).nullable().describe(`Black-Scholes-Merton value per share;${outOfRange}`),
      premium: dollarsOrNull('fairValuePerShare × quantity × contractMultiplier, never negative'),
      cashFlow: dollarsOrNull('+premium for a sell (received), −premium for a buy (paid)'),
      nullReasons: nullReasons(
        ['fairValuePerShare', 'premium', 'cashFlow'],
        "each of the leg's figures that is null, with the reason; empty for ordinary inputs",
      ),
    }),
  ),
  netCreditDebit: dollarsOrNull("sum of the legs' cash flows: positive = net credit received, negative = net debit paid"),
  trueExpectedValue: dollarsOrNull(
    'expected present-value P&L: e^(−rT)·E[payoff at expiry] + netCreditDebit; about 0 for fairly priced legs under risk_neutral',
  ),
  expectedPayoffAtExpiry: dollarsOrNull('E[payoff at expiry] under the measure, undiscounted'),
  probabilityOfProfit: fraction.describe('probability under the measure that the expiry P&L (premium at face value) is above 0'),
  breakevens: z.array(z.number().nullable()).describe(`prices at expiry where the expiry P&L crosses 0, ascending; an entry is${outOfRange} (key breakevens)`),
  maxProfit: z.number().nullable().describe(`maximum expiry P&L in dollars, whole position; null when unbounded (maxProfitUnbounded), otherwise${outOfRange}`),
  maxLoss: z
    .number()
    .nullable()
    .describe(`maximum expiry loss as a positive number of dollars, whole position; null when unbounded (maxLossUnbounded), otherwise${outOfRange}`),
  maxProfitUnbounded: z.boolean(),
  maxLossUnbounded: z.boolean(),
  naivePopTimesMaxProfit: z.number().nullable().describe(`probabilityOfProfit × maxProfit; null when maxProfit is null`),
  nullReasons: nullReasons(
    STRATEGY_FIGURES,
    "each dollar or price figure that is null because its value is outside the double range, by its path (breakevens: any of its entries; a leg's figures: in the leg), with the reason; empty for ordinary inputs. Probabilities and ratios are scale-free and always computed.",
  ),
  riskMetrics: z.strictObject({
    standardDeviation: dollarsOrNull('standard deviation of the present-value P&L'),
    downsideDeviation: dollarsOrNull('sqrt(E[min(P&L, 0)²]) of the present-value P&L'),
    expectedReturn: z.number().nullable().describe('trueExpectedValue / maxLoss; null when maxLoss is unbounded or not positive'),
    sortinoRatio: z.number().nullable().describe('trueExpectedValue / downsideDeviation; null when downsideDeviation is 0'),
    omegaRatio: z.number().nullable().describe('E[gains] / E[losses] of the present-value P&L; null when no loss is possible'),
    kellyFraction: z
      .number()
      .min(0)
      .nullable()
      .describe(
        'log-optimal fraction of bankroll to commit as capital at risk (maxLoss); 0 when EV <= 0; null when maxLoss is unbounded or no loss is possible',
      ),
  }),
  assumptions: z.strictObject({
    model: z.literal('lognormal-terminal-integration'),
    ...marketInputs,
    measure: z.enum(MEASURES).describe('real_world when a drift was given'),
    driftUsed: z.number().describe('annual drift of the price in the terminal distribution: rate − dividendYield under risk_neutral'),
    discountRate: z.number().describe('rate discounting the expiry payoff to today (the risk-free rate)'),
    contractMultiplier: z.int().min(1).describe('shares per contract'),
    quantityUnit: z.string(),
    legPricing: z.string(),
    netCreditDebitSign: z.string(),
    maxLossSign: z.string(),
    integration: z.strictObject({
      method: z.literal('gauss-legendre'),
      variable: z.literal('z = (ln S_T - m) / (vol * sqrt(T))'),
      pointsPerPanel: count,
      maxPanelWidth: z.number().describe('in z (standard deviations)'),
      panels: count,
      lowerLimitZ: z.number(),
      upperLimitZ: z.number(),
      splitAt: z.tuple([z.literal('strikes'), z.literal('present_value_pnl_zero_crossings')]),
      truncationRelativeErrorBound: z.number(),
      truncationBoundHonoured: z.boolean().describe('false only when the upper limit was lowered to avoid overflow'),
    }),
  }),
});

// Technicals: every price-like figure is in the instrument's quote unit, on
// adjusted bars; every figure and verdict is null when its indicator lacks the
// bars, `reason` names why and `description` says it in words.
const price = z.number().nullable().describe('adjusted price');
const REASON_MEANINGS: Record<(typeof TECHNICALS_NULL_REASONS)[keyof typeof TECHNICALS_NULL_REASONS][number], string> = {
  insufficient_bars: 'every bar in the window has the fields needed, but there are fewer bars than needed',
  missing_fields: 'too few of the latest bars carry the open, high, low or volume needed (bars before a gap are not used)',
  no_price_movement: 'prices did not move, so the value is undefined',
  zero_volume: "the window's volume sums to 0",
  no_pattern: 'the bars suffice to look for every pattern and none completes',
  conflicting_patterns: 'bullish and bearish patterns are equally strong and no doji gives the neutral signal a confidence',
  too_few_votes: 'fewer than 3 indicators could vote although the window has the bars for them (closes only, no price movement, or a gap)',
};
const indicator = <T extends z.ZodRawShape, K extends keyof typeof TECHNICALS_NULL_REASONS>(reasons: K, shape: T) =>
  z.strictObject({
    ...shape,
    reason: z
      .enum(TECHNICALS_NULL_REASONS[reasons])
      .nullable()
      .describe(
        `why a field of this reading is null; null exactly when none is. ${TECHNICALS_NULL_REASONS[reasons].map((r) => `${r}: ${REASON_MEANINGS[r]}`).join('; ')}`,
      ),
    description: z.string(),
  });
const MaTrend = (bars: number) =>
  z.enum(MA_TRENDS).nullable().describe(`from how the close and the averages are stacked; null until the two fastest averages exist (${bars} bars)`);

const ChartPatternSchema = z.strictObject({
  type: z.enum(CHART_PATTERN_TYPES),
  signal: z.enum(CHART_PATTERN_SIGNALS),
  confidence: fraction,
  startIndex: count.describe('index of the first bar in the window'),
  endIndex: count.describe('index of the confirming or breakout bar, else the last pivot'),
  priceTarget: price.describe('measured-move target; null for a symmetric triangle before its breakout'),
  description: z.string(),
  startDate: date('date of the bar at startIndex'),
  endDate: date('date of the bar at endIndex'),
});

export const TechnicalsDataSchema = z.strictObject({
  rsi: indicator('rsi', {
    value: z.number().min(0).max(100).nullable().describe('Wilder RSI; needs 15 bars'),
    signal: z.enum(RSI_SIGNALS).nullable(),
    period: count,
  }),
  macd: indicator('macd', {
    value: price.describe('MACD line: EMA12 − EMA26; needs 34 bars, as do signal, histogram and trend'),
    signal: price.describe('signal line: EMA9 of the MACD line'),
    histogram: price.describe('MACD line − signal line'),
    trend: z.enum(MACD_TRENDS).nullable(),
    crossover: z
      .enum(MACD_CROSSOVERS)
      .nullable()
      .describe('a histogram sign change into one of the last 3 bars; `none` needs all 3 transitions (37 bars), so null below that unless one was found'),
  }),
  stochastic: indicator('stochastic', {
    stochK: z
      .number()
      .nullable()
      .describe('%K: where the close sits in the 14-bar high-low range, in percent; needs 16 bars with high, low and close, as do stochD and signal'),
    stochD: z.number().nullable().describe('%D: 3-bar mean of %K'),
    signal: z.enum(STOCHASTIC_SIGNALS).nullable(),
  }),
  ema: indicator('movingAverages', {
    ema12: price,
    ema20: price,
    ema50: price,
    ema200: price,
    trend: MaTrend(20),
    strength: fraction.describe('how fully the close and the averages are stacked in order; null with trend').nullable(),
  }),
  sma: indicator('movingAverages', { sma20: price, sma50: price, sma200: price, trend: MaTrend(50) }),
  wma: indicator('movingAverages', { wma20: price, wma50: price, wma100: price, trend: MaTrend(50) }),
  ichimoku: indicator('ichimoku', {
    tenkan: price,
    kijun: price,
    senkouSpanA: price.describe('cloud edge at the latest bar (computed 26 bars earlier)'),
    senkouSpanB: price.describe('cloud edge at the latest bar (computed 26 bars earlier)'),
    chikouSpan: price.describe('the latest close'),
    signal: z.enum(ICHIMOKU_SIGNALS).nullable(),
  }),
  bollingerBands: indicator('bollingerBands', {
    upper: price,
    middle: price,
    lower: price,
    bandwidth: z.number().nullable().describe('(upper − lower) / middle, a fraction'),
    percentB: z.number().nullable().describe('(close − lower) / (upper − lower): 0 at the lower band, 1 at the upper; null when the bands coincide'),
    signal: z.enum(BOLLINGER_SIGNALS).nullable(),
  }),
  atr: indicator('atr', {
    value: price.describe('Wilder average true range, in price units'),
    signal: z.enum(ATR_SIGNALS).nullable(),
    period: count,
  }),
  vwap: indicator('vwap', {
    value: price.describe('volume-weighted typical price over the window; needs 1 bar with high, low, close and volume; null when the volume is 0'),
    signal: z.enum(VWAP_SIGNALS).nullable().describe("where the latest close is; needs 2 bars (over one, the VWAP is that bar's own typical price)"),
  }),
  candlestick: indicator('candlestick', {
    signal: z
      .enum(CANDLESTICK_SIGNALS)
      .nullable()
      .describe('null when no pattern completes on the latest bar; saying none completes needs 7 bars with open, high, low and close'),
    confidence: fraction.describe("the deciding pattern's confidence; null with signal, and null for a neutral signal from a bullish-bearish tie").nullable(),
    patterns: z
      .array(z.strictObject({ name: z.enum(Object.keys(CANDLESTICK_PATTERNS) as [CandlestickPatternName, ...CandlestickPatternName[]]), confidence: fraction }))
      .describe('patterns completing on the latest bar'),
  }),
  chartPatterns: indicator('chartPatterns', {
    patterns: z.array(ChartPatternSchema).describe('the most recent of each type, by confidence'),
    dominantPattern: z
      .strictObject({
        type: ChartPatternSchema.shape.type,
        signal: ChartPatternSchema.shape.signal,
        confidence: fraction,
        priceTarget: ChartPatternSchema.shape.priceTarget,
        description: z.string(),
      })
      .nullable()
      .describe('the highest-confidence pattern; null when none is found (saying none exists needs 26 closes)'),
  }),
  trend: indicator('trend', {
    direction: z
      .enum(TREND_DIRECTIONS)
      .nullable()
      .describe(
        "consensus of the indicators' weighted votes; null unless at least 3 indicators vote (patterns add weight but do not count), which takes 20 bars with every field present, 34 with closes only",
      ),
    strength: fraction.describe('|weighted vote|; null with direction').nullable(),
    confidence: fraction.describe('agreement × coverage; null with direction').nullable(),
  }),
  timestamp: z.string().meta({ format: 'date-time', description: 'when the figures were computed' }),
  dataPoints: count.describe('bars in the window'),
  symbol: z.string().nullable().describe('the symbol on the asOf day; null when none was in effect'),
  assumptions: z.strictObject({
    lookbackDays: count,
    barsUsed: count,
    asOf: z.string().describe('the asOf asked for, else windowEnd'),
    windowStart: date('first calendar day of the window'),
    windowEnd: date('last calendar day of the window'),
    firstBarDate: date('first bar in the window').nullable(),
    lastBarDate: date('last bar in the window').nullable(),
    actionSetVersion: count.describe("version of the instrument's corporate actions the adjustment used"),
    prices: z.string(),
  }),
});

const windowAssumptions = {
  lookbackDays: count,
  returnType: z.literal('log'),
  alignedObservations: count.describe('log returns between consecutive dates every included series shares'),
  minimumObservations: count,
  asOf: z.string().describe('the asOf asked for, else windowEnd'),
  windowStart: date('first calendar day of the window'),
  windowEnd: date('last calendar day of the window'),
  prices: z.string(),
};

export const CorrelationsDataSchema = z.strictObject({
  pairs: z.array(
    z.strictObject({
      assetA: InstrumentId,
      assetB: InstrumentId,
      correlation: z
        .number()
        .min(-1)
        .max(1)
        .nullable()
        .describe('null, with the reason, when either instrument is unusable or either aligned return series is constant'),
      reason: z.enum(['unusable_instrument', 'constant_returns']).nullable().describe('why correlation is null; null when it is a number'),
    }),
  ),
  instruments: z.array(
    z.strictObject({
      instrumentId: InstrumentId,
      observations: count.describe('log returns in its own series over the window'),
      usable: z.boolean().describe('whether it has enough returns in the window; its pairs with any unusable instrument have a null correlation'),
      reason: z
        .enum([...EMPTY_WINDOW_REASONS, ...CORRELATION_EXCLUSIONS])
        .nullable()
        .describe(`why it is not usable; null when it is. ${meanings([...EMPTY_WINDOW_REASONS, ...CORRELATION_EXCLUSIONS], CORRELATION_EXCLUSION_MEANINGS)}`),
    }),
  ),
  unknownInstrumentIds: z.array(InstrumentId),
  assumptions: z.strictObject({
    method: z.enum(CORRELATION_METHODS),
    ...windowAssumptions,
    alignment: z.string(),
    nullCorrelation: z.string().describe('when a pair has a null correlation, and how the reason tells which case'),
    firstCommonDate: date('first date the usable series share').nullable(),
    lastCommonDate: date('last date the usable series share').nullable(),
  }),
});

export const BetaDataSchema = z.strictObject({
  instrumentId: InstrumentId,
  benchmarkId: InstrumentId,
  beta: z.number().nullable().describe("OLS slope of the instrument's daily log returns on the benchmark's; null with a reason"),
  alpha: z.number().nullable().describe('OLS intercept, a daily log return (not annualised); null with a reason'),
  rSquared: z.number().min(0).max(1).nullable().describe('null with a reason'),
  observations: count.describe('aligned return pairs'),
  reason: z
    .enum([...EMPTY_WINDOW_REASONS, ...BETA_REASONS])
    .nullable()
    .describe(
      `why a figure is null; null when all three are numbers. When a window read no bar, its reason (the instrument's before the benchmark's). ${meanings([...EMPTY_WINDOW_REASONS, ...BETA_REASONS], BETA_REASON_MEANINGS)}`,
    ),
  reasonInstrumentId: InstrumentId.nullable().describe(
    'the instrument reason is about: the one whose window read no bar (no_stored_bars, not_yet_known), the benchmark (zero_benchmark_variance) or the instrument (zero_subject_variance); null for insufficient_overlap, which is about the pair, and when reason is null',
  ),
  assumptions: z.strictObject({ ...windowAssumptions, regression: z.string(), alphaUnit: z.string() }),
});
