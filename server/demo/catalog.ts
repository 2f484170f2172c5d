import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

/**
 * The bundled demo data set, as ingest-ready rows in the admin API's field
 * names. Pure data: no database, no HTTP. The loader posts these rows through
 * the same ingest path as any upload.
 *
 * Everything here is either read from the real files in ./data (see
 * ./data/SOURCES.md for origin and licence) or a public-record fact the
 * curator was certain of. Where a value is not known it is null, never guessed.
 */

export type AssetClass = 'equity' | 'etf' | 'index' | 'crypto' | 'fx';

export interface DemoSymbolPeriod {
  symbol: string;
  /** First day the instrument traded under this symbol; null = before the demo's earliest data (listing date not curated). */
  validFrom: string | null;
  /** Last day (inclusive) under this symbol; null = still in use. */
  validTo: string | null;
}

export interface DemoInstrument {
  id: string;
  assetClass: AssetClass;
  displayName: string;
  /** ISO 10383 MIC of the (last) listing; null for an index, a currency pair or a coin, which are not exchange listings. */
  exchange: string | null;
  region: string | null;
  isin: string | null;
  cusip: string | null;
  distributionPolicy: 'distributing' | null;
  quoteCurrency: string;
  quoteUnit: string;
  isActive: boolean;
  /** The open-ended symbol, or for a delisted instrument the last one it had. */
  currentSymbol: string;
  /** Demo mappings (see SOURCES.md): not taken from any broker's symbol file. Empty for delisted instruments. */
  brokerCodes: Record<string, string>;
  symbols: DemoSymbolPeriod[];
}

export interface DemoDailyBar {
  instrumentId: string;
  barDate: string;
  openPrice: number | null;
  highPrice: number | null;
  lowPrice: number | null;
  closePrice: number;
  volume: number | null;
  quoteCurrency: string;
  quoteUnit: string;
  source: DemoDailySourceTag;
  asOf: string;
}

export type CorporateActionKind = 'split' | 'cash_dividend' | 'stock_dividend';
export type KnowledgeProvenance = 'announced' | 'backfilled';

export interface DemoCorporateAction {
  id: string;
  instrumentId: string;
  kind: CorporateActionKind;
  /** Ex-date (first session trading without the entitlement). */
  effectiveDate: string;
  announcementDate: string | null;
  /** End of the declaration day (UTC) for an announced action; null for a backfilled one. */
  knowledgeDate: string | null;
  knowledgeProvenance: KnowledgeProvenance;
  params: Record<string, unknown>;
  source: string;
}

export interface DemoActionCoverage {
  instrumentId: string;
  /** The horizon up to which the curated action set is complete (see SOURCES.md): not the wall-clock time of curation. */
  checkedAt: string;
  source: string;
  coveredFrom: string;
  actionsFound: number;
}

export type DemoDailySourceTag =
  | 'vega-datasets/sp500-2000'
  | 'r-cran-fbasics/DowJones30 (adjusted close only)'
  | 'debian-matplotlib/goog.npz'
  | 'r-cran-timeseries/MSFT';

export interface DemoDailySource {
  source: DemoDailySourceTag;
  file: string;
  origin: string;
  licence: string;
  asOf: string;
  /**
   * `raw`: prices as traded. `vendor_adjusted`: the vendor already applied
   * every split and dividend effective on or before `reflectsActionsThrough`,
   * so an adjustment engine must not apply those actions to this source again.
   */
  priceBasis: 'raw' | 'vendor_adjusted';
  reflectsActionsThrough: string | null;
  fields: 'ohlcv' | 'close_only';
}

const DATA_DIR = new URL('./data/', import.meta.url);

// Fixed namespace for the demo's name-based (version 5) UUIDs; any change here
// would re-key every demo row, so it never changes.
const DEMO_NAMESPACE = '3f6e1c52-8d0a-4b7e-9a61-5c2f0e4d7b18';

/** RFC 9562 version 5 UUID (SHA-1 of namespace + name). */
export function uuidV5(name: string, namespace: string = DEMO_NAMESPACE): string {
  const ns = Buffer.from(namespace.replace(/-/g, ''), 'hex');
  const hash = createHash('sha1').update(ns).update(name, 'utf8').digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x50;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const USD_PER_SHARE = 'USD per share';

interface InstrumentSpec {
  /** Stable internal key; the UUID is derived from it. */
  key: string;
  assetClass: AssetClass;
  displayName: string;
  exchange: string | null;
  region: string | null;
  isin?: string;
  cusip?: string;
  distributionPolicy?: 'distributing';
  quoteUnit?: string;
  isActive?: boolean;
  brokerCodes?: Record<string, string>;
  symbols: DemoSymbolPeriod[];
}

/** One symbol valid since before the demo's data began and still in use. */
function always(symbol: string): DemoSymbolPeriod[] {
  return [{ symbol, validFrom: null, validTo: null }];
}

// The 30 columns of dowjones30_adjclose_1990_2001.csv, keyed by column name.
// Symbol histories are included only where the curator was certain of the
// dates; the citations are in the README's demo-data section. Where a column
// is a post-merger company whose earlier ticker the curator could not date
// (C, XOM, HON, JPM), its symbol starts at 2001-01-02, the file's last row,
// where the file itself labels the column with that ticker.
const DOW_INSTRUMENTS: Record<string, InstrumentSpec> = {
  AA: {
    key: 'dow:AA',
    assetClass: 'equity',
    displayName: 'Howmet Aerospace Inc. (formerly Alcoa Inc., then Arconic Inc.)',
    exchange: 'XNYS',
    region: 'US',
    symbols: [
      { symbol: 'AA', validFrom: null, validTo: '2016-10-31' },
      { symbol: 'ARNC', validFrom: '2016-11-01', validTo: '2020-03-31' },
      { symbol: 'HWM', validFrom: '2020-04-01', validTo: null },
    ],
  },
  AXP: { key: 'dow:AXP', assetClass: 'equity', displayName: 'American Express Company', exchange: 'XNYS', region: 'US', symbols: always('AXP') },
  T: {
    key: 'dow:T',
    assetClass: 'equity',
    displayName: 'AT&T Corp.',
    exchange: 'XNYS',
    region: 'US',
    isActive: false,
    // Acquired by SBC Communications; the merger closed on 2005-11-18.
    symbols: [{ symbol: 'T', validFrom: null, validTo: '2005-11-18' }],
  },
  BA: { key: 'dow:BA', assetClass: 'equity', displayName: 'The Boeing Company', exchange: 'XNYS', region: 'US', symbols: always('BA') },
  CAT: { key: 'dow:CAT', assetClass: 'equity', displayName: 'Caterpillar Inc.', exchange: 'XNYS', region: 'US', symbols: always('CAT') },
  C: { key: 'dow:C', assetClass: 'equity', displayName: 'Citigroup Inc.', exchange: 'XNYS', region: 'US', symbols: [{ symbol: 'C', validFrom: '2001-01-02', validTo: null }] },
  KO: {
    key: 'dow:KO',
    assetClass: 'equity',
    displayName: 'The Coca-Cola Company',
    exchange: 'XNYS',
    region: 'US',
    isin: 'US1912161007',
    cusip: '191216100',
    symbols: always('KO'),
  },
  DD: {
    key: 'dow:DD',
    assetClass: 'equity',
    displayName: 'E. I. du Pont de Nemours and Company',
    exchange: 'XNYS',
    region: 'US',
    isActive: false,
    // The common stock ceased trading at the NYSE close on 2017-08-31 (Dow-DuPont merger).
    symbols: [{ symbol: 'DD', validFrom: null, validTo: '2017-08-31' }],
  },
  EK: {
    key: 'dow:EK',
    assetClass: 'equity',
    displayName: 'Eastman Kodak Company (pre-2013 common stock)',
    exchange: 'XNYS',
    region: 'US',
    isActive: false,
    // NYSE suspended EK on 2012-01-19, the Chapter 11 filing day; the old
    // shares were cancelled when Kodak emerged on 2013-09-03.
    symbols: [{ symbol: 'EK', validFrom: null, validTo: '2012-01-19' }],
  },
  XOM: { key: 'dow:XOM', assetClass: 'equity', displayName: 'Exxon Mobil Corporation', exchange: 'XNYS', region: 'US', symbols: [{ symbol: 'XOM', validFrom: '2001-01-02', validTo: null }] },
  GE: { key: 'dow:GE', assetClass: 'equity', displayName: 'General Electric Company', exchange: 'XNYS', region: 'US', symbols: always('GE') },
  GM: {
    key: 'dow:GM',
    assetClass: 'equity',
    displayName: 'General Motors Corporation (pre-2009; later Motors Liquidation Company)',
    exchange: 'XNYS',
    region: 'US',
    isActive: false,
    // NYSE suspended the shares before the open on 2009-06-02 after the
    // 2009-06-01 Chapter 11 filing; the later OTC symbols are not modelled.
    symbols: [{ symbol: 'GM', validFrom: null, validTo: '2009-06-01' }],
  },
  HWP: {
    key: 'dow:HWP',
    assetClass: 'equity',
    displayName: 'HP Inc. (formerly Hewlett-Packard Company)',
    exchange: 'XNYS',
    region: 'US',
    // The Compaq merger closed on Friday 2002-05-03; HPQ traded from Monday 2002-05-06.
    symbols: [
      { symbol: 'HWP', validFrom: null, validTo: '2002-05-03' },
      { symbol: 'HPQ', validFrom: '2002-05-06', validTo: null },
    ],
  },
  HD: { key: 'dow:HD', assetClass: 'equity', displayName: 'The Home Depot, Inc.', exchange: 'XNYS', region: 'US', symbols: always('HD') },
  HON: { key: 'dow:HON', assetClass: 'equity', displayName: 'Honeywell International Inc.', exchange: 'XNYS', region: 'US', symbols: [{ symbol: 'HON', validFrom: '2001-01-02', validTo: null }] },
  INTC: { key: 'dow:INTC', assetClass: 'equity', displayName: 'Intel Corporation', exchange: 'XNAS', region: 'US', symbols: always('INTC') },
  IBM: {
    key: 'dow:IBM',
    assetClass: 'equity',
    displayName: 'International Business Machines Corporation',
    exchange: 'XNYS',
    region: 'US',
    isin: 'US4592001014',
    cusip: '459200101',
    symbols: always('IBM'),
  },
  IP: { key: 'dow:IP', assetClass: 'equity', displayName: 'International Paper Company', exchange: 'XNYS', region: 'US', symbols: always('IP') },
  JPM: { key: 'dow:JPM', assetClass: 'equity', displayName: 'JPMorgan Chase & Co.', exchange: 'XNYS', region: 'US', symbols: [{ symbol: 'JPM', validFrom: '2001-01-02', validTo: null }] },
  JNJ: {
    key: 'dow:JNJ',
    assetClass: 'equity',
    displayName: 'Johnson & Johnson',
    exchange: 'XNYS',
    region: 'US',
    isin: 'US4781601046',
    cusip: '478160104',
    symbols: always('JNJ'),
  },
  MCD: { key: 'dow:MCD', assetClass: 'equity', displayName: "McDonald's Corporation", exchange: 'XNYS', region: 'US', symbols: always('MCD') },
  MRK: { key: 'dow:MRK', assetClass: 'equity', displayName: 'Merck & Co., Inc.', exchange: 'XNYS', region: 'US', symbols: always('MRK') },
  MSFT: {
    key: 'MSFT',
    assetClass: 'equity',
    displayName: 'Microsoft Corporation',
    exchange: 'XNAS',
    region: 'US',
    isin: 'US5949181045',
    cusip: '594918104',
    symbols: always('MSFT'),
  },
  MMM: { key: 'dow:MMM', assetClass: 'equity', displayName: '3M Company (formerly Minnesota Mining and Manufacturing Company)', exchange: 'XNYS', region: 'US', symbols: always('MMM') },
  MO: { key: 'dow:MO', assetClass: 'equity', displayName: 'Altria Group, Inc. (formerly Philip Morris Companies Inc.)', exchange: 'XNYS', region: 'US', symbols: always('MO') },
  PG: {
    key: 'dow:PG',
    assetClass: 'equity',
    displayName: 'The Procter & Gamble Company',
    exchange: 'XNYS',
    region: 'US',
    isin: 'US7427181091',
    cusip: '742718109',
    symbols: always('PG'),
  },
  SBC: {
    key: 'dow:SBC',
    assetClass: 'equity',
    displayName: 'AT&T Inc. (formerly SBC Communications Inc.)',
    exchange: 'XNYS',
    region: 'US',
    // SBC acquired AT&T Corp (closed 2005-11-18), renamed itself AT&T Inc.,
    // and traded as T from Thursday 2005-12-01.
    symbols: [
      { symbol: 'SBC', validFrom: null, validTo: '2005-11-30' },
      { symbol: 'T', validFrom: '2005-12-01', validTo: null },
    ],
  },
  UTX: {
    key: 'dow:UTX',
    assetClass: 'equity',
    displayName: 'RTX Corporation (formerly United Technologies Corporation)',
    exchange: 'XNYS',
    region: 'US',
    // United Technologies merged with Raytheon and renamed itself Raytheon
    // Technologies before the open on 2020-04-03, trading as RTX from that day.
    symbols: [
      { symbol: 'UTX', validFrom: null, validTo: '2020-04-02' },
      { symbol: 'RTX', validFrom: '2020-04-03', validTo: null },
    ],
  },
  WMT: { key: 'dow:WMT', assetClass: 'equity', displayName: 'Walmart Inc. (formerly Wal-Mart Stores, Inc.)', exchange: 'XNYS', region: 'US', symbols: always('WMT') },
  DIS: { key: 'dow:DIS', assetClass: 'equity', displayName: 'The Walt Disney Company', exchange: 'XNYS', region: 'US', symbols: always('DIS') },
};

const OTHER_INSTRUMENTS: InstrumentSpec[] = [
  {
    key: 'index:SPX',
    assetClass: 'index',
    displayName: 'S&P 500 Index',
    exchange: null,
    region: 'US',
    quoteUnit: 'index points',
    brokerCodes: { ibkr: 'SPX', saxo: 'US500.I' },
    symbols: always('^GSPC'),
  },
  {
    // The bars in goog_daily_2004_2008.csv are Class A shares: Class A traded
    // as GOOG until 2014-04-02 and as GOOGL from 2014-04-03, when the new
    // Class C shares took GOOG.
    key: 'GOOGL',
    assetClass: 'equity',
    displayName: 'Alphabet Inc. Class A (formerly Google Inc. Class A)',
    exchange: 'XNAS',
    region: 'US',
    isin: 'US02079K3059',
    cusip: '02079K305',
    symbols: [
      { symbol: 'GOOG', validFrom: '2004-08-19', validTo: '2014-04-02' },
      { symbol: 'GOOGL', validFrom: '2014-04-03', validTo: null },
    ],
  },
  {
    key: 'GOOG-C',
    assetClass: 'equity',
    displayName: 'Alphabet Inc. Class C (formerly Google Inc. Class C)',
    exchange: 'XNAS',
    region: 'US',
    isin: 'US02079K1079',
    cusip: '02079K107',
    symbols: [{ symbol: 'GOOG', validFrom: '2014-04-03', validTo: null }],
  },
  {
    // General Motors Company, the post-bankruptcy company; IPO 2010-11-18.
    key: 'GM-2010',
    assetClass: 'equity',
    displayName: 'General Motors Company',
    exchange: 'XNYS',
    region: 'US',
    symbols: [{ symbol: 'GM', validFrom: '2010-11-18', validTo: null }],
  },
  {
    // Alcoa Corporation, separated from Alcoa Inc. (now Howmet) on 2016-11-01.
    key: 'AA-2016',
    assetClass: 'equity',
    displayName: 'Alcoa Corporation',
    exchange: 'XNYS',
    region: 'US',
    symbols: [{ symbol: 'AA', validFrom: '2016-11-01', validTo: null }],
  },
  {
    key: 'SPY',
    assetClass: 'etf',
    displayName: 'SPDR S&P 500 ETF Trust',
    exchange: 'ARCX',
    region: 'US',
    isin: 'US78462F1030',
    cusip: '78462F103',
    distributionPolicy: 'distributing',
    symbols: always('SPY'),
  },
  {
    key: 'crypto:BTC-USD',
    assetClass: 'crypto',
    displayName: 'Bitcoin / US Dollar',
    exchange: null,
    region: null,
    quoteUnit: 'USD per BTC',
    brokerCodes: { ibkr: 'BTC.USD', saxo: 'BTCUSD' },
    symbols: always('BTC-USD'),
  },
  {
    // Exists without bars: no FX price is invented.
    key: 'fx:EURUSD',
    assetClass: 'fx',
    displayName: 'Euro / US Dollar',
    exchange: null,
    region: null,
    quoteUnit: 'USD per EUR',
    brokerCodes: { ibkr: 'EUR.USD', saxo: 'EURUSD' },
    symbols: always('EURUSD'),
  },
];

const ALL_SPECS: InstrumentSpec[] = [...Object.values(DOW_INSTRUMENTS), ...OTHER_INSTRUMENTS];
const ID_BY_KEY = new Map(ALL_SPECS.map((s) => [s.key, uuidV5(`instrument:${s.key}`)]));

/** The demo UUID of an instrument by its internal key (`MSFT`, `GOOGL`, `SPY`, `index:SPX`, `dow:IBM`, ...). */
export function demoInstrumentId(key: string): string {
  const id = ID_BY_KEY.get(key);
  if (!id) throw new Error(`unknown demo instrument key: ${key}`);
  return id;
}

export const DEMO_INSTRUMENT_KEYS: readonly string[] = ALL_SPECS.map((s) => s.key);

function currentSymbolOf(symbols: DemoSymbolPeriod[]): string {
  return (symbols.find((s) => s.validTo === null) ?? symbols[symbols.length - 1]).symbol;
}

function defaultBrokerCodes(spec: InstrumentSpec, symbol: string): Record<string, string> {
  if (spec.brokerCodes) return spec.brokerCodes;
  if (spec.isActive === false) return {};
  return { ibkr: symbol, saxo: `${symbol}:${(spec.exchange ?? 'otc').toLowerCase()}` };
}

export function demoInstruments(): DemoInstrument[] {
  return ALL_SPECS.map((spec) => {
    const currentSymbol = currentSymbolOf(spec.symbols);
    return {
      id: demoInstrumentId(spec.key),
      assetClass: spec.assetClass,
      displayName: spec.displayName,
      exchange: spec.exchange,
      region: spec.region,
      isin: spec.isin ?? null,
      cusip: spec.cusip ?? null,
      distributionPolicy: spec.distributionPolicy ?? null,
      quoteCurrency: 'USD',
      quoteUnit: spec.quoteUnit ?? USD_PER_SHARE,
      isActive: spec.isActive ?? true,
      currentSymbol,
      brokerCodes: defaultBrokerCodes(spec, currentSymbol),
      symbols: spec.symbols.map((s) => ({ ...s })),
    };
  });
}

const SOURCES: Record<DemoDailySourceTag, DemoDailySource> = {
  'vega-datasets/sp500-2000': {
    source: 'vega-datasets/sp500-2000',
    file: 'sp500_daily_2000_2020.csv',
    origin: 'npm vega-datasets 3.2.1, data/sp500-2000.csv (sourced from Yahoo Finance)',
    licence: 'BSD-3 package; the prices themselves carry no licence',
    // npm publication time of vega-datasets 3.2.1.
    asOf: '2025-10-04T17:45:15.105Z',
    priceBasis: 'raw',
    reflectsActionsThrough: null,
    fields: 'ohlcv',
  },
  'r-cran-fbasics/DowJones30 (adjusted close only)': {
    source: 'r-cran-fbasics/DowJones30 (adjusted close only)',
    file: 'dowjones30_adjclose_1990_2001.csv',
    origin: 'Debian r-cran-fbasics, dataset DowJones30',
    licence: 'GPL-2+',
    asOf: '2001-01-03T00:00:00.000Z',
    priceBasis: 'vendor_adjusted',
    reflectsActionsThrough: '2001-01-02',
    fields: 'close_only',
  },
  'debian-matplotlib/goog.npz': {
    source: 'debian-matplotlib/goog.npz',
    file: 'goog_daily_2004_2008.csv',
    origin: 'Debian python-matplotlib-data, mpl-data/sample_data/goog.npz',
    licence: 'matplotlib licence (permissive)',
    asOf: '2008-10-15T00:00:00.000Z',
    priceBasis: 'raw',
    reflectsActionsThrough: null,
    fields: 'ohlcv',
  },
  'r-cran-timeseries/MSFT': {
    source: 'r-cran-timeseries/MSFT',
    file: 'msft_daily_2000_2001.csv',
    origin: 'Debian r-cran-timeseries, dataset MSFT',
    licence: 'GPL-2+',
    asOf: '2001-09-28T00:00:00.000Z',
    priceBasis: 'raw',
    reflectsActionsThrough: null,
    fields: 'ohlcv',
  },
};

/** The four real daily sources, with the price basis an adjustment engine needs. */
export function demoDailySources(): DemoDailySource[] {
  return Object.values(SOURCES).map((s) => ({ ...s }));
}

function* csvRecords(file: string): Generator<Record<string, string>> {
  const text = readFileSync(new URL(file, DATA_DIR), 'utf8');
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

function* ohlcvBars(
  tag: DemoDailySourceTag,
  instrumentId: string,
  quoteUnit: string,
  cols: { date: string; open: string; high: string; low: string; close: string; volume: string },
): Generator<DemoDailyBar> {
  const src = SOURCES[tag];
  for (const r of csvRecords(src.file)) {
    const barDate = r[cols.date].slice(0, 10);
    const where = `${src.file} ${barDate}`;
    yield {
      instrumentId,
      barDate,
      openPrice: price(r[cols.open], where),
      highPrice: price(r[cols.high], where),
      lowPrice: price(r[cols.low], where),
      closePrice: price(r[cols.close], where),
      volume: volumeOf(r[cols.volume], where),
      quoteCurrency: 'USD',
      quoteUnit,
      source: tag,
      asOf: src.asOf,
    };
  }
}

// 1990-12-31 repeats 1991-01-02 in all 30 columns; both cannot be real closes,
// and the earlier row is the one outside the dataset's 1991-2000 span.
const DOW_DROPPED_DATE = '1990-12-31';

/**
 * Every real daily bar of the demo set (about 82k rows), yielded source by
 * source so the caller can stream them into an NDJSON or COPY ingest.
 */
export function* demoDailyBars(): Generator<DemoDailyBar> {
  yield* ohlcvBars('vega-datasets/sp500-2000', demoInstrumentId('index:SPX'), 'index points', {
    date: 'date', open: 'open', high: 'high', low: 'low', close: 'close', volume: 'volume',
  });
  yield* ohlcvBars('debian-matplotlib/goog.npz', demoInstrumentId('GOOGL'), USD_PER_SHARE, {
    date: 'date', open: 'open', high: 'high', low: 'low', close: 'close', volume: 'volume',
  });

  // MSFT: the raw OHLCV file wins on every date it has; the Dow file's
  // adjusted close fills only the dates before it (they agree to the cent on
  // the 67 common dates).
  const msftOhlcvDates = new Set<string>();
  for (const bar of ohlcvBars('r-cran-timeseries/MSFT', demoInstrumentId('MSFT'), USD_PER_SHARE, {
    date: 'time', open: 'Open', high: 'High', low: 'Low', close: 'Close', volume: 'Volume',
  })) {
    msftOhlcvDates.add(bar.barDate);
    yield bar;
  }

  const dow = SOURCES['r-cran-fbasics/DowJones30 (adjusted close only)'];
  for (const r of csvRecords(dow.file)) {
    const barDate = r.date;
    if (barDate === DOW_DROPPED_DATE) continue;
    for (const [column, spec] of Object.entries(DOW_INSTRUMENTS)) {
      if (column === 'MSFT' && msftOhlcvDates.has(barDate)) continue;
      const cell = r[column];
      if (cell === undefined) throw new Error(`${dow.file}: missing column ${column}`);
      // An empty or NA cell is an absent observation: no bar, never a zero.
      if (cell === '' || cell === 'NA') continue;
      yield {
        instrumentId: demoInstrumentId(spec.key),
        barDate,
        openPrice: null,
        highPrice: null,
        lowPrice: null,
        closePrice: price(cell, `${dow.file} ${barDate} ${column}`),
        volume: null,
        quoteCurrency: 'USD',
        quoteUnit: USD_PER_SHARE,
        source: dow.source,
        asOf: dow.asOf,
      };
    }
  }
}

interface ActionSpec {
  key: string;
  instrumentKey: string;
  kind: CorporateActionKind;
  effectiveDate: string;
  /** Declaration day; absent for a backfilled action. */
  announcedOn?: string;
  params: Record<string, unknown>;
  source: string;
}

const MSFT_SPLIT_HISTORY = 'public-record (Microsoft investor relations stock split history)';
const MSFT_2003_RELEASE = 'public-record (Microsoft press release, 2003-01-16)';
const GOOGLE_CLASS_C = 'public-record (Google investor relations, "Information on Our New Class of Shares", 2014)';
const ALPHABET_SPLIT_RELEASE = 'public-record (Alphabet Q4 2021 results press release, 2022-02-01)';

// MSFT's nine splits since its 1986 IPO (ex-dates). The six from 1991 on were
// cross-checked against the Dow file: its adjusted closes on either side of
// each date match the reported raw pre- and post-split closes divided by the
// later split factors. No declaration dates are on record here, so they are
// backfilled.
const ACTIONS: ActionSpec[] = [
  { key: 'MSFT:split:1987-09-21', instrumentKey: 'MSFT', kind: 'split', effectiveDate: '1987-09-21', params: { ratio: 2 }, source: MSFT_SPLIT_HISTORY },
  { key: 'MSFT:split:1990-04-16', instrumentKey: 'MSFT', kind: 'split', effectiveDate: '1990-04-16', params: { ratio: 2 }, source: MSFT_SPLIT_HISTORY },
  { key: 'MSFT:split:1991-06-27', instrumentKey: 'MSFT', kind: 'split', effectiveDate: '1991-06-27', params: { ratio: 1.5 }, source: MSFT_SPLIT_HISTORY },
  { key: 'MSFT:split:1992-06-15', instrumentKey: 'MSFT', kind: 'split', effectiveDate: '1992-06-15', params: { ratio: 1.5 }, source: MSFT_SPLIT_HISTORY },
  { key: 'MSFT:split:1994-05-23', instrumentKey: 'MSFT', kind: 'split', effectiveDate: '1994-05-23', params: { ratio: 2 }, source: MSFT_SPLIT_HISTORY },
  { key: 'MSFT:split:1996-12-09', instrumentKey: 'MSFT', kind: 'split', effectiveDate: '1996-12-09', params: { ratio: 2 }, source: MSFT_SPLIT_HISTORY },
  { key: 'MSFT:split:1998-02-23', instrumentKey: 'MSFT', kind: 'split', effectiveDate: '1998-02-23', params: { ratio: 2 }, source: MSFT_SPLIT_HISTORY },
  { key: 'MSFT:split:1999-03-29', instrumentKey: 'MSFT', kind: 'split', effectiveDate: '1999-03-29', params: { ratio: 2 }, source: MSFT_SPLIT_HISTORY },
  {
    // Record date 2003-01-27, shares distributed about 2003-02-14, first
    // split-adjusted session 2003-02-18.
    key: 'MSFT:split:2003-02-18',
    instrumentKey: 'MSFT',
    kind: 'split',
    effectiveDate: '2003-02-18',
    announcedOn: '2003-01-16',
    params: { ratio: 2, recordDate: '2003-01-27' },
    source: MSFT_2003_RELEASE,
  },
  {
    // First dividend ever: $0.16 pre-split = $0.08 post-split, record
    // 2003-02-21, payable 2003-03-07; the ex-date (2003-02-19) is after the
    // split, so the amount is per post-split share.
    key: 'MSFT:cash_dividend:2003-02-19',
    instrumentKey: 'MSFT',
    kind: 'cash_dividend',
    effectiveDate: '2003-02-19',
    announcedOn: '2003-01-16',
    params: { amount: 0.08, currency: 'USD', recordDate: '2003-02-21', payableDate: '2003-03-07' },
    source: MSFT_2003_RELEASE,
  },
  {
    // One Class C share per Class A share; record 2014-03-27, issued
    // 2014-04-02, first session ex (and Class C's first day) 2014-04-03.
    key: 'GOOGL:stock_dividend:2014-04-03',
    instrumentKey: 'GOOGL',
    kind: 'stock_dividend',
    effectiveDate: '2014-04-03',
    announcedOn: '2014-01-30',
    params: { ratio: 2, distributed: 'Class C capital stock (GOOG), one per Class A share', recordDate: '2014-03-27', paymentDate: '2014-04-02' },
    source: GOOGLE_CLASS_C,
  },
  {
    key: 'GOOGL:split:2022-07-18',
    instrumentKey: 'GOOGL',
    kind: 'split',
    effectiveDate: '2022-07-18',
    announcedOn: '2022-02-01',
    params: { ratio: 20, recordDate: '2022-07-01', distributionDate: '2022-07-15' },
    source: ALPHABET_SPLIT_RELEASE,
  },
  {
    key: 'GOOG-C:split:2022-07-18',
    instrumentKey: 'GOOG-C',
    kind: 'split',
    effectiveDate: '2022-07-18',
    announcedOn: '2022-02-01',
    params: { ratio: 20, recordDate: '2022-07-01', distributionDate: '2022-07-15' },
    source: ALPHABET_SPLIT_RELEASE,
  },
];

/** End of the declaration day in UTC; the releases above came after the New York close (21:00 UTC), so this is never earlier than the news. */
function endOfDayUtc(date: string): string {
  return `${date}T23:59:59.999Z`;
}

export function demoCorporateActions(): DemoCorporateAction[] {
  return ACTIONS.map((a) => ({
    id: uuidV5(`action:${a.key}`),
    instrumentId: demoInstrumentId(a.instrumentKey),
    kind: a.kind,
    effectiveDate: a.effectiveDate,
    announcementDate: a.announcedOn ?? null,
    knowledgeDate: a.announcedOn ? endOfDayUtc(a.announcedOn) : null,
    knowledgeProvenance: a.announcedOn ? 'announced' : 'backfilled',
    params: { ...a.params },
    source: a.source,
  }));
}

/**
 * Coverage checks for the two curated instruments. Each `checkedAt` is the
 * horizon up to which the curated set is complete: MSFT's second dividend was
 * declared later in 2003, Alphabet's first dividend on 2024-04-25, and
 * neither is in the demo set. Every other instrument has no row
 * (`never_checked`).
 */
export function demoActionCoverage(): DemoActionCoverage[] {
  const count = (key: string) => ACTIONS.filter((a) => a.instrumentKey === key).length;
  return [
    {
      instrumentId: demoInstrumentId('MSFT'),
      checkedAt: '2003-03-31T00:00:00.000Z',
      source: `demo curation: splits and dividends from the 1986-03-13 IPO to 2003-03-31 (${MSFT_SPLIT_HISTORY}; ${MSFT_2003_RELEASE})`,
      coveredFrom: '1986-03-13',
      actionsFound: count('MSFT'),
    },
    {
      instrumentId: demoInstrumentId('GOOGL'),
      checkedAt: '2024-03-31T00:00:00.000Z',
      source: `demo curation: splits, stock and cash dividends from the 2004-08-19 IPO to 2024-03-31 (${GOOGLE_CLASS_C}; ${ALPHABET_SPLIT_RELEASE})`,
      coveredFrom: '2004-08-19',
      actionsFound: count('GOOGL'),
    },
  ];
}
