import { demoCorporateActions, demoDailyBars, demoInstrumentId, demoInstruments, type DemoDailyBar } from './catalog.ts';
import { demoEconomicEvents } from './economic-events.ts';
import { demoFxRates } from './fx-closes.ts';
import { demoMacroSeries } from './macro-series.ts';
import { demoRiskFreeRates } from './risk-free-rates.ts';
import { syntheticEarnings } from './synthetic-earnings.ts';
import { syntheticMinuteBars } from './synthetic-intraday.ts';
import { syntheticNews } from './synthetic-news.ts';
import {
  SYNTHETIC_CHAINS,
  SYNTHETIC_OPTIONS_DIVIDEND_YIELD,
  SYNTHETIC_OPTIONS_MULTIPLIER,
  syntheticOptionContracts,
  syntheticOptionQuotes,
} from './synthetic-options.ts';
import { SENTIMENT_INSTRUMENT_KEYS, SENTIMENT_WIRE_SOURCE, syntheticSentimentScores } from './synthetic-sentiment.ts';
import { dayNumber, dayToDate } from '../core/day-numbers.ts';

/**
 * The public API's examples, taken from the demo data set: for each
 * operation (by operationId), the value of every parameter a person types,
 * and the JSON body of each POST. All of one operation's examples are sent
 * together by the reference's "Try it out", so each set is one request the
 * demo data answers with the operation's success status (`npm run
 * openapi:examples` makes every one of them and fails otherwise,
 * server/cli/write-openapi-examples.ts).
 *
 * Reading every demo bar and generating the synthetic sets takes over a
 * second, so the API document does not call this: the examples script
 * writes its result, with the answers, to docs/openapi/examples.json, which
 * the document embeds, and test/unit/openapi-examples.test.ts fails when
 * that file differs from what the demo data gives now.
 */
export interface DemoApiExamples {
  parameters: Record<string, Record<string, string | number>>;
  /**
   * Parameters that take the place of others (another mode of the read, or
   * an alias), each shown as an example of its schema, which "Try it out"
   * does not fill in: sent with the filled-in ones, they would make a
   * request the route refuses.
   */
  alternatives: Record<string, Record<string, string>>;
  bodies: Record<string, unknown>;
}

/**
 * Parameters whose values the service makes, so no example from the demo
 * data could work: where a person gets each. By `<operationId> <name>`, or
 * by name for every operation.
 */
export const SERVICE_MADE_PARAMETERS: Readonly<Record<string, string>> = {
  cursor: "the previous page's meta.nextCursor, signed by the deployment that made it",
  expires: "the manifest's signed link of an export file",
  signature: "the manifest's signed link of an export file",
  'getExport id': 'the answer of POST /v1/exports (data.id): export jobs belong to the account that made them',
  'deleteExport id': 'the answer of POST /v1/exports (data.id): export jobs belong to the account that made them',
  'getExportFile id': 'the answer of POST /v1/exports (data.id): export jobs belong to the account that made them',
  'getExportFile name': "the job's manifest (data.files[].name), once the job is done",
};

/** The demo load ingests each instrument's corporate actions in one upload, which makes version 1 of its action set. */
const DEMO_ACTION_SET_VERSION = 1;

// Choices of window and count, not data: how much of the demo an example asks for.
const DAILY_SESSIONS = 20;
const ANALYTICS_LOOKBACK_DAYS = 365;
const PAGE_LIMIT = 10;
const MACRO_MONTHS = 12;
const EARNINGS_WINDOW_DAYS = 90;

const last = <T>(items: readonly T[]): T => {
  if (items.length === 0) throw new Error('the demo data set has no row for an example');
  return items[items.length - 1];
};
const yearOf = (day: string) => day.slice(0, 4);
const dayOf = (instant: string) => instant.slice(0, 10);

export function demoApiExamples(): DemoApiExamples {
  const msft = demoInstrumentId('MSFT');
  const ibm = demoInstrumentId('dow:IBM');
  const spx = demoInstrumentId('index:SPX');
  const instrument = demoInstruments().find((i) => i.id === msft);
  if (!instrument) throw new Error('MSFT is not in the demo catalog');

  const barsById = new Map<string, DemoDailyBar[]>();
  for (const bar of demoDailyBars()) {
    const bars = barsById.get(bar.instrumentId) ?? [];
    bars.push(bar);
    barsById.set(bar.instrumentId, bars);
  }
  const datesOf = (id: string) => (barsById.get(id) ?? []).map((b) => b.barDate).sort();

  // One instrument: MSFT's last sessions; several: the last sessions MSFT, IBM and the S&P 500 all have.
  const msftDates = datesOf(msft);
  const msftLast = last(msftDates);
  const msftFrom = msftDates[msftDates.length - DAILY_SESSIONS];
  const shared = [ibm, spx].map((id) => new Set(datesOf(id)));
  const common = msftDates.filter((d) => shared.every((s) => s.has(d)));
  const commonLast = last(common);
  const commonFrom = common[common.length - DAILY_SESSIONS];
  const three = [msft, ibm, spx].join(',');

  // MSFT's corporate actions, and the last day one became known.
  const actions = demoCorporateActions()
    .filter((a) => a.instrumentId === msft)
    .sort((a, b) => (a.effectiveDate < b.effectiveDate ? -1 : 1));
  const lastKnown = last(actions.flatMap((a) => (a.knowledgeDate ? [dayOf(a.knowledgeDate)] : [])).sort());

  // MSFT's option chain on its last observation day, at the close, and the contract nearest the money.
  const chain = SYNTHETIC_CHAINS.find((c) => c.instrumentKey === 'MSFT');
  if (!chain) throw new Error('the demo has no MSFT option chain');
  const contracts = syntheticOptionContracts().filter((c) => c.instrumentId === msft);
  const chainAt = last(
    syntheticOptionQuotes()
      .filter((q) => contracts.some((c) => c.id === q.contractId))
      .map((q) => q.observedAt)
      .sort(),
  );
  const chainDay = dayOf(chainAt);
  const spot = barsById.get(msft)?.find((b) => b.barDate === chainDay)?.closePrice;
  if (spot === undefined) throw new Error(`MSFT has no close on ${chainDay}`);
  const expiry = chain.expiries[1];
  const strikes = [...new Set(contracts.filter((c) => c.expiry === expiry).map((c) => c.strike))].sort((a, b) => a - b);
  const atTheMoney = strikes.reduce((best, s) => (Math.abs(s - spot) < Math.abs(best - spot) ? s : best));
  const above = strikes.filter((s) => s > atTheMoney);
  const contract = contracts.find((c) => c.expiry === expiry && c.strike === atTheMoney && c.right === 'call');
  if (!contract || above.length < 2) throw new Error('the MSFT chain has no call at the money with two strikes above it');
  const expiryDays = dayNumber(expiry) - dayNumber(chainDay);
  // The rate a computed Greek of that chain uses: the latest TB3MS month known by then.
  const rate = last(demoRiskFreeRates().filter((r) => r.knownFrom.getTime() <= Date.parse(chainAt))).value / 100;
  const model = { spot, expiryDays, rate, vol: chain.atmVol, dividendYield: SYNTHETIC_OPTIONS_DIVIDEND_YIELD };
  const underlyings = SYNTHETIC_CHAINS.map((c) => demoInstrumentId(c.instrumentKey)).join(',');

  // MSFT's synthetic one-minute bars: their first and last UTC day, and the instant after the last minute.
  const minutes = syntheticMinuteBars()
    .filter((b) => b.instrumentId === msft)
    .map((b) => b.barTimestamp)
    .sort();
  const minutesKnown = new Date(Date.parse(last(minutes)) + 60_000).toISOString();

  // MSFT's latest results news, and its calendar year.
  const results = last(
    syntheticNews()
      .filter((n) => n.instrumentId === msft && n.eventClass === 'earnings_release')
      .map((n) => n.publishedAt)
      .sort(),
  );
  const newsYear = yearOf(results);
  const news = { id: msft, from: `${newsYear}-01-01`, to: `${newsYear}-12-31`, eventClass: 'earnings_release' };

  // MSFT's latest reported earnings.
  const reported = last(
    syntheticEarnings()
      .filter((e) => e.instrumentId === msft && e.status === 'reported')
      .map((e) => e.reportDate)
      .sort(),
  );

  // The latest high-importance release with an actual figure.
  const release = last(
    demoEconomicEvents()
      .filter((e) => e.importance === 'high' && e.actual !== null)
      .sort((a, b) => (a.scheduledAt < b.scheduledAt ? -1 : 1)),
  );

  const fx = last(demoFxRates());
  const series = demoMacroSeries().series[0];
  const observations = series.observations.map((o) => o.date);

  // The first sentiment instrument's last wire scores.
  const sentimentId = demoInstrumentId(SENTIMENT_INSTRUMENT_KEYS[0]);
  const scored = syntheticSentimentScores()
    .filter((s) => s.instrumentId === sentimentId && s.source === SENTIMENT_WIRE_SOURCE && s.subjectClass === 'business')
    .map((s) => s.asOfDate)
    .sort();

  const [broker, brokerCode] = Object.entries(instrument.brokerCodes)[0] ?? [];
  if (!broker || !brokerCode) throw new Error('MSFT has no demo broker code');

  return {
    parameters: {
      searchInstruments: { query: instrument.currentSymbol, assetClass: instrument.assetClass, asOf: msftLast, limit: PAGE_LIMIT },
      getInstrument: { id: msft },
      getInstrumentsBulk: { ids: three },
      getDailyPrices: {
        id: msft,
        from: msftFrom,
        to: msftLast,
        adjusted: 'true',
        asOf: msftLast,
        includeBackfilled: 'false',
        actionSetVersion: DEMO_ACTION_SET_VERSION,
        format: 'json',
      },
      getBulkPrices: { instrumentIds: three, from: commonFrom, to: commonLast, adjusted: 'true', asOf: commonLast, includeBackfilled: 'false', format: 'json' },
      getIntradayBars: { id: msft, from: dayOf(minutes[0]), to: dayOf(last(minutes)), interval: '1hour', asOf: minutesKnown, format: 'json' },
      getCorporateActions: {
        id: msft,
        from: actions[0].effectiveDate,
        to: last(actions).effectiveDate,
        asOf: lastKnown,
        includeBackfilled: 'true',
        actionSetVersion: DEMO_ACTION_SET_VERSION,
      },
      getTechnicals: { id: msft, lookbackDays: ANALYTICS_LOOKBACK_DAYS, asOf: msftLast },
      getCorrelations: { instrumentIds: three, lookbackDays: ANALYTICS_LOOKBACK_DAYS, method: 'pearson', asOf: commonLast },
      getBeta: { id: msft, benchmarkId: spx, lookbackDays: ANALYTICS_LOOKBACK_DAYS, asOf: msftLast },
      getMacroSeries: { seriesId: series.seriesId, start: observations[observations.length - MACRO_MONTHS], end: last(observations) },
      getRiskFreeRate: { asOf: chainDay },
      getFxRate: { base: fx.base, quote: fx.quote, date: fx.rateDate, asOf: fx.asOf },
      listEconomicEvents: {
        from: `${dayOf(release.scheduledAt).slice(0, 7)}-01`,
        to: dayOf(release.scheduledAt),
        eventClass: release.eventClass,
        country: release.country,
        importance: release.importance,
        limit: PAGE_LIMIT,
      },
      getOptionChain: { id: msft, expiry, strike: atTheMoney, right: 'call', asOf: chainAt },
      listOptionExpiries: { id: msft, asOf: chainAt },
      getOptionContract: { id: contract.id, asOf: chainAt },
      getBulkImpliedVolatility: { instrumentIds: underlyings, maxAgeDays: 5, includeTermStructure: 'true', asOf: chainDay },
      listEarnings: { from: dayToDate(dayNumber(reported) - (EARNINGS_WINDOW_DAYS - 1)), to: reported, instrumentId: msft },
      getInstrumentEarnings: { id: msft, from: `${yearOf(reported)}-01-01`, to: `${yearOf(reported)}-12-31` },
      getSentiment: {
        id: sentimentId,
        from: scored[scored.length - DAILY_SESSIONS],
        to: last(scored),
        subjectClass: 'business',
        source: SENTIMENT_WIRE_SOURCE,
      },
      listSentimentSourceLeads: { source: SENTIMENT_WIRE_SOURCE, subjectClass: 'business' },
      getNews: { ...news, limit: PAGE_LIMIT },
      getCatalystEvents: { ...news, limit: PAGE_LIMIT },
      getEventReactions: news,
      getEventReactionCoverage: { eventClasses: 'earnings_release', minReactions: 1, minWindowDays: ANALYTICS_LOOKBACK_DAYS, limit: PAGE_LIMIT },
      listExports: { limit: PAGE_LIMIT },
    },
    alternatives: {
      // The other mode of search: by broker code, without query.
      searchInstruments: { brokerCode, broker },
      // Aliases: the same parameter by the name the rest of the API uses.
      getInstrumentsBulk: { instrumentIds: three },
      getMacroSeries: { from: observations[observations.length - MACRO_MONTHS], to: last(observations) },
    },
    bodies: {
      priceOption: { ...model, strike: atTheMoney, type: 'call' },
      probabilityOfTarget: { ...model, target: above[0], direction: 'long' },
      strategyExpectedValue: {
        structure: 'bull_call_spread',
        legs: [
          { action: 'buy', type: 'call', strike: atTheMoney, quantity: 1 },
          { action: 'sell', type: 'call', strike: above[1], quantity: 1 },
        ],
        ...model,
        contractMultiplier: SYNTHETIC_OPTIONS_MULTIPLIER,
      },
      createExport: {
        dataset: 'daily-prices',
        instrumentIds: [msft, ibm, spx],
        // The last calendar year the three share, and the sessions after it.
        from: `${Number(yearOf(commonLast)) - 1}-01-01`,
        to: commonLast,
        adjusted: true,
        asOf: commonLast,
        format: 'csv',
      },
    },
  };
}
