import { z } from 'zod';
import { startsBeforeFirstDay } from './series.ts';
import { FIRST_DAY } from '../core/day-numbers.ts';
import { instrumentIdListSchema, InstrumentIdSchema } from '../core/ids.ts';
import { whenParsed } from '../core/params.ts';
import { AsOfSchema, type PointInTime } from '../core/time.ts';
import { CORRELATION_METHODS, STRUCTURE_NAMES } from '../../workers/contract.ts';

// Bounds keep every computation meaningful: σ√T stays at most 5 × √10 ≈ 16,
// inside the range where the integration's truncation bound holds.
const finite = (description: string) => z.number({ error: 'must be a finite number' }).describe(description);
const Spot = finite('underlying price').positive('must be greater than 0');
const Strike = finite('strike').positive('must be greater than 0');
// One minute. Below it the Greeks mean nothing: at the money (spot 100, vol
// 0.2) gamma is 14.5 at one minute but 3.8e149 at 1e-300 days, and 5e-324
// days underflows to a year fraction of 0, which cannot be priced at all.
export const MIN_EXPIRY_DAYS = 1 / 1440;
const ExpiryDays = finite('calendar days to expiry (ACT/365F), at least one minute (1/1440)')
  .min(MIN_EXPIRY_DAYS, 'below one minute the Greeks are meaningless')
  .max(3650, 'at most 3650 days');
const Rate = finite('continuously compounded annual risk-free rate, decimal').min(-0.2, 'at least -0.2').max(1, 'at most 1');
const Vol = finite('annualised volatility, decimal').positive('must be greater than 0').max(5, 'at most 5 (500%)');
const DividendYield = finite('continuous annual dividend yield, decimal').min(-0.2).max(1).default(0);
export const OptionTypeSchema = z.enum(['call', 'put']);
export const LegActionSchema = z.enum(['buy', 'sell']);
export const DirectionSchema = z.enum(['long', 'short']).describe('long: at or above the target; short: at or below');

export const OptionPriceSchema = z.strictObject({
  spot: Spot,
  strike: Strike,
  expiryDays: ExpiryDays,
  rate: Rate,
  vol: Vol,
  type: OptionTypeSchema,
  dividendYield: DividendYield,
});

export const ProbabilitySchema = z.strictObject({
  spot: Spot,
  target: finite('target price').positive('must be greater than 0'),
  expiryDays: ExpiryDays,
  rate: Rate,
  vol: Vol,
  direction: DirectionSchema,
  dividendYield: DividendYield,
});

const LegSchema = z.strictObject({
  action: LegActionSchema,
  type: z.enum([...OptionTypeSchema.options, 'stock']),
  strike: Strike.optional().describe('required for option legs'),
  quantity: finite('contracts').int('must be a whole number of contracts').positive('must be greater than 0').max(100_000),
  expiryDays: ExpiryDays.optional().describe('a leg may restate the expiry; a different one is a multi-expiry structure'),
});

export const StrategyEvSchema = z
  .strictObject({
    structure: z.enum(STRUCTURE_NAMES),
    legs: z.array(LegSchema).min(1, 'at least one leg').max(8, 'at most 8 legs'),
    spot: Spot,
    expiryDays: ExpiryDays,
    rate: Rate,
    vol: Vol,
    dividendYield: DividendYield,
    drift: finite('real-world annual drift of the price; switches the measure to real_world').min(-2).max(2).optional(),
    contractMultiplier: finite('shares per contract').int().min(1).max(10_000).default(100),
  })
  .superRefine((body, ctx) => {
    body.legs.forEach((leg, i) => {
      if (leg.type !== 'stock' && leg.strike === undefined) {
        ctx.addIssue({ code: 'custom', path: ['legs', i, 'strike'], message: 'required for option legs' });
      }
    });
  }, whenParsed('legs'));

export type StrategyEvBody = z.infer<typeof StrategyEvSchema>;

const lookback = (min: number, max: number, fallback: number) =>
  z.coerce
    .number({ error: 'must be an integer' })
    .int('must be an integer')
    .min(min, `must be between ${min} and ${max}`)
    .max(max, `must be between ${min} and ${max}`)
    .default(fallback)
    .describe('calendar days: the window is (end - lookbackDays, end]');

/** 400 naming both parameters when the window would start before the first storable day, rather than clamping it. */
function windowWithinCalendar(q: { lookbackDays: number; asOf?: PointInTime }, ctx: z.RefinementCtx) {
  if (!startsBeforeFirstDay(q.lookbackDays, q.asOf)) return;
  const message = `the window (asOf - lookbackDays, asOf] would start before ${FIRST_DAY}; use a later asOf or fewer lookbackDays`;
  ctx.addIssue({ code: 'custom', path: ['asOf'], message });
  ctx.addIssue({ code: 'custom', path: ['lookbackDays'], message });
}

export const TechnicalsQuerySchema = z
  .strictObject({
    lookbackDays: lookback(1, 1000, 200),
    asOf: AsOfSchema.optional().describe('only bars on or before it are used; the window ends here'),
  })
  .superRefine(windowWithinCalendar, whenParsed('lookbackDays', 'asOf'));

export const CorrelationsQuerySchema = z
  .strictObject({
    instrumentIds: instrumentIdListSchema(20, 2),
    lookbackDays: lookback(20, 504, 90),
    method: z.enum(CORRELATION_METHODS).default('pearson'),
    asOf: AsOfSchema.optional(),
  })
  .superRefine(windowWithinCalendar, whenParsed('lookbackDays', 'asOf'));

export const BetaQuerySchema = z
  .strictObject({
    benchmarkId: InstrumentIdSchema,
    lookbackDays: lookback(20, 504, 252),
    asOf: AsOfSchema.optional(),
  })
  .superRefine(windowWithinCalendar, whenParsed('lookbackDays', 'asOf'));
