import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoCorporateActions, demoDailyBars, demoInstrumentId, demoInstruments } from '../../server/demo/catalog.ts';
import { NO_BARS_KEY, syntheticNews } from '../../server/demo/synthetic-news.ts';
import { batchesOf } from '../../server/ingest/body.ts';
import { ingestRows } from '../../server/ingest/service.ts';
import { instrumentIngest } from '../../server/instruments/ingest.ts';
import { corporateActionIngest } from '../../server/actions/ingest.ts';
import { dailyBarIngest } from '../../server/prices/ingest.ts';
import { createInstrument, dailyBar, ingest, uniqueSymbol, weekdays } from './fixtures.ts';
import { startService, type Service } from './harness.ts';

// GET /v1/instruments/{id}/event-reactions and /v1/instruments/event-reaction-coverage,
// and their derivation after uploads and on POST /admin/v1/derive. Expected
// moves are worked out here from the bars as the price route returns them.

let svc: Service;
let key: string;

beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['events:read', 'prices:read']);
});
afterAll(() => svc.stop());

interface Reaction {
  eventId: string;
  eventClass: string;
  publishedAt: string;
  eventDate: string;
  previousSessionDate: string;
  previousClose: number;
  sessionClose: number;
  reactionPct: number;
  absMovePct: number;
  isCorporateAdjusted: boolean;
  actionSetVersion: number | null;
}

async function reactions(instrumentId: string, query = ''): Promise<Reaction[]> {
  const res = await svc.get(`/v1/instruments/${instrumentId}/event-reactions?${query}`, key);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

function newsItem(instrumentId: string, publishedAt: string, eventClass = 'earnings_release') {
  return {
    id: randomUUID(),
    instrumentId,
    eventClass,
    headline: `Test headline ${randomUUID().slice(0, 8)}`,
    source: 'test-fixture',
    url: `https://news.example.test/${randomUUID()}`,
    publishedAt,
    isCompanyConfirmed: true,
  };
}

/** Uploads an announced split of `ratio`-for-1 going ex on effectiveDate; returns the upload's answer. */
function ingestSplit(instrumentId: string, split: { effectiveDate: string; knowledgeDate: string; ratio: number }) {
  const { effectiveDate, knowledgeDate, ratio } = split;
  return ingest(svc, '/corporate-actions', [
    { instrumentId, kind: 'split', effectiveDate, knowledgeDate, knowledgeProvenance: 'announced', params: { ratio }, source: 'test-fixture' },
  ]);
}

describe('reactions to the synthetic demo news, against the real demo prices', () => {
  const googl = demoInstrumentId('GOOGL');
  const goog = demoInstrumentId(NO_BARS_KEY);
  const news = syntheticNews().filter((n) => n.instrumentId === googl || n.instrumentId === goog);
  const byUrl = (suffix: string) => news.find((n) => n.url.endsWith(`/GOOGL/${suffix}`))!;
  let bars: { barDate: string; closePrice: number }[];
  let version: number;
  let derived: { eventReactions: Record<string, number> };

  beforeAll(async () => {
    const instruments = demoInstruments()
      .filter((i) => i.id === googl || i.id === goog)
      .map(({ currentSymbol: _current, ...i }) => i);
    await ingestRows(svc.sql, instrumentIngest, batchesOf(instruments));
    await ingestRows(svc.sql, dailyBarIngest, batchesOf([...demoDailyBars()].filter((b) => b.instrumentId === googl)));
    await ingestRows(svc.sql, corporateActionIngest, batchesOf(demoCorporateActions().filter((a) => a.instrumentId === googl)));
    derived = (await ingest(svc, '/news', news)).derived;
    const res = await svc.get(`/v1/instruments/${googl}/prices?from=2004-01-01&to=2008-12-31&adjusted=true`, key);
    expect(res.status).toBe(200);
    bars = res.body.data;
    version = res.body.meta.actionSetVersion;
  }, 60_000);

  /** The bar before the first bar on or after `day`, and that bar, from the price route. */
  function sessionFrom(day: string, strictlyAfter: boolean) {
    const i = bars.findIndex((b) => (strictlyAfter ? b.barDate > day : b.barDate >= day));
    return { previous: bars[i - 1], session: bars[i] };
  }

  it('when the news is uploaded, then the answer reports the reactions derived, one per item the bars can place', async () => {
    expect(derived.eventReactions.instruments).toBe(2);
    expect(derived.eventReactions.rows).toBe(news.length - 1);
  });

  it('when an item was published after the close (16:05 New York), then its reaction is the next session close over that day close, adjusted', async () => {
    const item = byUrl('3-earnings_release');
    // 21:05 UTC on 2006-02-22 is 16:05 EST, a Wednesday.
    expect(item.publishedAt).toBe('2006-02-22T21:05:00.000Z');
    const { previous, session } = sessionFrom('2006-02-22', true);
    expect(previous.barDate).toBe('2006-02-22');
    const [r] = (await reactions(googl, 'from=2006-02-01&to=2006-02-28&eventClass=earnings_release')).filter((x) => x.publishedAt === item.publishedAt);
    // Both closes are scaled by GOOGL's 2014 stock dividend (2) and 2022 split (20), known now: adjusted, under the version the prices read reports.
    expect(r).toMatchObject({ eventClass: 'earnings_release', eventDate: session.barDate, previousSessionDate: '2006-02-22', isCorporateAdjusted: true });
    expect(r.actionSetVersion).toBe(version);
    expect(version).toBeGreaterThan(0);
    // Printed exactly as the adjusted prices read prints them.
    expect(r.previousClose).toBe(previous.closePrice);
    expect(r.sessionClose).toBe(session.closePrice);
    expect(r.reactionPct).toBeCloseTo(100 * (session.closePrice / previous.closePrice - 1), 10);
    expect(r.absMovePct).toBeCloseTo(Math.abs(r.reactionPct), 12);
  });

  it('when an item was published on a Saturday before a Monday holiday, then its reaction is the Tuesday close over the Friday close', async () => {
    const item = byUrl('2-media_report');
    expect(item.publishedAt).toBe('2005-12-24T16:00:00.000Z');
    const { previous, session } = sessionFrom('2005-12-24', false);
    // Christmas 2005 was a Sunday; the exchanges closed on Monday the 26th.
    expect([previous.barDate, session.barDate]).toEqual(['2005-12-23', '2005-12-27']);
    const [r] = await reactions(googl, 'from=2005-12-27&to=2005-12-27');
    expect(r).toMatchObject({ eventClass: 'media_report', publishedAt: item.publishedAt, eventDate: '2005-12-27', previousSessionDate: '2005-12-23' });
    expect(r.reactionPct).toBeCloseTo(100 * (session.closePrice / previous.closePrice - 1), 10);
    expect(r.reactionPct).toBeLessThan(0);
    expect(r.absMovePct).toBeCloseTo(-r.reactionPct, 12);
  });

  it('when an item is about an instrument with no bar on either side, then it has no reaction, never a zero', async () => {
    expect(news.filter((n) => n.instrumentId === goog)).toHaveLength(1);
    expect(await reactions(goog)).toEqual([]);
  });

  it('when read with filters, then rows come eventDate ascending, within from and to, of the class asked', async () => {
    const all = await reactions(googl);
    expect(all.map((r) => r.eventDate)).toEqual(all.map((r) => r.eventDate).sort());
    const guidance = await reactions(googl, 'eventClass=guidance');
    expect(guidance.length).toBe(news.filter((n) => n.instrumentId === googl && n.eventClass === 'guidance').length);
    const window = await reactions(googl, 'from=2006-01-01&to=2006-12-31');
    expect(window.map((r) => r.eventId)).toEqual(all.filter((r) => r.eventDate >= '2006-01-01' && r.eventDate <= '2006-12-31').map((r) => r.eventId));
    expect(window.length).toBeGreaterThan(2);
  });

  it('when derived twice, then the second run stores nothing', async () => {
    const first = await svc.admin('POST', '/derive', { instrumentIds: [googl, goog] });
    expect(first.status).toBe(200);
    const second = await svc.admin('POST', '/derive', { instrumentIds: [googl, goog] });
    expect(second.body.data.eventReactions).toEqual({ instruments: 2, rows: news.length - 1, inserted: 0, updated: 0, unchanged: news.length - 1, removed: 0 });
  });
});

describe('reactions follow the bars, the actions and the news', () => {
  let instrumentId: string;
  // Mon 2019-06-03 .. Fri 2019-06-07, then a gap, then Mon 2019-07-01 .. Wed 07-03.
  const closes: [string, number][] = [
    ['2019-06-03', 100],
    ['2019-06-04', 51],
    ['2019-06-05', 52],
    ['2019-06-06', 50],
    ['2019-06-07', 55],
    ['2019-07-01', 60],
    ['2019-07-02', 61],
    ['2019-07-03', 62],
  ];
  // 15:00 UTC is 11:00 EDT, during the session.
  const onSplitDay = (id: string) => newsItem(id, '2019-06-04T15:00:00Z');
  const afterSplit = (id: string) => newsItem(id, '2019-06-05T15:00:00Z');
  // In the gap: the next bar is 2019-07-01, 24 days after the previous one.
  const inGap = (id: string) => newsItem(id, '2019-06-20T15:00:00Z');
  let items: ReturnType<typeof newsItem>[];

  beforeAll(async () => {
    ({ id: instrumentId } = await createInstrument(svc));
    await ingest(
      svc,
      '/bars/daily',
      closes.map(([barDate, close]) => dailyBar(instrumentId, { barDate, close })),
    );
    items = [onSplitDay(instrumentId), afterSplit(instrumentId), inGap(instrumentId)];
  });

  it('when news arrives, then its upload derives the reactions; a split between the two bars then makes the reaction corporate-adjusted with the version', async () => {
    const uploaded = await ingest(svc, '/news', items);
    expect(uploaded.derived.eventReactions).toEqual({ instruments: 1, rows: 2, inserted: 2, updated: 0, unchanged: 0, removed: 0 });
    const raw = await reactions(instrumentId);
    expect(raw.map((r) => [r.eventId, r.eventDate, r.previousSessionDate])).toEqual([
      [items[0].id, '2019-06-04', '2019-06-03'],
      [items[1].id, '2019-06-05', '2019-06-04'],
    ]);
    expect(raw[0].reactionPct).toBeCloseTo(-49, 10);
    expect(raw[0].isCorporateAdjusted).toBe(false);

    const split = await ingestSplit(instrumentId, { effectiveDate: '2019-06-04', knowledgeDate: '2019-05-20', ratio: 2 });
    const version = split.actionSetVersions[instrumentId];
    expect(version).toBeGreaterThan(0);
    expect(split.derived.eventReactions).toEqual({ instruments: 1, rows: 2, inserted: 0, updated: 1, unchanged: 1, removed: 0 });
    const adjusted = await reactions(instrumentId);
    // 100 before the 2-for-1 split is 50 after it: 51 / 50 is a 2% rise.
    expect(adjusted[0]).toMatchObject({ previousClose: 50, sessionClose: 51, isCorporateAdjusted: true, actionSetVersion: version });
    expect(adjusted[0].reactionPct).toBeCloseTo(2, 10);
    expect(adjusted[1]).toEqual(raw[1]);
  });

  it('when a bar is corrected, then the bar upload derives the reaction again; when an item moves to a day the bars cannot place, its reaction is removed', async () => {
    const corrected = await ingest(svc, '/bars/daily', [dailyBar(instrumentId, { barDate: '2019-06-05', close: 56.1 })]);
    // The correction makes a new action-set version, which the adjusted reaction (the first) records: both rows change.
    expect(corrected.derived.eventReactions).toEqual({ instruments: 1, rows: 2, inserted: 0, updated: 2, unchanged: 0, removed: 0 });
    const [first, r] = await reactions(instrumentId);
    expect(first).toMatchObject({ isCorporateAdjusted: true, actionSetVersion: corrected.actionSetVersions[instrumentId] });
    expect(r).toMatchObject({ sessionClose: 56.1, previousClose: 51 });
    expect(r.reactionPct).toBeCloseTo(10, 10);

    const moved = await ingest(svc, '/news', [{ ...items[1], publishedAt: '2019-06-21T15:00:00Z' }]);
    expect(moved.derived.eventReactions).toEqual({ instruments: 1, rows: 1, inserted: 0, updated: 0, unchanged: 1, removed: 1 });
    expect((await reactions(instrumentId)).map((x) => x.eventId)).toEqual([items[0].id]);
  });

  it('when the instrument is unknown, then 404; when the bounds are reversed, 400 naming to', async () => {
    const unknown = await svc.get(`/v1/instruments/${randomUUID()}/event-reactions`, key);
    expect(unknown.status).toBe(404);
    const reversed = await svc.get(`/v1/instruments/${instrumentId}/event-reactions?from=2019-07-01&to=2019-06-01`, key);
    expect(reversed.status).toBe(400);
    expect(Object.keys(reversed.body.error.details)).toEqual(['to']);
  });
});

describe('adjusted closes are printed as the prices route prints them, and name their action set', () => {
  it('when a 20-for-1 split goes ex after both closes, between them, or before both, then the closes match /prices?adjusted=true and the flag and version follow', async () => {
    const { id } = await createInstrument(svc);
    // Mon 2021-03-01 .. Fri 03-05 (EST: the close is 21:00 UTC); the split goes ex on Thursday 03-04.
    const closes: [string, number][] = [
      ['2021-03-01', 280.02],
      ['2021-03-02', 290.035],
      ['2021-03-03', 291],
      ['2021-03-04', 14.6],
      ['2021-03-05', 14.7],
    ];
    await ingest(
      svc,
      '/bars/daily',
      closes.map(([barDate, close]) => dailyBar(id, { barDate, close })),
    );
    const split = await ingestSplit(id, { effectiveDate: '2021-03-04', knowledgeDate: '2021-02-01', ratio: 20 });
    const version = split.actionSetVersions[id];
    // During the sessions of Tuesday, Thursday and Friday.
    const items = ['2021-03-02T15:00:00Z', '2021-03-04T15:00:00Z', '2021-03-05T15:00:00Z'].map((t) => newsItem(id, t));
    await ingest(svc, '/news', items);

    const rows = await reactions(id);
    const prices = await svc.get(`/v1/instruments/${id}/prices?from=2021-03-01&to=2021-03-05&adjusted=true`, key);
    const printed = new Map<string, number>(prices.body.data.map((b: { barDate: string; closePrice: number }) => [b.barDate, b.closePrice]));
    // By hand: 280.02 / 20 = 14.001, 290.035 / 20 = 14.50175 (the double product is 14.501750000000001), 291 / 20 = 14.55.
    expect([...printed]).toEqual([
      ['2021-03-01', 14.001],
      ['2021-03-02', 14.50175],
      ['2021-03-03', 14.55],
      ['2021-03-04', 14.6],
      ['2021-03-05', 14.7],
    ]);
    expect(rows.map((r) => [r.eventDate, r.previousClose, r.sessionClose, r.isCorporateAdjusted, r.actionSetVersion])).toEqual([
      // Both closes before the split: scaled by the same 1/20, the move is the raw one, but the closes are adjusted.
      ['2021-03-02', 14.001, 14.50175, true, version],
      // The split between them: the previous close scaled, the session's not.
      ['2021-03-04', 14.55, 14.6, true, version],
      // Both after it: nothing scaled.
      ['2021-03-05', 14.6, 14.7, false, null],
    ]);
    for (const r of rows) {
      expect(r.previousClose).toBe(printed.get(r.previousSessionDate));
      expect(r.sessionClose).toBe(printed.get(r.eventDate));
      // The move of the closes as printed.
      expect(r.reactionPct).toBe(100 * (r.sessionClose / r.previousClose - 1));
    }
    // 290.035 / 280.02 − 1 = 0.0357653024783944…: the adjusted move equals the raw one to 1e-12.
    expect(Math.abs(rows[0].reactionPct - 3.57653024783944)).toBeLessThan(1e-11);
  });
});

describe('event-reaction coverage', () => {
  // A class of this run's own, so only these instruments count.
  const eventClass = `coverage_${randomUUID().slice(0, 8)}`;
  const DAYS = weekdays('2018-01-01', '2018-12-31');
  const fixtures: Record<string, { id: string; symbol: string }> = {};

  /** An instrument with bars on every weekday of 2018 and one item of the class on each of `sessionDays` (during the session). */
  async function covered(name: string, sessionDays: number[], symbols?: { symbol: string; validFrom: string }[]) {
    const instrument = await createInstrument(svc, symbols ? { symbols: symbols.map((s) => ({ ...s, validTo: null })) } : {});
    fixtures[name] = instrument;
    await ingest(
      svc,
      '/bars/daily',
      DAYS.map((barDate, i) => dailyBar(instrument.id, { barDate, close: 100 + (i % 5) })),
    );
    await ingest(
      svc,
      '/news',
      sessionDays.map((d) => newsItem(instrument.id, `${DAYS[d]}T15:00:00Z`, eventClass)),
    );
  }

  beforeAll(async () => {
    await covered('five over 4 weeks', [10, 12, 14, 20, 30]);
    await covered('three over 12 weeks', [1, 30, 61]);
    await covered('three over 2 weeks', [40, 45, 50]);
    await covered('one', [100]);
    // Two instruments tied on count and window: ordered by symbol.
    await covered('tie b', [5, 25], [{ symbol: uniqueSymbol('ZB'), validFrom: '2000-01-01' }]);
    await covered('tie a', [6, 26], [{ symbol: uniqueSymbol('ZA'), validFrom: '2000-01-01' }]);
    // Symbols only from 2999: no current symbol.
    await covered('no current symbol', [3, 6, 9, 12, 15, 18, 21], [{ symbol: uniqueSymbol('F'), validFrom: '2999-01-01' }]);
  }, 60_000);

  async function coverage(query: string) {
    const res = await svc.get(`/v1/instruments/event-reaction-coverage?${query}`, key);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data;
  }

  const names = (instruments: { instrumentId: string }[]) =>
    instruments.map((i) => Object.keys(fixtures).find((name) => fixtures[name].id === i.instrumentId) ?? i.instrumentId);

  it('when asked for the class, then the instruments come best covered first: count, then window, then symbol; without a current symbol, absent', async () => {
    const data = await coverage(`eventClasses=${eventClass}`);
    expect(names(data.instruments)).toEqual(['five over 4 weeks', 'three over 12 weeks', 'three over 2 weeks', 'tie a', 'tie b', 'one']);
    const first = data.instruments[0];
    // Weekdays 10 and 30 of 2018: 2018-01-15 and 2018-02-12.
    expect(first).toEqual({
      instrumentId: fixtures['five over 4 weeks'].id,
      symbol: fixtures['five over 4 weeks'].symbol,
      reactionCount: 5,
      firstEventDate: '2018-01-15',
      lastEventDate: '2018-02-12',
      observationWindowDays: 28,
    });
    expect(data.instruments.at(-1)).toMatchObject({ reactionCount: 1, observationWindowDays: 0 });
    expect(data.assumptions).toEqual({ eventClasses: [eventClass], minReactions: 1, minWindowDays: null, limit: 1000 });
    // The instrument without a current symbol has reactions: it is absent for that reason alone.
    expect((await reactions(fixtures['no current symbol'].id)).length).toBe(7);
  });

  it('when minReactions and minWindowDays are given, then only instruments meeting both are listed', async () => {
    expect(names((await coverage(`eventClasses=${eventClass}&minReactions=3`)).instruments)).toEqual([
      'five over 4 weeks',
      'three over 12 weeks',
      'three over 2 weeks',
    ]);
    // 'three over 2 weeks' spans 14 days (weekdays 40 and 50); 'five over 4 weeks' and the ties 28 (20 weekdays).
    const windowed = await coverage(`eventClasses=${eventClass}&minWindowDays=28`);
    expect(names(windowed.instruments)).toEqual(['five over 4 weeks', 'three over 12 weeks', 'tie a', 'tie b']);
    expect(names((await coverage(`eventClasses=${eventClass}&minWindowDays=29`)).instruments)).toEqual(['three over 12 weeks']);
    expect(names((await coverage(`eventClasses=${eventClass}&minReactions=3&minWindowDays=14&limit=2`)).instruments)).toEqual([
      'five over 4 weeks',
      'three over 12 weeks',
    ]);
    expect(windowed.assumptions).toEqual({ eventClasses: [eventClass], minReactions: 1, minWindowDays: 28, limit: 1000 });
  });

  it('when the classes include unknown ones, they add nothing; classes alone that have no rows give an empty result; omitted, every class counts', async () => {
    const withUnknown = await coverage(`eventClasses=${eventClass},no_such_class,${eventClass}`);
    expect(names(withUnknown.instruments)).toHaveLength(6);
    expect(withUnknown.assumptions.eventClasses).toEqual([eventClass, 'no_such_class']);
    expect((await coverage('eventClasses=no_such_class')).instruments).toEqual([]);
    const all = await coverage('limit=5000');
    expect(all.assumptions).toEqual({ eventClasses: [], minReactions: 1, minWindowDays: null, limit: 5000 });
    const ours = all.instruments.filter((i: { instrumentId: string }) => Object.values(fixtures).some((f) => f.id === i.instrumentId));
    expect(names(ours)).toEqual(['five over 4 weeks', 'three over 12 weeks', 'three over 2 weeks', 'tie a', 'tie b', 'one']);
  });

  it('when eventClasses is present but empty, or a parameter is out of range, then 400 names it', async () => {
    for (const [query, field] of [
      ['eventClasses=', 'eventClasses'],
      ['minReactions=0', 'minReactions'],
      ['minReactions=1001', 'minReactions'],
      ['minWindowDays=0', 'minWindowDays'],
      ['minWindowDays=36501', 'minWindowDays'],
      ['limit=5001', 'limit'],
      ['limit=1.5', 'limit'],
    ]) {
      const res = await svc.get(`/v1/instruments/event-reaction-coverage?${query}`, key);
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(Object.keys(res.body.error.details)[0], query).toMatch(new RegExp(`^${field}`));
    }
    const commas = await svc.get(`/v1/instruments/event-reaction-coverage?eventClasses=${eventClass},,x`, key);
    expect(commas.status).toBe(400);
  });
});
