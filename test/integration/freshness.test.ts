import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstrument, dailyBar, ingest, uniqueSymbol, weekdays } from './fixtures.ts';
import { startService, type Service } from './harness.ts';
import { demoInstrumentId, demoInstruments } from '../../server/demo/catalog.ts';
import { batchesOf } from '../../server/ingest/body.ts';
import { ingestRows } from '../../server/ingest/service.ts';
import { instrumentIngest } from '../../server/instruments/ingest.ts';

// meta.stale and meta.staleReason on every area (docs/api.md, "Freshness"):
// for each, one fresh read and one stale read, the expectations from the
// documented rule applied by hand to the fixtures. Reads with asOf use fixed
// instants; reads at the time of reading use fixtures dated the day the test
// runs, chosen so that the rule holds whatever moment the read happens at
// (argued at each).

let svc: Service;
let key: string;

beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith([
    'analytics:read',
    'prices:read',
    'actions:read',
    'instruments:read',
    'technicals:read',
    'correlations:read',
    'news:read',
    'events:read',
    'sentiment:read',
    'earnings:read',
  ]);
});
afterAll(() => svc.stop());

const get = async (path: string) => {
  const res = await svc.get(path, key);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};
const fresh = { stale: false, staleReason: null };
const staleBy = (staleReason: string) => ({ stale: true, staleReason });

const DAY_MS = 86_400_000;
/** The UTC day `n` days before the day the test runs. */
const daysAgo = (n: number) => new Date(Date.now() - n * DAY_MS).toISOString().slice(0, 10);

describe('daily prices, bulk prices and the analytics over them', () => {
  // Monday 2021-06-07 .. Friday 2021-06-11. The close is 16:00 EDT, 20:00 UTC.
  let week: string;
  let other: string;
  let empty: string;
  let marked: string;
  beforeAll(async () => {
    [{ id: week }, { id: other }, { id: empty }, { id: marked }] = await Promise.all([
      createInstrument(svc),
      createInstrument(svc),
      createInstrument(svc),
      createInstrument(svc),
    ]);
    const days = weekdays('2021-06-07', '2021-06-11');
    await ingest(svc, '/bars/daily', [
      ...days.map((barDate, i) => dailyBar(week, { barDate, close: 100 + i * (i % 2 ? 1 : -0.5) })),
      // The other series ends a day earlier, on Thursday.
      ...days.slice(0, 4).map((barDate, i) => dailyBar(other, { barDate, close: 50 + i * (i % 2 ? -1 : 0.75) })),
      ...days.map((barDate, i) => dailyBar(marked, { barDate, close: 20 + i }, i === 2 ? { stale: true } : {})),
    ]);
  });

  const prices = (id: string, asOf: string) => get(`/v1/instruments/${id}/prices?from=2021-06-07&to=2021-06-11&asOf=${asOf}`);

  it('when the last bar is the last completed session at asOf, then fresh; at a weekend, still; a session later, series_behind', async () => {
    // The date asOf 2021-06-11 is 23:59:59.999 UTC, after Friday's close: the last completed session is Friday, the last bar.
    expect((await prices(week, '2021-06-11')).meta).toMatchObject(fresh);
    // Saturday and Sunday: no session since Friday's.
    expect((await prices(week, '2021-06-13')).meta).toMatchObject(fresh);
    // Monday 15:59:59 EDT: Monday's session has not closed yet.
    expect((await prices(week, '2021-06-14T19:59:59Z')).meta).toMatchObject(fresh);
    // Monday 16:00 EDT: Monday closed without a bar.
    expect((await prices(week, '2021-06-14T20:00:00Z')).meta).toMatchObject(staleBy('series_behind'));
    // The window does not decide: Thursday's series read on Friday evening is behind.
    expect((await prices(other, '2021-06-11')).meta).toMatchObject(staleBy('series_behind'));
    expect((await prices(other, '2021-06-10')).meta).toMatchObject(fresh);
  });

  it('when the last bar was known only after asOf, then it does not count: the series read at asOf is behind', async () => {
    const { id } = await createInstrument(svc);
    const days = weekdays('2021-06-07', '2021-06-11');
    // Friday's bar became known on Monday 2021-06-14 at noon UTC.
    await ingest(
      svc,
      '/bars/daily',
      days.map((barDate, i) => dailyBar(id, { barDate, close: 70 + i }, barDate === '2021-06-11' ? { knownAt: '2021-06-14T12:00:00.000Z' } : {})),
    );
    expect((await prices(id, '2021-06-11')).meta).toMatchObject(staleBy('series_behind'));
    expect((await prices(id, '2021-06-14T12:00:00Z')).meta).toMatchObject(fresh);
  });

  it('when the instrument has no bar on or before the read day, then no_bars; when a returned bar was marked stale at ingest, bar_marked_stale', async () => {
    expect((await prices(empty, '2021-06-11')).meta).toMatchObject(staleBy('no_bars'));
    expect((await prices(week, '2021-06-06')).meta).toMatchObject(staleBy('no_bars'));
    expect((await prices(marked, '2021-06-11')).meta).toMatchObject(staleBy('bar_marked_stale'));
  });

  it('when a bulk read holds a series behind, then it is stale; when every series is current, fresh', async () => {
    const bulk = (ids: string[], asOf: string) => get(`/v1/prices/bulk?instrumentIds=${ids.join(',')}&from=2021-06-07&to=2021-06-11&asOf=${asOf}`);
    expect((await bulk([week, other], '2021-06-10')).meta).toMatchObject(fresh);
    expect((await bulk([week, other], '2021-06-11')).meta).toMatchObject(staleBy('series_behind'));
    // An unknown id is not a series.
    expect((await bulk([week, randomUUID()], '2021-06-11')).meta).toMatchObject(fresh);
  });

  it('when technicals or beta are read at an asOf the series reach, then fresh; at one a session past them, series_behind', async () => {
    const technicals = (asOf: string) => get(`/v1/instruments/${week}/technicals?asOf=${asOf}&lookbackDays=30`);
    expect((await technicals('2021-06-11')).meta).toMatchObject({ source: 'computed from adjusted daily bars', ...fresh });
    expect((await technicals('2021-06-14')).meta).toMatchObject(staleBy('series_behind'));
    const beta = (asOf: string) => get(`/v1/instruments/${week}/beta?benchmarkId=${other}&asOf=${asOf}&lookbackDays=30`);
    expect((await beta('2021-06-10')).meta).toMatchObject(fresh);
    // The benchmark stops on Thursday.
    expect((await beta('2021-06-11')).meta).toMatchObject(staleBy('series_behind'));
    const correlations = (asOf: string) => get(`/v1/correlations?instrumentIds=${week},${other}&asOf=${asOf}&lookbackDays=30`);
    expect((await correlations('2021-06-10')).meta).toMatchObject(fresh);
    expect((await correlations('2021-06-11')).meta).toMatchObject(staleBy('series_behind'));
  });

  it('when a POST analytics computes from its body alone, then nothing stored can be behind: fresh', async () => {
    const res = await svc.post('/v1/analytics/probability', key, { spot: 100, target: 110, expiryDays: 30, rate: 0.05, vol: 0.2, direction: 'long' });
    expect(res.status).toBe(200);
    expect(res.body.meta).toEqual({ asOf: expect.any(String), source: 'computed', ...fresh });
  });
});

describe('intraday bars', () => {
  it('when the last minute is this moment, then fresh; when it is of 2024-03-04, series_behind', async () => {
    const [{ id: now }, { id: old }] = await Promise.all([createInstrument(svc), createInstrument(svc)]);
    // A minute ago: its New York day is on or after that of the last completed session at any later
    // moment of the test (a close that has passed is at 16:00 of a New York day no later than the minute's).
    const minuteAgo = new Date(Math.floor((Date.now() - 60_000) / 60_000) * 60_000).toISOString();
    const minute = (instrumentId: string, barTimestamp: string) => ({
      instrumentId,
      barTimestamp,
      openPrice: 10,
      highPrice: 10.5,
      lowPrice: 9.5,
      closePrice: 10.25,
      volume: 100,
      quoteCurrency: 'USD',
      quoteUnit: 'USD per share',
      source: 'test-fixture',
      // Known when its minute ends (no sooner: a 1-minute bar is not known before then).
      asOf: new Date(Date.parse(barTimestamp) + 60_000).toISOString(),
    });
    await ingest(svc, '/bars/intraday', [minute(now, minuteAgo), minute(old, '2024-03-04T15:00:00Z')]);
    const day = minuteAgo.slice(0, 10);
    expect((await get(`/v1/instruments/${now}/intraday?from=${day}&to=${day}&interval=1min`)).meta).toMatchObject(fresh);
    expect((await get(`/v1/instruments/${old}/intraday?from=2024-03-04&to=2024-03-04&interval=1min`)).meta).toMatchObject(staleBy('series_behind'));
  });
});

function newsItem(instrumentId: string, publishedAt: string, source: string, isCompanyConfirmed = true) {
  return {
    id: randomUUID(),
    instrumentId,
    eventClass: 'guidance',
    headline: `Freshness ${randomUUID().slice(0, 8)}`,
    source,
    url: `https://news.example.test/${randomUUID()}`,
    publishedAt,
    isCompanyConfirmed,
  };
}

describe('news, catalyst events, event reactions and their coverage', () => {
  it('when the source of the rows published within the last 7 days, then news and events are fresh; a source silent since 2001, source_silent', async () => {
    const { id } = await createInstrument(svc);
    const live = `live-wire-${randomUUID().slice(0, 8)}`;
    const silent = `silent-wire-${randomUUID().slice(0, 8)}`;
    // The live source's newest item is this moment, on another instrument: a source is judged on all it publishes.
    const { id: elsewhere } = await createInstrument(svc);
    await ingest(svc, '/news', [
      newsItem(id, '2001-05-02T14:00:00.000Z', live),
      newsItem(elsewhere, new Date().toISOString(), live),
      newsItem(id, '2001-05-01T14:00:00.000Z', silent),
    ]);
    expect((await get(`/v1/instruments/${id}/news?from=2001-05-02&to=2001-05-02`)).meta).toMatchObject({ source: live, ...fresh });
    expect((await get(`/v1/instruments/${id}/events?from=2001-05-02&to=2001-05-02`)).meta).toMatchObject({ source: live, ...fresh });
    expect((await get(`/v1/instruments/${id}/news`)).meta).toMatchObject(staleBy('source_silent'));
    expect((await get(`/v1/instruments/${id}/events?to=2001-05-01`)).meta).toMatchObject({ source: silent, ...staleBy('source_silent') });
    // No rows: the sources that ever published the instrument's news are judged, and the live one still publishes.
    expect((await get(`/v1/instruments/${id}/news?from=1990-01-01&to=1990-01-02`)).meta).toMatchObject({ source: 'none', ...fresh });
  });

  it('when the window lies after the last item of a feed that stopped in 2008, then [] is source_silent; a source of the instrument that published within 7 days makes it fresh, with rows or without; no news at all, no_source', async () => {
    const [{ id: stopped }, { id: covered }, { id: elsewhere }, { id: unconfirmed }, { id: uncovered }] = await Promise.all(
      [...Array(5)].map(() => createInstrument(svc)),
    );
    const demo = `demo-wire-${randomUUID().slice(0, 8)}`;
    const live = `live-wire-${randomUUID().slice(0, 8)}`;
    await ingest(svc, '/news', [
      // The demo's case: the feed's last item is of 2008.
      newsItem(stopped, '2008-06-30T20:00:00.000Z', demo),
      newsItem(covered, '2008-06-30T20:00:00.000Z', demo),
      { ...newsItem(covered, '2008-06-02T20:00:00.000Z', demo), eventClass: 'litigation' },
      newsItem(covered, '2008-05-01T20:00:00.000Z', live),
      // The live wire's newest item, 2 days before the test runs: within the 7 days before any moment of the test.
      newsItem(elsewhere, `${daysAgo(2)}T12:00:00.000Z`, live),
      newsItem(unconfirmed, '2008-06-30T20:00:00.000Z', live, false),
    ]);
    const lastMonth = `from=${daysAgo(30)}`;
    const read = (route: string, id: string, query: string) => get(`/v1/instruments/${id}/${route}?${query}`);

    // The feed's only source has published nothing since 2008: the empty window is a stopped feed, on both routes.
    expect(await read('news', stopped, lastMonth)).toEqual({ data: [], meta: expect.objectContaining({ source: 'none', ...staleBy('source_silent') }) });
    expect(await read('events', stopped, lastMonth)).toEqual({ data: [], meta: expect.objectContaining(staleBy('source_silent')) });
    // One of the instrument's two sources published 2 days ago (on another instrument): a quiet month, not a stopped feed.
    expect(await read('news', covered, lastMonth)).toEqual({ data: [], meta: expect.objectContaining({ source: 'none', ...fresh }) });
    // eventClass narrows the sources: only the stopped feed ever published litigation news of the instrument.
    expect((await read('news', covered, `${lastMonth}&eventClass=litigation`)).meta).toMatchObject(staleBy('source_silent'));
    // With rows: the live wire's item of 2 days ago.
    const withRows = await read('news', elsewhere, lastMonth);
    expect(withRows.data).toHaveLength(1);
    expect(withRows.meta).toMatchObject({ source: live, ...fresh });
    // No item of the scope was ever stored: no source to judge, and never fresh.
    expect(await read('news', uncovered, '')).toEqual({ data: [], meta: expect.objectContaining({ source: 'none', ...staleBy('no_source') }) });
    expect((await read('events', unconfirmed, '')).meta).toMatchObject({ source: 'none', ...staleBy('no_source') });
    expect((await read('news', covered, 'eventClass=dividend')).meta).toMatchObject(staleBy('no_source'));
  });

  it('when the only item of a source is published after the time of reading, then it does not count as publishing: source_silent', async () => {
    const { id } = await createInstrument(svc);
    const ahead = `ahead-wire-${randomUUID().slice(0, 8)}`;
    const inAMonth = new Date(Date.now() + 30 * DAY_MS).toISOString();
    await ingest(svc, '/news', [newsItem(id, inAMonth, ahead)]);
    const read = await get(`/v1/instruments/${id}/news`);
    expect(read.data).toHaveLength(1);
    expect(read.meta).toMatchObject({ source: ahead, ...staleBy('source_silent') });
  });

  it('when the instrument has a bar for the last completed session, then its reactions and their coverage are fresh; one whose bars end in 2001, series_behind', async () => {
    const eventClass = `fresh_${randomUUID().slice(0, 8)}`;
    const [{ id: current }, { id: ended }] = await Promise.all([createInstrument(svc), createInstrument(svc)]);
    // A bar on each of the last 10 days up to today (UTC): on or after the last session completed at any moment of the test.
    const recent = [...Array(10).keys()].map((n) => daysAgo(9 - n));
    await ingest(svc, '/bars/daily', [
      // Known when uploaded (the default): today's bar cannot be known at the end of its day yet.
      ...recent.map((barDate, i) => dailyBar(current, { barDate, close: 40 + i }, { knownAt: undefined })),
      ...weekdays('2001-03-05', '2001-03-09').map((barDate, i) => dailyBar(ended, { barDate, close: 30 + i })),
    ]);
    // During the session (15:00 UTC), 3 days ago and on 2001-03-07: each falls in its day's session.
    await ingest(svc, '/news', [
      { ...newsItem(current, `${recent[6]}T15:00:00.000Z`, 'test-fixture'), eventClass },
      { ...newsItem(ended, '2001-03-07T15:00:00.000Z', 'test-fixture'), eventClass },
    ]);
    const fresher = await get(`/v1/instruments/${current}/event-reactions`);
    expect(fresher.data).toHaveLength(1);
    expect(fresher.meta).toMatchObject({ source: 'test-fixture', ...fresh });
    const older = await get(`/v1/instruments/${ended}/event-reactions`);
    expect(older.data).toHaveLength(1);
    expect(older.meta).toMatchObject({ source: 'test-fixture', ...staleBy('series_behind') });

    const coverage = (min: number) => get(`/v1/instruments/event-reaction-coverage?eventClasses=${eventClass}&minReactions=${min}`);
    const both = await coverage(1);
    expect(both.data.instruments).toHaveLength(2);
    expect(both.meta).toEqual({ asOf: expect.any(String), source: 'test-fixture', ...staleBy('series_behind') });
    // Only the current instrument: minWindowDays cannot split them, so its own class does.
    const own = `${eventClass}_own`;
    await ingest(svc, '/news', [{ ...newsItem(current, `${recent[5]}T15:00:00.000Z`, 'test-fixture'), eventClass: own }]);
    const alone = await get(`/v1/instruments/event-reaction-coverage?eventClasses=${own}`);
    expect(alone.data.instruments.map((i: { instrumentId: string }) => i.instrumentId)).toEqual([current]);
    expect(alone.meta).toMatchObject({ source: 'test-fixture', ...fresh });
  });
});

describe('sentiment scores and source leads', () => {
  it('when the source scored the instrument within the last 7 days, then fresh; a source whose last score is of 2001, source_silent, and so is its lead', async () => {
    const { id } = await createInstrument(svc);
    const live = `live-sent-${randomUUID().slice(0, 8)}`;
    const silent = `silent-sent-${randomUUID().slice(0, 8)}`;
    const score = (source: string, asOfDate: string, value: number) => ({
      instrumentId: id,
      source,
      subjectClass: 'business',
      asOfDate,
      score: value,
      scale: [-1, 1],
      isHeadlineOnly: false,
    });
    // Today (UTC): within 7 days of any later moment of the test.
    await ingest(svc, '/sentiment', [
      score(live, '2001-03-01', 0.2),
      score(live, daysAgo(0), 0.1),
      score(silent, '2001-03-01', -0.3),
      score(silent, '2001-03-02', 0.4),
    ]);
    expect((await get(`/v1/instruments/${id}/sentiment?source=${live}`)).meta).toMatchObject({ source: live, ...fresh });
    // The window holds only 2001, but the live source still scores the instrument.
    expect((await get(`/v1/instruments/${id}/sentiment?source=${live}&to=2001-12-31`)).meta).toMatchObject(fresh);
    expect((await get(`/v1/instruments/${id}/sentiment?source=${silent}`)).meta).toMatchObject({ source: silent, ...staleBy('source_silent') });
    expect((await get(`/v1/instruments/${id}/sentiment`)).meta).toMatchObject(staleBy('source_silent'));

    const leads = async (source: string) => get(`/v1/sentiment/source-leads?source=${source}`);
    const liveLead = await leads(live);
    expect(liveLead.data).toHaveLength(1);
    expect(liveLead.meta).toMatchObject({ source: live, ...fresh });
    const silentLead = await leads(silent);
    expect(silentLead.data[0].lastAsOfDate).toBe('2001-03-02');
    expect(silentLead.meta).toMatchObject({ source: silent, ...staleBy('source_silent') });
  });
});

describe('sentiment: a feed that has stopped', () => {
  const score = (instrumentId: string, source: string, asOfDate: string, value: number, subjectClass = 'business') => ({
    instrumentId,
    source,
    subjectClass,
    asOfDate,
    score: value,
    scale: [-1, 1],
    isHeadlineOnly: false,
  });

  it('when the window lies after the last score of a source that stopped in 2000, then [] is source_silent; a source of the instrument that scored within 7 days makes it fresh, with rows or without; no score at all, no_source', async () => {
    const [{ id: stopped }, { id: covered }, { id: unscored }] = await Promise.all([createInstrument(svc), createInstrument(svc), createInstrument(svc)]);
    const demo = `demo-sent-${randomUUID().slice(0, 8)}`;
    const live = `live-sent-${randomUUID().slice(0, 8)}`;
    await ingest(svc, '/sentiment', [
      // The demo's case: the scores end on 2000-12-27.
      score(stopped, demo, '2000-12-27', 0.1),
      score(covered, demo, '2000-12-27', -0.2),
      score(covered, live, '2000-12-27', 0.3),
      // Yesterday (UTC): within the 7 days before the read's day at any moment of the test.
      score(covered, live, daysAgo(1), 0.4),
    ]);
    const read = (id: string, query: string) => get(`/v1/instruments/${id}/sentiment?${query}`);
    const lastMonth = `from=${daysAgo(30)}`;

    expect(await read(stopped, lastMonth)).toEqual({ data: [], meta: expect.objectContaining({ source: 'none', ...staleBy('source_silent') }) });
    // A window of 2001 without rows: the live source scored the instrument yesterday.
    expect(await read(covered, 'from=2001-01-01&to=2001-12-31')).toEqual({ data: [], meta: expect.objectContaining({ source: 'none', ...fresh }) });
    // source narrows the sources to the stopped one.
    expect((await read(covered, `${lastMonth}&source=${demo}`)).meta).toMatchObject(staleBy('source_silent'));
    // With rows: yesterday's score.
    const withRows = await read(covered, lastMonth);
    expect(withRows.data).toEqual([expect.objectContaining({ source: live, asOfDate: daysAgo(1), score: 0.4 })]);
    expect(withRows.meta).toMatchObject({ source: live, ...fresh });
    // Nothing of the scope was ever scored: the instrument, or a subject class no source scored for it.
    expect(await read(unscored, '')).toEqual({ data: [], meta: expect.objectContaining({ source: 'none', ...staleBy('no_source') }) });
    expect((await read(covered, 'subjectClass=market_commentary')).meta).toMatchObject(staleBy('no_source'));
    expect((await get(`/v1/sentiment/source-leads?source=never-${randomUUID().slice(0, 8)}`)).meta).toMatchObject({ source: 'none', ...staleBy('no_source') });
  });

  it('when a source scored the instrument only on a day after the read, then that score does not count as scoring: source_silent', async () => {
    const { id } = await createInstrument(svc);
    const ahead = `ahead-sent-${randomUUID().slice(0, 8)}`;
    await ingest(svc, '/sentiment', [score(id, ahead, daysAgo(-10), 0.5)]);
    const read = await get(`/v1/instruments/${id}/sentiment`);
    expect(read.data).toHaveLength(1);
    expect(read.meta).toMatchObject({ source: ahead, ...staleBy('source_silent') });
  });
});

describe('earnings: a calendar that has stopped', () => {
  const report = (instrumentId: string, reportDate: string, source: string, status = 'reported') => ({
    instrumentId,
    reportDate,
    session: 'amc',
    fiscalPeriod: `Q${Math.ceil(Number(reportDate.slice(5, 7)) / 3)}`,
    fiscalYear: Number(reportDate.slice(0, 4)),
    status,
    source,
  });

  it('when the window lies after the last report of a calendar that stopped in 2008, then [] is source_silent; a source of the instrument with a report within 142 days makes it fresh, with rows or without; no report at all, no_source', async () => {
    const [{ id: stopped }, { id: covered }, { id: elsewhere }, { id: lapsed }, { id: unreported }] = await Promise.all(
      [...Array(5)].map(() => createInstrument(svc)),
    );
    const demo = `demo-cal-${randomUUID().slice(0, 8)}`;
    const live = `live-cal-${randomUUID().slice(0, 8)}`;
    const lapsing = `lapsed-cal-${randomUUID().slice(0, 8)}`;
    await ingest(svc, '/earnings', [
      // The demo's case: reported up to 2008, then the next report scheduled and never updated.
      report(stopped, '2008-04-24', demo),
      report(stopped, '2008-07-24', demo, 'scheduled'),
      report(covered, '2008-04-24', live),
      // The live calendar's newest report, 100 days before the test runs: within 142 days of any moment of the test.
      report(elsewhere, daysAgo(100), live),
      // 160 days before the test runs: outside them.
      report(lapsed, daysAgo(160), lapsing),
    ]);
    const read = (id: string, query: string) => get(`/v1/instruments/${id}/earnings?${query}`);
    // A year to today, as the market-wide read allows (365 days, both counted).
    const lastYear = `from=${daysAgo(364)}&to=${daysAgo(0)}`;

    expect(await read(stopped, lastYear)).toEqual({ data: [], meta: expect.objectContaining({ source: 'none', ...staleBy('source_silent') }) });
    expect(await get(`/v1/earnings?${lastYear}&instrumentId=${stopped}`)).toEqual({
      data: [],
      meta: expect.objectContaining({ source: 'none', ...staleBy('source_silent') }),
    });
    // Its 2008 rows: the scheduled one is past due, which comes first.
    expect((await read(stopped, '')).meta).toMatchObject({ source: demo, ...staleBy('report_past_due') });
    // One of the instrument's sources reported 100 days ago, on another instrument.
    expect(await read(covered, lastYear)).toEqual({ data: [], meta: expect.objectContaining({ source: 'none', ...fresh }) });
    expect((await get(`/v1/earnings?${lastYear}&instrumentId=${covered}`)).meta).toMatchObject(fresh);
    // With rows: the report of 100 days ago; and one of 160 days ago whose source has reported nothing since.
    const withRows = await read(elsewhere, lastYear);
    expect(withRows.data).toEqual([expect.objectContaining({ reportDate: daysAgo(100), source: live })]);
    expect(withRows.meta).toMatchObject({ source: live, ...fresh });
    expect((await read(lapsed, lastYear)).meta).toMatchObject({ source: lapsing, ...staleBy('source_silent') });
    // No report of the instrument was ever stored.
    expect(await read(unreported, '')).toEqual({ data: [], meta: expect.objectContaining({ source: 'none', ...staleBy('no_source') }) });
    expect((await get(`/v1/earnings?${lastYear}&instrumentId=${unreported}`)).meta).toMatchObject(staleBy('no_source'));
  });

  it('when a calendar that stopped in 2008 lists its next report after the time of reading, then that date does not count as reporting: source_silent', async () => {
    const { id } = await createInstrument(svc);
    const ahead = `ahead-cal-${randomUUID().slice(0, 8)}`;
    await ingest(svc, '/earnings', [report(id, '2008-04-24', ahead), report(id, daysAgo(-20), ahead, 'scheduled')]);
    const read = await get(`/v1/instruments/${id}/earnings`);
    expect(read.data.map((r: { reportDate: string }) => r.reportDate)).toEqual(['2008-04-24', daysAgo(-20)]);
    expect(read.meta).toMatchObject({ source: ahead, ...staleBy('source_silent') });
  });
});

describe('the economic calendar', () => {
  it('when every past release has its actual, or a release is still ahead, then fresh; a 2001 release still without its actual, release_past_due', async () => {
    const name = `Freshness release ${randomUUID().slice(0, 8)}`;
    const release = (scheduledAt: string, actual: string | null, period: string) => ({
      id: randomUUID(),
      country: 'AQ',
      eventClass: 'employment',
      importance: 'low',
      name,
      referencePeriod: period,
      scheduledAt,
      actual,
      forecast: null,
      previous: null,
      source: 'test-fixture',
    });
    // A release with its actual 30 days before the test runs: within the 106 days in which the silence rule wants one, so the
    // reads below are judged on their rows' actuals alone.
    await ingest(svc, '/economic-events', [
      release('2001-02-02T13:30:00Z', '4.2%', '2001-01'),
      release('2001-03-09T13:30:00Z', null, '2001-02'),
      release('2160-01-09T13:30:00Z', null, '2159-12'),
      release(`${daysAgo(30)}T13:30:00Z`, '4.0%', 'recent'),
    ]);
    const calendar = (query: string) => get(`/v1/economic-events?country=AQ&${query}`);
    expect((await calendar('from=2001-02-01&to=2001-02-28')).meta).toMatchObject(fresh);
    expect((await calendar('from=2160-01-01&to=2160-01-31')).meta).toMatchObject(fresh);
    expect((await calendar('from=2001-03-01&to=2001-03-31')).meta).toMatchObject(staleBy('release_past_due'));
  });

  it('when the window lies after the last release of a calendar that stopped in 2022 with its next releases listed, then [] is source_silent; a release of the filters within 106 days makes it fresh, with rows or without; filters that select nothing, no_source', async () => {
    const name = `Silence release ${randomUUID().slice(0, 8)}`;
    const release = (country: string, eventClass: string, scheduledAt: string, actual: string | null) => ({
      id: randomUUID(),
      country,
      eventClass,
      importance: 'high',
      name,
      referencePeriod: scheduledAt.slice(0, 7),
      scheduledAt,
      actual,
      forecast: null,
      previous: null,
      source: 'test-fixture',
    });
    // Countries of this test alone: the filters decide which releases are judged.
    const inTwoMonths = `${daysAgo(-60)}T13:30:00.000Z`;
    await ingest(svc, '/economic-events', [
      // The demo's case: its last release is of 2022, its next ones scheduled after the time of reading.
      release('XS', 'employment', '2022-09-02T12:30:00.000Z', '3.7%'),
      release('XS', 'employment', inTwoMonths, null),
      release('XL', 'growth', '2022-07-28T12:30:00.000Z', '-0.9%'),
      // 40 days before the test runs: within the 106 days before any moment of the test.
      release('XL', 'growth', `${daysAgo(40)}T12:30:00.000Z`, '2.1%'),
      release('XL', 'growth', inTwoMonths, null),
    ]);
    const calendar = (query: string) => get(`/v1/economic-events?${query}`);
    const lastMonth = `from=${daysAgo(30)}&to=${daysAgo(0)}`;

    expect(await calendar(`country=XS&${lastMonth}`)).toEqual({ data: [], meta: expect.objectContaining({ source: 'none', ...staleBy('source_silent') }) });
    // With rows: its scheduled release is not past due, and its source has published nothing within the filters since 2022.
    const listed = await calendar(`country=XS&from=${daysAgo(30)}`);
    expect(listed.data.map((r: { scheduledAt: string }) => r.scheduledAt)).toEqual([inTwoMonths]);
    expect(listed.meta).toMatchObject({ source: 'test-fixture', ...staleBy('source_silent') });
    // A quarterly release 40 days ago: a month without one is fresh.
    expect(await calendar(`country=XL&${lastMonth}`)).toEqual({ data: [], meta: expect.objectContaining({ source: 'none', ...fresh }) });
    const withRows = await calendar(`country=XL&eventClass=growth&from=${daysAgo(60)}&to=${daysAgo(0)}`);
    expect(withRows.data.map((r: { actual: string }) => r.actual)).toEqual(['2.1%']);
    expect(withRows.meta).toMatchObject({ source: 'test-fixture', ...fresh });
    // Filters that select no release at all.
    expect(await calendar(`country=XN&${lastMonth}`)).toEqual({ data: [], meta: expect.objectContaining({ source: 'none', ...staleBy('no_source') }) });
    expect((await calendar(`country=XL&eventClass=inflation`)).meta).toMatchObject(staleBy('no_source'));
  });
});

describe('corporate actions', () => {
  it('when the action history was checked within 31 days of asOf, then fresh; later, actions_check_old; never checked by asOf, actions_never_checked', async () => {
    const { id } = await createInstrument(svc);
    await ingest(svc, '/corporate-actions/coverage-checks', [
      { instrumentId: id, checkedAt: '2020-03-31T00:00:00Z', source: 'test-fixture', coveredFrom: '1990-01-01', actionsFound: 0 },
    ]);
    const actions = (asOf: string) => get(`/v1/instruments/${id}/corporate-actions?from=1990-01-01&to=2030-12-31&asOf=${asOf}`);
    expect((await actions('2020-04-30T23:59:59Z')).meta).toMatchObject(fresh);
    // 31 days after 2020-03-31T00:00Z is 2020-05-01T00:00Z.
    expect((await actions('2020-05-01T00:00:00Z')).meta).toMatchObject(fresh);
    expect((await actions('2020-05-01T00:00:00.001Z')).meta).toMatchObject(staleBy('actions_check_old'));
    expect((await actions('2020-03-30')).meta).toMatchObject(staleBy('actions_never_checked'));
    const { id: unchecked } = await createInstrument(svc);
    expect((await get(`/v1/instruments/${unchecked}/corporate-actions?from=1990-01-01&to=2030-12-31`)).meta).toMatchObject(staleBy('actions_never_checked'));
  });
});

describe('instruments', () => {
  it('when an active instrument has a symbol covering the day, then fresh; when its history has lapsed, symbol_history_lapsed; a delisted one keeps a closed history and is fresh', async () => {
    const symbol = uniqueSymbol('LAPSE');
    const { id: lapsed } = await createInstrument(svc, { symbols: [{ symbol, validFrom: '1990-01-01', validTo: '2001-06-29' }] });
    const { id: delisted } = await createInstrument(svc, {
      isActive: false,
      symbols: [{ symbol: uniqueSymbol('GONE'), validFrom: '1990-01-01', validTo: '2001-06-29' }],
    });
    const { id: current } = await createInstrument(svc);
    expect((await get(`/v1/instruments/${current}`)).meta).toMatchObject({ source: 'mds-reference', ...fresh });
    expect((await get(`/v1/instruments/${delisted}`)).meta).toMatchObject(fresh);
    expect((await get(`/v1/instruments/${lapsed}`)).meta).toMatchObject(staleBy('symbol_history_lapsed'));
    expect((await get(`/v1/instruments/bulk?ids=${current},${delisted}`)).meta).toMatchObject(fresh);
    expect((await get(`/v1/instruments/bulk?ids=${current},${lapsed}`)).meta).toMatchObject(staleBy('symbol_history_lapsed'));
    // Searched on a day its symbol covered: fresh.
    const then = await get(`/v1/instruments?query=${symbol}&asOf=2001-06-01`);
    expect(then.data.map((i: { id: string }) => i.id)).toEqual([lapsed]);
    expect(then.meta).toMatchObject(fresh);
  });

  it('when broker codes come from a stated source, then meta.source names it beside the master; posted again without a source, the codes keep theirs', async () => {
    const { id } = await createInstrument(svc, { brokerCodes: { ibkr: uniqueSymbol('C') } });
    expect((await get(`/v1/instruments/${id}`)).meta.source).toBe('mds-reference');
    const stored = (await get(`/v1/instruments/${id}`)).data;
    await ingest(svc, '/instruments', [{ ...stored, brokerCodesSource: 'synthetic-demo' }]);
    expect((await get(`/v1/instruments/${id}`)).meta.source).toBe('mds-reference, synthetic-demo');
    // The read posted back (it has no brokerCodesSource): the codes keep the source they have.
    await ingest(svc, '/instruments', [(await get(`/v1/instruments/${id}`)).data]);
    expect((await get(`/v1/instruments/${id}`)).meta.source).toBe('mds-reference, synthetic-demo');
    // A new code without a source is the master's; the kept one keeps its own.
    await ingest(svc, '/instruments', [{ ...stored, brokerCodes: { ...stored.brokerCodes, saxo: uniqueSymbol('S') } }]);
    const rows = await svc.sql`select broker, source from instrument_broker_codes where instrument_id = ${id} order by broker`;
    expect(rows).toEqual([
      { broker: 'ibkr', source: 'synthetic-demo' },
      { broker: 'saxo', source: 'mds-reference' },
    ]);
    expect((await get(`/v1/instruments/bulk?ids=${id}`)).meta.source).toBe('mds-reference, synthetic-demo');
  });

  it('when the demo instruments are loaded, then an instrument with the demo broker codes names synthetic-demo; one without codes, the master alone', async () => {
    const demo = demoInstruments()
      .filter((i) => i.id === demoInstrumentId('MSFT') || i.id === demoInstrumentId('dow:T'))
      .map(({ currentSymbol: _current, ...i }) => i);
    await ingestRows(svc.sql, instrumentIngest, batchesOf(demo));
    const msft = await get(`/v1/instruments/${demoInstrumentId('MSFT')}`);
    expect(Object.keys(msft.data.brokerCodes).sort()).toEqual(['ibkr', 'saxo']);
    expect(msft.meta.source).toBe('mds-reference, synthetic-demo');
    // AT&T Corp., delisted in 2005: no codes.
    const att = await get(`/v1/instruments/${demoInstrumentId('dow:T')}`);
    expect(att.data.brokerCodes).toEqual({});
    expect(att.meta).toMatchObject({ source: 'mds-reference', ...fresh });
    const search = await get(`/v1/instruments?brokerCode=${msft.data.brokerCodes.ibkr}&broker=ibkr`);
    expect(search.meta.source).toBe('mds-reference, synthetic-demo');
  });
});
