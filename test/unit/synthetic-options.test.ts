import { describe, expect, it } from 'vitest';
import { demoInstrumentId } from '../../server/demo/catalog.ts';
import {
  europeanLowerBound,
  READER_RATE_RANGE,
  SYNTHETIC_CHAINS,
  syntheticOptionContracts,
  syntheticOptionQuotes,
  type SyntheticOptionContract,
} from '../../server/demo/synthetic-options.ts';
import { derivedContractId } from '../../server/options/schema.ts';
import { priceOption } from '../../workers/black-scholes.ts';

const contracts = syntheticOptionContracts();
const quotes = syntheticOptionQuotes();
const bySymbol = new Map(contracts.map((c) => [c.contractSymbol, c]));
const byId = new Map(contracts.map((c) => [c.id, c]));

// Real raw closes, read by hand from server/demo/data/msft_daily_2000_2001.csv,
// goog_daily_2004_2008.csv and sp500_daily_2000_2020.csv (column close).
const CLOSES: Record<string, number> = {
  'MSFT|2001-05-04': 70.75,
  'MSFT|2001-05-09': 70.4,
  'MSFT|2001-05-14': 68.72,
  'GOOGL|2007-06-01': 500.4,
  'GOOGL|2007-06-06': 518.25,
  'GOOGL|2007-06-11': 511.34,
  'index:SPX|2019-08-02': 2932.050049,
  'index:SPX|2019-08-07': 2883.97998,
  'index:SPX|2019-08-12': 2882.699951,
};
const keyOf = new Map(SYNTHETIC_CHAINS.map((s) => [demoInstrumentId(s.instrumentKey), s.instrumentKey]));

function quoteOf(symbol: string, day: string) {
  const contract = bySymbol.get(symbol)!;
  return quotes.find((q) => q.contractId === contract.id && q.observedAt === `${day}T20:00:00.000Z`);
}

function closeOf(c: SyntheticOptionContract, day: string): number {
  return CLOSES[`${keyOf.get(c.instrumentId)}|${day}`];
}

const years = (from: string, to: string) => (Date.parse(to) - Date.parse(from)) / 86_400_000 / 365;

describe('synthetic demo option chains', () => {
  it('when generated twice, then the rows are identical', () => {
    expect(JSON.stringify(syntheticOptionContracts())).toBe(JSON.stringify(contracts));
    expect(JSON.stringify(syntheticOptionQuotes())).toBe(JSON.stringify(quotes));
  });

  it('when counted, then 216 contracts (3 underlyings × 4 expiries × 9 strikes × 2 rights) and 594 quotes, all synthetic-demo', () => {
    expect(contracts).toHaveLength(216);
    expect(new Set(contracts.map((c) => c.id)).size).toBe(216);
    expect(new Set(contracts.map((c) => `${c.instrumentId}|${c.contractSymbol}`)).size).toBe(216);
    // Per underlying: 54 contracts on the first day, 72 on each of the other two.
    expect(quotes).toHaveLength(3 * (54 + 72 + 72));
    expect(new Set(quotes.map((q) => `${q.contractId}|${q.observedAt}`)).size).toBe(594);
    for (const s of SYNTHETIC_CHAINS) {
      const own = contracts.filter((c) => c.instrumentId === demoInstrumentId(s.instrumentKey));
      expect(new Set(own.map((c) => c.expiry)).size, s.instrumentKey).toBe(4);
      expect(new Set(own.map((c) => c.strike)).size, s.instrumentKey).toBe(9);
    }
    expect(new Set(quotes.map((q) => q.source))).toEqual(new Set(['synthetic-demo']));
    expect(new Set(contracts.map((c) => c.source))).toEqual(new Set(['synthetic-demo']));
    expect(contracts.every((c) => c.multiplier === 100)).toBe(true);
  });

  it('when a contract is read, then its OCC symbol, fields and id follow the rules (two written by hand)', () => {
    const msft = bySymbol.get('MSFT  010615C00072500');
    expect(msft).toEqual({
      id: derivedContractId(demoInstrumentId('MSFT'), 'MSFT  010615C00072500'),
      instrumentId: demoInstrumentId('MSFT'),
      contractSymbol: 'MSFT  010615C00072500',
      expiry: '2001-06-15',
      strike: 72.5,
      right: 'call',
      multiplier: 100,
      isActive: true,
      listedAt: '2001-05-04T13:30:00.000Z',
      source: 'synthetic-demo',
    });
    const spx = bySymbol.get('SPX   191115P03025000');
    expect(spx).toMatchObject({ instrumentId: demoInstrumentId('index:SPX'), expiry: '2019-11-15', strike: 3025, right: 'put', multiplier: 100 });
    expect(bySymbol.has('GOOG  070720C00460000')).toBe(true);
  });

  it('when the expiries are read, then each is a third Friday', () => {
    for (const expiry of new Set(contracts.map((c) => c.expiry))) {
      const d = new Date(`${expiry}T00:00:00Z`);
      expect(d.getUTCDay(), expiry).toBe(5);
      expect(Math.ceil(d.getUTCDate() / 7), expiry).toBe(3);
    }
  });

  it('when the quote of MSFT 2001-06-15 70 call and put on 2001-05-04 is worked by hand, then the bid and ask match', () => {
    // S = 70.75 (the real close), K = 70, 42 days: T = 42/365 = 0.115068493, √T = 0.339217472.
    // x = ln(70/70.75) = −0.010657294; σ = 0.40 − 0.25·x + 0.5·x² = 0.402721113.
    // d1 = (ln(S/K) + 0.03·T)/(σ√T) + σ√T/2 = 0.171586956, d2 = 0.034976918.
    // N(d1) = 0.568118868, N(d2) = 0.513950927, e^{−rT} = 0.996553897.
    // call = S·N(d1) − K·e^{−rT}·N(d2) = 4.341824020; h = 0.01 + 0.02·call = 0.096836480;
    //   bid: 4.244987540 rounded down to 0.05 = 4.20; ask: 4.438660500 rounded up to 0.05 = 4.45
    //   (the floor S − K·e^{−0.06T} = 1.231623 does not bind: 2·(1.231623 + 0.01) − 4.20 < 4.4387).
    // put (parity) = 3.350596789; h = 0.077011936; bid 3.273584853 → 3.25; ask 3.427608724 → 3.45 (floor max(0, K − S) = 0).
    // (Worked with scipy.stats.norm, not with this project's code.)
    expect(quoteOf('MSFT  010615C00070000', '2001-05-04')).toEqual({
      contractId: bySymbol.get('MSFT  010615C00070000')!.id,
      observedAt: '2001-05-04T20:00:00.000Z',
      bid: 4.2,
      ask: 4.45,
      lastPrice: null,
      volume: expect.any(Number),
      openInterest: expect.any(Number),
      source: 'synthetic-demo',
      greeks: null,
    });
    expect(quoteOf('MSFT  010615P00070000', '2001-05-04')).toMatchObject({ bid: 3.25, ask: 3.45 });
  });

  it('when prices are quoted, then bid ≥ 0, bid ≤ ask, both on the tick of their price, and volume and open interest are whole numbers', () => {
    for (const q of quotes) {
      expect(q.bid).toBeGreaterThanOrEqual(0);
      expect(q.bid).toBeLessThanOrEqual(q.ask);
      for (const p of [q.bid, q.ask]) {
        const cents = Math.round(p * 100);
        expect(Math.abs(p * 100 - cents)).toBeLessThan(1e-9);
        if (p >= 3) expect(cents % 5, String(p)).toBe(0);
      }
      expect(Number.isInteger(q.volume) && q.volume >= 0).toBe(true);
      expect(Number.isInteger(q.openInterest) && q.openInterest >= 0).toBe(true);
      expect(q.volume).toBeLessThanOrEqual(q.openInterest);
    }
  });

  it('when a reader solves vols at any rate from 0 to 6 %, then every mid but the three stale ones lies strictly inside the no-arbitrage bounds', () => {
    const outside = new Set<string>();
    for (const rate of [READER_RATE_RANGE.low, 0.03, READER_RATE_RANGE.high]) {
      for (const q of quotes) {
        const c = byId.get(q.contractId)!;
        const day = q.observedAt.slice(0, 10);
        const S = closeOf(c, day);
        const T = years(day, c.expiry);
        const mid = (q.bid + q.ask) / 2;
        // Lower bounds written out here, not taken from the module.
        const discounted = c.strike * Math.exp(-rate * T);
        const lower = c.right === 'call' ? Math.max(0, S - discounted) : Math.max(0, discounted - S);
        const upper = c.right === 'call' ? S : discounted;
        if (!(mid > lower && mid < upper)) outside.add(`${c.contractSymbol} ${day}`);
      }
    }
    expect([...outside].sort()).toEqual(['GOOG  070720C00460000 2007-06-11', 'MSFT  010615P00080000 2001-05-14', 'SPX   190920P03025000 2019-08-12']);
  });

  it('when a stale quote is read, then it repeats its first-day market, trades nothing and its mid is below intrinsic value', () => {
    const cases = [
      ['MSFT  010615P00080000', '2001-05-04', '2001-05-14', 80 - 68.72],
      ['GOOG  070720C00460000', '2007-06-01', '2007-06-11', 511.34 - 460],
      ['SPX   190920P03025000', '2019-08-02', '2019-08-12', 3025 - 2882.699951],
    ] as const;
    for (const [symbol, first, last, intrinsic] of cases) {
      const stale = quoteOf(symbol, last)!;
      const original = quoteOf(symbol, first)!;
      expect([stale.bid, stale.ask]).toEqual([original.bid, original.ask]);
      expect(stale.volume).toBe(0);
      expect(stale.greeks).toBeNull();
      expect((stale.bid + stale.ask) / 2).toBeLessThan(intrinsic);
      const c = bySymbol.get(symbol)!;
      // Below the bound at every reader rate, so no vol solves it.
      for (const rate of [READER_RATE_RANGE.low, READER_RATE_RANGE.high]) {
        expect((stale.bid + stale.ask) / 2).toBeLessThan(europeanLowerBound(c.right, closeOf(c, last), c.strike, years(last, c.expiry), rate));
      }
    }
    expect(quoteOf('MSFT  010615P00080000', '2001-05-14')).toMatchObject({ bid: 9.65, ask: 10.1 });
  });

  it("when provider Greeks are present, then exactly the nearest expiry's 18 contracts per underlying carry them on the last day, equal to BSM at the smile vol", () => {
    const withGreeks = quotes.filter((q) => q.greeks !== null);
    expect(withGreeks).toHaveLength(54);
    const expected = new Set(SYNTHETIC_CHAINS.map((s) => `${s.expiries[0]}|${s.observationDays[2]}`));
    for (const q of withGreeks) expect(expected.has(`${byId.get(q.contractId)!.expiry}|${q.observedAt.slice(0, 10)}`)).toBe(true);
    // MSFT 2001-05-18 72.5 call on 2001-05-14: S = 68.72, x = ln(72.5/68.72) = 0.053546,
    // σ = 0.40 − 0.25·0.053546 + 0.5·0.053546² = 0.388047; 4 days.
    const q = quoteOf('MSFT  010518C00072500', '2001-05-14')!;
    const x = Math.log(72.5 / 68.72);
    const vol = 0.4 - 0.25 * x + 0.5 * x * x;
    expect(vol).toBeCloseTo(0.388047, 6);
    const { greeks } = priceOption({ spot: 68.72, strike: 72.5, timeYears: 4 / 365, rate: 0.03, vol, type: 'call' });
    expect(q.greeks).toEqual({ ...greeks, impliedVolatility: vol });
  });

  it('when the fourth expiry is read, then it is listed at the open of the second observation day and has no quote before', () => {
    const late = [
      ['2001-08-17', '2001-05-09'],
      ['2007-09-21', '2007-06-06'],
      ['2019-11-15', '2019-08-07'],
    ];
    for (const [expiry, secondDay] of late) {
      const own = contracts.filter((c) => c.expiry === expiry);
      expect(own).toHaveLength(18);
      for (const c of own) expect(c.listedAt).toBe(`${secondDay}T13:30:00.000Z`);
      const observed = quotes.filter((q) => own.some((c) => c.id === q.contractId)).map((q) => q.observedAt);
      expect(observed).toHaveLength(36);
      expect(observed.every((t) => t >= `${secondDay}T13:30:00.000Z`)).toBe(true);
    }
    // Every other contract is listed at the open of its first observation day.
    const others = contracts.filter((c) => !late.some(([e]) => e === c.expiry));
    expect(new Set(others.map((c) => c.listedAt))).toEqual(new Set(['2001-05-04T13:30:00.000Z', '2007-06-01T13:30:00.000Z', '2019-08-02T13:30:00.000Z']));
  });
});
