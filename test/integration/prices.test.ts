import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Service, startService } from './harness.ts';
import { createInstrument, dailyBar, ingest, uniqueSymbol, untilAStatementWaitsFor, weekdays } from './fixtures.ts';

let svc: Service;
let key: string;
beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['instruments:read', 'prices:read', 'actions:read']);
});
afterAll(() => svc.stop());

const prices = (id: string, query: string) => svc.get(`/v1/instruments/${id}/prices?${query}`, key);

function split(instrumentId: string, effectiveDate: string, ratio: number, knowledgeDate: string | null = '2020-01-01', extra: Record<string, unknown> = {}) {
  return {
    instrumentId,
    kind: 'split',
    effectiveDate,
    knowledgeDate,
    knowledgeProvenance: knowledgeDate === null ? 'backfilled' : 'announced',
    params: { ratio },
    source: 'test-fixture',
    ...extra,
  };
}

function dividend(instrumentId: string, effectiveDate: string, amount: number, knowledgeDate: string) {
  return {
    instrumentId,
    kind: 'cash_dividend',
    effectiveDate,
    knowledgeDate,
    knowledgeProvenance: 'announced',
    params: { amount, currency: 'USD' },
    source: 'test-fixture',
  };
}

describe('daily bars and the adjustment engine', () => {
  it('when a 2-for-1 split takes effect on D, then adjusted prices before D are halved, volume doubled, and raw reads are untouched', async () => {
    const { id } = await createInstrument(svc);
    const days = ['2020-03-02', '2020-03-03', '2020-03-04', '2020-03-05'];
    await ingest(
      svc,
      '/bars/daily',
      days.map((d, i) => dailyBar(id, { barDate: d, open: 100 + i, high: 110 + i, low: 90 + i, close: 105 + i, volume: 1000 + i })),
    );
    await ingest(svc, '/corporate-actions', [split(id, '2020-03-04', 2, '2020-02-01')]);

    const raw = await prices(id, 'from=2020-03-01&to=2020-03-31');
    expect(raw.status).toBe(200);
    expect(raw.body.data.map((b: any) => b.closePrice)).toEqual([105, 106, 107, 108]);
    expect(raw.body.meta.priceBasis).toMatchObject({ priceBasis: 'raw', actionsApplied: 0 });

    const adj = await prices(id, 'from=2020-03-01&to=2020-03-31&adjusted=true');
    expect(adj.status).toBe(200);
    const [a, b, c, d] = adj.body.data;
    expect([a.openPrice, a.highPrice, a.lowPrice, a.closePrice, a.volume]).toEqual([50, 55, 45, 52.5, 2000]);
    expect([b.openPrice, b.closePrice, b.volume]).toEqual([50.5, 53, 2002]);
    expect([c.openPrice, c.closePrice, c.volume]).toEqual([102, 107, 1002]);
    expect([d.closePrice, d.volume]).toEqual([108, 1003]);
    expect(adj.body.meta).toMatchObject({
      adjusted: true,
      actionSetVersion: 1,
      priceBasis: { priceBasis: 'adjusted', actionsApplied: 1, actionsAlreadyReflected: 0 },
      provenance: { announced: 1, observed: 0, vendor_pit: 0, backfilled: 0, pitValid: true },
    });
  });

  it('when a reverse split (1-for-10) takes effect, then earlier prices are multiplied by 10 and volume divided by 10', async () => {
    const { id } = await createInstrument(svc);
    await ingest(svc, '/bars/daily', [
      dailyBar(id, { barDate: '2021-06-01', close: 2, volume: 5000 }),
      dailyBar(id, { barDate: '2021-06-02', close: 20, volume: 500 }),
    ]);
    await ingest(svc, '/corporate-actions', [split(id, '2021-06-02', 0.1)]);
    const adj = await prices(id, 'from=2021-06-01&to=2021-06-02&adjusted=true');
    expect(adj.body.data[0].closePrice).toBeCloseTo(20, 12);
    expect(adj.body.data[0].volume).toBeCloseTo(500, 9);
  });

  it('when a cash dividend goes ex on D, then earlier prices carry the factor 1 − dividend / previous close to 1e-12', async () => {
    const { id } = await createInstrument(svc);
    await ingest(svc, '/bars/daily', [
      dailyBar(id, { barDate: '2022-05-02', open: 48.2, close: 48.7 }),
      dailyBar(id, { barDate: '2022-05-03', open: 49.1, close: 50.13 }),
      dailyBar(id, { barDate: '2022-05-04', open: 49.8, close: 49.9 }),
    ]);
    await ingest(svc, '/corporate-actions', [
      {
        instrumentId: id,
        kind: 'cash_dividend',
        effectiveDate: '2022-05-04',
        announcementDate: '2022-04-20',
        knowledgeDate: '2022-04-20',
        knowledgeProvenance: 'announced',
        params: { amount: 0.37, currency: 'USD' },
        source: 'test-fixture',
      },
    ]);
    const adj = await prices(id, 'from=2022-05-01&to=2022-05-31&adjusted=true');
    // Hand computation: factor = 1 − 0.37 / 50.13 (the close of 2022-05-03, the session before the ex-date).
    const factor = 1 - 0.37 / 50.13;
    const expected = [48.7 * factor, 50.13 * factor, 49.9];
    adj.body.data.forEach((bar: any, i: number) => {
      expect(Math.abs(bar.closePrice - expected[i]) / expected[i]).toBeLessThan(1e-12);
    });
    expect(Math.abs(adj.body.data[0].openPrice - 48.2 * factor) / (48.2 * factor)).toBeLessThan(1e-12);
    expect(adj.body.data[0].volume).toBe(1000);
  });

  it('when the session before the ex-date is missing from the store, then the dividend is not applied and is reported', async () => {
    const { id } = await createInstrument(svc);
    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2022-01-03', close: 10 })]);
    await ingest(svc, '/corporate-actions', [
      {
        instrumentId: id,
        kind: 'cash_dividend',
        effectiveDate: '2022-03-01',
        knowledgeDate: '2022-02-01',
        knowledgeProvenance: 'announced',
        params: { amount: 0.5, currency: 'USD' },
        source: 'test-fixture',
      },
    ]);
    const adj = await prices(id, 'from=2022-01-01&to=2022-01-31&adjusted=true');
    expect(adj.body.data[0].closePrice).toBe(10);
    expect(adj.body.meta.priceBasis.actionsApplied).toBe(0);
    expect(adj.body.meta.priceBasis.actionsNotApplied).toEqual([{ actionId: expect.any(String), reason: 'prior_close_gap' }]);
  });

  it("when asOf is before an action's knowledge date, then it is not applied; after that date it is", async () => {
    const { id } = await createInstrument(svc);
    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2019-01-02', close: 40 }), dailyBar(id, { barDate: '2019-06-03', close: 42 })]);
    await ingest(svc, '/corporate-actions', [split(id, '2019-06-03', 2, '2019-05-15T20:00:00Z')]);
    const before = await prices(id, 'from=2019-01-01&to=2019-12-31&adjusted=true&asOf=2019-05-15T19:59:59Z');
    expect(before.body.data[0].closePrice).toBe(40);
    expect(before.body.meta.priceBasis.actionsApplied).toBe(0);
    const dayOf = await prices(id, 'from=2019-01-01&to=2019-12-31&adjusted=true&asOf=2019-05-15');
    expect(dayOf.body.data[0].closePrice).toBe(20);
    const after = await prices(id, 'from=2019-01-01&to=2019-12-31&adjusted=true&asOf=2019-05-16');
    expect(after.body.data[0].closePrice).toBe(20);
    expect(after.body.meta.asOf).toBe('2019-05-16');

    const listed = await svc.get(`/v1/instruments/${id}/corporate-actions?from=2019-01-01&to=2019-12-31&asOf=2019-05-14`, key);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([]);
    const listedAfter = await svc.get(`/v1/instruments/${id}/corporate-actions?from=2019-01-01&to=2019-12-31&asOf=2019-05-16`, key);
    expect(listedAfter.body.data).toHaveLength(1);
    expect(listedAfter.body.data[0]).toMatchObject({
      kind: 'split',
      effectiveDate: '2019-06-03',
      knowledgeDate: '2019-05-15T20:00:00.000Z',
      knowledgeProvenance: 'announced',
      params: { ratio: 2 },
    });
    expect(listedAfter.body.meta.provenance).toEqual({ observed: 0, vendor_pit: 0, announced: 1, backfilled: 0, pitValid: true });
  });

  it('when an action is backfilled, then it applies only with includeBackfilled=true, and then pitValid is false', async () => {
    const { id } = await createInstrument(svc);
    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2018-01-02', close: 30 }), dailyBar(id, { barDate: '2018-02-01', close: 15 })]);
    await ingest(svc, '/corporate-actions', [split(id, '2018-02-01', 2, null)]);
    for (const q of ['', '&asOf=2024-01-01']) {
      const without = await prices(id, `from=2018-01-01&to=2018-12-31&adjusted=true${q}`);
      expect(without.body.data[0].closePrice).toBe(30);
      expect(without.body.meta.provenance.pitValid).toBe(true);
      const withIt = await prices(id, `from=2018-01-01&to=2018-12-31&adjusted=true&includeBackfilled=true${q}`);
      expect(withIt.body.data[0].closePrice).toBe(15);
      expect(withIt.body.meta.provenance).toMatchObject({ backfilled: 1, pitValid: false });
    }
    const actions = await svc.get(`/v1/instruments/${id}/corporate-actions?from=2018-01-01&to=2018-12-31&asOf=2024-01-01&includeBackfilled=true`, key);
    expect(actions.body.data[0].knowledgeDate).toBeNull();
    expect(actions.body.meta.provenance.pitValid).toBe(false);
    expect((await svc.get(`/v1/instruments/${id}/corporate-actions?from=2018-01-01&to=2018-12-31&asOf=2024-01-01`, key)).body.data).toEqual([]);
  });

  it('when an action is corrected, then actionSetVersion is bumped, and a read pinned to the old version returns exactly the old bytes', async () => {
    const { id } = await createInstrument(svc);
    await ingest(
      svc,
      '/bars/daily',
      weekdays('2023-01-02', '2023-01-31').map((d, i) => dailyBar(id, { barDate: d, close: 100 + i * 0.37 })),
    );
    const first = await ingest(svc, '/corporate-actions', [split(id, '2023-01-16', 2)]);
    expect(first).toMatchObject({ inserted: 1, updated: 0, actionSetVersions: { [id]: 1 } });
    const actionId = (await svc.get(`/v1/instruments/${id}/corporate-actions?from=2023-01-01&to=2023-12-31`, key)).body.data[0].id;
    const v1 = await fetch(`${svc.runtime.publicUrl}/v1/instruments/${id}/prices?from=2023-01-01&to=2023-01-31&adjusted=true`, {
      headers: { authorization: `Bearer ${key}` },
    }).then((r) => r.text());

    const repeat = await ingest(svc, '/corporate-actions', [split(id, '2023-01-16', 2)]);
    expect(repeat).toMatchObject({ inserted: 0, updated: 0, unchanged: 1, actionSetVersions: {} });

    const corrected = await ingest(svc, '/corporate-actions', [{ ...split(id, '2023-01-16', 3), id: actionId }]);
    expect(corrected).toMatchObject({ inserted: 0, updated: 1, actionSetVersions: { [id]: 2 } });
    const latest = await prices(id, 'from=2023-01-01&to=2023-01-31&adjusted=true');
    expect(latest.body.meta.actionSetVersion).toBe(2);
    // 100 / 3 to the 13 significant digits adjusted values carry (docs/api.md).
    expect(latest.body.data[0].closePrice).toBe(33.33333333333);

    const pinned = await fetch(`${svc.runtime.publicUrl}/v1/instruments/${id}/prices?from=2023-01-01&to=2023-01-31&adjusted=true&actionSetVersion=1`, {
      headers: { authorization: `Bearer ${key}` },
    }).then((r) => r.text());
    const dataOf = (text: string) => text.slice(0, text.indexOf(',"meta":'));
    expect(dataOf(pinned)).toBe(dataOf(v1));
    expect(JSON.parse(pinned).meta).toMatchObject({ actionSetVersion: 1, actionSetVersionPinned: true });
    const tooNew = await prices(id, 'from=2023-01-01&to=2023-01-31&adjusted=true&actionSetVersion=3');
    expect(tooNew.status).toBe(400);
    expect(tooNew.body.error.details.actionSetVersion).toBeDefined();

    const history = await svc.sql`select action_set_version, params from corporate_action_revisions where action_id = ${actionId} order by action_set_version`;
    expect(history.map((h) => [h.action_set_version, (h.params as any).ratio])).toEqual([
      [1, 2],
      [2, 3],
    ]);
  });

  it('when bars are corrected, filled in or appended, then corrections and fills bump the version once per upload, and every version reads back exactly the bytes it gave while it was the latest', async () => {
    const { id } = await createInstrument(svc);
    const days = weekdays('2023-01-02', '2023-01-31');
    // 2023-01-10 is left out: a gap filled later.
    const gap = '2023-01-10';
    const stored = days.filter((d) => d !== gap && d <= '2023-01-20');
    await ingest(
      svc,
      '/bars/daily',
      stored.map((d, i) => dailyBar(id, { barDate: d, close: 50 + i * 0.25 })),
    );
    // A dividend ex on 2023-01-17: its factor takes the close of 2023-01-16, which a later upload corrects.
    await ingest(svc, '/corporate-actions', [dividend(id, '2023-01-17', 0.5, '2023-01-05')]);
    const window = 'from=2023-01-01&to=2023-01-31';
    const dataOf = (text: string) => text.slice(0, text.indexOf(',"meta":'));
    const read = (query: string) =>
      fetch(`${svc.runtime.publicUrl}/v1/instruments/${id}/prices?${query}`, { headers: { authorization: `Bearer ${key}` } }).then(async (r) => ({
        text: await r.text(),
        cacheControl: r.headers.get('cache-control'),
      }));
    // What each version answered while it was the latest: raw and adjusted, read pinned to it.
    const asLatest = new Map<number, { raw: string; adjusted: string }>();
    const capture = async (version: number) => {
      const raw = await read(`${window}&actionSetVersion=${version}`);
      const adjusted = await read(`${window}&adjusted=true&actionSetVersion=${version}`);
      expect(JSON.parse(raw.text).meta.actionSetVersion).toBe(version);
      asLatest.set(version, { raw: dataOf(raw.text), adjusted: dataOf(adjusted.text) });
    };
    await capture(1);

    // Appending after the latest bar changes no version; the version's read grows by the appended bars.
    const appended = await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2023-01-23', close: 60 })]);
    expect(appended).toMatchObject({ inserted: 1, updated: 0 });
    expect(appended.actionSetVersions).toEqual({});
    expect((await prices(id, window)).body.meta.actionSetVersion).toBe(1);
    await capture(1);

    // Posting a stored bar again unchanged changes nothing.
    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2023-01-23', close: 60 })]);
    expect((await prices(id, window)).body.meta.actionSetVersion).toBe(1);

    // One upload corrects two bars (one the dividend's prior close) and fills the gap: one new version, 2.
    const corrected = await ingest(svc, '/bars/daily', [
      dailyBar(id, { barDate: '2023-01-05', close: 77 }),
      dailyBar(id, { barDate: '2023-01-16', close: 80 }),
      dailyBar(id, { barDate: gap, close: 55 }),
    ]);
    expect(corrected).toMatchObject({ inserted: 1, updated: 2 });
    expect(corrected.actionSetVersions).toEqual({ [id]: 2 });
    const v2 = await prices(id, window);
    expect(v2.body.meta.actionSetVersion).toBe(2);
    expect(v2.body.data.map((b: any) => b.barDate)).toContain(gap);
    await capture(2);

    // Then an append (no version), and an action (version 3).
    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2023-01-24', close: 61 })]);
    await capture(2);
    await ingest(svc, '/corporate-actions', [split(id, '2023-01-19', 2)]);
    await capture(3);
    // And a correction of a bar appended under version 2, with an append in the same upload: version 4.
    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2023-01-24', close: 62 }), dailyBar(id, { barDate: '2023-01-25', close: 63 })]);
    await capture(4);

    // Every version, read now, gives the bytes it gave when it was the latest (the last capture of it).
    for (const [version, { raw, adjusted }] of asLatest) {
      expect(dataOf((await read(`${window}&actionSetVersion=${version}`)).text)).toBe(raw);
      expect(dataOf((await read(`${window}&adjusted=true&actionSetVersion=${version}`)).text)).toBe(adjusted);
    }
    // Spot checks against the bars as posted: version 1 has the old 2023-01-05 close, no gap bar, bars to 2023-01-23;
    // its dividend factor uses the old close of 2023-01-16 (the tenth bar stored: 50 + 9 × 0.25 = 52.25).
    const v1 = JSON.parse(asLatest.get(1)!.raw + '}');
    expect(v1.data.map((b: any) => b.barDate)).not.toContain(gap);
    expect(v1.data.find((b: any) => b.barDate === '2023-01-05').closePrice).toBe(50.75);
    expect(v1.data.at(-1).barDate).toBe('2023-01-23');
    const v1Adjusted = JSON.parse(asLatest.get(1)!.adjusted + '}');
    const factor1 = 1 - 0.5 / 52.25;
    expect(Math.abs(v1Adjusted.data[0].closePrice - 50 * factor1) / (50 * factor1)).toBeLessThan(1e-12);
    const v2Adjusted = JSON.parse(asLatest.get(2)!.adjusted + '}');
    const factor2 = 1 - 0.5 / 80;
    expect(Math.abs(v2Adjusted.data[0].closePrice - 50 * factor2) / (50 * factor2)).toBeLessThan(1e-12);
    expect(JSON.parse(asLatest.get(2)!.raw + '}').data.at(-1)).toMatchObject({ barDate: '2023-01-24', closePrice: 61 });
    expect(JSON.parse(asLatest.get(4)!.raw + '}').data.at(-1)).toMatchObject({ barDate: '2023-01-25', closePrice: 63 });

    // Caching: a pinned read of a past window is immutable when nothing can enter it without a new version.
    const immutable = 'private, max-age=31536000, immutable';
    expect((await read(`${window}&actionSetVersion=1`)).cacheControl).toBe(immutable);
    expect((await read(`from=2023-01-01&to=2023-01-20&actionSetVersion=4`)).cacheControl).toBe(immutable);
    // The latest version over a window past its latest bar (2023-01-25): an append could still land in it.
    expect((await read(`${window}&actionSetVersion=4`)).cacheControl).toBe('private, no-cache');
    expect((await read(window)).cacheControl).toBe('private, no-cache');
    const today = new Date().toISOString().slice(0, 10);
    expect((await read(`from=2023-01-01&to=${today}&actionSetVersion=1`)).cacheControl).toBe('private, no-cache');

    // The store keeps what each bumping upload replaced: two earlier values and one absence under version 2, one value under 4.
    const kept = await svc.sql`
      select bar_date::text, replaced_in_version, absent, close_price from daily_bar_revisions where instrument_id = ${id} order by bar_date, replaced_in_version
    `;
    expect(kept.map((k) => [k.bar_date, k.replaced_in_version, k.absent, k.close_price])).toEqual([
      ['2023-01-05', 2, false, 50.75],
      [gap, 2, true, null],
      ['2023-01-16', 2, false, 52.25],
      ['2023-01-24', 4, false, 61],
    ]);
  });

  it('when the action set changes while a read stands between its version and its actions, then the read applies exactly the version it reports', async () => {
    const { id } = await createInstrument(svc);
    await ingest(
      svc,
      '/bars/daily',
      weekdays('2023-01-02', '2023-01-31').map((d, i) => dailyBar(id, { barDate: d, close: 100 + i })),
    );
    await ingest(svc, '/corporate-actions', [split(id, '2023-01-16', 2)]);
    const query = 'from=2023-01-01&to=2023-01-31&adjusted=true';
    // A writer holds the revisions table while it makes version 2 (a second split), the way the ingest does: one
    // transaction bumps the version and appends the revision. The read finds version 1, then waits for the
    // revisions, and the writer commits before the read gets them.
    let read: ReturnType<typeof prices> | undefined;
    await svc.sql.begin(async (tx) => {
      await tx`lock table corporate_action_revisions in access exclusive mode`;
      await tx`
        insert into corporate_action_revisions (action_id, instrument_id, action_set_version, kind, effective_date,
          knowledge_date, knowledge_provenance, params, source, created_at)
        values (${randomUUID()}, ${id}, 2, 'split', '2023-01-23', '2020-01-01', 'announced', '{"ratio": 2}', 'test-fixture', now())
      `;
      await tx`update action_set_versions set version = 2, changed_at = now() where instrument_id = ${id}`;
      read = prices(id, query);
      await untilAStatementWaitsFor(svc, 'corporate_action_revisions');
    });
    const res = await read!;
    expect(res.status).toBe(200);
    expect(res.body.meta.actionSetVersion).toBe(1);
    // Version 1 holds the first split only: closes before 2023-01-16 halved, none quartered.
    expect(res.body.data[0].closePrice).toBe(50);
    const pinned = await prices(id, `${query}&actionSetVersion=1`);
    expect(res.body.data).toEqual(pinned.body.data);
    const latest = await prices(id, query);
    expect(latest.body.meta.actionSetVersion).toBe(2);
    expect(latest.body.data[0].closePrice).toBe(25);
  });

  it('when a bar correction lands while a read stands between its version and its bars, then the read gives exactly the bytes of the version it reports, dividend factor included', async () => {
    const { id } = await createInstrument(svc);
    const days = weekdays('2023-01-02', '2023-01-20');
    await ingest(
      svc,
      '/bars/daily',
      days.map((d, i) => dailyBar(id, { barDate: d, close: 50 + i })),
    );
    await ingest(svc, '/corporate-actions', [dividend(id, '2023-01-17', 0.5, '2023-01-05')]);
    const query = 'from=2023-01-01&to=2023-01-31&adjusted=true';
    const before = await prices(id, query);
    expect(before.body.meta.actionSetVersion).toBe(1);
    // A writer holds daily_bars while it corrects the dividend's prior close (2023-01-16) as an upload does: it keeps the
    // old values under version 2, records version 2, bumps the version and rewrites the bar. The read finds version 1
    // and its actions, then waits for the bars, and the writer commits before the read gets them.
    let read: ReturnType<typeof prices> | undefined;
    await svc.sql.begin(async (tx) => {
      await tx`lock table daily_bars in access exclusive mode`;
      await tx`
        insert into daily_bar_revisions (instrument_id, bar_date, replaced_in_version, absent, open_price, high_price, low_price,
          close_price, volume, quote_currency, quote_unit, stale, price_basis, reflects_actions_through, source, as_of)
        select instrument_id, bar_date, 2, false, open_price, high_price, low_price, close_price, volume, quote_currency, quote_unit,
          stale, price_basis, reflects_actions_through, source, as_of
        from daily_bars where instrument_id = ${id} and bar_date = '2023-01-16'
      `;
      await tx`insert into daily_price_versions (instrument_id, version, made_at, prior_last_bar_date) values (${id}, 2, now(), '2023-01-20')`;
      await tx`update action_set_versions set version = 2, changed_at = now() where instrument_id = ${id}`;
      await tx`update daily_bars set close_price = 80 where instrument_id = ${id} and bar_date = '2023-01-16'`;
      read = prices(id, query);
      await untilAStatementWaitsFor(svc, 'daily_bars');
    });
    const res = await read!;
    expect(res.status).toBe(200);
    expect(res.body.meta.actionSetVersion).toBe(1);
    expect(res.body.data).toEqual(before.body.data);
    // Version 1's factor: 1 − 0.5 / 60 (the close of 2023-01-16 as it stood, the 11th weekday: 50 + 10).
    expect(Math.abs(res.body.data[0].closePrice - 50 * (1 - 0.5 / 60)) / 50).toBeLessThan(1e-12);
    const latest = await prices(id, query);
    expect(latest.body.meta.actionSetVersion).toBe(2);
    expect(Math.abs(latest.body.data[0].closePrice - 50 * (1 - 0.5 / 80)) / 50).toBeLessThan(1e-12);
  });

  it('when bars come from a vendor-adjusted source, then actions the source already reflects are counted, not applied twice', async () => {
    const { id } = await createInstrument(svc);
    const vendor = { priceBasis: 'vendor_adjusted', reflectsActionsThrough: '2010-12-31', openPrice: null, highPrice: null, lowPrice: null, volume: null };
    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2010-01-04', close: 10 }, vendor), dailyBar(id, { barDate: '2010-08-02', close: 11 }, vendor)]);
    await ingest(svc, '/corporate-actions', [split(id, '2010-06-01', 2), split(id, '2012-06-01', 2)]);
    const adj = await prices(id, 'from=2010-01-01&to=2010-12-31&adjusted=true');
    expect(adj.body.data.map((b: any) => b.closePrice)).toEqual([5, 5.5]);
    expect(adj.body.data[0]).toMatchObject({ openPrice: null, highPrice: null, lowPrice: null, volume: null });
    expect(adj.body.meta.priceBasis).toMatchObject({ priceBasis: 'vendor_adjusted', actionsApplied: 1, actionsAlreadyReflected: 1 });
  });

  it('when coverage checks exist or not, then actionCoverage says never_checked, starts_after_series or none', async () => {
    const { id } = await createInstrument(svc);
    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2015-03-02', close: 10 })]);
    const never = await prices(id, 'from=2015-01-01&to=2015-12-31');
    expect(never.body.meta.actionCoverage).toEqual({
      checked: false,
      lastCheckedAt: null,
      source: null,
      coveredFrom: null,
      actionsFound: null,
      coversSeries: false,
      gap: 'never_checked',
    });
    await ingest(svc, '/corporate-actions/coverage-checks', [
      { instrumentId: id, checkedAt: '2024-05-01T00:00:00Z', source: 'vendor-x', coveredFrom: '2016-01-01', actionsFound: 0 },
    ]);
    const late = await prices(id, 'from=2015-01-01&to=2015-12-31');
    expect(late.body.meta.actionCoverage).toMatchObject({
      checked: true,
      coversSeries: false,
      gap: 'starts_after_series',
      coveredFrom: '2016-01-01',
      source: 'vendor-x',
      actionsFound: 0,
    });
    const pit = await prices(id, 'from=2015-01-01&to=2015-12-31&asOf=2024-04-30');
    expect(pit.body.meta.actionCoverage.gap).toBe('never_checked');
    await ingest(svc, '/corporate-actions/coverage-checks', [
      { instrumentId: id, checkedAt: '2024-06-01T00:00:00Z', source: 'vendor-x', coveredFrom: '2000-01-01', actionsFound: 0 },
    ]);
    expect((await prices(id, 'from=2015-01-01&to=2015-12-31')).body.meta.actionCoverage).toMatchObject({
      coversSeries: true,
      gap: 'none',
      lastCheckedAt: '2024-06-01T00:00:00.000Z',
    });
  });

  it('when the instrument is unknown or the range is invalid, then 404 or 400 naming the field', async () => {
    expect((await prices(randomUUID(), 'from=2020-01-01&to=2020-01-31')).status).toBe(404);
    const { id } = await createInstrument(svc);
    const reversed = await prices(id, 'from=2020-02-01&to=2020-01-01');
    expect(reversed.status).toBe(400);
    expect(Object.keys(reversed.body.error.details)).toEqual(['to']);
    const bad = await prices(id, 'from=2020-02-30&adjusted=yes');
    expect(Object.keys(bad.body.error.details).sort()).toEqual(['adjusted', 'from', 'to']);
    const notAnId = await svc.get(`/v1/instruments/not-a-uuid/prices?from=2020-01-01&to=2020-01-02`, key);
    expect(notAnId.status).toBe(400);
    expect(Object.keys(notAnId.body.error.details)).toEqual(['id']);
  });
});

describe('bulk prices', () => {
  it('when 500 ids include unknown ones, then the map holds only the known, each with its own version and meta', async () => {
    const a = await createInstrument(svc);
    const b = await createInstrument(svc);
    await ingest(svc, '/bars/daily', [dailyBar(a.id, { barDate: '2020-06-01', close: 10 }), dailyBar(a.id, { barDate: '2020-06-02', close: 12 })]);
    await ingest(svc, '/corporate-actions', [split(a.id, '2020-06-02', 2)]);
    const unknown = Array.from({ length: 498 }, () => randomUUID());
    const ids = [unknown[0], a.id, ...unknown.slice(1, 250), b.id, ...unknown.slice(250)];
    expect(ids).toHaveLength(500);
    const res = await svc.get(`/v1/prices/bulk?instrumentIds=${ids.join(',')}&from=2020-06-01&to=2020-06-30&adjusted=true`, key);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual([a.id, b.id].sort());
    expect(res.body.data[a.id].map((x: any) => x.closePrice)).toEqual([5, 12]);
    expect(res.body.data[b.id]).toEqual([]);
    expect(res.body.meta.actionSetVersions).toEqual({ [a.id]: 1, [b.id]: 0 });
    expect(res.body.meta.priceBases[a.id]).toMatchObject({ priceBasis: 'adjusted', actionsApplied: 1 });
    expect(res.body.meta.actionCoverages[b.id].gap).toBe('never_checked');
    expect(res.body.meta.actionCoverage).toEqual({ checked: false, coversSeries: false, actionsFound: null });
    expect(res.body.meta.provenance).toEqual({ observed: 0, vendor_pit: 0, announced: 1, backfilled: 0, pitValid: true });
    // Read now, a series that ends in 2020 is behind the last completed session, and one without bars has none; the
    // reason given is the first found in id order (docs/api.md, "Freshness").
    const staleReason = [a.id, b.id].sort()[0] === a.id ? 'series_behind' : 'no_bars';
    expect(res.body.meta).toMatchObject({ adjusted: true, stale: true, staleReason, asOf: expect.any(String), source: 'test-fixture' });
  });

  it('when 501 ids are requested, or none, then 400 invalid_request', async () => {
    const ids = Array.from({ length: 501 }, () => randomUUID());
    const res = await svc.get(`/v1/prices/bulk?instrumentIds=${ids.join(',')}&from=2020-06-01&to=2020-06-30`, key);
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error.details)).toEqual(['instrumentIds']);
    expect((await svc.get('/v1/prices/bulk?instrumentIds=&from=2020-06-01&to=2020-06-30', key)).status).toBe(400);
    expect((await svc.get('/v1/prices/bulk?from=2020-06-01&to=2020-06-30', key)).status).toBe(400);
  });

  it('when every id is unknown, then the map is empty', async () => {
    const res = await svc.get(`/v1/prices/bulk?instrumentIds=${randomUUID()}&from=2020-06-01&to=2020-06-30`, key);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({});
  });
});

describe('intraday bars', () => {
  function minuteBar(instrumentId: string, ts: string, o: number, h: number, l: number, c: number, v: number) {
    return {
      instrumentId,
      barTimestamp: ts,
      openPrice: o,
      highPrice: h,
      lowPrice: l,
      closePrice: c,
      volume: v,
      quoteCurrency: 'USD',
      quoteUnit: 'USD per share',
      source: 'test-fixture',
      asOf: '2024-03-09T00:00:00Z',
    };
  }

  it('when 1-minute bars are ingested, then the 5-minute bars equal a hand aggregation (first, max, min, last, sum over UTC buckets), and a correction refreshes them', async () => {
    const { id } = await createInstrument(svc);
    const minutes: [string, number, number, number, number, number][] = [
      ['2024-03-04T14:30:00Z', 10, 11, 9.5, 10.5, 100],
      ['2024-03-04T14:31:00Z', 10.5, 12, 10.1, 11.8, 200],
      ['2024-03-04T14:34:00Z', 11.8, 11.9, 8.7, 9.1, 50],
      ['2024-03-04T14:35:00Z', 9.1, 9.4, 9.0, 9.3, 10],
      ['2024-03-04T14:39:00Z', 9.3, 13, 9.2, 12.9, 5],
    ];
    await ingest(
      svc,
      '/bars/intraday',
      minutes.map((m) => minuteBar(id, ...m)),
    );
    const res = await svc.get(`/v1/instruments/${id}/intraday?from=2024-03-04&to=2024-03-04&interval=5min`, key);
    expect(res.status).toBe(200);
    expect(res.body.meta.interval).toBe('5min');
    expect(res.body.data).toEqual([
      {
        barTimestamp: '2024-03-04T14:30:00.000Z',
        openPrice: 10,
        highPrice: 12,
        lowPrice: 8.7,
        closePrice: 9.1,
        volume: 350,
        quoteCurrency: 'USD',
        quoteUnit: 'USD per share',
        source: 'test-fixture',
      },
      {
        barTimestamp: '2024-03-04T14:35:00.000Z',
        openPrice: 9.1,
        highPrice: 13,
        lowPrice: 9.0,
        closePrice: 12.9,
        volume: 15,
        quoteCurrency: 'USD',
        quoteUnit: 'USD per share',
        source: 'test-fixture',
      },
    ]);
    const hour = await svc.get(`/v1/instruments/${id}/intraday?from=2024-03-04&to=2024-03-04&interval=1hour`, key);
    expect(hour.body.data).toEqual([
      expect.objectContaining({ barTimestamp: '2024-03-04T14:00:00.000Z', openPrice: 10, highPrice: 13, lowPrice: 8.7, closePrice: 12.9, volume: 365 }),
    ]);

    await ingest(svc, '/bars/intraday', [minuteBar(id, '2024-03-04T14:34:00Z', 11.8, 11.9, 7.5, 9.1, 60)]);
    const corrected = await svc.get(`/v1/instruments/${id}/intraday?from=2024-03-04&to=2024-03-04&interval=5min`, key);
    expect(corrected.body.data[0]).toMatchObject({ lowPrice: 7.5, volume: 360 });
    const raw = await svc.get(`/v1/instruments/${id}/intraday?from=2024-03-04&to=2024-03-04&interval=1min`, key);
    expect(raw.body.data).toHaveLength(5);
  });

  it('when the interval is unsupported, then 400 names the five allowed values; a coarser series is never substituted', async () => {
    const { id } = await createInstrument(svc);
    const res = await svc.get(`/v1/instruments/${id}/intraday?from=2024-03-04&to=2024-03-04&interval=2min`, key);
    expect(res.status).toBe(400);
    const message = res.body.error.details.interval.join(' ');
    for (const allowed of ['1min', '5min', '15min', '30min', '1hour']) expect(message).toContain(allowed);
  });

  it('when the instrument is fx, then intraday is 400; equity, etf, index and crypto are served', async () => {
    const fx = await createInstrument(svc, { assetClass: 'fx' });
    const res = await svc.get(`/v1/instruments/${fx.id}/intraday?from=2024-03-04&to=2024-03-04&interval=1min`, key);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    for (const assetClass of ['etf', 'index', 'crypto']) {
      const ok = await createInstrument(svc, { assetClass });
      expect((await svc.get(`/v1/instruments/${ok.id}/intraday?from=2024-03-04&to=2024-03-04&interval=1min`, key)).status).toBe(200);
    }
  });

  it('when no instrument has the id, then intraday is 404 at every interval, a 1-hour year (one statement) and a 1-minute month (split) alike', async () => {
    const unknown = '00000000-0000-4000-8000-00000000abcd';
    for (const q of [
      'from=2024-03-04&to=2024-03-04&interval=1min',
      'from=2023-01-01&to=2023-12-31&interval=1hour',
      'from=2024-03-01&to=2024-03-31&interval=1min',
    ]) {
      const res = await svc.get(`/v1/instruments/${unknown}/intraday?${q}`, key);
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'not_found', message: 'instrument not found' });
    }
  });

  it('when a minute bar is not on a whole minute, then the batch is refused naming the row', async () => {
    const { id } = await createInstrument(svc);
    const res = await svc.admin('POST', '/bars/intraday', [
      minuteBar(id, '2024-03-04T14:30:00Z', 1, 1, 1, 1, 1),
      minuteBar(id, '2024-03-04T14:30:30Z', 1, 1, 1, 1, 1),
    ]);
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error.details)).toEqual(['rows[1].barTimestamp']);
  });
});

describe('instrument search and lookup', () => {
  it('when both modes or neither are requested, then 400', async () => {
    expect((await svc.get('/v1/instruments?query=a&brokerCode=X&broker=b', key)).status).toBe(400);
    expect((await svc.get('/v1/instruments?brokerCode=X', key)).status).toBe(400);
    expect((await svc.get('/v1/instruments', key)).status).toBe(400);
  });

  it('when looking up by broker code, then the match is exact, case and punctuation included, and no match is an empty array', async () => {
    const code = `${uniqueSymbol('Q')}:xNas`;
    const { id } = await createInstrument(svc, { brokerCodes: { brokerx: code, brokery: 'other' } });
    const hit = await svc.get(`/v1/instruments?brokerCode=${encodeURIComponent(code)}&broker=brokerx`, key);
    expect(hit.body.data.map((i: any) => i.id)).toEqual([id]);
    expect(hit.body.data[0].brokerCodes).toEqual({ brokerx: code, brokery: 'other' });
    for (const near of [code.toUpperCase(), code.replace(':', '.'), code.slice(0, -1)]) {
      expect((await svc.get(`/v1/instruments?brokerCode=${encodeURIComponent(near)}&broker=brokerx`, key)).body.data).toEqual([]);
    }
    expect((await svc.get(`/v1/instruments?brokerCode=${encodeURIComponent(code)}&broker=brokery`, key)).body.data).toEqual([]);
  });

  it('when a ticker was renamed, then asOf resolves the right symbol on both sides, and exact beats prefix beats fuzzy', async () => {
    const oldSym = uniqueSymbol('OLD');
    const newSym = uniqueSymbol('NEW');
    // The display name shares nothing with either ticker, so only symbology can match.
    const { id } = await createInstrument(svc, {
      displayName: 'Renamed Holdings',
      symbols: [
        { symbol: oldSym, validFrom: '1995-01-01', validTo: '2002-05-03' },
        { symbol: newSym, validFrom: '2002-05-06' },
      ],
    });
    const before = await svc.get(`/v1/instruments?query=${oldSym}&asOf=2002-05-03`, key);
    expect(before.body.data.map((i: any) => [i.id, i.currentSymbol])).toEqual([[id, oldSym]]);
    const after = await svc.get(`/v1/instruments?query=${newSym}&asOf=2002-05-06T14:30:00Z`, key);
    expect(after.body.data.map((i: any) => [i.id, i.currentSymbol])).toEqual([[id, newSym]]);
    expect((await svc.get(`/v1/instruments?query=${newSym}&asOf=2002-05-03`, key)).body.data).toEqual([]);
    expect((await svc.get(`/v1/instruments?query=${oldSym}`, key)).body.data).toEqual([]);

    const stem = uniqueSymbol('ZZ');
    const exact = await createInstrument(svc, { symbols: [{ symbol: stem, validFrom: '2000-01-01' }] });
    const prefix = await createInstrument(svc, { symbols: [{ symbol: `${stem}X`, validFrom: '2000-01-01' }] });
    const res = await svc.get(`/v1/instruments?query=${stem.toLowerCase()}`, key);
    expect(res.body.data.slice(0, 2).map((i: any) => i.id)).toEqual([exact.id, prefix.id]);
  });

  it('when an instrument is delisted, then it stays searchable; assetClass filters; bulk drops unknown ids; an unknown single id is 404', async () => {
    const sym = uniqueSymbol('DL');
    const { id } = await createInstrument(svc, { isActive: false, symbols: [{ symbol: sym, validFrom: '1990-01-01', validTo: '2009-06-01' }] });
    const found = await svc.get(`/v1/instruments?query=${sym}`, key);
    expect(found.body.data).toEqual([expect.objectContaining({ id, isActive: false, currentSymbol: sym })]);
    expect((await svc.get(`/v1/instruments?query=${sym}&assetClass=etf`, key)).body.data).toEqual([]);
    expect((await svc.get(`/v1/instruments?query=${sym}&assetClass=equity`, key)).body.data).toHaveLength(1);
    const bulk = await svc.get(`/v1/instruments/bulk?ids=${randomUUID()},${id}`, key);
    expect(bulk.body.data.map((i: any) => i.id)).toEqual([id]);
    const single = await svc.get(`/v1/instruments/${id}`, key);
    expect(single.body.data).toMatchObject({ id, assetClass: 'equity', currentSymbol: sym, isActive: false, vendorCode: null });
    const missing = await svc.get(`/v1/instruments/${randomUUID()}`, key);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    expect((await svc.get(`/v1/instruments/bulk?ids=${Array.from({ length: 501 }, () => randomUUID()).join(',')}`, key)).status).toBe(400);
  });

  it('when the bulk instrument read names its list instrumentIds, the word the other lists use, then it is the same read; both names, or neither, is 400', async () => {
    const { id } = await createInstrument(svc);
    const unknown = randomUUID();
    const byAlias = await svc.get(`/v1/instruments/bulk?instrumentIds=${unknown},${id}`, key);
    expect(byAlias.status).toBe(200);
    expect(byAlias.body.data.map((i: { id: string }) => i.id)).toEqual([id]);
    expect(byAlias.body.meta).toMatchObject({ requested: 2, found: 1 });
    const both = await svc.get(`/v1/instruments/bulk?ids=${id}&instrumentIds=${id}`, key);
    expect(both.status).toBe(400);
    expect(both.body.error.details).toEqual({ instrumentIds: [`is ids by another name; send one of them; received "${id}"`] });
    const neither = await svc.get('/v1/instruments/bulk', key);
    expect(neither.status).toBe(400);
    expect(Object.keys(neither.body.error.details)).toEqual(['ids']);
  });
});

describe('batch ingest', () => {
  it('when one row of a batch is bad, then 400 names its index and nothing is stored', async () => {
    const { id } = await createInstrument(svc);
    const rows = [
      dailyBar(id, { barDate: '2020-01-02', close: 10 }),
      dailyBar(id, { barDate: '2020-01-03', close: 11 }),
      { ...dailyBar(id, { barDate: '2020-01-06', close: 12 }), volume: -5 },
    ];
    const res = await svc.admin('POST', '/bars/daily', rows);
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual({ 'rows[2].volume': ['must be a number, at least 0; received -5'] });
    const unknownInstrument = await svc.admin('POST', '/bars/daily', [
      dailyBar(id, { barDate: '2020-01-02', close: 10 }),
      dailyBar(randomUUID(), { barDate: '2020-01-02', close: 10 }),
    ]);
    expect(unknownInstrument.status).toBe(400);
    expect(Object.keys(unknownInstrument.body.error.details)).toEqual(['rows[1].instrumentId']);
    const [count] = await svc.sql`select count(*)::int as n from daily_bars where instrument_id = ${id}`;
    expect(count.n).toBe(0);
  });

  it('when the same batch arrives as JSON, NDJSON and CSV, then it is stored once and the repeats are unchanged', async () => {
    const { id } = await createInstrument(svc);
    const rows = [dailyBar(id, { barDate: '2020-01-02', close: 10 }), dailyBar(id, { barDate: '2020-01-03', close: 11, volume: null })];
    expect(await ingest(svc, '/bars/daily', rows)).toMatchObject({ rows: 2, inserted: 2, updated: 0, unchanged: 0 });
    const ndjson = rows.map((r) => JSON.stringify(r)).join('\n');
    expect((await svc.admin('POST', '/bars/daily', ndjson, 'application/x-ndjson')).body.data).toMatchObject({ rows: 2, inserted: 0, unchanged: 2 });
    const cols = Object.keys(rows[0]);
    const csv = [cols.join(','), ...rows.map((r) => cols.map((c) => ((r as any)[c] === null ? '' : (r as any)[c])).join(','))].join('\n');
    expect((await svc.admin('POST', '/bars/daily', csv, 'text/csv')).body.data).toMatchObject({ rows: 2, inserted: 0, unchanged: 2 });
    const stored = await svc.sql`select volume from daily_bars where instrument_id = ${id} order by bar_date`;
    expect(stored.map((s) => s.volume)).toEqual([1000, null]);
    expect((await svc.admin('POST', '/bars/daily', 'x', 'text/plain')).status).toBe(415);
  });
});
