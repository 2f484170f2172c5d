import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CatalogFileError, DEMO_DATA_DIR, readCatalogFiles } from '../../server/demo/catalog-files.ts';
import {
  demoActionCoverage,
  demoCorporateActions,
  demoDailyBars,
  demoDailySources,
  demoInstrumentId,
  demoInstruments,
  uuidV5,
  type DemoDailyBar,
} from '../../server/demo/catalog.ts';
import { syntheticMinuteBars } from '../../server/demo/synthetic-intraday.ts';

const DOW_SOURCE = 'r-cran-fbasics/DowJones30 (adjusted close only)';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

// Read once: ~82k rows, about half a second.
const bars: DemoDailyBar[] = [...demoDailyBars()];
const instruments = demoInstruments();
const byId = new Map(instruments.map((i) => [i.id, i]));

/** A price file of the demo set read on its own, as rows of cells by column name. */
function csvRows(file: string): Record<string, string>[] {
  const [header, ...lines] = readFileSync(new URL(file, DEMO_DATA_DIR), 'utf8').trim().split('\n');
  const columns = header.split(',');
  return lines.map((line) => Object.fromEntries(line.split(',').map((cell, i) => [columns[i], cell])));
}

function isinCheckDigitOk(isin: string): boolean {
  const digits = [...isin.slice(0, -1)].map((c) => parseInt(c, 36).toString()).join('');
  let sum = 0;
  [...digits].reverse().forEach((ch, i) => {
    let d = Number(ch);
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  });
  return (10 - (sum % 10)) % 10 === Number(isin.at(-1));
}

describe('demo instruments', () => {
  it('when UUIDs are derived, they follow RFC 9562 version 5 (published test vector)', () => {
    expect(uuidV5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe('2ed6657d-e927-568b-95e1-2665a8aea6a2');
  });

  it('when listed twice, every instrument keeps the same valid, unique id', () => {
    const again = demoInstruments();
    expect(again.map((i) => i.id)).toEqual(instruments.map((i) => i.id));
    expect(new Set(instruments.map((i) => i.id)).size).toBe(instruments.length);
    for (const i of instruments) expect(i.id).toMatch(UUID);
  });

  it('when a symbol is reused, its validity periods for different instruments never overlap', () => {
    const periods = instruments.flatMap((i) => i.symbols.map((s) => ({ ...s, id: i.id })));
    const from = (d: string | null) => d ?? '0000-01-01';
    const to = (d: string | null) => d ?? '9999-12-31';
    for (const a of periods) {
      expect(from(a.validFrom) <= to(a.validTo)).toBe(true);
      for (const b of periods) {
        if (a === b || a.symbol !== b.symbol) continue;
        const overlap = from(a.validFrom) <= to(b.validTo) && from(b.validFrom) <= to(a.validTo);
        expect(overlap, `${a.symbol} overlaps itself`).toBe(false);
      }
    }
    const t = periods.filter((p) => p.symbol === 'T');
    expect(new Set(t.map((p) => p.id))).toEqual(new Set([demoInstrumentId('dow:T'), demoInstrumentId('dow:SBC')]));
  });

  it('when an ISIN is given, its check digit is right and it embeds the CUSIP', () => {
    for (const i of instruments.filter((x) => x.isin !== null)) {
      expect(isinCheckDigitOk(i.isin!), i.isin!).toBe(true);
      expect(i.isin!.slice(2, 11)).toBe(i.cusip);
    }
  });

  it('when a broker code is looked up in reverse, it names exactly one instrument', () => {
    const seen = new Map<string, string>();
    for (const i of instruments) {
      for (const [broker, code] of Object.entries(i.brokerCodes)) {
        const k = `${broker}:${code}`;
        expect(seen.has(k), k).toBe(false);
        seen.set(k, i.id);
      }
    }
  });
});

describe('demo daily bars', () => {
  // Row checks collect offenders and assert once: 82k expect() calls take seconds.
  it('when bars are generated, every instrumentId exists in demoInstruments', () => {
    expect(bars.filter((b) => !byId.has(b.instrumentId))).toEqual([]);
  });

  it('when a bar comes from the Dow adjusted-close file, only closePrice is set', () => {
    const dow = bars.filter((b) => b.source === DOW_SOURCE);
    expect(dow.length).toBeGreaterThan(70_000);
    const offenders = dow.filter((b) => b.openPrice !== null || b.highPrice !== null || b.lowPrice !== null || b.volume !== null || !(b.closePrice > 0));
    expect(offenders).toEqual([]);
  });

  it('when bars are generated, no (instrumentId, barDate) pair repeats', () => {
    const keys = new Set(bars.map((b) => `${b.instrumentId}|${b.barDate}`));
    expect(keys.size).toBe(bars.length);
  });

  it('when the Dow file repeats its first row, 1990-12-31 is dropped and 1991-01-02 kept for all 30 columns', () => {
    expect(bars.some((b) => b.barDate === '1990-12-31')).toBe(false);
    const kept = bars.filter((b) => b.source === DOW_SOURCE && b.barDate === '1991-01-02');
    const { date: _date, ...row } = csvRows('dowjones30_adjclose_1990_2001.csv').find((r) => r.date === '1991-01-02')!;
    expect(new Set(kept.map((b) => b.instrumentId)).size).toBe(30);
    expect(kept.map((b) => b.closePrice).sort((a, b) => a - b)).toEqual(
      Object.values(row)
        .map(Number)
        .sort((a, b) => a - b),
    );
    expect(kept.find((b) => b.instrumentId === demoInstrumentId('MSFT'))?.closePrice).toBe(Number(row.MSFT));
    expect(kept.find((b) => b.instrumentId === demoInstrumentId('dow:IBM'))?.closePrice).toBe(Number(row.IBM));
  });

  it('when MSFT has both sources on a date, the raw OHLCV bar wins', () => {
    const msft = bars.filter((b) => b.instrumentId === demoInstrumentId('MSFT'));
    const onOverlap = msft.find((b) => b.barDate === '2000-12-29');
    expect(onOverlap?.source).toBe('r-cran-timeseries/MSFT');
    expect(msft.find((b) => b.barDate === '2000-09-26')?.source).toBe(DOW_SOURCE);
    expect(msft).toHaveLength(2528 - 67 + 249);
    const ohlcvDates = new Set(csvRows('msft_daily_2000_2001.csv').map((r) => r.time.slice(0, 10)));
    const dowDates = csvRows('dowjones30_adjclose_1990_2001.csv')
      .map((r) => r.date)
      .filter((d) => d !== '1990-12-31');
    expect(new Set(msft.map((b) => b.barDate))).toEqual(new Set([...dowDates, ...ohlcvDates]));
    expect(msft.filter((b) => b.source === DOW_SOURCE && ohlcvDates.has(b.barDate))).toEqual([]);
  });

  it('when a bar has OHLC, low <= open, close <= high', () => {
    const ohlc = bars.filter((x) => x.openPrice !== null);
    expect(ohlc).toHaveLength(5105 + 1047 + 249);
    const offenders = ohlc.filter((b) => !(b.lowPrice! <= Math.min(b.openPrice!, b.closePrice) && b.highPrice! >= Math.max(b.openPrice!, b.closePrice)));
    expect(offenders).toEqual([]);
  });

  it('when the S&P 500 close is read, it is the close column (2008-09-29 closed at 1106.42)', () => {
    const spx = bars.find((b) => b.instrumentId === demoInstrumentId('index:SPX') && b.barDate === '2008-09-29');
    expect(spx?.closePrice).toBeCloseTo(1106.42, 2);
  });

  it('when every source is listed, the bars come from exactly those sources', () => {
    expect(new Set(bars.map((b) => b.source))).toEqual(new Set(demoDailySources().map((s) => s.source)));
    expect(new Set(demoDailySources().map((s) => s.source))).toEqual(
      new Set(['vega-datasets/sp500-2000', 'debian-matplotlib/goog.npz', 'r-cran-timeseries/MSFT', DOW_SOURCE]),
    );
  });
});

describe('demo corporate actions and coverage', () => {
  const actions = demoCorporateActions();

  it('when an action is backfilled its knowledgeDate is null, and only then', () => {
    for (const a of actions) {
      expect(a.knowledgeProvenance === 'backfilled').toBe(a.knowledgeDate === null);
      if (a.knowledgeDate !== null) {
        expect(a.announcementDate).not.toBeNull();
        expect(a.knowledgeDate.slice(0, 10)).toBe(a.announcementDate);
        expect(a.announcementDate! < a.effectiveDate).toBe(true);
      }
    }
  });

  it('when actions are listed, ids are deterministic UUIDs and instruments exist', () => {
    expect(demoCorporateActions().map((a) => a.id)).toEqual(actions.map((a) => a.id));
    for (const a of actions) {
      expect(a.id).toMatch(UUID);
      expect(byId.has(a.instrumentId)).toBe(true);
      if (a.kind === 'split' || a.kind === 'stock_dividend') expect(a.params.ratio).toBeGreaterThan(0);
    }
  });

  it('when coverage is stated, actionsFound counts the actions in the covered window', () => {
    for (const c of demoActionCoverage()) {
      const found = actions.filter((a) => a.instrumentId === c.instrumentId && a.effectiveDate >= c.coveredFrom && a.effectiveDate <= c.checkedAt.slice(0, 10));
      expect(found).toHaveLength(c.actionsFound);
    }
    // SOURCES.md: MSFT 10 actions, GOOGL 2; GOOG (Class C) has no coverage row.
    const found = new Map(demoActionCoverage().map((c) => [c.instrumentId, c.actionsFound]));
    expect(found).toEqual(
      new Map([
        [demoInstrumentId('MSFT'), 10],
        [demoInstrumentId('GOOGL'), 2],
      ]),
    );
  });
});

describe('demo data files', () => {
  /** The data files copied to a temporary folder, `edit` applied to one of them, then read. */
  function readEdited(file: string, edit: (value: any) => void) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'mds-demo-files-'));
    try {
      for (const f of ['instruments.json', 'daily-sources.json', 'corporate-actions.json']) copyFileSync(new URL(f, DEMO_DATA_DIR), path.join(dir, f));
      const value = JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
      edit(value);
      writeFileSync(path.join(dir, file), JSON.stringify(value));
      return readCatalogFiles(pathToFileURL(`${dir}/`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('when the files are copied unchanged, they read as the bundled catalog does', () => {
    expect(readEdited('instruments.json', () => {})).toEqual(readCatalogFiles());
  });

  it('when an instrument has a field of the wrong type, the read names the file and the field', () => {
    expect(() => readEdited('instruments.json', (list) => (list[3].isActive = 'yes'))).toThrow(CatalogFileError);
    expect(() => readEdited('instruments.json', (list) => (list[3].isActive = 'yes'))).toThrow(/instruments\.json[\s\S]*\[3\]\.isActive/);
  });

  it('when an action names an instrument key that no instrument has, the read names the action and the key', () => {
    expect(() => readEdited('corporate-actions.json', (file) => (file.actions[0].instrumentKey = 'MSFTX'))).toThrow(
      /corporate-actions\.json action MSFT:split:1987-09-21: unknown instrument key "MSFTX"/,
    );
  });

  it('when two instruments share a key, the read refuses it', () => {
    expect(() => readEdited('instruments.json', (list) => (list[1].key = list[0].key))).toThrow(/key "dow:AA" is used twice/);
  });

  it('when a close-only source maps a column to an unknown instrument, the read names the column', () => {
    expect(() => readEdited('daily-sources.json', (list) => (list.at(-1).instrumentByColumn.IBM = 'dow:IBMX'))).toThrow(
      /column IBM: unknown instrument key "dow:IBMX"/,
    );
  });
});

describe('synthetic minute bars', () => {
  const first = syntheticMinuteBars();

  it('when generated twice, the output is identical', () => {
    expect(syntheticMinuteBars()).toEqual(first);
    expect(first.length).toBeGreaterThan(1000);
    expect(first.length).toBeLessThanOrEqual(10_000);
  });

  it('when a bar is generated, its OHLC is consistent and its volume a positive integer', () => {
    const intradayClasses = new Set(['equity', 'etf', 'crypto']);
    const offenders = first.filter(
      (b) =>
        !(b.lowPrice <= Math.min(b.openPrice, b.closePrice) && b.highPrice >= Math.max(b.openPrice, b.closePrice)) ||
        !(Number.isInteger(b.volume) && b.volume > 0) ||
        b.source !== 'synthetic-demo' ||
        !intradayClasses.has(byId.get(b.instrumentId)?.assetClass ?? 'missing'),
    );
    expect(offenders).toEqual([]);
    expect(new Set(first.map((b) => byId.get(b.instrumentId)!.assetClass))).toEqual(intradayClasses);
  });

  it('when generated, each instrument has one bar per minute, none repeated', () => {
    const keys = new Set(first.map((b) => `${b.instrumentId}|${b.barTimestamp}`));
    expect(keys.size).toBe(first.length);
    expect(first.filter((b) => !/^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/.test(b.barTimestamp))).toEqual([]);
  });
});
