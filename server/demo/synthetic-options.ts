import { DAYS_PER_YEAR, type Greeks } from '../../workers/contract.ts';
import { closedForm } from '../../workers/pool.ts';
import { derivedContractId, type OptionRight } from '../options/schema.ts';
import { demoDailyBars, demoDailySources, demoInstrumentId } from './catalog.ts';
import { mulberry32, SYNTHETIC_SOURCE } from './synthetic-intraday.ts';
import type { InstrumentId } from '../core/ids.ts';
import { entryOf } from '../core/map-entry.ts';

/**
 * Synthetic option chains for the demo. Our sources hold no real option
 * quote, so three underlyings with real daily closes (MSFT, GOOGL, then
 * traded as GOOG, and the S&P 500 index) get a small generated chain: a few
 * expiries, nine strikes each, calls and puts, quoted on three days. Each quote
 * is the Black–Scholes–Merton price (workers/black-scholes.ts) off the real
 * raw close of its day and a stated smile, widened to a bid and an ask; every
 * contract and quote has `source: 'synthetic-demo'` and no quote is an observation. The rules
 * and constants are written out in data/SOURCES.md ("Synthetic option
 * chains"); the output is identical on every run.
 */

/** A row of POST /admin/v1/options/contracts. */
export interface SyntheticOptionContract {
  id: string;
  instrumentId: InstrumentId;
  contractSymbol: string;
  expiry: string;
  strike: number;
  right: OptionRight;
  multiplier: number;
  isActive: boolean;
  listedAt: string;
  source: typeof SYNTHETIC_SOURCE;
}

/** The generator's own BSM Greeks, posted in the provider's place on the quotes that carry Greeks. */
export interface SyntheticProviderGreeks extends Greeks {
  impliedVolatility: number;
}

/** A row of POST /admin/v1/options/quotes. */
export interface SyntheticOptionQuote {
  contractId: string;
  observedAt: string;
  bid: number;
  ask: number;
  lastPrice: null;
  volume: number;
  openInterest: number;
  source: typeof SYNTHETIC_SOURCE;
  greeks: SyntheticProviderGreeks | null;
}

/** A round constant for every underlying, not an observed rate. */
export const SYNTHETIC_OPTIONS_RISK_FREE_RATE = 0.03;
/** No dividend yield, so the model is plain Black–Scholes on the close. */
export const SYNTHETIC_OPTIONS_DIVIDEND_YIELD = 0;
export const SYNTHETIC_OPTIONS_MULTIPLIER = 100;
/** Seed of the volume and open-interest draws. */
export const SYNTHETIC_OPTIONS_SEED = 20010504;
/** 16:00 New York under daylight saving time, the close: every observation day is in EDT. */
const OBSERVATION_TIME = 'T20:00:00.000Z';
/** 09:30 New York under daylight saving time, the open. */
const LISTING_TIME = 'T13:30:00.000Z';
/** Strikes per expiry: the centre strike and four steps either side. */
const STRIKE_STEPS_EACH_SIDE = 4;

export interface SyntheticChainSpec {
  /** Key in instruments.json. */
  instrumentKey: string;
  /** OCC root: the symbol the underlying traded as on the observation days. */
  root: string;
  /** Three trading days with a real raw close, a few days apart, each in US daylight saving time. */
  observationDays: readonly [string, string, string];
  /** Third Fridays, ascending; the last is listed only at the open of the second observation day. */
  expiries: readonly [string, string, string, string];
  /** Strike increment; the centre strike is the first day's close rounded to it. */
  strikeStep: number;
  /** The smile σ(K) = atmVol + skew·x + curvature·x², x = ln(K/S), S the day's close. Chosen by hand, not observed. */
  atmVol: number;
  skew: number;
  curvature: number;
  /** Scale of the open-interest draw. */
  openInterestBase: number;
  /** The deep in-the-money contract whose latest quote is its first-day quote carried over (below intrinsic). */
  stale: { expiry: string; strike: number; right: OptionRight };
}

export const SYNTHETIC_CHAINS: readonly SyntheticChainSpec[] = [
  {
    instrumentKey: 'MSFT',
    root: 'MSFT',
    observationDays: ['2001-05-04', '2001-05-09', '2001-05-14'],
    expiries: ['2001-05-18', '2001-06-15', '2001-07-20', '2001-08-17'],
    strikeStep: 2.5,
    atmVol: 0.4,
    skew: -0.25,
    curvature: 0.5,
    openInterestBase: 5000,
    stale: { expiry: '2001-06-15', strike: 80, right: 'put' },
  },
  {
    instrumentKey: 'GOOGL',
    root: 'GOOG',
    observationDays: ['2007-06-01', '2007-06-06', '2007-06-11'],
    expiries: ['2007-06-15', '2007-07-20', '2007-08-17', '2007-09-21'],
    strikeStep: 10,
    atmVol: 0.3,
    skew: -0.25,
    curvature: 0.5,
    openInterestBase: 800,
    stale: { expiry: '2007-07-20', strike: 460, right: 'call' },
  },
  {
    instrumentKey: 'index:SPX',
    root: 'SPX',
    observationDays: ['2019-08-02', '2019-08-07', '2019-08-12'],
    expiries: ['2019-08-16', '2019-09-20', '2019-10-18', '2019-11-15'],
    strikeStep: 25,
    atmVol: 0.16,
    skew: -0.8,
    curvature: 2,
    openInterestBase: 10000,
    stale: { expiry: '2019-09-20', strike: 3025, right: 'put' },
  },
];

const RIGHTS: readonly OptionRight[] = ['call', 'put'];

/** OCC symbol: root padded to 6, yymmdd, C or P, strike × 1000 in 8 digits (`MSFT  010615C00072500`). */
export function occSymbol(root: string, expiry: string, right: OptionRight, strike: number): string {
  const thousandths = Math.round(strike * 1000);
  if (root.length > 6 || thousandths >= 1e8) throw new Error(`no OCC symbol for ${root} ${strike}`);
  return `${root.padEnd(6)}${expiry.slice(2, 4)}${expiry.slice(5, 7)}${expiry.slice(8, 10)}${right === 'call' ? 'C' : 'P'}${String(thousandths).padStart(8, '0')}`;
}

export function smileVol(spec: SyntheticChainSpec, strike: number, spot: number): number {
  const x = Math.log(strike / spot);
  return spec.atmVol + spec.skew * x + spec.curvature * x * x;
}

/** Tick in cents: 0.05 for a price of 3.00 or more, 0.01 below. */
function tickCents(price: number): number {
  return price >= 3 ? 5 : 1;
}

/**
 * A chain reader solves implied vols at its own risk-free rate, not at
 * SYNTHETIC_OPTIONS_RISK_FREE_RATE. Every quote but the stale ones keeps its
 * mid at least a cent above the no-arbitrage lower bound at any rate in this
 * range, so each of them solves at any such rate.
 */
export const READER_RATE_RANGE = { low: 0, high: 0.06 } as const;

/** The European no-arbitrage lower bound on a call or put with q = 0: max(0, S − K·e^{−rT}) or max(0, K·e^{−rT} − S). */
export function europeanLowerBound(right: OptionRight, spot: number, strike: number, timeYears: number, rate: number): number {
  const discounted = strike * Math.exp(-rate * timeYears);
  return Math.max(0, right === 'call' ? spot - discounted : discounted - spot);
}

/** The highest lower bound over READER_RATE_RANGE: a call's at the high rate, a put's at the low one. */
export function quoteFloor(right: OptionRight, spot: number, strike: number, timeYears: number): number {
  return europeanLowerBound(right, spot, strike, timeYears, right === 'call' ? READER_RATE_RANGE.high : READER_RATE_RANGE.low);
}

/**
 * The quoted market around a model price: half-width h = 0.01 + 2 % of the
 * model; the bid is model − h rounded down to the tick of its own price (0
 * when that is not above 0); the ask is the larger of model + h and
 * 2·(floor + 0.01) − bid, rounded up to the tick of its own price, so the mid
 * is at least a cent above `floor`. (The 1e-9 keeps a product such as
 * 2.3 × 100 = 229.99999999999997 on its whole cent.)
 */
export function quotedMarket(model: number, floor: number): { bid: number; ask: number } {
  const half = 0.01 + 0.02 * model;
  const bidRaw = model - half;
  const bidTick = tickCents(bidRaw);
  const bid = bidRaw <= 0 ? 0 : (Math.floor((bidRaw * 100) / bidTick + 1e-9) * bidTick) / 100;
  const askRaw = Math.max(model + half, 2 * (floor + 0.01) - bid);
  const askTick = tickCents(askRaw);
  const ask = (Math.ceil((askRaw * 100) / askTick - 1e-9) * askTick) / 100;
  return { bid, ask };
}

/** Whole calendar days from one date to a later one. */
function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000);
}

let closes: Map<string, number> | null = null;

/** The real raw close of each chain's observation days, read once from the demo catalog, by `instrumentId|date`. */
function observationCloses(): Map<string, number> {
  if (closes) return closes;
  const wanted = new Set(SYNTHETIC_CHAINS.flatMap((c) => c.observationDays.map((d) => `${demoInstrumentId(c.instrumentKey)}|${d}`)));
  const basis = new Map(demoDailySources().map((s) => [s.source, s.priceBasis]));
  const found = new Map<string, number>();
  for (const bar of demoDailyBars()) {
    const key = `${bar.instrumentId}|${bar.barDate}`;
    if (!wanted.has(key)) continue;
    if (basis.get(bar.source) !== 'raw') throw new Error(`demo close ${key} comes from ${bar.source}, which is not raw`);
    found.set(key, bar.closePrice);
  }
  for (const key of wanted) if (!found.has(key)) throw new Error(`no demo close for ${key}`);
  closes = found;
  return closes;
}

interface ChainContract extends SyntheticOptionContract {
  spec: SyntheticChainSpec;
}

function chainContracts(spec: SyntheticChainSpec): ChainContract[] {
  const instrumentId = demoInstrumentId(spec.instrumentKey);
  const firstClose = entryOf(observationCloses(), `${instrumentId}|${spec.observationDays[0]}`);
  const centre = Math.round(firstClose / spec.strikeStep) * spec.strikeStep;
  const lateExpiry = spec.expiries[spec.expiries.length - 1];
  const contracts: ChainContract[] = [];
  for (const expiry of spec.expiries) {
    const listedOn = expiry === lateExpiry ? spec.observationDays[1] : spec.observationDays[0];
    for (let k = -STRIKE_STEPS_EACH_SIDE; k <= STRIKE_STEPS_EACH_SIDE; k++) {
      const strike = centre + k * spec.strikeStep;
      for (const right of RIGHTS) {
        const contractSymbol = occSymbol(spec.root, expiry, right, strike);
        contracts.push({
          spec,
          id: derivedContractId(instrumentId, contractSymbol),
          instrumentId,
          contractSymbol,
          expiry,
          strike,
          right,
          multiplier: SYNTHETIC_OPTIONS_MULTIPLIER,
          isActive: true,
          listedAt: `${listedOn}${LISTING_TIME}`,
          source: SYNTHETIC_SOURCE,
        });
      }
    }
  }
  return contracts;
}

/** 216 contracts: per underlying 4 expiries × 9 strikes × call and put. */
export function syntheticOptionContracts(): SyntheticOptionContract[] {
  return SYNTHETIC_CHAINS.flatMap(chainContracts).map(({ spec: _spec, ...contract }) => contract);
}

/** The model price and Greeks of a contract at its smile vol on one day's close. */
export function modelQuote(spec: SyntheticChainSpec, c: { expiry: string; strike: number; right: OptionRight }, day: string, spot: number) {
  const vol = smileVol(spec, c.strike, spot);
  const timeYears = daysBetween(day, c.expiry) / DAYS_PER_YEAR;
  const { price, greeks } = closedForm('optionPrice', {
    spot,
    strike: c.strike,
    timeYears,
    rate: SYNTHETIC_OPTIONS_RISK_FREE_RATE,
    vol,
    dividendYield: SYNTHETIC_OPTIONS_DIVIDEND_YIELD,
    type: c.right,
  });
  return { price, greeks, vol, timeYears };
}

function isStale(c: ChainContract): boolean {
  const s = c.spec.stale;
  return c.expiry === s.expiry && c.strike === s.strike && c.right === s.right;
}

/**
 * 594 quotes: per underlying, the 54 contracts of the first three expiries on
 * the first day and all 72 on the second and third. In that order (day,
 * expiry, strike, call before put) each quote draws two numbers u1, u2 from
 * the underlying's own mulberry32 stream: openInterest = floor(base ·
 * (0.2 + exp(−½(x/0.1)²)) · (0.5 + u1)) and volume = floor(openInterest ·
 * 0.3 · u2), x = ln(K/S). The nearest expiry on the last day carries the
 * generator's Greeks; the stale contract's last-day quote repeats its first
 * day's bid and ask with volume 0.
 */
export function syntheticOptionQuotes(): SyntheticOptionQuote[] {
  const quotes: SyntheticOptionQuote[] = [];
  SYNTHETIC_CHAINS.forEach((spec, chainIndex) => {
    const rand = mulberry32((SYNTHETIC_OPTIONS_SEED ^ Math.imul(chainIndex + 1, 0x9e3779b1)) >>> 0);
    const contracts = chainContracts(spec);
    const [firstDay, , lastDay] = spec.observationDays;
    const firstDayMarket = new Map<string, { bid: number; ask: number }>();
    for (const day of spec.observationDays) {
      const observedAt = `${day}${OBSERVATION_TIME}`;
      const spot = entryOf(observationCloses(), `${demoInstrumentId(spec.instrumentKey)}|${day}`);
      for (const c of contracts) {
        if (c.listedAt > observedAt) continue;
        const { price, greeks, vol, timeYears } = modelQuote(spec, c, day, spot);
        const x = Math.log(c.strike / spot);
        const openInterest = Math.floor(spec.openInterestBase * (0.2 + Math.exp(-0.5 * (x / 0.1) ** 2)) * (0.5 + rand()));
        const volume = Math.floor(openInterest * 0.3 * rand());
        let market = quotedMarket(price, quoteFloor(c.right, spot, c.strike, timeYears));
        if (day === firstDay) firstDayMarket.set(c.id, market);
        const stale = day === lastDay && isStale(c);
        if (stale) {
          market = entryOf(firstDayMarket, c.id);
          // Below the lowest lower bound over READER_RATE_RANGE (a call's at the low rate, which is its intrinsic value; a put's at the high one, below its intrinsic value).
          const lowest = europeanLowerBound(c.right, spot, c.strike, timeYears, c.right === 'call' ? READER_RATE_RANGE.low : READER_RATE_RANGE.high);
          if (!((market.bid + market.ask) / 2 < lowest)) throw new Error(`the stale quote of ${c.contractSymbol} is not below its lower bound`);
        }
        const withGreeks = day === lastDay && c.expiry === spec.expiries[0];
        quotes.push({
          contractId: c.id,
          observedAt,
          bid: market.bid,
          ask: market.ask,
          lastPrice: null,
          volume: stale ? 0 : volume,
          openInterest,
          source: SYNTHETIC_SOURCE,
          greeks: withGreeks ? { ...greeks, impliedVolatility: vol } : null,
        });
      }
    }
  });
  return quotes;
}
