import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { derivedContractId } from '../../server/options/schema.ts';
import { storeShippedRiskFreeRates } from '../../server/demo/risk-free-rates.ts';
import { createInstrument, dailyBar, ingest } from './fixtures.ts';
import { startService, type Service } from './harness.ts';
import type { InstrumentId } from '../../server/core/ids.ts';

// Options read point in time: computed Greeks use the risk-free rate known at
// the quote's instant (never a later one), a quote turns stale once a whole
// session lies between it and the read, and a contract is inactive from its
// expiry on. Every expected rate is the real TB3MS value read by hand from
// server/demo/data/fred_tb3ms_monthly.csv (the gretl snapshot of FRED):
// TB3MS,1934-01-01,0.72 · TB3MS,2001-03-01,4.42 · TB3MS,2001-04-01,3.87.
// Session times by hand: 2001-05-04 is a Friday under daylight saving time
// (EDT, UTC−4), so 16:00 New York is 20:00 UTC; the next full session is
// Monday 2001-05-07, 09:30–16:00 EDT = 13:30–20:00 UTC.

describe('options point in time', () => {
  let svc: Service;
  let key: string;
  let underlying: InstrumentId;
  let old: InstrumentId;
  const id = (symbol: string, instrumentId = underlying) => derivedContractId(instrumentId, symbol);
  const contractAt = (symbol: string, asOf?: string, instrumentId = underlying) =>
    svc.get(`/v1/options/${id(symbol, instrumentId)}${asOf ? `?asOf=${asOf}` : ''}`, key);

  beforeAll(async () => {
    svc = await startService();
    // No live DGS3MO copy and no stored history: each describe below stores what it needs.
    await svc.sql`delete from macro_observations where series_id = 'DGS3MO'`;
    await svc.sql`delete from macro_series where series_id = 'DGS3MO'`;
    await svc.sql`delete from risk_free_rates`;
    key = await svc.keyWith(['options:read', 'macro:read']);
    underlying = (await createInstrument(svc)).id;
    old = (await createInstrument(svc)).id;
    // Each close is published at 20:00Z, the instant the day's quotes are observed: the quote's spot is its own day's close.
    await ingest(svc, '/bars/daily', [
      dailyBar(underlying, { barDate: '2001-04-30', close: 100 }, { asOf: '2001-04-30T20:00:00Z' }),
      dailyBar(underlying, { barDate: '2001-05-01', close: 100 }, { asOf: '2001-05-01T20:00:00Z' }),
      dailyBar(underlying, { barDate: '2001-05-04', close: 100 }, { asOf: '2001-05-04T20:00:00Z' }),
      dailyBar(old, { barDate: '1934-01-31', close: 100 }, { asOf: '1934-01-31T20:00:00Z' }),
      dailyBar(old, { barDate: '1934-02-05', close: 100 }, { asOf: '1934-02-05T20:00:00Z' }),
    ]);
    const contract = (instrumentId: string, symbol: string, expiry: string, listedAt: string | null = null) => ({
      instrumentId,
      contractSymbol: symbol,
      expiry,
      strike: 100,
      right: 'call',
      multiplier: 100,
      listedAt,
      source: 'synthetic-demo',
    });
    await ingest(svc, '/options/contracts', [
      contract(underlying, 'APR30', '2001-06-15'),
      contract(underlying, 'MIDNIGHT', '2001-06-15'),
      contract(underlying, 'FRI', '2001-06-15'),
      // Listed, never quoted.
      contract(underlying, 'UNQUOTED', '2001-07-20', '2001-05-01T13:30:00Z'),
      contract(old, 'OLD1', '1934-03-16'),
      contract(old, 'OLD2', '1934-03-16'),
    ]);
    const q = (symbol: string, observedAt: string, instrumentId = underlying) => ({
      contractId: id(symbol, instrumentId),
      observedAt,
      bid: 4.0,
      ask: 4.2,
      lastPrice: null,
      volume: 10,
      openInterest: 100,
      source: 'synthetic-demo',
    });
    await ingest(svc, '/options/quotes', [
      // Within April: the April average is not known yet, March's is.
      q('APR30', '2001-04-30T20:00:00Z'),
      // The first instant of May: April's average is known from here on.
      q('MIDNIGHT', '2001-05-01T00:00:00Z'),
      q('FRI', '2001-05-04T20:00:00Z'),
      // Before the first TB3MS month (January 1934) was known, and after it.
      q('OLD1', '1934-01-31T20:00:00Z', old),
      q('OLD2', '1934-02-05T20:00:00Z', old),
    ]);
  });
  afterAll(() => svc?.stop());

  describe('with no stored rate history', () => {
    it('when a 2001 quote has no Greeks, then they are unavailable for want of a rate: the hard-coded 2022 rate is never used before it was known', async () => {
      const res = await contractAt('FRI', '2001-05-04T20:00:00Z');
      expect(res.status).toBe(200);
      expect(res.body.data.greeks).toBeNull();
      expect(res.body.data.greeksUnavailable).toMatchObject({ reason: 'not_supplied_and_not_computable', missingInputs: ['riskFreeRate'] });
    });

    it('when the rate is asked for at a 2001 instant, then 404 not_found naming asOf; from 2022-10-01 the hard-coded September 2022 rate stands in', async () => {
      const before = await svc.get('/v1/rates/risk-free?asOf=2001-05-04T20:00:00Z', key);
      expect(before.status).toBe(404);
      expect(before.body.error.code).toBe('not_found');
      expect(Object.keys(before.body.error.details)).toEqual(['asOf']);
      // The hard-coded rate is TB3MS for September 2022 (3.13): known from the first instant of October.
      expect((await svc.get('/v1/rates/risk-free?asOf=2022-09-30', key)).status).toBe(404);
      const after = await svc.get('/v1/rates/risk-free?asOf=2022-10-01T00:00:00Z', key);
      expect(after.status).toBe(200);
      expect(after.body.data).toEqual({
        rate: 0.0313,
        maturity: '3M',
        asOf: '2022-09-01',
        source: 'fallback',
        seriesId: 'TB3MS',
        knownFrom: '2022-10-01T00:00:00.000Z',
      });
      expect(after.body.meta).toMatchObject({
        asOf: '2022-10-01T00:00:00Z',
        stale: false,
        staleReason: null,
        fallback: { standIn: 'hardcoded', reason: 'no_stored_observation' },
      });
    });
  });

  describe('with the TB3MS history stored', () => {
    beforeAll(async () => {
      expect(await storeShippedRiskFreeRates(svc.sql)).toEqual({ rows: 1065, inserted: 1065, updated: 0, unchanged: 0 });
    });

    it('when the history is stored again, then nothing changes', async () => {
      expect(await storeShippedRiskFreeRates(svc.sql)).toEqual({ rows: 1065, inserted: 0, updated: 0, unchanged: 1065 });
    });

    it('when a quote falls within April 2001, then its Greeks use the March average (4.42 %), the latest month known then', async () => {
      const res = await contractAt('APR30', '2001-04-30T20:00:00Z');
      expect(res.body.data.greeks.greeksSource).toBe('computed');
      expect(res.body.data.greeks.model).toMatchObject({
        riskFreeRate: 0.0442,
        riskFreeRateSource: 'fred:TB3MS',
        riskFreeRateAsOf: '2001-03-01',
        riskFreeRateKnownFrom: '2001-04-01T00:00:00.000Z',
      });
    });

    it('when a quote is at the first instant of May 2001 or later in May, then its Greeks use the April average (3.87 %)', async () => {
      for (const [symbol, asOf] of [
        ['MIDNIGHT', '2001-05-01T00:00:00Z'],
        ['FRI', '2001-05-04T20:00:00Z'],
      ]) {
        const { model } = (await contractAt(symbol, asOf)).body.data.greeks;
        expect(model, symbol).toMatchObject({
          riskFreeRate: 0.0387,
          riskFreeRateSource: 'fred:TB3MS',
          riskFreeRateAsOf: '2001-04-01',
          riskFreeRateKnownFrom: '2001-05-01T00:00:00.000Z',
        });
      }
    });

    it('when the Greeks are computed at the known rate, then the option-price route at that rate and the solved volatility reprices the mid', async () => {
      const item = (await contractAt('FRI', '2001-05-04T20:00:00Z')).body.data;
      const priced = await svc.keyWith(['analytics:read']);
      const route = await svc.post('/v1/analytics/option-price', priced, {
        spot: 100,
        strike: 100,
        expiryDays: item.greeks.model.expiryDays,
        rate: 0.0387,
        vol: item.greeks.impliedVolatility,
        dividendYield: 0,
        type: 'call',
      });
      // The mid of bid 4.00 and ask 4.20.
      expect(Math.abs(route.body.data.price - 4.1)).toBeLessThan(1e-8);
    });

    it('when a quote is before the first TB3MS month was known (January 1934, known from 1934-02-01), then missingInputs riskFreeRate; after, the January rate', async () => {
      const before = (await contractAt('OLD1', '1934-01-31T20:00:00Z', old)).body.data;
      expect(before.greeks).toBeNull();
      expect(before.greeksUnavailable.missingInputs).toEqual(['riskFreeRate']);
      const after = (await contractAt('OLD2', '1934-02-05T20:00:00Z', old)).body.data;
      expect(after.greeks.model).toMatchObject({ riskFreeRate: 0.0072, riskFreeRateAsOf: '1934-01-01', riskFreeRateKnownFrom: '1934-02-01T00:00:00.000Z' });
    });

    it('when a chain mixes quotes of two months, then each row has the rate known at its own quote', async () => {
      const res = await svc.get(`/v1/instruments/${underlying}/options?asOf=2001-05-04T20:00:00Z&expiry=2001-06-15`, key);
      expect(res.status).toBe(200);
      const rows = res.body.data.map((i: any) => [i.contract.contractSymbol, i.greeks.model.riskFreeRate]);
      expect(rows.sort()).toEqual([
        ['APR30', 0.0442],
        ['FRI', 0.0387],
        ['MIDNIGHT', 0.0387],
      ]);
    });
  });

  describe('freshness', () => {
    it('when a Friday-close quote is read before Monday 16:00 New York, then it is fresh; from Monday 16:00 on, stale: quote_older_than_one_session', async () => {
      for (const asOf of ['2001-05-04T20:00:00Z', '2001-05-05', '2001-05-07T19:59:59Z']) {
        const res = await contractAt('FRI', asOf);
        expect(res.body.meta, asOf).toMatchObject({ asOf, stale: false, staleReason: null });
      }
      const res = await contractAt('FRI', '2001-05-07T20:00:00Z');
      expect(res.body.meta).toMatchObject({ stale: true, staleReason: 'quote_older_than_one_session' });
      expect(res.body.data.contract.isActive).toBe(true);
    });

    it('when a contract is read at or after 16:00 New York on its expiry day, or now, then isActive is false and meta says contract_expired', async () => {
      // 2001-06-15 is under EDT: 16:00 New York is 20:00 UTC.
      const before = await contractAt('FRI', '2001-06-15T19:59:59Z');
      expect(before.body.data.contract.isActive).toBe(true);
      expect(before.body.meta.staleReason).toBe('quote_older_than_one_session');
      for (const asOf of ['2001-06-15T20:00:00Z', undefined]) {
        const res = await contractAt('FRI', asOf);
        expect(res.status).toBe(200);
        expect(res.body.data.contract.isActive, asOf).toBe(false);
        expect(res.body.meta, asOf).toMatchObject({ stale: true, staleReason: 'contract_expired' });
      }
    });

    it('when a chain is read, then stale counts the rows that are stale; a listed contract without a quote is no_quote', async () => {
      const fresh = await svc.get(`/v1/instruments/${underlying}/options?asOf=2001-05-04T20:00:00Z&expiry=2001-06-15&strike=100`, key);
      // APR30 (2001-04-30 20:00) and MIDNIGHT (2001-05-01 00:00) are older than the session of 2001-05-01; FRI is fresh.
      expect(fresh.body.meta).toMatchObject({ source: 'synthetic-demo', stale: true, staleReason: 'quote_older_than_one_session', staleContracts: 2 });
      const unquoted = await svc.get(`/v1/instruments/${underlying}/options?asOf=2001-05-04T20:00:00Z&expiry=2001-07-20`, key);
      expect(unquoted.body.data.map((i: any) => i.quote)).toEqual([null]);
      // A contract without a quote still names its own origin.
      expect(unquoted.body.meta).toMatchObject({ source: 'synthetic-demo', stale: true, staleReason: 'no_quote', staleContracts: 1 });
    });

    it("when the expiries are listed, then they are fresh while any listed contract has a quote at most one session old, and name the quotes' source", async () => {
      const fresh = await svc.get(`/v1/instruments/${underlying}/options/expiries?asOf=2001-05-07T19:59:59Z`, key);
      expect(fresh.body).toEqual({
        data: ['2001-06-15', '2001-07-20'],
        meta: { asOf: '2001-05-07T19:59:59Z', source: 'synthetic-demo', stale: false, staleReason: null },
      });
      const stale = await svc.get(`/v1/instruments/${underlying}/options/expiries?asOf=2001-05-07T20:00:00Z`, key);
      expect(stale.body.meta).toEqual({ asOf: '2001-05-07T20:00:00Z', source: 'synthetic-demo', stale: true, staleReason: 'quote_older_than_one_session' });
    });
  });
});
