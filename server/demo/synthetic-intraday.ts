import { demoInstrumentId } from './catalog.ts';
import type { InstrumentId } from '../core/ids.ts';

/**
 * Synthetic 1-minute bars for the demo. No real intraday equity data exists in
 * the registries the project can use, so the intraday endpoints and their
 * 5min..1hour rollups are exercised on a small, clearly labelled generated
 * set: every row has `source: 'synthetic-demo'` and none of it is an
 * observation. The same options always give the same rows.
 */

export interface SyntheticMinuteBar {
  instrumentId: InstrumentId;
  /** Start of the minute, ISO instant in UTC. */
  barTimestamp: string;
  openPrice: number;
  highPrice: number;
  lowPrice: number;
  closePrice: number;
  volume: number;
  quoteCurrency: string;
  quoteUnit: string;
  source: 'synthetic-demo';
  asOf: string;
}

export interface SyntheticMinuteBarOptions {
  /** PRNG seed; defaults to the fixed demo seed. */
  seed?: number;
}

export const SYNTHETIC_SOURCE = 'synthetic-demo';
export const SYNTHETIC_DEFAULT_SEED = 20240304;
/** Fixed "capture" instant: the first instant after the last generated minute. */
export const SYNTHETIC_AS_OF = '2024-03-09T00:00:00.000Z';

// Mon 2024-03-04 .. Fri 2024-03-08. US daylight saving time began on
// 2024-03-10, so the 09:30-16:00 New York session is 14:30-21:00 UTC all week.
const EQUITY_SESSIONS = ['2024-03-04', '2024-03-05', '2024-03-06', '2024-03-07', '2024-03-08'];
const EQUITY_OPEN_MINUTE = 14 * 60 + 30;
const EQUITY_SESSION_MINUTES = 390;
// Crypto trades around the clock: two full UTC days inside the same week.
const CRYPTO_DAYS = ['2024-03-07', '2024-03-08'];

interface SeriesSpec {
  instrumentKey: string;
  quoteUnit: string;
  /** Arbitrary round starting level, not an observation. */
  startPrice: number;
  /** Annualised volatility of the walk. */
  annualVol: number;
  /** Minutes per year the market is open, to scale the volatility. */
  minutesPerYear: number;
  /** Typical volume of one minute. */
  baseVolume: number;
  kind: 'equity' | 'crypto';
}

const SERIES: SeriesSpec[] = [
  { instrumentKey: 'MSFT', quoteUnit: 'USD per share', startPrice: 400, annualVol: 0.25, minutesPerYear: 252 * 390, baseVolume: 50_000, kind: 'equity' },
  { instrumentKey: 'SPY', quoteUnit: 'USD per share', startPrice: 500, annualVol: 0.15, minutesPerYear: 252 * 390, baseVolume: 150_000, kind: 'equity' },
  { instrumentKey: 'crypto:BTC-USD', quoteUnit: 'USD per BTC', startPrice: 60_000, annualVol: 0.6, minutesPerYear: 365 * 1440, baseVolume: 40, kind: 'crypto' },
];

/** mulberry32: a tiny, well-known 32-bit PRNG; deterministic for a given seed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal draw (Box-Muller), using only the given PRNG. */
export function normal(rand: () => number): number {
  const u = 1 - rand(); // in (0, 1], so the log is finite
  const v = rand();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

const cents = (x: number) => Math.round(x * 100) / 100;

// Four price ticks per minute give the bar a range beyond its open and close.
const TICKS_PER_MINUTE = 4;

function minuteStarts(spec: SeriesSpec): string[][] {
  if (spec.kind === 'crypto') {
    return CRYPTO_DAYS.map((day) => {
      const start = Date.parse(`${day}T00:00:00.000Z`);
      return Array.from({ length: 1440 }, (_, m) => new Date(start + m * 60_000).toISOString());
    });
  }
  return EQUITY_SESSIONS.map((day) => {
    const start = Date.parse(`${day}T00:00:00.000Z`) + EQUITY_OPEN_MINUTE * 60_000;
    return Array.from({ length: EQUITY_SESSION_MINUTES }, (_, m) => new Date(start + m * 60_000).toISOString());
  });
}

/**
 * 6,780 bars: MSFT (equity) and SPY (etf) over five US sessions, BTC-USD
 * (crypto) over two full days. Geometric random walk; prices in cents; every
 * bar has low <= open, close <= high and an integer volume.
 */
export function syntheticMinuteBars(opts: SyntheticMinuteBarOptions = {}): SyntheticMinuteBar[] {
  const seed = opts.seed ?? SYNTHETIC_DEFAULT_SEED;
  const bars: SyntheticMinuteBar[] = [];
  SERIES.forEach((spec, seriesIndex) => {
    // One stream per series, so adding a series never changes the others.
    const rand = mulberry32((seed ^ Math.imul(seriesIndex + 1, 0x9e3779b1)) >>> 0);
    const instrumentId = demoInstrumentId(spec.instrumentKey);
    const tickSigma = spec.annualVol / Math.sqrt(spec.minutesPerYear * TICKS_PER_MINUTE);
    let last = spec.startPrice;
    minuteStarts(spec).forEach((session, sessionIndex) => {
      if (spec.kind === 'equity' && sessionIndex > 0) {
        // Overnight gap: about one session's worth of moves.
        last *= Math.exp(normal(rand) * tickSigma * Math.sqrt(TICKS_PER_MINUTE * 60));
      }
      session.forEach((barTimestamp, m) => {
        const ticks = [cents(last)];
        for (let t = 0; t < TICKS_PER_MINUTE; t++) {
          last *= Math.exp(normal(rand) * tickSigma);
          ticks.push(cents(last));
        }
        const open = ticks[0];
        const close = ticks[ticks.length - 1];
        // Equity volume is U-shaped over the session (heavier at the open
        // and close); crypto volume is flat.
        const x = m / (session.length - 1);
        const shape = spec.kind === 'equity' ? 0.6 + 1.6 * (2 * x - 1) ** 2 : 1;
        const volume = Math.max(1, Math.round(spec.baseVolume * shape * Math.exp(0.5 * normal(rand))));
        bars.push({
          instrumentId,
          barTimestamp,
          openPrice: open,
          highPrice: Math.max(...ticks),
          lowPrice: Math.min(...ticks),
          closePrice: close,
          volume,
          quoteCurrency: 'USD',
          quoteUnit: spec.quoteUnit,
          source: SYNTHETIC_SOURCE,
          asOf: SYNTHETIC_AS_OF,
        });
      });
    });
  });
  return bars;
}
