import { randomUUID } from 'node:crypto';
import { sampleCorrelation } from 'simple-statistics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstrument, dailyBar, ingest, weekdays } from './fixtures.ts';
import { startService, type Service } from './harness.ts';

// GET /v1/instruments/{id}/sentiment, GET /v1/sentiment/source-leads and
// POST /admin/v1/sentiment. The database is shared with other files and the
// leads pool every instrument, so each test scores its own instruments under
// sources of its own (a random suffix).

let svc: Service;
let key: string;

beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['sentiment:read']);
});
afterAll(() => svc.stop());

const sourceName = (stem: string) => `${stem}-${randomUUID().slice(0, 8)}`;

interface ScoreRow {
  instrumentId: string;
  source: string;
  subjectClass: string;
  asOfDate: string;
  score: unknown;
  scale: unknown;
  isHeadlineOnly: boolean | string;
}

function scoreRow(instrumentId: string, source: string, asOfDate: string, score: number, fields: Partial<ScoreRow> = {}): ScoreRow {
  return { instrumentId, source, subjectClass: 'business', asOfDate, score, scale: [-1, 1], isHeadlineOnly: false, ...fields };
}

const post = (rows: unknown, contentType?: string) => svc.admin('POST', '/sentiment', rows, contentType);

async function postOk(rows: unknown, contentType?: string) {
  const res = await post(rows, contentType);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

async function readScores(id: string, query = '') {
  const res = await svc.get(`/v1/instruments/${id}/sentiment${query ? `?${query}` : ''}`, key);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res;
}

async function readLeads(query: string) {
  const res = await svc.get(`/v1/sentiment/source-leads?${query}`, key);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const storedScores = async (instrumentId: string) =>
  (await svc.sql`select count(*)::int as n from sentiment_scores where instrument_id = ${instrumentId}`)[0].n as number;

describe('scores come back exactly as ingested', () => {
  it('when awkward doubles are posted as JSON text, then the read returns the same JSON, byte for byte (−0 as 0)', async () => {
    const { id } = await createInstrument(svc);
    const source = sourceName('exact');
    // The JSON numbers as sent: 0.1 + 0.2, the smallest normal and subnormal doubles, 1e-7, 1 − 2⁻⁵³, -0, the bounds.
    const tokens = ['0.30000000000000004', '2.2250738585072014e-308', '5e-324', '1e-7', '0.9999999999999999', '-0', '-1', '1', '-0.1', '0.333333333333333'];
    const body = `[${tokens
      .map(
        (t, i) =>
          `{"instrumentId":"${id}","source":"${source}","subjectClass":"business","asOfDate":"2030-01-${String(i + 1).padStart(2, '0')}","score":${t},"scale":[-1,1],"isHeadlineOnly":${i % 2 === 0}}`,
      )
      .join(',')}]`;
    expect(await postOk(body)).toMatchObject({ rows: 10, inserted: 10, updated: 0, unchanged: 0 });

    const res = await readScores(id);
    const expected = tokens.map((t, i) => ({
      instrumentId: id,
      asOfDate: `2030-01-${String(i + 1).padStart(2, '0')}`,
      score: JSON.parse(t),
      scale: [-1, 1],
      subjectClass: 'business',
      isHeadlineOnly: i % 2 === 0,
      source,
    }));
    expect(JSON.stringify(res.body.data)).toBe(JSON.stringify(expected));
    // Every token but -0 appears in the answer as JS writes the same double; -0 is stored as 0.
    const written = tokens.map((t) => JSON.stringify(JSON.parse(t)));
    expect(written).toEqual([
      '0.30000000000000004',
      '2.2250738585072014e-308',
      '5e-324',
      '1e-7',
      '0.9999999999999999',
      '0',
      '-1',
      '1',
      '-0.1',
      '0.333333333333333',
    ]);
    const scoreTexts = [...JSON.stringify(res.body.data).matchAll(/"score":([^,]+),/g)].map((m) => m[1]);
    expect(scoreTexts).toEqual(written);
    // Scores of 2030 are dated after the time of reading: not yet published, so the source has scored nothing in the 7 days before it.
    expect(res.body.meta).toEqual({ asOf: expect.any(String), source, stale: true, staleReason: 'source_silent' });
    const [zero] = await svc.sql`select score::text as text from sentiment_scores where instrument_id = ${id} and as_of_date = '2030-01-06'`;
    expect(zero.text).toBe('0');
  });

  it('when the same scores come as CSV with the scale as a JSON cell, then they are stored as the JSON upload stored them', async () => {
    const { id } = await createInstrument(svc);
    const source = sourceName('csv');
    const csv = [
      'instrumentId,source,subjectClass,asOfDate,score,scale,isHeadlineOnly',
      `${id},${source},business,2030-02-01,0.30000000000000004,"[0,100]",true`,
      `${id},${source},market_commentary,2030-02-01,99.99,"[0, 100]",false`,
      `${id},${source},business,2030-02-02,1e-7,"[0,100]",false`,
    ].join('\n');
    expect(await postOk(csv, 'text/csv')).toMatchObject({ rows: 3, inserted: 3 });
    const { body } = await readScores(id);
    expect(body.data.map((r: any) => [r.asOfDate, r.subjectClass, r.score, r.scale, r.isHeadlineOnly])).toEqual([
      ['2030-02-01', 'business', 0.30000000000000004, [0, 100], true],
      ['2030-02-01', 'market_commentary', 99.99, [0, 100], false],
      ['2030-02-02', 'business', 1e-7, [0, 100], false],
    ]);
  });

  it('when a score is posted again, then an equal one is unchanged and derives nothing, and another value is a correction', async () => {
    const { id } = await createInstrument(svc);
    const source = sourceName('upsert');
    const rows = [scoreRow(id, source, '2030-03-02', 0.25), scoreRow(id, source, '2030-03-03', -0.5)];
    const first = await postOk(rows);
    expect(first).toMatchObject({ rows: 2, inserted: 2, updated: 0, unchanged: 0 });
    expect(first.derived.sourceLeads).toEqual({
      rows: expect.any(Number),
      inserted: expect.any(Number),
      updated: expect.any(Number),
      unchanged: expect.any(Number),
      removed: 0,
    });
    expect(first.derived.sourceLeads.inserted).toBeGreaterThanOrEqual(1);
    expect(await postOk(rows)).toEqual({ rows: 2, inserted: 0, updated: 0, unchanged: 2 });
    expect(await postOk([{ ...rows[1], score: -0.75, isHeadlineOnly: true }])).toMatchObject({ rows: 1, inserted: 0, updated: 1, unchanged: 0 });
    const { body } = await readScores(id);
    expect(body.data.map((r: any) => [r.score, r.isHeadlineOnly])).toEqual([
      [0.25, false],
      [-0.75, true],
    ]);
  });
});

describe('refused uploads store nothing', () => {
  let id: string;
  let source: string;

  beforeAll(async () => {
    id = (await createInstrument(svc)).id;
    source = sourceName('refusals');
    await postOk([scoreRow(id, source, '2030-04-01', 0.5)]);
  });

  async function refused(rows: unknown, field: string) {
    const before = await storedScores(id);
    const res = await post(rows);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(Object.keys(res.body.error.details)).toEqual([field]);
    expect(await storedScores(id)).toBe(before);
    return res.body.error.details[field] as string[];
  }

  it('when a score lies outside its row’s scale, then 400 names rows[i].score', async () => {
    const rows = [scoreRow(id, source, '2030-04-02', 0.5), scoreRow(id, source, '2030-04-03', 1.0000000000000002)];
    expect(await refused(rows, 'rows[1].score')).toEqual(['must be within the scale [-1, 1]; received 1.0000000000000002']);
    await refused([scoreRow(id, sourceName('pct'), '2030-04-02', -0.1, { scale: [0, 100] })], 'rows[0].score');
  });

  it('when a row’s scale differs from its source’s stored one, then 400 names rows[i].scale with the stored scale', async () => {
    const rows = [scoreRow(id, sourceName('other'), '2030-04-02', 0.5), scoreRow(id, source, '2030-04-03', 50, { scale: [0, 100] })];
    expect(await refused(rows, 'rows[1].scale')).toEqual(["this source's scale is [-1, 1]; a source has one scale (a rescaled feed is a new source)"]);
  });

  it('when two rows of one new source give two scales, then 400 names the later row and the source is not recorded', async () => {
    const fresh = sourceName('mixed');
    const rows = [scoreRow(id, fresh, '2030-04-02', 0.5), scoreRow(id, fresh, '2030-04-03', 0.5, { scale: [-1, 2] })];
    expect(await refused(rows, 'rows[1].scale')).toEqual(['an earlier row of this batch gives this source another scale; a source has one scale']);
    expect(await svc.sql`select 1 from sentiment_sources where source = ${fresh}`).toHaveLength(0);
  });

  it('when the scale is not [min, max] with min below max, then 400 names rows[i].scale', async () => {
    for (const scale of [[1, -1], [0, 0], [0], [0, 1, 2], 'x', '[0,1']) {
      await refused([scoreRow(id, source, '2030-04-02', 0, { scale })], 'rows[0].scale');
    }
    // An element that is not a finite number is named itself (1e400 goes out as null).
    for (const scale of [
      [0, 'a'],
      [0, 1e400],
    ])
      await refused([scoreRow(id, source, '2030-04-02', 0, { scale })], 'rows[0].scale.1');
  });

  it('when an instrument is unknown, a key repeats, or a subject class is not one of the two, then 400 names the row', async () => {
    expect(await refused([scoreRow(id, source, '2030-04-02', 0), scoreRow(randomUUID(), source, '2030-04-02', 0)], 'rows[1].instrumentId')).toEqual([
      'unknown instrument',
    ]);
    await refused([scoreRow(id, source, '2030-04-02', 0), scoreRow(id, source, '2030-04-02', 0.5)], 'rows[1].asOfDate');
    expect(await refused([scoreRow(id, source, '2030-04-02', 0, { subjectClass: 'price' })], 'rows[0].subjectClass')).toEqual([
      'must be one of: business, market_commentary; received "price"',
    ]);
  });
});

describe('reading scores', () => {
  let id: string;
  const [a, b] = [sourceName('a-filter'), sourceName('b-filter')];

  beforeAll(async () => {
    id = (await createInstrument(svc)).id;
    await postOk([
      scoreRow(id, b, '2030-05-03', 40, { scale: [0, 100] }),
      scoreRow(id, a, '2030-05-03', 0.1, { subjectClass: 'market_commentary' }),
      scoreRow(id, a, '2030-05-03', 0.2),
      scoreRow(id, a, '2030-05-01', 0.3),
      scoreRow(id, b, '2030-05-02', 60, { scale: [0, 100], subjectClass: 'market_commentary' }),
      scoreRow(id, a, '2030-05-05', 0.4),
    ]);
  });

  const keysOf = (data: any[]) => data.map((r) => `${r.asOfDate} ${r.source === a ? 'a' : 'b'} ${r.subjectClass}`);

  it('when no filter is given, then rows come by asOfDate, then source, then subjectClass', async () => {
    const { body } = await readScores(id);
    expect(keysOf(body.data)).toEqual([
      '2030-05-01 a business',
      '2030-05-02 b market_commentary',
      '2030-05-03 a business',
      '2030-05-03 a market_commentary',
      '2030-05-03 b business',
      '2030-05-05 a business',
    ]);
    expect(body.meta.source).toBe([a, b].sort().join(', '));
  });

  it('when from, to, subjectClass and source narrow the read, then from and to are inclusive and each filter holds', async () => {
    expect(keysOf((await readScores(id, 'from=2030-05-02&to=2030-05-03')).body.data)).toEqual([
      '2030-05-02 b market_commentary',
      '2030-05-03 a business',
      '2030-05-03 a market_commentary',
      '2030-05-03 b business',
    ]);
    expect(keysOf((await readScores(id, 'subjectClass=market_commentary')).body.data)).toEqual([
      '2030-05-02 b market_commentary',
      '2030-05-03 a market_commentary',
    ]);
    expect(keysOf((await readScores(id, `source=${b}&to=2030-05-02`)).body.data)).toEqual(['2030-05-02 b market_commentary']);
    // No rows: the instrument's sources are judged, and their scores, of 2030, are none of them dated in the 7 days before the read.
    const none = (await readScores(id, 'from=2031-01-01')).body;
    expect(none).toEqual({ data: [], meta: { asOf: expect.any(String), source: 'none', stale: true, staleReason: 'source_silent' } });
  });

  it('when the instrument is unknown, then 404; a bad filter 400 naming it; a key without sentiment:read 403', async () => {
    const missing = await svc.get(`/v1/instruments/${randomUUID()}/sentiment`, key);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    for (const [query, field] of [
      ['subjectClass=price', 'subjectClass'],
      ['from=2030-05-03&to=2030-05-02', 'to'],
      ['from=2030-02-30', 'from'],
      ['source=', 'source'],
      ['colour=red', 'colour'],
    ]) {
      const res = await svc.get(`/v1/instruments/${id}/sentiment?${query}`, key);
      expect(res.status, query).toBe(400);
      expect(Object.keys(res.body.error.details), query).toEqual([field]);
    }
    const other = await svc.keyWith(['prices:read']);
    expect((await svc.get(`/v1/instruments/${id}/sentiment`, other)).status).toBe(403);
    expect((await svc.get('/v1/sentiment/source-leads', other)).status).toBe(403);
  });
});

describe('source leads', () => {
  // Two instruments, 160 weekdays of closes from a fixed pseudo-random walk.
  const days = weekdays('2025-01-06', '2025-08-15');
  let ids: string[];
  let closes: number[][];
  const leading = sourceName('leading');
  const independent = sourceName('independent');

  const ret = (i: number, s: number) => closes[i][s] / closes[i][s - 1] - 1;

  beforeAll(async () => {
    ids = [(await createInstrument(svc)).id, (await createInstrument(svc)).id];
    let state = 12345;
    const next = () => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return state / 2 ** 32;
    };
    closes = ids.map(() => {
      const c = [50];
      for (let s = 1; s < days.length; s++) c.push(c[s - 1] * (1 + (next() - 0.5) * 0.05));
      return c;
    });
    for (const [i, id] of ids.entries()) {
      await ingest(
        svc,
        '/bars/daily',
        days.map((barDate, s) => dailyBar(id, { barDate, close: closes[i][s] })),
      );
    }
    const rows: ScoreRow[] = [];
    for (const [i, id] of ids.entries()) {
      for (let s = 1; s + 3 < days.length; s++) {
        // Leading: the return three sessions later, on a [-1, 1] scale; independent: the generator's next draw on [0, 100].
        rows.push(scoreRow(id, leading, days[s], Math.max(-1, Math.min(1, ret(i, s + 3) * 20))));
        rows.push(scoreRow(id, independent, days[s], Math.round(next() * 1000) / 10, { scale: [0, 100] }));
        rows.push(scoreRow(id, leading, days[s], Math.max(-1, Math.min(1, ret(i, s + 3) * 20)), { subjectClass: 'market_commentary' }));
      }
    }
    const stored = await postOk(rows);
    expect(stored.derived.sourceLeads.rows).toBeGreaterThanOrEqual(3);
  });

  it('when a score leads the returns by 3 sessions, then the route answers bestLagDays 3, eligible, with the correlation of the pairs by hand', async () => {
    const { data, meta } = await readLeads(`source=${leading}&subjectClass=business`);
    expect(data).toHaveLength(1);
    const [lead] = data;
    // By hand: each score of session s with the return of session s + L, both instruments pooled.
    const curve = [...Array(11).keys()].map((lag) => {
      const xs: number[] = [];
      const ys: number[] = [];
      ids.forEach((_, i) => {
        for (let s = 1; s + 3 < days.length; s++) {
          if (s + lag >= days.length) continue;
          xs.push(Math.max(-1, Math.min(1, ret(i, s + 3) * 20)));
          ys.push(ret(i, s + lag));
        }
      });
      return { lagDays: lag, correlation: sampleCorrelation(xs, ys), sampleSize: xs.length };
    });
    expect(lead.correlationByLag.map((c: any) => c.sampleSize)).toEqual(curve.map((c) => c.sampleSize));
    lead.correlationByLag.forEach((c: any, lag: number) => expect(Math.abs(c.correlation - curve[lag].correlation)).toBeLessThan(1e-12));
    expect(lead).toMatchObject({
      source: leading,
      subjectClass: 'business',
      bestLagDays: 3,
      sampleSize: 2 * (days.length - 4),
      isPromotionEligible: true,
      instruments: 2,
      firstAsOfDate: days[1],
      lastAsOfDate: days[days.length - 4],
    });
    expect(lead.peakCorrelation).toBe(lead.correlationByLag[3].correlation);
    expect(meta.rule).toEqual({ minSampleSize: 60, minCorrelation: 0.1, alpha: 0.05, lagsSearched: 11, minLagDays: 1, subjectClasses: ['business'] });
    expect(meta.returnDefinition).toContain('simple return');
  });

  it('when a score is independent of the returns, or market commentary with the same lead, then it is not eligible', async () => {
    expect((await readLeads(`source=${independent}`)).data).toMatchObject([{ subjectClass: 'business', isPromotionEligible: false }]);
    const commentary = (await readLeads(`source=${leading}&subjectClass=market_commentary`)).data;
    expect(commentary).toMatchObject([{ bestLagDays: 3, isPromotionEligible: false }]);
    const all = (await readLeads(`source=${leading}`)).data;
    expect(all.map((l: any) => l.subjectClass)).toEqual(['business', 'market_commentary']);
  });

  it('when everything is derived twice, then the second run stores nothing', async () => {
    await svc.admin('POST', '/derive', {});
    const again = await svc.admin('POST', '/derive', { instrumentIds: [ids[0]] });
    expect(again.status).toBe(200);
    const { rows, inserted, updated, unchanged, removed } = again.body.data.sourceLeads;
    expect({ inserted, updated, removed }).toEqual({ inserted: 0, updated: 0, removed: 0 });
    expect(unchanged).toBe(rows);
    expect(rows).toBeGreaterThanOrEqual(3);
  });

  it('when bars change under scored instruments, then the leads are derived again; under unscored ones, not at all', async () => {
    const bar = (id: string) => dailyBar(id, { barDate: '2025-08-18', close: 60 });
    expect((await ingest(svc, '/bars/daily', [bar(ids[0])])).derived.sourceLeads).toMatchObject({ removed: 0 });
    const unscored = await createInstrument(svc);
    expect((await ingest(svc, '/bars/daily', [bar(unscored.id)])).derived).toEqual({});
  });

  it('when a pair loses its last score, then the next derivation removes its lead', async () => {
    const gone = sourceName('gone');
    await postOk([scoreRow(ids[0], gone, days[10], 0.5)]);
    expect((await readLeads(`source=${gone}`)).data).toMatchObject([
      { bestLagDays: null, peakCorrelation: null, sampleSize: null, isPromotionEligible: false, instruments: 1 },
    ]);
    // No route deletes a score; the database does, as an operator would.
    await svc.sql`delete from sentiment_scores where source = ${gone}`;
    const derived = await svc.admin('POST', '/derive', {});
    expect(derived.body.data.sourceLeads.removed).toBe(1);
    expect((await readLeads(`source=${gone}`)).data).toEqual([]);
  });
});
