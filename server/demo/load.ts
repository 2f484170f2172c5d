import type { Database } from '../db/database.ts';
import type { Sql } from '../db/sql.ts';
import type { Derived } from '../ingest/derived.ts';
import { batchesOf } from '../ingest/body.ts';
import type { IngestResult } from '../ingest/kind.ts';
import { ingestRows } from '../ingest/service.ts';
import { instrumentIngest } from '../instruments/ingest.ts';
import { anyInstrumentStored } from '../instruments/repository.ts';
import { dailyBarIngest, intradayBarIngest } from '../prices/ingest.ts';
import { corporateActionIngest, coverageCheckIngest } from '../actions/ingest.ts';
import { earningsIngest } from '../earnings/ingest.ts';
import { economicEventIngest } from '../economic-events/ingest.ts';
import { fxRateIngest } from '../fx/ingest.ts';
import { newsIngest } from '../news/ingest.ts';
import { optionContractIngest, optionQuoteIngest } from '../options/ingest.ts';
import { sentimentIngest } from '../sentiment/ingest.ts';
import { demoActionCoverage, demoCorporateActions, demoDailyBars, demoDailySources, demoInstruments } from './catalog.ts';
import { demoEconomicEvents } from './economic-events.ts';
import { demoFxRates } from './fx-closes.ts';
import { loadDemoMacroSeries } from './macro-series.ts';
import { storeShippedRiskFreeRates } from './risk-free-rates.ts';
import { syntheticEarnings } from './synthetic-earnings.ts';
import { syntheticMinuteBars } from './synthetic-intraday.ts';
import { syntheticNews } from './synthetic-news.ts';
import { syntheticOptionContracts, syntheticOptionQuotes } from './synthetic-options.ts';
import { syntheticSentimentScores } from './synthetic-sentiment.ts';
import { entryOf } from '../core/map-entry.ts';

/**
 * Loads the bundled demo set through the same ingest path as the admin API,
 * so it is validated the same way and loading it twice changes nothing; then
 * runs every derivation (`deriveAll`, server/wiring/derivations.ts) over it.
 */
export async function loadDemoData(deps: DemoLoadDeps): Promise<DemoLoad> {
  return { stored: await deps.db.run((sql) => loadDemoRows(sql)), derived: await deps.deriveAll() };
}

/** The primary, and every derivation run over what it holds. */
export interface DemoLoadDeps {
  db: Database;
  deriveAll: () => Promise<Derived>;
}

/** The counts of each ingested kind, and what was derived from them. */
export interface DemoLoad {
  stored: Record<string, IngestResult>;
  derived: Derived;
}

async function loadDemoRows(sql: Sql): Promise<Record<string, IngestResult>> {
  const instruments = demoInstruments().map(({ currentSymbol: _current, ...i }) => i);
  const basis = new Map(demoDailySources().map((s) => [s.source, s]));
  // Each daily bar is stated known when its session closes (catalog.ts,
  // demoKnownAt), each 1-minute bar when its minute ends (docs/demo-data.md).
  function* dailyBars() {
    for (const bar of demoDailyBars()) {
      const source = entryOf(basis, bar.source);
      yield { ...bar, priceBasis: source.priceBasis, reflectsActionsThrough: source.reflectsActionsThrough };
    }
  }
  function* minuteBars() {
    for (const bar of syntheticMinuteBars()) yield { ...bar, asOf: new Date(Date.parse(bar.barTimestamp) + 60_000).toISOString() };
  }
  return {
    instruments: await ingestRows(sql, instrumentIngest, batchesOf(instruments)),
    dailyBars: await ingestRows(sql, dailyBarIngest, batchesOf(dailyBars())),
    intradayBars: await ingestRows(sql, intradayBarIngest, batchesOf(minuteBars())),
    corporateActions: await ingestRows(sql, corporateActionIngest, batchesOf(demoCorporateActions())),
    coverageChecks: await ingestRows(sql, coverageCheckIngest, batchesOf(demoActionCoverage())),
    macroSeries: await loadDemoMacroSeries(sql),
    riskFreeRates: await storeShippedRiskFreeRates(sql),
    fxRates: await ingestRows(sql, fxRateIngest, batchesOf(demoFxRates())),
    economicEvents: await ingestRows(sql, economicEventIngest, batchesOf(demoEconomicEvents())),
    earnings: await ingestRows(sql, earningsIngest, batchesOf(syntheticEarnings())),
    optionContracts: await ingestRows(sql, optionContractIngest, batchesOf(syntheticOptionContracts())),
    optionQuotes: await ingestRows(sql, optionQuoteIngest, batchesOf(syntheticOptionQuotes())),
    news: await ingestRows(sql, newsIngest, batchesOf(syntheticNews())),
    sentiment: await ingestRows(sql, sentimentIngest, batchesOf(syntheticSentimentScores())),
  };
}

/** First start with DEMO_DATA=auto: an empty instrument table gets the demo set. */
export async function loadDemoDataIfEmpty(deps: DemoLoadDeps): Promise<DemoLoad | null> {
  if (await deps.db.run((sql) => anyInstrumentStored(sql))) return null;
  return loadDemoData(deps);
}
