import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { priceOption } from '../../workers/black-scholes.ts';
import { derivedContractId } from '../../server/options/schema.ts';
import { createInstrument, dailyBar, ingest } from './fixtures.ts';
import { startService, type Service } from './harness.ts';
import type { InstrumentId } from '../../server/core/ids.ts';

// Option chains against a real database and the real app: point-in-time
// quotes, the three Greeks paths, and the refusals. Quotes are priced by hand
// with the BSM function itself, so the expected implied volatilities are known.

const T1 = '2024-03-01T20:00:00Z';
const T2 = '2024-03-05T20:00:00Z';
const BETWEEN = '2024-03-04T12:00:00Z';

describe('option chains', () => {
  let svc: Service;
  let key: string;
  let underlying: InstrumentId;
  let noBars: InstrumentId;
  const id = (symbol: string, instrumentId = underlying) => derivedContractId(instrumentId, symbol);

  beforeAll(async () => {
    svc = await startService();
    // Without FRED_API_KEY and a stored DGS3MO copy (another suite may have left one), the rate is the hard-coded fallback.
    await svc.sql`delete from macro_observations where series_id = 'DGS3MO'`;
    await svc.sql`delete from macro_series where series_id = 'DGS3MO'`;
    key = await svc.keyWith(['options:read', 'analytics:read']);
    underlying = (await createInstrument(svc)).id;
    noBars = (await createInstrument(svc)).id;
    // Each close is published at 20:00Z, the instant the day's quotes are observed: a quote's spot is its own day's close.
    await ingest(svc, '/bars/daily', [
      dailyBar(underlying, { barDate: '2024-03-01', close: 100 }, { asOf: T1 }),
      dailyBar(underlying, { barDate: '2024-03-04', close: 101 }, { asOf: '2024-03-04T20:00:00Z' }),
      dailyBar(underlying, { barDate: '2024-03-05', close: 103 }, { asOf: T2 }),
    ]);
    const contract = (instrumentId: string, symbol: string, strike: number, right: string, expiry: string, listedAt: string | null = null) => ({
      instrumentId,
      contractSymbol: symbol,
      expiry,
      strike,
      right,
      multiplier: 100,
      listedAt,
    });
    await ingest(svc, '/options/contracts', [
      contract(underlying, 'C100', 100, 'call', '2024-04-19'),
      contract(underlying, 'P100', 100, 'put', '2024-04-19'),
      contract(underlying, 'C110', 110, 'call', '2024-04-19'),
      contract(underlying, 'C60', 60, 'call', '2024-04-19'),
      // Listed after the first observation.
      contract(underlying, 'C105M', 105, 'call', '2024-05-17', '2024-03-04T14:30:00Z'),
      contract(noBars, 'N100', 100, 'call', '2024-04-19'),
    ]);
    const q = (symbol: string, observedAt: string, bid: number | null, ask: number | null, extra: Record<string, unknown> = {}, instrumentId = underlying) => ({
      contractId: id(symbol, instrumentId),
      observedAt,
      bid,
      ask,
      lastPrice: null,
      volume: 10,
      openInterest: 100,
      source: 'test-feed',
      ...extra,
    });
    const greeks = { delta: 0.55, gamma: 0.041, theta: -0.052, vega: 0.113, rho: 0.061, impliedVolatility: 0.27 };
    await ingest(svc, '/options/quotes', [
      q('C100', T1, 4.0, 4.2, { greeks }),
      q('C100', T2, 5.0, 5.3),
      q('P100', T1, 3.1, 3.3),
      q('P100', T2, 2.6, 2.8),
      q('C110', T1, 0.9, 1.0),
      q('C110', T2, 1.2, 1.3),
      // A deep in-the-money call quoted below its intrinsic value (103 − 60 = 43).
      q('C60', T2, 38.0, 38.5),
      q('C105M', T2, 3.0, 3.2),
      q('N100', T2, 3.0, 3.2, {}, noBars),
    ]);
  });
  afterAll(() => svc?.stop());

  const chain = (query = '', instrumentId = underlying) => svc.get(`/v1/instruments/${instrumentId}/options${query}`, key);

  it('when the chain is read between two observations, then every contract has the earlier one, and a contract listed after the cut-off is absent', async () => {
    const res = await chain(`?asOf=${BETWEEN}`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((i: any) => [i.contract.contractSymbol, i.quote.asOf, i.quote.bid])).toEqual([
      ['C100', '2024-03-01T20:00:00.000Z', 4.0],
      ['P100', '2024-03-01T20:00:00.000Z', 3.1],
      ['C110', '2024-03-01T20:00:00.000Z', 0.9],
    ]);
    const later = await chain(`?asOf=${T2}`);
    expect(later.body.data.map((i: any) => i.contract.contractSymbol)).toEqual(['C60', 'C100', 'P100', 'C110', 'C105M']);
    expect(later.body.data.every((i: any) => i.quote.asOf === '2024-03-05T20:00:00.000Z')).toBe(true);
  });

  it("when a quote carries the provider's Greeks, then they come back as observed", async () => {
    const res = await chain(`?asOf=${BETWEEN}&right=call&strike=100`);
    expect(res.body.data).toHaveLength(1);
    expect(res.body.data[0].greeks).toEqual({
      delta: 0.55,
      gamma: 0.041,
      theta: -0.052,
      vega: 0.113,
      rho: 0.061,
      impliedVolatility: 0.27,
      asOf: '2024-03-01T20:00:00.000Z',
      greeksSource: 'provider',
    });
    expect(res.body.data[0].greeksUnavailable).toBeNull();
  });

  it('when Greeks are computed, then they equal the option-price route for the inputs in model, to 1e-12', async () => {
    const res = await chain(`?asOf=${T2}&expiry=2024-04-19`);
    const computed = res.body.data.filter((i: any) => i.greeks?.greeksSource === 'computed');
    expect(computed.length).toBe(3);
    for (const item of computed) {
      const { model, impliedVolatility } = item.greeks;
      // The close of the quote's day and, without a FRED key, the latest rate known in 2024: the last month of the
      // TB3MS history the service ships, 2022-09 at 3.13 % (fred_tb3ms_monthly.csv).
      expect(model).toMatchObject({
        name: 'black-scholes-merton',
        spotPrice: 103,
        spotAsOf: '2024-03-05',
        riskFreeRate: 0.0313,
        riskFreeRateSource: 'fred:TB3MS',
        dividendYield: 0,
      });
      expect(model.optionPrice).toBe((item.quote.bid + item.quote.ask) / 2);
      const route = await svc.post('/v1/analytics/option-price', key, {
        spot: model.spotPrice,
        strike: item.contract.strike,
        expiryDays: model.expiryDays,
        rate: model.riskFreeRate,
        vol: impliedVolatility,
        dividendYield: model.dividendYield,
        type: item.contract.right,
      });
      expect(route.status).toBe(200);
      // The solved volatility reprices the mid.
      expect(Math.abs(route.body.data.price - model.optionPrice)).toBeLessThan(1e-8);
      for (const g of ['delta', 'gamma', 'theta', 'vega', 'rho']) expect(Math.abs(item.greeks[g] - route.body.data.greeks[g]), g).toBeLessThanOrEqual(1e-12);
    }
  });

  it('when the time to expiry is 16:00 New York on the expiry day, then expiryDays counts from the quote to it', async () => {
    const res = await chain(`?asOf=${T2}&expiry=2024-04-19&right=put`);
    // 2024-03-05T20:00Z to 2024-04-19T20:00Z (16:00 EDT): 45 days exactly.
    expect(res.body.data[0].greeks.model.expiryDays).toBe(45);
    expect(res.body.data[0].greeks.model.timeToExpirationYears).toBe(45 / 365);
    const { greeks: expected } = priceOption({
      spot: 103,
      strike: 100,
      timeYears: 45 / 365,
      rate: 0.0313,
      vol: res.body.data[0].greeks.impliedVolatility,
      dividendYield: 0,
      type: 'put',
    });
    expect(res.body.data[0].greeks.delta).toBe(expected.delta);
  });

  it('when a mid is below intrinsic value, then greeksUnavailable names the implied volatility and says why; no Greek is present', async () => {
    const res = await chain(`?asOf=${T2}&strike=60`);
    const [item] = res.body.data;
    expect(item.greeks).toBeNull();
    expect(item.greeksUnavailable.reason).toBe('not_supplied_and_not_computable');
    expect(item.greeksUnavailable.missingInputs).toEqual(['impliedVolatility']);
    expect(item.greeksUnavailable.detail).toMatch(/intrinsic/);
  });

  it('when the underlying has no close on or before the quote day, then greeksUnavailable names spotPrice', async () => {
    const res = await chain(`?asOf=${T2}`, noBars);
    expect(res.body.data[0].greeksUnavailable.missingInputs).toEqual(['spotPrice']);
    expect(res.body.meta.greeksCoverage).toEqual({ provider: 0, computed: 0, unavailable: 1 });
  });

  it.each([
    `asOf=${T2}`,
    `asOf=${T2}&right=call`,
    `asOf=${T2}&right=put`,
    `asOf=${T2}&expiry=2024-04-19`,
    `asOf=${T2}&expiry=2024-05-17`,
    `asOf=${T2}&strike=100`,
    `asOf=${BETWEEN}`,
    `asOf=${T2}&strike=999`,
  ])('when the chain is read with %s, then greeksCoverage sums to the rows returned', async (query) => {
    const res = await chain(`?${query}`);
    expect(res.status).toBe(200);
    const { provider, computed, unavailable } = res.body.meta.greeksCoverage;
    expect(provider + computed + unavailable).toBe(res.body.data.length);
    expect(res.body.data.filter((i: any) => i.greeks === null).length).toBe(unavailable);
  });

  it('when a strike is not a number, then 400 names strike', async () => {
    const res = await chain('?strike=abc');
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error.details)).toEqual(['strike']);
  });

  it('when the expiries are listed, then they are ascending, and at an earlier cut-off the later-listed expiry is absent', async () => {
    expect((await svc.get(`/v1/instruments/${underlying}/options/expiries?asOf=${T2}`, key)).body.data).toEqual(['2024-04-19', '2024-05-17']);
    expect((await svc.get(`/v1/instruments/${underlying}/options/expiries?asOf=${BETWEEN}`, key)).body.data).toEqual(['2024-04-19']);
  });

  it('when an equity has no chain, then 404 options_unavailable not_ingested; an fx instrument is not_optionable', async () => {
    const bare = (await createInstrument(svc)).id;
    const fx = (await createInstrument(svc, { assetClass: 'fx', quoteCurrency: 'CHF' })).id;
    for (const path of [`/v1/instruments/${bare}/options`, `/v1/instruments/${bare}/options/expiries`]) {
      const res = await svc.get(path, key);
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'options_unavailable', details: { reason: ['not_ingested'] } });
    }
    const res = await svc.get(`/v1/instruments/${fx}/options/expiries`, key);
    expect(res.body.error).toMatchObject({ code: 'options_unavailable', details: { reason: ['not_optionable'] } });
  });

  it('when every stored contract expired before the cut-off, then options_unavailable says so', async () => {
    const res = await svc.get(`/v1/instruments/${underlying}/options/expiries?asOf=2024-06-01`, key);
    expect(res.body.error.code).toBe('options_unavailable');
    expect(res.body.error.message).toContain('expired');
  });

  it('when a contract is read by id, then it follows the chain rules; an unknown id, or one not listed at the cut-off, is 404', async () => {
    const res = await svc.get(`/v1/options/${id('C100')}?asOf=${BETWEEN}`, key);
    expect(res.status).toBe(200);
    expect(res.body.data.greeks.greeksSource).toBe('provider');
    expect((await svc.get(`/v1/options/${id('C100')}`, key)).body.data.quote.asOf).toBe('2024-03-05T20:00:00.000Z');
    expect((await svc.get(`/v1/options/${id('C105M')}?asOf=${BETWEEN}`, key)).status).toBe(404);
    expect((await svc.get(`/v1/options/${id('NOPE')}`, key)).status).toBe(404);
  });

  it('when a user posts back the contracts and quotes a chain read returned, then nothing changes', async () => {
    const rows = (await chain(`?asOf=${T2}`)).body.data;
    const contracts = await svc.admin(
      'POST',
      '/options/contracts',
      rows.map((i: any) => i.contract),
    );
    expect(contracts.body.data).toMatchObject({ rows: 5, inserted: 0, updated: 0, unchanged: 5 });
    // Provider Greeks go back with the quote; computed ones are model output and are not stored, so they are left out.
    const quotes = await svc.admin(
      'POST',
      '/options/quotes',
      rows.map((i: any) => ({ contractId: i.contract.id, ...i.quote, greeks: i.greeks?.greeksSource === 'provider' ? i.greeks : null })),
    );
    expect(quotes.body.data).toMatchObject({ rows: 5, inserted: 0, updated: 0, unchanged: 5 });
    const computed = rows.find((i: any) => i.greeks?.greeksSource === 'computed');
    const refused = await svc.admin('POST', '/options/quotes', [{ contractId: computed.contract.id, ...computed.quote, greeks: computed.greeks }]);
    expect(refused.status).toBe(400);
    expect(Object.keys(refused.body.error.details)).toEqual(expect.arrayContaining(['rows[0].greeks.greeksSource']));
  });

  it('when a key lacks options:read, then 403', async () => {
    const other = await svc.keyWith(['prices:read']);
    expect((await svc.get(`/v1/instruments/${underlying}/options`, other)).status).toBe(403);
  });
});
