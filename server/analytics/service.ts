import { closedForm, type WorkerPool } from '../../workers/pool.ts';
import type { z } from 'zod';
import type { OptionPriceSchema, ProbabilitySchema, StrategyEvBody } from './schema.ts';
import { AppError } from '../core/errors.ts';
import { DAY_COUNT_CONVENTION, DAYS_PER_YEAR, type NumericRangeReason, type OptionLeg } from '../../workers/contract.ts';

const GREEK_UNITS = {
  delta: 'per 1 unit of spot, per share',
  gamma: 'per 1 unit of spot, per share',
  theta: 'per calendar day, per share',
  vega: 'per 1 percentage point of volatility, per share',
  rho: 'per 1 percentage point of the rate, per share',
};

/** Closed form, a few microseconds: computed on the request thread (see bench/). */
export function optionPrice(q: z.infer<typeof OptionPriceSchema>) {
  const timeYears = q.expiryDays / DAYS_PER_YEAR;
  const result = closedForm('optionPrice', {
    spot: q.spot,
    strike: q.strike,
    timeYears,
    rate: q.rate,
    vol: q.vol,
    dividendYield: q.dividendYield,
    type: q.type,
  });
  // A figure outside the double range is null, its path and reason in nullReasons (never a stand-in 0 or Infinity).
  const why = result.nullReasons;
  const figure = (name: keyof typeof why, v: number) => (why[name] ? null : v);
  const nullReasons: Partial<Record<'price' | `greeks.${keyof typeof result.greeks}`, NumericRangeReason>> = {};
  for (const [name, reason] of Object.entries(why) as Array<[keyof typeof why, NumericRangeReason]>) {
    if (name === 'price') nullReasons.price = reason;
    else nullReasons[`greeks.${name}`] = reason;
  }
  const g = result.greeks;
  return {
    price: figure('price', result.price),
    greeks: {
      delta: figure('delta', g.delta),
      gamma: figure('gamma', g.gamma),
      theta: figure('theta', g.theta),
      vega: figure('vega', g.vega),
      rho: figure('rho', g.rho),
    },
    nullReasons,
    assumptions: {
      model: 'black-scholes',
      spot: q.spot,
      strike: q.strike,
      expiryDays: q.expiryDays,
      timeToExpirationYears: timeYears,
      dayCount: DAY_COUNT_CONVENTION,
      riskFreeRate: q.rate,
      volatility: q.vol,
      dividendYield: q.dividendYield,
      optionType: q.type,
      exercise: 'european',
      greekUnits: GREEK_UNITS,
    },
  };
}

export function probability(q: z.infer<typeof ProbabilitySchema>) {
  const timeYears = q.expiryDays / DAYS_PER_YEAR;
  const r = closedForm('probability', {
    spot: q.spot,
    target: q.target,
    timeYears,
    rate: q.rate,
    vol: q.vol,
    dividendYield: q.dividendYield,
    direction: q.direction,
  });
  return {
    // A probability below the smallest double is null with reason underflow, never 0 (σ > 0: nothing is impossible).
    probabilityInTheMoneyAtExpiry: r.nullReasons.probabilityInTheMoneyAtExpiry ? null : r.probabilityInTheMoneyAtExpiry,
    probabilityOfTouchBeforeExpiry: r.nullReasons.probabilityOfTouchBeforeExpiry ? null : r.probabilityOfTouchBeforeExpiry,
    nullReasons: r.nullReasons,
    assumptions: {
      model: 'lognormal-terminal',
      spot: q.spot,
      target: q.target,
      expiryDays: q.expiryDays,
      timeToExpirationYears: timeYears,
      dayCount: DAY_COUNT_CONVENTION,
      riskFreeRate: q.rate,
      volatility: q.vol,
      dividendYield: q.dividendYield,
      direction: q.direction,
      directionMeaning: q.direction === 'long' ? 'finishing or touching at or above the target' : 'finishing or touching at or below the target',
      expiryMeasure: 'risk_neutral',
      touchMeasure: 'driftless',
      touchFlooredToExpiry: r.touchFlooredToExpiry,
      targetAlreadyReached: r.targetAlreadyReached,
    },
  };
}

/** Refuses what the integration cannot price, then integrates on the worker pool. */
export async function strategyEv(pool: WorkerPool, body: StrategyEvBody) {
  const details: Record<string, string[]> = {};
  body.legs.forEach((leg, i) => {
    if (leg.type === 'stock') (details[`legs.${i}.type`] ??= []).push('stock legs are not priced: only option-only structures are supported');
    if (leg.expiryDays !== undefined && leg.expiryDays !== body.expiryDays) {
      (details[`legs.${i}.expiryDays`] ??= []).push(`differs from expiryDays ${body.expiryDays}: only single-expiry structures are supported`);
    }
  });
  if (Object.keys(details).length) throw new AppError('unsupported_structure', 'only option-only, single-expiry structures are priced', details);
  // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- stock legs are refused above, and the body's schema requires an option leg's strike
  const legs: OptionLeg[] = body.legs.map((l) => ({ action: l.action, type: l.type as 'call' | 'put', strike: l.strike!, quantity: l.quantity }));
  const problems = closedForm('structureProblems', { structure: body.structure, legs });
  if (problems.length) {
    throw new AppError('unsupported_structure', `the legs do not form a ${body.structure}; send structure "custom" for arbitrary legs`, { legs: problems });
  }
  const timeYears = body.expiryDays / DAYS_PER_YEAR;
  const result = await pool.run('strategyEv', {
    structure: body.structure,
    legs,
    spot: body.spot,
    timeYears,
    rate: body.rate,
    vol: body.vol,
    dividendYield: body.dividendYield,
    drift: body.drift ?? null,
    contractMultiplier: body.contractMultiplier,
  });
  return {
    structure: result.structure,
    legs: result.legs,
    netCreditDebit: result.netCreditDebit,
    trueExpectedValue: result.trueExpectedValue,
    expectedPayoffAtExpiry: result.expectedPayoffAtExpiry,
    probabilityOfProfit: result.probabilityOfProfit,
    breakevens: result.breakevens,
    maxProfit: result.maxProfit,
    maxLoss: result.maxLoss,
    maxProfitUnbounded: result.maxProfitUnbounded,
    maxLossUnbounded: result.maxLossUnbounded,
    naivePopTimesMaxProfit: result.naivePopTimesMaxProfit,
    nullReasons: result.nullReasons,
    riskMetrics: result.riskMetrics,
    assumptions: {
      model: 'lognormal-terminal-integration',
      spot: body.spot,
      expiryDays: body.expiryDays,
      timeToExpirationYears: timeYears,
      dayCount: DAY_COUNT_CONVENTION,
      riskFreeRate: body.rate,
      volatility: body.vol,
      dividendYield: body.dividendYield,
      measure: result.assumptions.measure,
      driftUsed: result.assumptions.driftUsed,
      discountRate: result.assumptions.discountRate,
      contractMultiplier: result.assumptions.contractMultiplier,
      quantityUnit: `contracts of ${result.assumptions.contractMultiplier} shares`,
      legPricing: 'each leg at its Black-Scholes-Merton fair value with the same rate, volatility and dividend yield',
      netCreditDebitSign: 'positive = net credit received, negative = net debit paid',
      maxLossSign: 'positive number of dollars lost',
      integration: result.assumptions.integration,
    },
  };
}
