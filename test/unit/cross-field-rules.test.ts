import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { AppError } from '../../server/core/errors.ts';
import type { Part } from '../../server/core/received-words.ts';
import { parse } from '../../server/core/validate.ts';
import { CorporateActionRowSchema } from '../../server/actions/schema.ts';
import { ExportRequestSchema } from '../../server/exports/schema.ts';
import { InstrumentSearchSchema } from '../../server/instruments/schema.ts';
import { MacroSeriesQuerySchema } from '../../server/macro/schema.ts';
import { NewsQuerySchema } from '../../server/news/schema.ts';
import { OptionQuoteRowSchema } from '../../server/options/schema.ts';
import { DailyBarRowSchema } from '../../server/prices/bar-rows.ts';
import { BulkPricesQuerySchema, DailyPricesQuerySchema, IntradayQuerySchema } from '../../server/prices/schema.ts';

// A rule across fields (to on or after from, a span per interval, a field
// allowed for one dataset only, one search mode) is reported beside every
// other refused field of the same request, so one 400 names all that is
// wrong (docs/api.md, "Errors"). The fields and rules below are the API's
// documented ones; each request breaks one rule across fields and at least
// one field's own rule.

const MSFT = '205540c9-accb-5e87-a5fe-eb333bf4f589';

function details(schema: z.ZodType, value: unknown, part: Part = 'query'): Record<string, string[]> {
  try {
    parse(schema, value, part);
  } catch (e) {
    if (e instanceof AppError) return e.details as Record<string, string[]>;
    throw e;
  }
  throw new Error('accepted');
}

describe('a rule across fields is reported beside the fields refused on their own', () => {
  it('bulk and daily reads: to before from, with an unknown format and parameter', () => {
    const d = details(BulkPricesQuerySchema, { instrumentIds: MSFT, from: '2001-01-01', to: '2000-01-01', format: 'xls', foo: '1' });
    expect(Object.keys(d).sort()).toEqual(['foo', 'format', 'to']);
    expect(d.to[0]).toMatch(/^must be on or after from/);
    const daily = details(DailyPricesQuerySchema, { from: '1990-01-01', to: '2025-01-01', adjusted: 'maybe' });
    expect(Object.keys(daily).sort()).toEqual(['adjusted', 'to']);
    expect(daily.to[0]).toMatch(/^the range may span at most 10980 days/);
  });

  it("intraday: the interval's span with a wrong format; no span rule while the interval is wrong", () => {
    const d = details(IntradayQuerySchema, { from: '2020-01-01', to: '2020-03-01', interval: '1min', format: 'xls' });
    expect(Object.keys(d).sort()).toEqual(['format', 'to']);
    expect(d.to[0]).toMatch(/^the range may span at most 31 days/);
    expect(Object.keys(details(IntradayQuerySchema, { from: '2020-01-01', to: '2021-06-01', interval: '2min' }))).toEqual(['interval']);
    const inverted = details(IntradayQuerySchema, { from: '2020-02-01', to: '2020-01-01', interval: '2min' });
    expect(Object.keys(inverted).sort()).toEqual(['interval', 'to']);
  });

  it('export body: each rule whose fields parsed', () => {
    const daily = details(
      ExportRequestSchema,
      { dataset: 'daily-prices', from: '2001-01-01', to: '2000-12-31', format: 'xls', compression: 'zstd', interval: '1min' },
      'body',
    );
    // compression is for csv only, which cannot be told while the format is wrong
    expect(Object.keys(daily).sort()).toEqual(['format', 'interval', 'to']);
    expect(daily.interval[0]).toMatch(/^is for intraday-bars only/);
    expect(daily.to[0]).toMatch(/^must be on or after from/);

    const intraday = details(
      ExportRequestSchema,
      { dataset: 'intraday-bars', from: '2020-01-01', to: '2021-06-30', interval: '1min', format: 'parquet', compression: 'gzip', includeBackfilled: 'yes' },
      'body',
    );
    expect(Object.keys(intraday).sort()).toEqual(['compression', 'includeBackfilled', 'to']);
    expect(intraday.compression[0]).toMatch(/^is for csv only/);
    expect(intraday.to[0]).toMatch(/^the range may span at most 366 days for 1min bars/);

    const dailyWithInterval = details(
      ExportRequestSchema,
      { dataset: 'daily-prices', from: '1960-01-01', to: '2020-12-31', interval: '5min', format: 'csv' },
      'body',
    );
    expect(Object.keys(dailyWithInterval).sort()).toEqual(['interval', 'to']);
    expect(dailyWithInterval.to[0]).toMatch(/^the range may span at most 10980 days/);
    const intradayWrongInterval = details(
      ExportRequestSchema,
      { dataset: 'intraday-bars', from: '1960-01-01', to: '2020-12-31', interval: '2min', format: 'csv' },
      'body',
    );
    expect(Object.keys(intradayWrongInterval)).toEqual(['interval']);

    const unknownDataset = details(ExportRequestSchema, { dataset: 'weekly', from: '2001-01-01', to: '2000-12-31', format: 'csv', interval: '1min' }, 'body');
    expect(Object.keys(unknownDataset).sort()).toEqual(['dataset', 'to']);
  });

  it('instrument search, macro series and news: the mode and the ordered bounds', () => {
    const search = details(InstrumentSearchSchema, { assetClass: 'bogus' });
    expect(Object.keys(search).sort()).toEqual(['assetClass', 'query']);

    // the window's bounds are named by the specification's words, start and end, whichever were sent
    const macro = details(MacroSeriesQuerySchema, { from: '2020-01-01', to: '2019-01-01', bogus: 'x' });
    expect(Object.keys(macro).sort()).toEqual(['bogus', 'end']);
    expect(macro.end[0]).toMatch(/^must be on or after start/);

    const news = details(NewsQuerySchema, { from: '2020-01-01', to: '2019-01-01', limit: 'x' });
    expect(Object.keys(news).sort()).toEqual(['limit', 'to']);
  });

  it('upload rows: each rule whose fields parsed', () => {
    const bar = {
      instrumentId: MSFT,
      barDate: '2020-01-02',
      openPrice: 10,
      highPrice: 12,
      lowPrice: 8,
      closePrice: 11,
      volume: 1,
      quoteCurrency: 'USD',
      quoteUnit: 'USD per share',
      source: 'test',
    };
    const vendor = details(DailyBarRowSchema, { ...bar, closePrice: 'abc', priceBasis: 'vendor_adjusted' }, 'row');
    expect(Object.keys(vendor).sort()).toEqual(['closePrice', 'reflectsActionsThrough']);
    const future = details(DailyBarRowSchema, { ...bar, quoteCurrency: 7, asOf: '2099-01-03T00:00:00Z' }, 'row');
    expect(Object.keys(future).sort()).toEqual(['asOf', 'quoteCurrency']);
    expect(future.asOf[0]).toMatch(/in the future/);

    const quote = { observedAt: '2020-01-03T00:00:00Z', bid: 2, ask: 1, lastPrice: null, volume: null, openInterest: null, source: 'test', greeks: null };
    const crossed = details(OptionQuoteRowSchema, { ...quote, contractId: 5 }, 'row');
    expect(Object.keys(crossed).sort()).toEqual(['ask', 'contractId']);
    expect(crossed.ask[0]).toMatch(/^must be at least bid/);

    const action = { instrumentId: MSFT, kind: 'split', effectiveDate: '2020-01-02', knowledgeDate: '2020-01-01', params: { ratio: 1 }, source: 'test' };
    const split = details(CorporateActionRowSchema, { ...action, knowledgeProvenance: 'guessed' }, 'row');
    expect(Object.keys(split).sort()).toEqual(['knowledgeProvenance', 'params.ratio']);
  });

  it('a value that is not an object is refused for that alone', () => {
    for (const value of [null, [], 'x']) expect(Object.keys(details(ExportRequestSchema, value, 'body'))).not.toContain('to');
  });
});
