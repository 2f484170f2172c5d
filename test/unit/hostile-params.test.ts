import express from 'express';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BetaQuerySchema,
  CorrelationsQuerySchema,
  MIN_EXPIRY_DAYS,
  OptionPriceSchema,
  ProbabilitySchema,
  StrategyEvSchema,
  TechnicalsQuerySchema,
} from '../../server/analytics/schema.ts';
import { lookbackWindow } from '../../server/analytics/series.ts';
import { FIRST_DAY } from '../../server/core/day-numbers.ts';
import { priceOption, yearsFromDays } from '../../workers/black-scholes.ts';
import { errorMiddleware, toAppError } from '../../server/http/errors.ts';
import { listen } from '../support/listen.ts';

/** The status and body Express 5 gives for GET `path` on a route with an :id parameter, through the service's error middleware. */
async function getThroughExpress(path: string) {
  const app = express();
  app.get('/things/:id', (_req, res) => {
    res.json({ ok: true });
  });
  app.use(errorMiddleware('https://docs.example', () => {}));
  const server = await listen(app);
  try {
    const res = await fetch(`${server.base}${path}`);
    return { status: res.status, body: await res.json() };
  } finally {
    await server.close();
  }
}

describe('malformed percent-encoding in a path parameter', () => {
  it("when an id segment is %FF, % or a cut-off %E0%A4%A, then the router's URIError becomes 400 invalid_request naming the bad escape, and only it", async () => {
    for (const [segment, escape] of [
      ['%FF', '%FF'],
      ['%', '%'],
      ['%E0%A4%A', '%E0%A4%A'],
      ['secret%20text%FFmore', '%FF'],
      ['%73%65%63%72%65%74%2', '%2'],
      ['%73%C3%A9%C0%AFx', '%C0'],
      ['%ED%A0%80', '%ED%A0%80'],
    ]) {
      const { status, body } = await getThroughExpress(`/things/${segment}`);
      expect(status).toBe(400);
      expect(body.error).toMatchObject({ code: 'invalid_request', details: { path: [`"${escape}" is not valid percent-encoded UTF-8`] } });
    }
    expect((await getThroughExpress('/things/%C3%A9')).status).toBe(200);
  });

  it('when a URIError carries no 400 status (a programming error, not a request), then it stays internal_error', () => {
    expect(toAppError(new URIError('URI malformed')).code).toBe('internal_error');
  });
});

describe('lookback windows before year 1', () => {
  const DAY_MS = 86_400_000;
  const firstDayMs = Date.parse(`${FIRST_DAY}T00:00:00Z`);
  const day = (max: number) => fc.integer({ min: 0, max }).map((d) => new Date(firstDayMs + d * DAY_MS).toISOString().slice(0, 10));
  // Any day of years 1 to 9999, and more often one of the first three years, where windows cross year 1.
  const asOfDay = fc.oneof(day((Date.parse('9999-12-31T00:00:00Z') - firstDayMs) / DAY_MS), day(3 * 366));

  it('when asOf and lookbackDays are anything the schemas accept, then the window starts on or after 0001-01-01; when they refuse, it would start before and both fields are named', () => {
    let refused = 0;
    fc.assert(
      fc.property(asOfDay, fc.integer({ min: 1, max: 1000 }), (asOf, lookbackDays) => {
        const parsed = TechnicalsQuerySchema.safeParse({ asOf, lookbackDays: String(lookbackDays) });
        const from = Date.parse(`${asOf}T00:00:00Z`) - (lookbackDays - 1) * DAY_MS;
        expect(parsed.success).toBe(from >= firstDayMs);
        if (parsed.success) {
          expect(lookbackWindow(parsed.data.lookbackDays, parsed.data.asOf).from).toMatch(/^\d{4}-\d{2}-\d{2}$/);
        } else {
          refused++;
          expect(parsed.error.issues.map((i) => i.path.join('.')).sort()).toEqual(['asOf', 'lookbackDays']);
        }
      }),
      { seed: 7, numRuns: 2_000 },
    );
    expect(refused).toBeGreaterThan(200);
  });

  it('when correlations or beta end at 0001-01-01, then they are refused the same way; without asOf the window ends today and is accepted', () => {
    const ids = '5f0c2b9e-8a1d-4c3e-9b7a-1e2d3c4b5a69,6f0c2b9e-8a1d-4c3e-9b7a-1e2d3c4b5a69';
    const benchmarkId = ids.slice(0, 36);
    expect(CorrelationsQuerySchema.safeParse({ instrumentIds: ids, asOf: '0001-01-01' }).error?.issues.map((i) => i.path[0])).toEqual(['asOf', 'lookbackDays']);
    expect(BetaQuerySchema.safeParse({ benchmarkId, asOf: '0001-01-01' }).error?.issues.map((i) => i.path[0])).toEqual(['asOf', 'lookbackDays']);
    // 504 days back from 0002-05-01 is before year 1; from 0002-06-01 it is not.
    expect(BetaQuerySchema.safeParse({ benchmarkId, asOf: '0002-05-01', lookbackDays: '504' }).success).toBe(false);
    expect(BetaQuerySchema.safeParse({ benchmarkId, asOf: '0002-06-01', lookbackDays: '504' }).success).toBe(true);
    expect(CorrelationsQuerySchema.safeParse({ instrumentIds: ids, lookbackDays: '504' }).success).toBe(true);
    expect(BetaQuerySchema.safeParse({ benchmarkId, lookbackDays: '504' }).success).toBe(true);
    expect(TechnicalsQuerySchema.safeParse({ lookbackDays: '1000' }).success).toBe(true);
  });
});

describe('the expiry minimum of the analytics routes', () => {
  const bodies = {
    'option-price': [OptionPriceSchema, { spot: 100, strike: 100, rate: 0.05, vol: 0.2, type: 'call' }],
    probability: [ProbabilitySchema, { spot: 100, target: 110, rate: 0.05, vol: 0.2, direction: 'long' }],
    'strategy-ev': [
      StrategyEvSchema,
      { structure: 'long_call', legs: [{ action: 'buy', type: 'call', strike: 100, quantity: 1 }], spot: 100, rate: 0.05, vol: 0.2 },
    ],
  } as const;

  it('when expiryDays is 5e-324 or anything under one minute, then all three routes refuse it saying so; one minute is accepted', () => {
    for (const [route, [schema, body]] of Object.entries(bodies)) {
      for (const expiryDays of [5e-324, 1e-300, MIN_EXPIRY_DAYS * 0.999]) {
        const parsed = schema.safeParse({ ...body, expiryDays });
        expect(parsed.success, `${route} ${expiryDays}`).toBe(false);
        expect(parsed.error!.issues).toContainEqual(expect.objectContaining({ path: ['expiryDays'], message: expect.stringContaining('one minute') }));
      }
      expect(schema.safeParse({ ...body, expiryDays: MIN_EXPIRY_DAYS }).success, route).toBe(true);
    }
    expect(
      StrategyEvSchema.safeParse({
        ...bodies['strategy-ev'][1],
        expiryDays: 30,
        legs: [{ action: 'buy', type: 'call', strike: 100, quantity: 1, expiryDays: 5e-324 }],
      }).success,
    ).toBe(false);
  });

  it('when expiryDays is exactly one minute, then the Greeks are finite and of an ordinary size (at 1e-300 days gamma is 3.8e149)', () => {
    const at = (days: number) => priceOption({ spot: 100, strike: 100, timeYears: yearsFromDays(days), rate: 0.05, vol: 0.2, type: 'call' }).greeks;
    const minute = at(MIN_EXPIRY_DAYS);
    for (const g of Object.values(minute)) expect(Number.isFinite(g)).toBe(true);
    expect(minute.gamma).toBeCloseTo(14.46, 2);
    expect(at(1e-300).gamma).toBeGreaterThan(1e149);
  });
});
