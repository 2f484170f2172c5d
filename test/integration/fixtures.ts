import { randomUUID } from 'node:crypto';
import type { Service } from './harness.ts';
import { until } from '../support/until.ts';
import { type InstrumentId, InstrumentIdSchema } from '../../server/core/ids.ts';

export const uniqueSymbol = (stem = 'T') => `${stem}${randomUUID().replace(/-/g, '').slice(0, 8).toUpperCase()}`;

export async function createInstrument(
  svc: Service,
  fields: Partial<{
    /** A fixed id, for a test whose expected values are derived from it (else a random one). */
    id: string;
    assetClass: string;
    displayName: string;
    symbols: { symbol: string; validFrom: string | null; validTo?: string | null }[];
    brokerCodes: Record<string, string>;
    isActive: boolean;
    quoteCurrency: string;
    exchange: string;
    region: string;
  }> = {},
): Promise<{ id: InstrumentId; symbol: string }> {
  const id = InstrumentIdSchema.parse(fields.id ?? randomUUID());
  const symbol = fields.symbols?.at(-1)?.symbol ?? uniqueSymbol();
  const res = await svc.admin('POST', '/instruments', [
    {
      id,
      assetClass: fields.assetClass ?? 'equity',
      displayName: fields.displayName ?? `Test Company ${symbol}`,
      quoteCurrency: fields.quoteCurrency ?? 'USD',
      ...(fields.exchange ? { exchange: fields.exchange } : {}),
      ...(fields.region ? { region: fields.region } : {}),
      quoteUnit: 'USD per share',
      isActive: fields.isActive ?? true,
      brokerCodes: fields.brokerCodes ?? {},
      symbols: fields.symbols ?? [{ symbol, validFrom: '1990-01-01', validTo: null }],
    },
  ]);
  if (res.status !== 200) throw new Error(`instrument ingest failed: ${JSON.stringify(res.body)}`);
  return { id, symbol };
}

export interface BarInput {
  barDate: string;
  close: number;
  open?: number;
  high?: number;
  low?: number;
  volume?: number | null;
}

export function dailyBar(instrumentId: string, b: BarInput, extra: Record<string, unknown> = {}) {
  return {
    instrumentId,
    barDate: b.barDate,
    openPrice: b.open ?? b.close,
    highPrice: b.high ?? Math.max(b.open ?? b.close, b.close) + 1,
    lowPrice: b.low ?? Math.min(b.open ?? b.close, b.close) - 1,
    closePrice: b.close,
    volume: b.volume === undefined ? 1000 : b.volume,
    quoteCurrency: 'USD',
    quoteUnit: 'USD per share',
    source: 'test-fixture',
    // Known at the end of its day, as the demo load states its history, so an asOf read sees the bars dated up to
    // it; a bar whose day has not ended states nothing and is known from its upload.
    ...statedUnlessGiven(`${b.barDate}T23:59:59.999Z`, extra),
    ...extra,
  };
}

/** `{ asOf: knownAt }` when that instant has passed and `extra` states no knowledge time (asOf or its synonym knownAt) of its own. */
function statedUnlessGiven(knownAt: string, extra: Record<string, unknown>) {
  return extra.asOf === undefined && extra.knownAt === undefined && Date.parse(knownAt) <= Date.now() ? { asOf: knownAt } : {};
}

/** A 1-minute bar of `close` (open the same, high and low half a unit away), known when its minute ends. */
export const minuteBar = (instrumentId: string, barTimestamp: string, close: number, extra: Record<string, unknown> = {}) => ({
  instrumentId,
  barTimestamp,
  openPrice: close,
  highPrice: close + 0.5,
  lowPrice: close - 0.5,
  closePrice: close,
  volume: 10,
  quoteCurrency: 'USD',
  quoteUnit: 'USD per share',
  source: 'test-fixture',
  // Known when its minute ends, as the demo load states its minutes.
  ...statedUnlessGiven(new Date(Date.parse(barTimestamp) + 60_000).toISOString(), extra),
  ...extra,
});

export async function ingest(svc: Service, route: string, rows: unknown[]) {
  const res = await svc.admin('POST', route, rows);
  if (res.status !== 200) throw new Error(`${route} ingest failed: ${JSON.stringify(res.body)}`);
  return res.body.data;
}

/** Weekdays from `from` to `to` inclusive. */
export function weekdays(from: string, to: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000) {
    const d = new Date(t);
    if (d.getUTCDay() !== 0 && d.getUTCDay() !== 6) out.push(d.toISOString().slice(0, 10));
  }
  return out;
}

/**
 * Resolves once `count` statements (1 by default) of other sessions on this
 * database wait for a lock while naming `table` (a row or table the test
 * holds); fails after 10 s.
 */
export async function untilAStatementWaitsFor(svc: Service, table: string, count = 1): Promise<void> {
  await until(
    async () => {
      const [w] = await svc.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where wait_event_type = 'Lock' and query like ${`%${table}%`} and pid <> pg_backend_pid() and datname = current_database()
      `;
      return w.n >= count;
    },
    { timeoutMs: 10_000, what: `${count} statement(s) waiting for ${table}`, intervalMs: 10 },
  );
}
