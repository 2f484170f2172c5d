import { readFileSync } from 'node:fs';
import {
  DEMO_DATA_DIR,
  readCatalogFiles,
  type ActionEntry,
  type CatalogFiles,
  type CloseOnlySource,
  type DailySourceEntry,
  type InstrumentEntry,
  type OhlcvSource,
  type SymbolPeriod,
} from './catalog-files.ts';
import { type InstrumentId, InstrumentIdSchema, nameBasedUuid } from '../core/ids.ts';
import { latestSessionClose, sessionClose } from '../core/session-close.ts';
import { entryOf } from '../core/map-entry.ts';

/**
 * The bundled demo data set, as ingest-ready rows in the admin API's field
 * names. No database, no HTTP: the loader posts these rows through the same
 * ingest path as any upload.
 *
 * The data is in ./data: the real price files and the curated JSON files
 * (instruments, daily sources, corporate actions), with origin and licence in
 * ./data/SOURCES.md. This module only derives the stable ids and reads the
 * price files into bars. Where a value is not known it is null, never guessed.
 */

export type DemoSymbolPeriod = SymbolPeriod;

/** The source of the demo's broker codes: synthetic mappings. */
export const DEMO_CODES_SOURCE = 'synthetic-demo';

export interface DemoInstrument extends Omit<InstrumentEntry, 'key' | 'note'> {
  id: InstrumentId;
  brokerCodesSource: string | null;
  /** The open-ended symbol, or for a delisted instrument the last one it had. */
  currentSymbol: string;
}

export interface DemoDailyBar {
  instrumentId: InstrumentId;
  barDate: string;
  openPrice: number | null;
  highPrice: number | null;
  lowPrice: number | null;
  closePrice: number;
  volume: number | null;
  quoteCurrency: string;
  quoteUnit: string;
  source: string;
  /** When the bar is stated known: demoKnownAt. */
  asOf: string;
}

/**
 * When a demo bar is stated known. The sources keep no publication times or
 * revisions, so each close is taken as known when its session closes on its
 * market (core/session-close.ts: 16:00 New York on a US exchange, the end of
 * the UTC day for crypto), or at the end of its UTC day where the service
 * knows no close within the day: a close is not known when its day begins.
 * An asOf read of the demo then sees the bars whose sessions had closed.
 */
export function demoKnownAt(barDate: string, instrument: { assetClass: string; exchange: string | null; region: string | null }): string {
  const close = sessionClose(barDate, instrument);
  return new Date(close.kind === 'utc_day_start' ? latestSessionClose(barDate) : close.at).toISOString();
}

export interface DemoCorporateAction {
  id: string;
  instrumentId: InstrumentId;
  kind: ActionEntry['kind'];
  /** Ex-date (first session trading without the entitlement). */
  effectiveDate: string;
  announcementDate: string | null;
  /** End of the declaration day (UTC) for an announced action; null for a backfilled one. */
  knowledgeDate: string | null;
  knowledgeProvenance: 'announced' | 'backfilled';
  params: Record<string, unknown>;
  source: string;
}

export interface DemoActionCoverage {
  instrumentId: InstrumentId;
  /** The horizon up to which the curated action set is complete (see SOURCES.md): not the wall-clock time of curation. */
  checkedAt: string;
  source: string;
  coveredFrom: string;
  actionsFound: number;
}

/** A real daily source and the price basis an adjustment engine needs (fields documented in catalog-files.ts). */
export type DemoDailySource = Pick<DailySourceEntry, 'source' | 'file' | 'origin' | 'licence' | 'asOf' | 'priceBasis' | 'reflectsActionsThrough' | 'fields'>;

// Fixed namespace for the demo's name-based (version 5) UUIDs; any change here
// would re-key every demo row, so it never changes.
const DEMO_NAMESPACE = '3f6e1c52-8d0a-4b7e-9a61-5c2f0e4d7b18';

/** RFC 9562 version 5 UUID (SHA-1 of namespace + name). */
export function uuidV5(name: string, namespace: string = DEMO_NAMESPACE): string {
  return nameBasedUuid(name, namespace);
}

interface Catalog extends CatalogFiles {
  instrumentByKey: Map<string, InstrumentEntry>;
  idByKey: Map<string, InstrumentId>;
}

let catalog: Catalog | null = null;

/** The data files, read and checked on first use: a service start that loads no demo data never reads them. */
function demoCatalog(): Catalog {
  if (catalog) return catalog;
  const files = readCatalogFiles();
  catalog = {
    ...files,
    instrumentByKey: new Map(files.instruments.map((i) => [i.key, i])),
    idByKey: new Map(files.instruments.map((i) => [i.key, InstrumentIdSchema.parse(uuidV5(`instrument:${i.key}`))])),
  };
  return catalog;
}

/** The demo UUID of an instrument by its key in instruments.json (`MSFT`, `GOOGL`, `SPY`, `index:SPX`, `dow:IBM`, ...). */
export function demoInstrumentId(key: string): InstrumentId {
  const id = demoCatalog().idByKey.get(key);
  if (!id) throw new Error(`unknown demo instrument key: ${key}`);
  return id;
}

function currentSymbolOf(symbols: SymbolPeriod[]): string {
  return (symbols.find((s) => s.validTo === null) ?? symbols[symbols.length - 1]).symbol;
}

export function demoInstruments(): DemoInstrument[] {
  return demoCatalog().instruments.map(({ key, note: _note, ...entry }) => ({
    id: demoInstrumentId(key),
    assetClass: entry.assetClass,
    displayName: entry.displayName,
    exchange: entry.exchange,
    region: entry.region,
    isin: entry.isin,
    cusip: entry.cusip,
    distributionPolicy: entry.distributionPolicy,
    quoteCurrency: entry.quoteCurrency,
    quoteUnit: entry.quoteUnit,
    isActive: entry.isActive,
    currentSymbol: currentSymbolOf(entry.symbols),
    brokerCodes: { ...entry.brokerCodes },
    // The codes imitate brokers' formats; no broker issued them (data/SOURCES.md).
    brokerCodesSource: Object.keys(entry.brokerCodes).length ? DEMO_CODES_SOURCE : null,
    symbols: entry.symbols.map((s) => ({ ...s })),
  }));
}

/** The four real daily sources, with the price basis an adjustment engine needs. */
export function demoDailySources(): DemoDailySource[] {
  return demoCatalog().dailySources.map((s) => ({
    source: s.source,
    file: s.file,
    origin: s.origin,
    licence: s.licence,
    asOf: s.asOf,
    priceBasis: s.priceBasis,
    reflectsActionsThrough: s.reflectsActionsThrough,
    fields: s.fields,
  }));
}

function* csvRecords(file: string): Generator<Record<string, string>> {
  const text = readFileSync(new URL(file, DEMO_DATA_DIR), 'utf8');
  const lines = text.split(/\r?\n/);
  const header = lines[0].split(',');
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    if (line === '') continue;
    const cells = line.split(',');
    if (cells.length !== header.length) throw new Error(`${file} line ${i + 1}: expected ${header.length} cells, got ${cells.length}`);
    const record: Record<string, string> = {};
    for (let c = 0; c < header.length; c++) record[header[c]] = cells[c];
    yield record;
  }
}

function price(text: string, where: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n <= 0) throw new Error(`${where}: not a positive price: ${JSON.stringify(text)}`);
  return n;
}

function volumeOf(text: string, where: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < 0) throw new Error(`${where}: not a volume: ${JSON.stringify(text)}`);
  return n;
}

function cell(record: Record<string, string>, column: string, file: string): string {
  const value = record[column];
  if (value === undefined) throw new Error(`${file}: missing column ${column}`);
  return value;
}

function* ohlcvBars(src: OhlcvSource): Generator<DemoDailyBar> {
  const instrument = entryOf(demoCatalog().instrumentByKey, src.instrumentKey);
  const instrumentId = demoInstrumentId(src.instrumentKey);
  const cols = src.columns;
  for (const r of csvRecords(src.file)) {
    // A date column may carry a time of day (midnight UTC); only the date is kept.
    const barDate = cell(r, cols.date, src.file).slice(0, 10);
    const where = `${src.file} ${barDate}`;
    yield {
      instrumentId,
      barDate,
      openPrice: price(cell(r, cols.open, src.file), where),
      highPrice: price(cell(r, cols.high, src.file), where),
      lowPrice: price(cell(r, cols.low, src.file), where),
      closePrice: price(cell(r, cols.close, src.file), where),
      volume: volumeOf(cell(r, cols.volume, src.file), where),
      quoteCurrency: instrument.quoteCurrency,
      quoteUnit: instrument.quoteUnit,
      source: src.source,
      asOf: demoKnownAt(barDate, instrument),
    };
  }
}

/** Closes only; a bar is skipped where `taken` (instrumentId|barDate) already has one from an OHLCV source. */
function* closeOnlyBars(src: CloseOnlySource, taken: Set<string>): Generator<DemoDailyBar> {
  const dropped = new Set(src.droppedDates);
  const columns = Object.entries(src.instrumentByColumn).map(([column, key]) => ({
    column,
    instrument: entryOf(demoCatalog().instrumentByKey, key),
    id: demoInstrumentId(key),
  }));
  for (const r of csvRecords(src.file)) {
    const barDate = cell(r, src.dateColumn, src.file);
    if (dropped.has(barDate)) continue;
    for (const { column, instrument, id } of columns) {
      if (taken.has(`${id}|${barDate}`)) continue;
      const value = cell(r, column, src.file);
      // An empty or NA cell is an absent observation: no bar, never a zero.
      if (value === '' || value === 'NA') continue;
      yield {
        instrumentId: id,
        barDate,
        openPrice: null,
        highPrice: null,
        lowPrice: null,
        closePrice: price(value, `${src.file} ${barDate} ${column}`),
        volume: null,
        quoteCurrency: instrument.quoteCurrency,
        quoteUnit: instrument.quoteUnit,
        source: src.source,
        asOf: demoKnownAt(barDate, instrument),
      };
    }
  }
}

/**
 * Every real daily bar of the demo set (about 82k rows), yielded source by
 * source so the caller can stream them into an NDJSON or COPY ingest. The
 * OHLCV sources come first: where one of them has a bar, a close-only source's
 * close for the same instrument and date is left out (they agree to the cent
 * on MSFT's 67 common dates, so this adds open/high/low/volume and changes no
 * price).
 */
export function* demoDailyBars(): Generator<DemoDailyBar> {
  const { dailySources } = demoCatalog();
  const taken = new Set<string>();
  for (const src of dailySources) {
    if (src.fields !== 'ohlcv') continue;
    for (const bar of ohlcvBars(src)) {
      taken.add(`${bar.instrumentId}|${bar.barDate}`);
      yield bar;
    }
  }
  for (const src of dailySources) if (src.fields === 'close_only') yield* closeOnlyBars(src, taken);
}

/** End of the declaration day in UTC; the curated releases came after the New York close (21:00 UTC), so this is never earlier than the news. */
function endOfDayUtc(date: string): string {
  return `${date}T23:59:59.999Z`;
}

export function demoCorporateActions(): DemoCorporateAction[] {
  return demoCatalog().actions.map((a) => ({
    id: uuidV5(`action:${a.key}`),
    instrumentId: demoInstrumentId(a.instrumentKey),
    kind: a.kind,
    effectiveDate: a.effectiveDate,
    announcementDate: a.announcedOn,
    knowledgeDate: a.announcedOn ? endOfDayUtc(a.announcedOn) : null,
    knowledgeProvenance: a.announcedOn ? 'announced' : 'backfilled',
    params: { ...a.params },
    source: a.source,
  }));
}

/**
 * Coverage checks for the curated instruments; `actionsFound` counts the
 * curated actions of each. Every other instrument has no row (`never_checked`).
 */
export function demoActionCoverage(): DemoActionCoverage[] {
  const { coverage, actions } = demoCatalog();
  return coverage.map((c) => ({
    instrumentId: demoInstrumentId(c.instrumentKey),
    checkedAt: c.checkedAt,
    source: c.source,
    coveredFrom: c.coveredFrom,
    actionsFound: actions.filter((a) => a.instrumentKey === c.instrumentKey).length,
  }));
}
