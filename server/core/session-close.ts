import { dayNumber } from './day-numbers.ts';
import { newYorkTime } from './new-york-time.ts';

/** What the service knows of an instrument's market, enough to say when its daily session closes. */
export interface InstrumentMarket {
  assetClass: string;
  exchange: string | null;
  region: string | null;
}

/**
 * The US exchanges by MIC: NYSE, Nasdaq, NYSE American, NYSE Arca, the Cboe
 * equity exchanges, IEX, MEMX, NYSE Chicago and Nasdaq's two regional
 * markets. Their regular session closes at 16:00 New York time.
 */
const US_EXCHANGES: ReadonlySet<string> = new Set([
  'XNYS',
  'XNAS',
  'XNGS',
  'XNMS',
  'XNCM',
  'XASE',
  'ARCX',
  'BATS',
  'BATY',
  'EDGA',
  'EDGX',
  'IEXG',
  'MEMX',
  'XCHI',
  'XBOS',
  'XPHL',
  'XCBO',
]);

const DAY_MS = 86_400_000;

/** The earliest instant a daily bar can be known at, the rule that sets it, and that rule in words. */
export interface SessionClose {
  at: number;
  kind: 'new_york_close' | 'utc_day_end' | 'utc_day_start';
  rule: string;
}

/**
 * When the session of `barDate` closes for an instrument, as far as the
 * service knows it: 16:00 America/New_York on a US exchange (at UTC−5 before
 * New York kept standard time, as newYorkTime reads it) (an instrument
 * with region US or a US exchange's MIC); the end of the UTC day (23:59:59.999,
 * the instant a date asOf names) for crypto, which trades around the clock;
 * elsewhere nothing narrower than the start of the bar's UTC day is known.
 * No daily bar can be known before its session closes.
 */
export function sessionClose(barDate: string, market: InstrumentMarket): SessionClose {
  const dayStart = Date.parse(`${barDate}T00:00:00.000Z`);
  if (market.assetClass === 'crypto')
    return { at: dayStart + DAY_MS - 1, kind: 'utc_day_end', rule: 'the end of its UTC day, the close of a market that trades around the clock (crypto)' };
  if (market.region === 'US' || (market.exchange !== null && US_EXCHANGES.has(market.exchange))) {
    return { at: newYorkClose(barDate), kind: 'new_york_close', rule: 'the 16:00 America/New_York close of its session on a US exchange' };
  }
  return { at: dayStart, kind: 'utc_day_start', rule: "the start of its UTC day (the service knows no later close on this instrument's market)" };
}

/**
 * 16:00 in New York on a day, remembered: an upload's rows known within
 * their bar's UTC day (the demo's, known at its end) ask for the same days
 * again and again, and each answer takes the time-zone database (Intl).
 */
const newYorkCloses = new Map<string, number>();
function newYorkClose(day: string): number {
  let close = newYorkCloses.get(day);
  if (close === undefined) {
    if (newYorkCloses.size >= 100_000) newYorkCloses.clear();
    close = newYorkTime(day, '16:00');
    newYorkCloses.set(day, close);
  }
  return close;
}

/**
 * The latest instant any market's session of `barDate` closes at: a bar
 * known from then needs no instrument to be judged. By arithmetic on the
 * date, since an upload asks it for every row.
 */
export function latestSessionClose(barDate: string): number {
  return (dayNumber(barDate) + 1) * DAY_MS - 1;
}
