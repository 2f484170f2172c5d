import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { derivedContractId } from '../../server/options/schema.ts';
import { createInstrument } from './fixtures.ts';
import { startService, type Reply, type Service } from './harness.ts';
import type { InstrumentId } from '../../server/core/ids.ts';

// The three options uploads: contracts upserted on id, quote observations
// append-only, implied-volatility snapshots upserted on (instrument, day).

/** An option upload's counts, without what was derived from it (`derived`, present when it touched a quoted day). */
function countsOf(res: Reply) {
  const { derived: _derived, ...counts } = res.body.data;
  return counts;
}

describe('options ingest', () => {
  let svc: Service;
  let underlying: InstrumentId;
  const contract = (fields: Record<string, unknown> = {}) => ({
    instrumentId: underlying,
    contractSymbol: 'TEST  240315C00100000',
    expiry: '2024-03-15',
    strike: 100,
    right: 'call',
    multiplier: 100,
    ...fields,
  });
  const quote = (contractId: string, fields: Record<string, unknown> = {}) => ({
    contractId,
    observedAt: '2024-03-01T20:00:00Z',
    bid: 2.1,
    ask: 2.3,
    lastPrice: 2.2,
    volume: 120,
    openInterest: 3400,
    source: 'test-feed',
    ...fields,
  });

  beforeAll(async () => {
    svc = await startService();
    underlying = (await createInstrument(svc)).id;
  });
  afterAll(() => svc?.stop());

  it('when a contract comes without an id, then it gets the one derived from underlying and symbol, and posting it again changes nothing', async () => {
    const first = await svc.admin('POST', '/options/contracts', [contract()]);
    expect(countsOf(first)).toEqual({ rows: 1, inserted: 1, updated: 0, unchanged: 0 });
    const again = await svc.admin('POST', '/options/contracts', [contract({ id: derivedContractId(underlying, 'TEST  240315C00100000') })]);
    expect(countsOf(again)).toEqual({ rows: 1, inserted: 0, updated: 0, unchanged: 1 });
    const delisted = await svc.admin('POST', '/options/contracts', [contract({ isActive: false })]);
    expect(countsOf(delisted)).toEqual({ rows: 1, inserted: 0, updated: 1, unchanged: 0 });
  });

  it('when a contract names its source, then it is stored and read back with it, and the answers built from it name it; without one it is ingested', async () => {
    const symbol = 'SRC   240315C00100000';
    const rows = [
      contract({ contractSymbol: symbol, source: 'vendor-x', listedAt: '2024-03-01T14:30:00Z' }),
      contract({ contractSymbol: 'NOSRC 240315C00100000', listedAt: '2024-03-01T14:30:00Z' }),
    ];
    expect(countsOf(await svc.admin('POST', '/options/contracts', rows))).toEqual({
      rows: 2,
      inserted: 2,
      updated: 0,
      unchanged: 0,
    });
    const key = await svc.keyWith(['options:read']);
    const res = await svc.get(`/v1/options/${derivedContractId(underlying, symbol)}?asOf=2024-03-01T15:00:00Z`, key);
    expect(res.body.data.contract.source).toBe('vendor-x');
    expect(res.body.meta).toMatchObject({ source: 'vendor-x', stale: true, staleReason: 'no_quote' });
    // A contract posted without a source says ingested, and a list of both names both.
    const expiries = await svc.get(`/v1/instruments/${underlying}/options/expiries?asOf=2024-03-01T15:00:00Z`, key);
    expect(expiries.body.meta.source).toBe('ingested, vendor-x');
  });

  it('when a quote observation is posted twice, then the second is unchanged; with other values it is refused and nothing of its batch is stored', async () => {
    const id = derivedContractId(underlying, 'TEST  240315C00100000');
    const greeks = { delta: 0.52, gamma: 0.04, theta: -0.05, vega: 0.11, rho: 0.03, impliedVolatility: 0.31 };
    expect(countsOf(await svc.admin('POST', '/options/quotes', [quote(id, { greeks })]))).toEqual({ rows: 1, inserted: 1, updated: 0, unchanged: 0 });
    // As read back: the Greeks carry asOf and greeksSource.
    const readBack = quote(id, { greeks: { ...greeks, asOf: '2024-03-01T20:00:00.000Z', greeksSource: 'provider' } });
    expect(countsOf(await svc.admin('POST', '/options/quotes', [readBack]))).toEqual({ rows: 1, inserted: 0, updated: 0, unchanged: 1 });
    const rewrite = await svc.admin('POST', '/options/quotes', [quote(id, { observedAt: '2024-03-04T20:00:00Z' }), quote(id, { bid: 2.0, greeks })]);
    expect(rewrite.status).toBe(400);
    expect(Object.keys(rewrite.body.error.details)).toEqual(['rows[1].observedAt']);
    const [{ n }] = await svc.sql`select count(*)::int as n from option_quotes where contract_id = ${id}`;
    expect(n).toBe(1);
  });

  it('when a quote names an unknown contract, computed Greeks, or partial Greeks, then 400 names the row and field', async () => {
    const id = derivedContractId(underlying, 'TEST  240315C00100000');
    const unknown = await svc.admin('POST', '/options/quotes', [quote(randomUUID())]);
    expect(Object.keys(unknown.body.error.details)).toEqual(['rows[0].contractId']);
    const computed = await svc.admin('POST', '/options/quotes', [
      quote(id, {
        observedAt: '2024-03-05T20:00:00Z',
        greeks: { delta: 0.5, gamma: 0.04, theta: -0.05, vega: 0.1, rho: 0.03, impliedVolatility: 0.3, greeksSource: 'computed' },
      }),
    ]);
    expect(Object.keys(computed.body.error.details)).toEqual(['rows[0].greeks.greeksSource']);
    const partial = await svc.admin('POST', '/options/quotes', [quote(id, { observedAt: '2024-03-05T20:00:00Z', greeks: { delta: 0.5 } })]);
    expect(partial.status).toBe(400);
    expect(Object.keys(partial.body.error.details).every((k) => k.startsWith('rows[0].greeks.'))).toBe(true);
    const crossed = await svc.admin('POST', '/options/quotes', [quote(id, { observedAt: '2024-03-05T20:00:00Z', bid: 3, ask: 2 })]);
    expect(Object.keys(crossed.body.error.details)).toEqual(['rows[0].ask']);
  });

  it('when quotes come as CSV with the Greeks as JSON text, then they are stored like JSON rows', async () => {
    const id = derivedContractId(underlying, 'TEST  240315C00100000');
    const csv = [
      'contractId,observedAt,bid,ask,lastPrice,volume,openInterest,source,greeks',
      `${id},2024-03-06T20:00:00Z,1.9,2.05,,,,csv-feed,"{""delta"":0.5,""gamma"":0.04,""theta"":-0.05,""vega"":0.1,""rho"":0.03,""impliedVolatility"":0.3}"`,
      `${id},2024-03-07T20:00:00Z,1.8,1.95,,,,csv-feed,`,
    ].join('\n');
    expect(countsOf(await svc.admin('POST', '/options/quotes', csv, 'text/csv'))).toEqual({ rows: 2, inserted: 2, updated: 0, unchanged: 0 });
    const rows =
      await svc.sql`select observed_at, implied_volatility, last_price from option_quotes where contract_id = ${id} and source = 'csv-feed' order by observed_at`;
    expect(rows.map((r) => [r.implied_volatility, r.last_price])).toEqual([
      [0.3, null],
      [null, null],
    ]);
  });

  it('when a snapshot is posted again with a changed figure, then it is updated; its term structure round-trips', async () => {
    const snap = {
      instrumentId: underlying,
      asOfDate: '2024-03-01',
      underlyingPrice: 101.5,
      atmImpliedVolatility: 0.3,
      impliedVolatility30d: 0.3,
      historicalVolatility30d: 0.25,
      parkinsonHistoricalVolatility30d: null,
      putCallIvRatio30d: 1.05,
      termStructure: [{ expiry: '2024-03-15', daysToExpiry: 14, atmImpliedVolatility: 0.32 }],
    };
    expect((await svc.admin('POST', '/iv-snapshots', [snap])).body.data).toEqual({ rows: 1, inserted: 1, updated: 0, unchanged: 0 });
    expect((await svc.admin('POST', '/iv-snapshots', [snap])).body.data).toEqual({ rows: 1, inserted: 0, updated: 0, unchanged: 1 });
    expect((await svc.admin('POST', '/iv-snapshots', [{ ...snap, putCallIvRatio30d: 1.07 }])).body.data).toEqual({
      rows: 1,
      inserted: 0,
      updated: 1,
      unchanged: 0,
    });
    const [row] = await svc.sql`select term_structure, source from iv_snapshots where instrument_id = ${underlying}`;
    expect(row).toEqual({ term_structure: snap.termStructure, source: 'ingested' });
  });
});
