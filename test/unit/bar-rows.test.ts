import { describe, expect, it } from 'vitest';
import { dailyBarIngest, intradayBarIngest } from '../../server/prices/ingest.ts';
import type { IngestKind } from '../../server/ingest/kind.ts';
import { copyLine } from '../../server/ingest/copy-text.ts';

// The bar kinds' hand-written hot path (fastRow) must never accept a row the
// zod schema refuses, and must return exactly what the schema returns. These
// tests hold it to that over well-formed rows in both wire forms (JSON
// numbers, CSV text) and over every single-field corruption of them.

const ID = '5f0c2b9e-8a1d-4c3e-9b7a-1e2d3c4b5a69';

const dailyJson = {
  instrumentId: ID,
  barDate: '2024-02-29',
  openPrice: 101.25,
  highPrice: 103.5,
  lowPrice: 100.75,
  closePrice: 102,
  volume: 1_234_567,
  quoteCurrency: 'USD',
  quoteUnit: 'USD per share',
  source: 'vendor-x',
  asOf: '2024-03-01T00:00:00Z',
};
const dailyCsv = {
  instrumentId: ID,
  barDate: '2024-02-29',
  openPrice: '101.25',
  highPrice: '103.5',
  lowPrice: '100.75',
  closePrice: '102',
  volume: '1234567',
  quoteCurrency: 'USD',
  quoteUnit: 'USD per share',
  source: 'vendor-x',
  asOf: '2024-03-01T00:00:00.000Z',
};
const dailyVariants: Record<string, unknown>[] = [
  dailyJson,
  dailyCsv,
  { ...dailyCsv, openPrice: null, highPrice: null, lowPrice: null, volume: null },
  { ...dailyJson, openPrice: undefined, volume: undefined },
  { ...dailyCsv, stale: 'true' },
  { ...dailyJson, stale: true, priceBasis: 'raw', reflectsActionsThrough: null },
  { ...dailyCsv, priceBasis: 'vendor_adjusted', reflectsActionsThrough: '2023-12-31' },
  { ...dailyJson, closePrice: 1e-7, openPrice: 1e-7, highPrice: 1e-7, lowPrice: 1e-7, volume: 0 },
  { ...dailyCsv, closePrice: '1.5e2', openPrice: '+150', highPrice: '151.', lowPrice: '.5e2', volume: '-0' },
  { ...dailyJson, instrumentId: ID.toUpperCase(), barDate: '1900-03-01' },
];

const intradayJson = {
  instrumentId: ID,
  barTimestamp: '2024-03-01T14:31:00Z',
  openPrice: 10,
  highPrice: 10.5,
  lowPrice: 9.75,
  closePrice: 10.25,
  volume: 300,
  quoteCurrency: 'USD',
  quoteUnit: 'USD per share',
  source: 'synthetic-demo',
  asOf: '2024-03-01T14:32:00.000Z',
};
const intradayVariants: Record<string, unknown>[] = [
  intradayJson,
  { ...intradayJson, openPrice: '10', highPrice: '10.5', lowPrice: '9.75', closePrice: '10.25', volume: null },
  { ...intradayJson, barTimestamp: '1969-12-31T23:59:00.000Z' },
];

// Replacement values that a field might plausibly carry, good and bad.
const CORRUPTIONS: unknown[] = [
  // The base rows' asOf, spelled another way (a knownAt naming the same instant is accepted), and a minute later.
  '2024-03-01T00:00:00.000Z',
  '2024-03-01T14:32:00Z',
  '2024-03-01T00:01:00Z',
  undefined,
  null,
  '',
  ' ',
  'abc',
  '1e999',
  '-1e999',
  'NaN',
  'Infinity',
  Number.NaN,
  Number.POSITIVE_INFINITY,
  -1,
  0,
  -0,
  '0',
  '-1',
  1e308,
  true,
  'true',
  'false',
  'TRUE',
  '12,5',
  ' 12',
  '0x10',
  'usd',
  'US',
  'USDX',
  ' USD',
  'USD per share ',
  'x'.repeat(51),
  'x'.repeat(201),
  '2024-02-30',
  '2023-02-29',
  '0000-01-01',
  '2024-2-1',
  '2024-03-01T00:00:00',
  '2024-03-01T14:31:30Z',
  '2024-13-01T00:00:00Z',
  'raw',
  'vendor_adjusted',
  'adjusted',
  '2023-12-31',
  ID,
  '00000000-0000-0000-0000-000000000000',
  `${ID}x`,
  {},
  [],
  5e9,
  1e-320,
];

function corruptions(variants: Record<string, unknown>[], extraKeys: string[]) {
  const rows: unknown[] = [];
  for (const base of variants) {
    for (const key of [...Object.keys(base), ...extraKeys]) {
      for (const value of CORRUPTIONS) rows.push({ ...base, [key]: value });
      const { [key]: _dropped, ...without } = base;
      rows.push(without);
    }
    rows.push({ ...base, unexpected: 1 });
  }
  rows.push(null, 'row', 42, [], [dailyJson]);
  return rows;
}

function agreement<Row>(kind: IngestKind<Row>, rows: unknown[]) {
  let fastAccepted = 0;
  let schemaAccepted = 0;
  for (const raw of rows) {
    const fast = kind.fastRow!(raw);
    const parsed = kind.rowSchema.safeParse(raw);
    if (parsed.success) schemaAccepted++;
    if (fast === undefined) continue;
    fastAccepted++;
    expect(parsed.success, `fastRow accepted what the schema refuses: ${JSON.stringify(raw)}`).toBe(true);
    expect(fast).toStrictEqual(parsed.data);
  }
  return { fastAccepted, schemaAccepted };
}

describe('bar rows: the hand-written hot path agrees with the zod schema', () => {
  it('when daily rows are well formed, in JSON or CSV form, then the hot path accepts every one and returns the schema output', () => {
    for (const raw of dailyVariants) {
      const parsed = dailyBarIngest.rowSchema.safeParse(raw);
      expect(parsed.success, JSON.stringify(raw)).toBe(true);
      expect(dailyBarIngest.fastRow!(raw), JSON.stringify(raw)).toStrictEqual(parsed.data);
    }
  });

  it('when any single field of a daily row is corrupted, dropped or added, then the hot path never accepts a row the schema refuses', () => {
    const rows = corruptions(dailyVariants, ['stale', 'priceBasis', 'reflectsActionsThrough', 'knownAt']);
    const { fastAccepted, schemaAccepted } = agreement(dailyBarIngest, rows);
    expect(rows.length).toBeGreaterThan(5_000);
    // Both sides accept a real share of the corrupted rows (e.g. a null volume), so the comparison is not vacuous.
    expect(fastAccepted).toBeGreaterThan(100);
    expect(schemaAccepted).toBeGreaterThanOrEqual(fastAccepted);
  });

  it('when intraday rows are well formed or corrupted, then the hot path agrees with the schema the same way', () => {
    for (const raw of intradayVariants) expect(intradayBarIngest.fastRow!(raw), JSON.stringify(raw)).toStrictEqual(intradayBarIngest.rowSchema.parse(raw));
    const { fastAccepted } = agreement(intradayBarIngest, corruptions(intradayVariants, ['knownAt']));
    expect(fastAccepted).toBeGreaterThan(50);
  });

  it('when numeric text overflows to Infinity, then the schema refuses it (it would otherwise be stored as Infinity)', () => {
    const parsed = dailyBarIngest.rowSchema.safeParse({ ...dailyCsv, highPrice: '1e999' });
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues.map((i) => [i.path.join('.'), i.message])).toContainEqual(['highPrice', 'must be a finite number greater than 0']);
  });
});

describe("bar rows: the hand-written COPY line carries the generic encoder's values", () => {
  const upload = { startedAt: '2024-03-02T00:00:00.000Z' };
  // A number may go out as the upload spelled it ('1.5e2' for 150); PostgreSQL reads either spelling as the same double.
  const sameValues = (line: string, generic: string, numberColumns: number[]) => {
    const [a, b] = [line.split('\t'), generic.split('\t')];
    expect(a.length).toBe(b.length);
    a.forEach((field, i) => {
      if (numberColumns.includes(i) && field !== '\\N' && b[i] !== '\\N') expect(Number(field), `column ${i}: ${field} vs ${b[i]}`).toBe(Number(b[i]));
      else expect(field, `column ${i}`).toBe(b[i]);
    });
  };
  const cases = <Row>(kind: IngestKind<Row>, variants: Record<string, unknown>[], extra: Record<string, unknown>[]) => {
    for (const raw of [...variants, ...extra]) {
      const row = kind.fastRow!(raw) ?? kind.rowSchema.parse(raw);
      sameValues(kind.copyLine!(row, raw, upload), copyLine(kind.toStagingValues(row, upload)), [2, 3, 4, 5, 6]);
    }
  };

  it('when daily rows come as JSON numbers or CSV text, by the hot path or the schema, then each field holds the same value', () => {
    cases(dailyBarIngest, dailyVariants, [
      { ...dailyCsv, quoteUnit: 'USD\tper\\share', source: 'a\nb', asOf: undefined, knownAt: '2024-03-01T12:00:00Z' },
      // The same instant under both names; and neither, known from the upload's start.
      { ...dailyCsv, knownAt: '2024-03-01T00:00:00Z' },
      { ...dailyCsv, asOf: undefined },
      { ...dailyCsv, openPrice: null, lowPrice: null, closePrice: '100.1000000000000000055511151231257827021181583404541015625', volume: '1e-400' },
    ]);
  });

  it('when intraday rows come as JSON numbers or CSV text, then each field holds the same value', () => {
    cases(intradayBarIngest, intradayVariants, [
      { ...intradayJson, source: 'tab\there', asOf: undefined, knownAt: '2024-03-01T14:35:00Z' },
      { ...intradayJson, asOf: undefined },
    ]);
  });
});
