import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoDailyBars, demoInstrumentId, demoInstruments } from '../../server/demo/catalog.ts';
import { SYNTHETIC_CHAINS, syntheticOptionContracts, syntheticOptionQuotes } from '../../server/demo/synthetic-options.ts';
import { batchesOf } from '../../server/ingest/body.ts';
import { ingestRows } from '../../server/ingest/service.ts';
import { instrumentIngest } from '../../server/instruments/ingest.ts';
import { optionContractIngest, optionQuoteIngest } from '../../server/options/ingest.ts';
import { dailyBarIngest } from '../../server/prices/ingest.ts';
import { derivedContractId } from '../../server/options/schema.ts';
import { storeShippedRiskFreeRates } from '../../server/demo/risk-free-rates.ts';
import { startService, type Service } from './harness.ts';

// The synthetic demo chain goes through the same ingest as an upload: the
// contracts, then their quotes.

describe('the demo option chains', () => {
  let svc: Service;
  const underlyings = SYNTHETIC_CHAINS.map((s) => demoInstrumentId(s.instrumentKey));

  beforeAll(async () => {
    svc = await startService();
    const instruments = demoInstruments()
      .filter((i) => underlyings.includes(i.id))
      .map(({ currentSymbol: _current, ...i }) => i);
    await ingestRows(svc.sql, instrumentIngest, batchesOf(instruments));
    // The demo load stores the TB3MS history the computed Greeks read.
    await storeShippedRiskFreeRates(svc.sql);
  });
  afterAll(() => svc?.stop());

  it('when the demo contracts and quotes are ingested twice, then every row is stored once and the second load changes nothing', async () => {
    const contracts = syntheticOptionContracts();
    const quotes = syntheticOptionQuotes();
    // Another suite may have loaded the demo chain into the shared database
    // first; the first load then inserts exactly what is missing.
    const [{ contracts: storedContracts, quotes: storedQuotes }] = await svc.sql`
      select
        (select count(*)::int from option_contracts where id = any (${contracts.map((c) => c.id)}::uuid[])) as contracts,
        (select count(*)::int from option_quotes where contract_id = any (${contracts.map((c) => c.id)}::uuid[])) as quotes
    `;
    expect(await ingestRows(svc.sql, optionContractIngest, batchesOf(contracts))).toEqual({
      rows: 216,
      inserted: 216 - storedContracts,
      updated: 0,
      unchanged: storedContracts,
    });
    expect(await ingestRows(svc.sql, optionQuoteIngest, batchesOf(quotes))).toEqual({
      rows: 594,
      inserted: 594 - storedQuotes,
      updated: 0,
      unchanged: storedQuotes,
    });
    expect(await ingestRows(svc.sql, optionContractIngest, batchesOf(syntheticOptionContracts()))).toEqual({
      rows: 216,
      inserted: 0,
      updated: 0,
      unchanged: 216,
    });
    expect(await ingestRows(svc.sql, optionQuoteIngest, batchesOf(syntheticOptionQuotes()))).toEqual({ rows: 594, inserted: 0, updated: 0, unchanged: 594 });

    const [counts] = await svc.sql`
      select count(*)::int as quotes, count(q.delta)::int as with_greeks, count(distinct q.contract_id)::int as contracts
      from option_quotes q
      join option_contracts c on c.id = q.contract_id
      where c.instrument_id = any (${underlyings}::uuid[]) and q.source = 'synthetic-demo'
    `;
    expect(counts).toEqual({ quotes: 594, with_greeks: 54, contracts: 216 });

    // The stale contract's three observations read back as posted: the last repeats the first day's market.
    const staleId = derivedContractId(demoInstrumentId('MSFT'), 'MSFT  010615P00080000');
    const stored = await svc.sql`
      select observed_at, bid, ask, last_price, volume, open_interest, delta from option_quotes where contract_id = ${staleId} order by observed_at
    `;
    const posted = quotes.filter((q) => q.contractId === staleId);
    expect(stored.map((r) => [r.observed_at.toISOString(), r.bid, r.ask, r.last_price, r.volume, r.open_interest, r.delta])).toEqual(
      posted.map((q) => [q.observedAt, q.bid, q.ask, null, q.volume, q.openInterest, null]),
    );
    expect(stored.map((r) => r.observed_at.toISOString())).toEqual(['2001-05-04T20:00:00.000Z', '2001-05-09T20:00:00.000Z', '2001-05-14T20:00:00.000Z']);
    expect([stored[2].bid, stored[2].ask, stored[2].volume]).toEqual([stored[0].bid, stored[0].ask, 0]);
    const [late] = await svc.sql`
      select listed_at, multiplier from option_contracts where id = ${derivedContractId(demoInstrumentId('MSFT'), 'MSFT  010817C00070000')}
    `;
    expect(late).toEqual({ listed_at: new Date('2001-05-09T13:30:00.000Z'), multiplier: 100 });
  });

  it('when the demo snapshots are derived, then the 30-day ATM IV is the total-variance interpolation of the ATM IVs that the chain read gives at each expiry', async () => {
    const msft = demoInstrumentId('MSFT');
    const bars = [...demoDailyBars()].filter((b) => b.instrumentId === msft && b.source === 'r-cran-timeseries/MSFT' && b.barDate <= '2001-05-14');
    await ingestRows(svc.sql, dailyBarIngest, batchesOf(bars));
    const derived = await svc.admin('POST', '/derive', { instrumentIds: [msft] });
    expect(derived.status).toBe(200);
    expect(derived.body.data.ivSnapshots.rows).toBe(3);

    const key = await svc.keyWith(['options:read']);
    const read = await svc.get(`/v1/instruments/implied-volatility?instrumentIds=${msft}&asOf=2001-05-04&maxAgeDays=1&includeTermStructure=true`, key);
    const [row] = read.body.instruments;
    expect(row).toMatchObject({ instrumentId: msft, asOfDate: '2001-05-04', source: 'derived from synthetic-demo' });

    // By hand, from the chain as read at the end of 2001-05-04: per expiry, the
    // strikes either side of spot, each the mean of its call and put implied
    // volatility, interpolated linearly in strike to spot.
    const chain = (await svc.get(`/v1/instruments/${msft}/options?asOf=2001-05-04`, key)).body.data;
    const spot = row.underlyingPrice;
    const atm = new Map<string, number>();
    for (const expiry of [...new Set(chain.map((i: any) => i.contract.expiry))] as string[]) {
      const ivAt = (strike: number) => {
        const ivs = chain.filter((i: any) => i.contract.expiry === expiry && i.contract.strike === strike).map((i: any) => i.greeks.impliedVolatility);
        return ivs.reduce((a: number, b: number) => a + b, 0) / ivs.length;
      };
      const strikes = [...new Set(chain.filter((i: any) => i.contract.expiry === expiry).map((i: any) => i.contract.strike))] as number[];
      const below = Math.max(...strikes.filter((k) => k <= spot));
      const above = Math.min(...strikes.filter((k) => k >= spot));
      atm.set(expiry, below === above ? ivAt(below) : ivAt(below) + ((ivAt(above) - ivAt(below)) * (spot - below)) / (above - below));
    }
    const days = (expiry: string) => (Date.parse(expiry) - Date.parse('2001-05-04')) / 86_400_000;
    expect(row.termStructure).toHaveLength(atm.size);
    for (const point of row.termStructure) {
      const expiry = [...atm.keys()].find((e) => days(e) === point.daysToExpiry)!;
      expect(Math.abs(point.atmImpliedVolatility - atm.get(expiry)!)).toBeLessThan(1e-12);
    }
    // The expiries either side of 30 days: w = σ²·d, linear in d, σ30 = √(w30 / 30).
    const [lo, hi] = [...atm.keys()]
      .map((e) => ({ d: days(e), v: atm.get(e)! }))
      .filter((p, _, all) => (p.d <= 30 ? !all.some((q) => q.d <= 30 && q.d > p.d) : !all.some((q) => q.d >= 30 && q.d < p.d)));
    expect(lo.d).toBeLessThan(30);
    expect(hi.d).toBeGreaterThan(30);
    const w30 = lo.v ** 2 * lo.d + ((hi.v ** 2 * hi.d - lo.v ** 2 * lo.d) * (30 - lo.d)) / (hi.d - lo.d);
    expect(Math.abs(row.atmImpliedVolatility - Math.sqrt(w30 / 30))).toBeLessThan(1e-12);
    expect(row.volatilitySurface.impliedVolatility30d).toBe(row.atmImpliedVolatility);
  });

  it('when the synthetic chain is read, then every options answer names its origin, synthetic-demo, in meta.source', async () => {
    const msft = demoInstrumentId('MSFT');
    const key = await svc.keyWith(['options:read']);
    const expiries = await svc.get(`/v1/instruments/${msft}/options/expiries?asOf=2001-05-14T20:00:00Z`, key);
    expect(expiries.body.meta).toEqual({ asOf: '2001-05-14T20:00:00Z', source: 'synthetic-demo', stale: false, staleReason: null });
    // Listed at the open of 2001-05-04 (13:30 UTC), first quoted at its close (20:00 UTC): in between, the contracts alone name the origin.
    const unquoted = await svc.get(`/v1/instruments/${msft}/options/expiries?asOf=2001-05-04T15:00:00Z`, key);
    expect(unquoted.body).toEqual({
      data: ['2001-05-18', '2001-06-15', '2001-07-20'],
      meta: { asOf: '2001-05-04T15:00:00Z', source: 'synthetic-demo', stale: true, staleReason: 'no_quote' },
    });
    const chain = await svc.get(`/v1/instruments/${msft}/options?asOf=2001-05-14T20:00:00Z`, key);
    expect(chain.body.meta).toMatchObject({ source: 'synthetic-demo', stale: false, staleReason: null, staleContracts: 0 });
    const one = await svc.get(`/v1/options/${derivedContractId(msft, 'MSFT  010615C00070000')}?asOf=2001-05-14T20:00:00Z`, key);
    expect(one.body.meta).toEqual({ asOf: '2001-05-14T20:00:00Z', source: 'synthetic-demo', stale: false, staleReason: null });
    // The generator prices at 2001-05-14 20:00 UTC; TB3MS for April 2001 (3.87 %) is the latest month known then.
    expect(one.body.data.greeks.model).toMatchObject({ riskFreeRate: 0.0387, riskFreeRateSource: 'fred:TB3MS', riskFreeRateAsOf: '2001-04-01' });
  });
});
