// A daily series packed as PostgreSQL packs it (server/prices/daily-text-repository.ts,
// packedBars), written here from its description, for the tests of what reads it.

const DAY_MS = 86_400_000;

export interface PackedBar {
  date: string;
  open: number | null;
  high: number | null;
  low: number | null;
  close: number;
  volume: number | null;
  currency: string;
  unit: string;
  stale: boolean;
  source: string;
  /** The millisecond the bar became known; packed 456 µs past it, which a reader cuts off. */
  asOfMs: number;
}

/**
 * The count, one big-endian record per bar in `order` (its day since
 * 1970-01-01 as int4; open, high, low, close and volume as float8, NaN for
 * none; asOf as timestamptz_send writes it, microseconds since 2000-01-01;
 * stale as one byte), then the text columns as JSON: one value when every bar
 * has it, else [day, value] pairs.
 */
export function packDaily(bars: PackedBar[], order: number[] = bars.map((_, i) => i)): Buffer {
  const out = Buffer.alloc(4 + bars.length * 53);
  let at = out.writeInt32BE(bars.length, 0);
  for (const bar of order.map((i) => bars[i])) {
    at = out.writeInt32BE(Date.parse(bar.date) / DAY_MS, at);
    for (const key of ['open', 'high', 'low', 'close', 'volume'] as const) at = out.writeDoubleBE(bar[key] ?? NaN, at);
    at = out.writeBigInt64BE(BigInt(bar.asOfMs - Date.UTC(2000, 0, 1)) * 1000n + 456n, at);
    at = out.writeUInt8(bar.stale ? 1 : 0, at);
  }
  const column = (value: (bar: PackedBar) => string) =>
    new Set(bars.map(value)).size === 1 ? [value(bars[0])] : order.map((i) => [Date.parse(bars[i].date) / DAY_MS, value(bars[i])]);
  return Buffer.concat([out, Buffer.from(JSON.stringify([column((b) => b.currency), column((b) => b.unit), column((b) => b.source)]))]);
}
