// Deterministic bench data: ids, calendars and synthetic bars, identical on every run.
import { createHash } from 'node:crypto';
import { mulberry32 } from '../../server/demo/synthetic-intraday.ts';

/** mulberry32 (the demo data's): a small, fast, seedable PRNG so every run generates identical data. */
export { mulberry32 as prng };

/** A deterministic RFC 9562-shaped (version 4, variant 10) UUID from a name. */
export function benchUuid(name: string): string {
  const h = createHash('sha256').update(`mds-bench/${name}`).digest('hex');
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Weekdays (UTC) from `from` to `to` inclusive, as yyyy-mm-dd. */
export function weekdays(from: string, to: string, limit = Infinity): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`), end = Date.parse(`${to}T00:00:00Z`); t <= end && out.length < limit; t += 86_400_000) {
    const dow = new Date(t).getUTCDay();
    if (dow !== 0 && dow !== 6) out.push(new Date(t).toISOString().slice(0, 10));
  }
  return out;
}

const DAILY_CSV_HEADER = 'instrumentId,barDate,openPrice,highPrice,lowPrice,closePrice,volume,quoteCurrency,quoteUnit,source,asOf\n';

/** daily_bars' columns in the order of the daily-bar CSV's fields. */
export const DAILY_BARS_COLUMNS = [
  'instrument_id',
  'bar_date',
  'open_price',
  'high_price',
  'low_price',
  'close_price',
  'volume',
  'quote_currency',
  'quote_unit',
  'source',
  'as_of',
];

const r4 = (x: number) => Math.round(x * 10_000) / 10_000;

/**
 * One synthetic OHLCV bar from a geometric random walk; high ≥ open, close ≥
 * low always hold. Prices have at most 4 decimals, volumes are integers.
 */
export function nextBar(rand: () => number, prevClose: number) {
  const open = r4(prevClose * (1 + (rand() - 0.5) * 0.01));
  const close = r4(open * (1 + (rand() - 0.5) * 0.04));
  const high = r4(Math.max(open, close) * (1 + rand() * 0.01));
  const low = r4(Math.min(open, close) * (1 - rand() * 0.01));
  const volume = 1_000 + Math.floor(rand() * 1_000_000);
  return { open, high, low, close, volume };
}

/** Joins `lines` into ~256 KiB pieces, the way an upload body is sent. */
export async function* inPieces(lines: Iterable<string>): AsyncGenerator<string> {
  let buffer = '';
  for (const line of lines) {
    buffer += line;
    if (buffer.length >= 256 * 1024) {
      yield buffer;
      buffer = '';
    }
  }
  if (buffer) yield buffer;
}

/**
 * Daily-bar CSV for `ids` over `dates`, instrument by instrument, yielded in
 * ~256 KiB pieces (with the header first). Each instrument's series depends
 * only on its id and the dates, so any subset gives the same rows.
 */
export function dailyBarsCsv(ids: string[], dates: string[], asOf: string): AsyncGenerator<string> {
  return inPieces(
    (function* () {
      yield DAILY_CSV_HEADER;
      for (const id of ids) {
        const rand = mulberry32(parseInt(id.slice(0, 8), 16));
        let close = 20 + rand() * 200;
        for (const date of dates) {
          const b = nextBar(rand, close);
          close = b.close;
          yield `${id},${date},${b.open},${b.high},${b.low},${b.close},${b.volume},USD,USD per share,bench,${asOf}\n`;
        }
      }
    })(),
  );
}

/** An equity instrument for POST /admin/v1/instruments, quoted in USD per share. */
export function equity(displayName: string, symbol: string, id?: string) {
  return {
    ...(id === undefined ? {} : { id }),
    assetClass: 'equity',
    displayName,
    quoteCurrency: 'USD',
    quoteUnit: 'USD per share',
    symbols: [{ symbol, validFrom: '2000-01-01', validTo: null }],
  };
}
