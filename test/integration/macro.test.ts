import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadDemoMacroSeries } from '../../server/demo/macro-series.ts';
import { storeShippedRiskFreeRates } from '../../server/demo/risk-free-rates.ts';
import { FredStub, type StubSeries } from '../support/fred-stub.ts';
import { startService, type Service } from './harness.ts';

// Macro series and the risk-free rate against a real database and the real
// app, with FRED played by a loopback stub (test/support/fred-stub.ts), the
// only stub the suite allows. Every expected value below is written from the
// stub's data by hand.

const FRED_KEY = 'abcdef0123456789abcdef0123456789';

const DGS10: StubSeries = {
  title: 'Market Yield on U.S. Treasury Securities at 10-Year Constant Maturity, Quoted on an Investment Basis',
  units: 'Percent',
  frequency: 'Daily',
  frequencyShort: 'D',
  observations: [
    ['2024-12-23', '4.59'],
    ['2024-12-24', '4.59'],
    ['2024-12-25', '.'],
    ['2024-12-26', '4.58'],
    ['2024-12-27', '4.62'],
    ['2024-12-30', '4.55'],
    ['2024-12-31', '4.58'],
    ['2025-01-01', '.'],
    ['2025-01-02', '4.57'],
  ],
};

const DGS3MO: StubSeries = {
  title: 'Market Yield on U.S. Treasury Securities at 3-Month Constant Maturity, Quoted on an Investment Basis',
  units: 'Percent',
  frequency: 'Daily',
  frequencyShort: 'D',
  observations: [
    ['2025-01-02', '4.36'],
    ['2025-01-03', '4.37'],
    ['2025-01-06', '.'],
  ],
};

const PAYEMS: StubSeries = {
  title: 'All Employees, Total Nonfarm',
  units: 'Thousands of Persons',
  frequency: 'Monthly',
  frequencyShort: 'M',
  seasonalAdjustmentShort: 'SA',
  observations: [
    ['2024-10-01', '159059'],
    ['2024-11-01', '159320'],
    ['2024-12-01', '159627'],
  ],
};

const serviceWith = (stub: FredStub | null, env: Record<string, string> = {}) =>
  startService({ ...(stub ? { FRED_API_KEY: stub.apiKey, FRED_BASE_URL: stub.url } : {}), FRED_FAILURE_BACKOFF_MS: '0', ...env });

async function clearMacro(svc: Service) {
  await svc.sql`delete from macro_observations`;
  await svc.sql`delete from macro_series`;
}

/** Moves a stored copy's fetch time back, as the passing of time would. */
async function ageCopy(svc: Service, seriesId: string, hours: number) {
  await svc.sql`update macro_series set fetched_at = fetched_at - make_interval(hours => ${hours}) where series_id = ${seriesId}`;
}

describe('macro series from FRED', () => {
  let stub: FredStub;
  let svc: Service;
  let key: string;

  beforeAll(async () => {
    stub = await new FredStub(FRED_KEY).start();
    svc = await serviceWith(stub);
    key = await svc.keyWith(['macro:read']);
  });
  afterAll(async () => {
    await svc?.stop();
    await stub?.stop();
  });
  beforeEach(async () => {
    await clearMacro(svc);
    stub.series.clear();
    stub.series.set('DGS10', DGS10);
    stub.series.set('DGS3MO', DGS3MO);
    stub.series.set('PAYEMS', PAYEMS);
    stub.mode = 'serve';
    stub.pageCap = 100_000;
    stub.received.length = 0;
    for (const k of Object.keys(stub.calls)) stub.calls[k] = 0;
  });

  it('when the id is not on the allowlist, then 400 invalid_request names seriesId, and FRED is never asked', async () => {
    for (const id of ['GDP', 'DGS7', 'GS10', 'dgs10x', '..%2Fseries']) {
      const res = await svc.get(`/v1/macro/series/${id}`, key);
      expect(res.status, id).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.details.seriesId[0]).toContain('DGS3MO');
    }
    expect(stub.totalCalls()).toBe(0);
  });

  it('when a series is read for the first time, then it is fetched with the key and file_type json, and "." rows are absent, not 0', async () => {
    const res = await svc.get('/v1/macro/series/DGS10', key);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      seriesId: 'DGS10',
      title: DGS10.title,
      units: 'Percent',
      frequency: 'daily',
      observations: [
        { date: '2024-12-23', value: 4.59 },
        { date: '2024-12-24', value: 4.59 },
        { date: '2024-12-26', value: 4.58 },
        { date: '2024-12-27', value: 4.62 },
        { date: '2024-12-30', value: 4.55 },
        { date: '2024-12-31', value: 4.58 },
        { date: '2025-01-02', value: 4.57 },
      ],
    });
    expect(res.body.meta).toMatchObject({
      source: 'fred',
      stale: false,
      staleReason: null,
      providerUpdatedAt: '2026-11-23T21:16:02.000Z',
      seasonalAdjustment: 'NSA',
    });
    expect(stub.calls).toEqual({ series: 1, 'series/observations': 1 });
    expect(stub.received.every((q) => q.get('api_key') === FRED_KEY && q.get('file_type') === 'json' && q.get('series_id') === 'DGS10')).toBe(true);
  });

  it('when the id is lower case, then it is the same series', async () => {
    const res = await svc.get('/v1/macro/series/payems', key);
    expect(res.status).toBe(200);
    expect(res.body.data.seriesId).toBe('PAYEMS');
    expect(res.body.data.frequency).toBe('monthly');
  });

  it('when start and end are given, then only observations between them (inclusive) come back; start after end is 400', async () => {
    const res = await svc.get('/v1/macro/series/DGS10?start=2024-12-26&end=2024-12-31', key);
    expect(res.body.data.observations.map((o: { date: string }) => o.date)).toEqual(['2024-12-26', '2024-12-27', '2024-12-30', '2024-12-31']);
    expect(res.body.meta).toMatchObject({ start: '2024-12-26', end: '2024-12-31' });
    const bad = await svc.get('/v1/macro/series/DGS10?start=2025-01-02&end=2024-12-31', key);
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.error.details)).toEqual(['end']);
  });

  it('when the window is given as from and to, the words the other date windows use, then it is the same read; a name and its alias together is 400', async () => {
    const res = await svc.get('/v1/macro/series/DGS10?from=2024-12-26&to=2024-12-31', key);
    expect(res.status).toBe(200);
    expect(res.body.data.observations.map((o: { date: string }) => o.date)).toEqual(['2024-12-26', '2024-12-27', '2024-12-30', '2024-12-31']);
    expect(res.body.meta).toMatchObject({ start: '2024-12-26', end: '2024-12-31' });
    const mixed = await svc.get('/v1/macro/series/DGS10?start=2024-12-26&to=2024-12-27', key);
    expect(mixed.body.data.observations.map((o: { date: string }) => o.date)).toEqual(['2024-12-26', '2024-12-27']);
    const both = await svc.get('/v1/macro/series/DGS10?start=2024-12-26&from=2024-12-27', key);
    expect(both.status).toBe(400);
    expect(both.body.error.details).toEqual({ from: ['is start by another name; send one of them; received "2024-12-27"'] });
    const backwards = await svc.get('/v1/macro/series/DGS10?from=2025-01-02&to=2024-12-31', key);
    expect(backwards.status).toBe(400);
    expect(Object.keys(backwards.body.error.details)).toEqual(['end']);
  });

  it('when the stored copy is fresh, then FRED is not asked again; once past its window (6 hours for a daily series), it is fetched again', async () => {
    await svc.get('/v1/macro/series/DGS10', key);
    await svc.get('/v1/macro/series/DGS10', key);
    expect(stub.calls['series/observations']).toBe(1);
    await ageCopy(svc, 'DGS10', 5);
    await svc.get('/v1/macro/series/DGS10', key);
    expect(stub.calls['series/observations']).toBe(1);
    await ageCopy(svc, 'DGS10', 2);
    stub.series.set('DGS10', { ...DGS10, observations: [...DGS10.observations, ['2025-01-03', '4.60']] });
    const res = await svc.get('/v1/macro/series/DGS10', key);
    expect(stub.calls['series/observations']).toBe(2);
    expect(res.body.data.observations.at(-1)).toEqual({ date: '2025-01-03', value: 4.6 });
    expect(res.body.meta.stale).toBe(false);
  });

  it('when a monthly copy is 23 hours old, then it is still fresh', async () => {
    await svc.get('/v1/macro/series/PAYEMS', key);
    await ageCopy(svc, 'PAYEMS', 23);
    await svc.get('/v1/macro/series/PAYEMS', key);
    expect(stub.calls['series/observations']).toBe(1);
  });

  it('when ten reads of a series nobody has stored arrive at once, then they share one fetch: one call to each FRED endpoint', async () => {
    const answers = await Promise.all(Array.from({ length: 10 }, () => svc.get('/v1/macro/series/DGS10', key)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(new Set(answers.map((a) => JSON.stringify(a.body.data))).size).toBe(1);
    expect(stub.calls).toEqual({ series: 1, 'series/observations': 1 });
  });

  it('when FRED pages the observations, then every page is fetched and stored', async () => {
    stub.pageCap = 3;
    const res = await svc.get('/v1/macro/series/DGS10', key);
    expect(res.body.data.observations).toHaveLength(7);
    expect(stub.calls['series/observations']).toBe(3);
    expect(stub.received.filter((q) => q.has('offset')).map((q) => q.get('offset'))).toEqual(['0', '3', '6']);
  });

  it.each([
    ['down (connection refused)', 'stop', 'provider_unreachable'],
    ['answering 500', 'http500', 'provider_error'],
    ['answering something that is not FRED JSON', 'garbage', 'provider_error'],
  ] as const)('when FRED is %s and a stale copy is stored, then the stored copy is served with stale true', async (_what, mode, reason) => {
    const first = await svc.get('/v1/macro/series/DGS10', key);
    await ageCopy(svc, 'DGS10', 7);
    const down = mode === 'stop' ? await new FredStub(FRED_KEY).start() : stub;
    const local = mode === 'stop' ? await serviceWith(down) : svc;
    try {
      if (mode === 'stop') await down.stop();
      else stub.mode = mode;
      const res = await local.get('/v1/macro/series/DGS10', key);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual(first.body.data);
      expect(res.body.meta).toMatchObject({ stale: true, staleReason: reason, source: 'fred', asOf: expect.any(String) });
      expect(Date.parse(res.body.meta.asOf)).toBeLessThan(Date.parse(first.body.meta.asOf));
    } finally {
      if (local !== svc) await local.stop();
    }
  });

  it('when FRED is down and nothing is stored, then 503 upstream_unavailable, with no series made up', async () => {
    stub.mode = 'http500';
    const res = await svc.get('/v1/macro/series/DGS10', key);
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('upstream_unavailable');
    expect(res.body.error.details).toEqual({ seriesId: ['provider_error'] });
    expect(res.headers.get('retry-after')).toBe('1');
  });

  it('when FRED refuses the key, then 503 upstream_unavailable quoting FRED, and the key appears nowhere in the answer', async () => {
    const wrong = new FredStub('a-different-key-the-service-does-not-have');
    wrong.url = stub.url;
    const local = await serviceWith(wrong);
    try {
      stub.mode = 'serve';
      const res = await local.get('/v1/macro/series/DGS10', await local.keyWith(['macro:read']));
      expect(res.status).toBe(503);
      expect(res.body.error.message).toContain('HTTP 400: Bad Request.  The value for variable api_key is not registered.');
      expect(JSON.stringify(res.body)).not.toContain('a-different-key');
    } finally {
      await local.stop();
    }
  });

  it('when FRED does not answer within FRED_TIMEOUT_MS, then the read is not held: 503 provider_unreachable', async () => {
    const local = await serviceWith(stub, { FRED_TIMEOUT_MS: '200' });
    try {
      stub.mode = 'hang';
      const res = await local.get('/v1/macro/series/DGS10', await local.keyWith(['macro:read']));
      expect(res.status).toBe(503);
      expect(res.body.error.details).toEqual({ seriesId: ['provider_unreachable'] });
      expect(res.body.error.message).toContain('no answer within 200 ms');
    } finally {
      await local.stop();
    }
  });

  it('when a fetch failed within FRED_FAILURE_BACKOFF_MS, then the next read does not ask FRED and says when to retry', async () => {
    const local = await serviceWith(stub, { FRED_FAILURE_BACKOFF_MS: '60000' });
    try {
      const localKey = await local.keyWith(['macro:read']);
      stub.mode = 'http500';
      expect((await local.get('/v1/macro/series/DGS10', localKey)).status).toBe(503);
      const callsAfterFailure = stub.totalCalls();
      stub.mode = 'serve';
      const again = await local.get('/v1/macro/series/DGS10', localKey);
      expect(again.status).toBe(503);
      expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(1);
      expect(stub.totalCalls()).toBe(callsAfterFailure);
    } finally {
      await local.stop();
    }
  });

  it('when a key lacks macro:read, then 403', async () => {
    const other = await svc.keyWith(['fx:read']);
    expect((await svc.get('/v1/macro/series/DGS10', other)).status).toBe(403);
    expect((await svc.get('/v1/rates/risk-free', other)).status).toBe(403);
    expect(stub.totalCalls()).toBe(0);
  });

  describe('the risk-free rate', () => {
    it('when FRED answers, then the latest DGS3MO observation as a decimal, source fred', async () => {
      const res = await svc.get('/v1/rates/risk-free', key);
      expect(res.status).toBe(200);
      // The latest value is 4.37 % on 2025-01-03 (2025-01-06 is ".").
      // A day's observation counts as known from the end of its UTC day.
      expect(res.body.data).toEqual({
        rate: 0.0437,
        maturity: '3M',
        asOf: '2025-01-03',
        source: 'fred',
        seriesId: 'DGS3MO',
        knownFrom: '2025-01-04T00:00:00.000Z',
      });
      // Served live, but the observation has been known since 2025-01-04: more than 4 days before now, so a newer one is due.
      expect(res.body.meta).toMatchObject({ seriesId: 'DGS3MO', stale: true, staleReason: 'newer_observation_due', fallback: null, source: 'fred' });
    });

    it('when FRED is down and DGS3MO was stored before, then the last stored observation stands in, source fallback', async () => {
      await svc.get('/v1/rates/risk-free', key);
      await ageCopy(svc, 'DGS3MO', 7);
      stub.mode = 'http500';
      const res = await svc.get('/v1/rates/risk-free', key);
      expect(res.body.data).toEqual({
        rate: 0.0437,
        maturity: '3M',
        asOf: '2025-01-03',
        source: 'fallback',
        seriesId: 'DGS3MO',
        knownFrom: '2025-01-04T00:00:00.000Z',
      });
      expect(res.body.meta).toMatchObject({ stale: true, staleReason: 'provider_error' });
      expect(res.body.meta.fallback).toMatchObject({ standIn: 'last_stored_observation', reason: 'provider_error' });
    });

    it('when FRED is down and nothing is stored, then the hard-coded rate stands in, source fallback, and says so', async () => {
      stub.mode = 'http500';
      // The service stores the shipped TB3MS history when it starts; without it, only the hard-coded rate is left.
      await svc.sql`delete from risk_free_rates`;
      const res = await svc.get('/v1/rates/risk-free', key);
      await storeShippedRiskFreeRates(svc.sql);
      expect(res.status).toBe(200);
      // TB3MS for 2022-09 in the gretl snapshot is 3.13 (percent).
      // It is a monthly average, known from the first instant after September 2022.
      expect(res.body.data).toEqual({
        rate: 0.0313,
        maturity: '3M',
        asOf: '2022-09-01',
        source: 'fallback',
        seriesId: 'TB3MS',
        knownFrom: '2022-10-01T00:00:00.000Z',
      });
      expect(res.body.meta).toMatchObject({ seriesId: 'TB3MS', stale: true, staleReason: 'provider_error' });
      expect(res.body.meta.fallback).toMatchObject({ standIn: 'hardcoded', reason: 'provider_error' });
    });

    it('when asOf is given, then the DGS3MO observation known then: a day counts from the end of its UTC day, never earlier', async () => {
      // 2025-01-03 ends at 23:59:59.999Z: only 2025-01-02 (4.36 %) is known then.
      const endOfDay = await svc.get('/v1/rates/risk-free?asOf=2025-01-03', key);
      expect(endOfDay.status).toBe(200);
      expect(endOfDay.body.data).toEqual({
        rate: 0.0436,
        maturity: '3M',
        asOf: '2025-01-02',
        source: 'fred',
        seriesId: 'DGS3MO',
        knownFrom: '2025-01-03T00:00:00.000Z',
      });
      expect(endOfDay.body.meta).toEqual({ asOf: '2025-01-03', source: 'fred', stale: false, staleReason: null, seriesId: 'DGS3MO', fallback: null });
      const next = await svc.get('/v1/rates/risk-free?asOf=2025-01-04T00:00:00Z', key);
      expect(next.body.data).toMatchObject({ rate: 0.0437, asOf: '2025-01-03' });
    });

    it('when the newest known observation has been known for more than 4 days at asOf, then it is served stale: newer_observation_due', async () => {
      // 2025-01-03 is known from 2025-01-04T00:00Z; 4 days later is 2025-01-08T00:00Z.
      const edge = await svc.get('/v1/rates/risk-free?asOf=2025-01-08T00:00:00Z', key);
      expect(edge.body.meta).toMatchObject({ stale: false, staleReason: null });
      for (const asOf of ['2025-01-08T00:00:01Z', '2999-01-01']) {
        const res = await svc.get(`/v1/rates/risk-free?asOf=${asOf}`, key);
        expect(res.status).toBe(200);
        expect(res.body.data, asOf).toMatchObject({ rate: 0.0437, asOf: '2025-01-03', source: 'fred' });
        expect(res.body.meta, asOf).toMatchObject({ asOf, stale: true, staleReason: 'newer_observation_due' });
      }
    });

    it('when nothing stored was known at asOf but the hard-coded rate was, then it stands in, stale', async () => {
      // The service stores the shipped TB3MS history when it starts; without it, only the hard-coded rate is left.
      await svc.sql`delete from risk_free_rates`;
      const res = await svc.get('/v1/rates/risk-free?asOf=2025-01-02', key);
      await storeShippedRiskFreeRates(svc.sql);
      expect(res.body.data).toEqual({
        rate: 0.0313,
        maturity: '3M',
        asOf: '2022-09-01',
        source: 'fallback',
        seriesId: 'TB3MS',
        knownFrom: '2022-10-01T00:00:00.000Z',
      });
      expect(res.body.meta).toMatchObject({
        stale: true,
        staleReason: 'newer_observation_due',
        fallback: { standIn: 'hardcoded', reason: 'no_stored_observation' },
      });
    });

    it('when asOf is not a date or an instant, then 400 names asOf', async () => {
      for (const asOf of ['2025-13-01', '2025-01-01T24:00:00Z', 'yesterday']) {
        const res = await svc.get(`/v1/rates/risk-free?asOf=${asOf}`, key);
        expect(res.status, asOf).toBe(400);
        expect(Object.keys(res.body.error.details), asOf).toEqual(['asOf']);
      }
    });
  });
});

describe('the risk-free rate history: TB3MS and DGS3MO together', () => {
  // TB3MS as read by hand from server/demo/data/fred_tb3ms_monthly.csv:
  // 2001-03 4.42, 2001-04 3.87, 2001-05 3.62. The DGS3MO values are the stub's.
  const DGS3MO_2001: StubSeries = {
    ...DGS3MO,
    observations: [
      ['2001-04-10', '3.90'],
      ['2001-04-11', '3.88'],
      ['2001-04-30', '3.70'],
    ],
  };
  let stub: FredStub;
  let svc: Service;
  let key: string;

  beforeAll(async () => {
    stub = await new FredStub(FRED_KEY).start();
    stub.series.set('DGS3MO', DGS3MO_2001);
    svc = await serviceWith(stub);
    await clearMacro(svc);
    await storeShippedRiskFreeRates(svc.sql);
    key = await svc.keyWith(['macro:read']);
  });
  afterAll(async () => {
    await svc?.stop();
    await stub?.stop();
  });

  it.each([
    // March's average is known from 2001-04-01; DGS3MO 2001-04-10 only from 2001-04-11.
    ['2001-04-10', { rate: 0.0442, asOf: '2001-03-01', seriesId: 'TB3MS', knownFrom: '2001-04-01T00:00:00.000Z' }, 'gretl-data-2022c/fedstl (FRED)'],
    ['2001-04-11', { rate: 0.039, asOf: '2001-04-10', seriesId: 'DGS3MO', knownFrom: '2001-04-11T00:00:00.000Z' }, 'fred'],
    // At 2001-05-01T00:00Z April's average and DGS3MO 2001-04-30 become known together: the daily observation wins the tie.
    ['2001-05-01T00:00:00Z', { rate: 0.037, asOf: '2001-04-30', seriesId: 'DGS3MO', knownFrom: '2001-05-01T00:00:00.000Z' }, 'fred'],
    // May's average (known from 2001-06-01) is more recent than DGS3MO 2001-04-30.
    ['2001-06-01T00:00:00Z', { rate: 0.0362, asOf: '2001-05-01', seriesId: 'TB3MS', knownFrom: '2001-06-01T00:00:00.000Z' }, 'gretl-data-2022c/fedstl (FRED)'],
  ])('when asOf is %s, then the most recent observation known then answers', async (asOf, data, source) => {
    const res = await svc.get(`/v1/rates/risk-free?asOf=${asOf}`, key);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ maturity: '3M', source: 'fred', ...data });
    expect(res.body.meta).toEqual({ asOf, source, stale: false, staleReason: null, seriesId: data.seriesId, fallback: null });
  });

  it("when the month before asOf's month is not known, then the monthly answer is stale", async () => {
    // History ends with September 2022 (3.13): at 2022-11-15 October's average was due.
    const res = await svc.get('/v1/rates/risk-free?asOf=2022-11-15', key);
    expect(res.body.data).toMatchObject({ rate: 0.0313, asOf: '2022-09-01', seriesId: 'TB3MS', source: 'fred' });
    expect(res.body.meta).toMatchObject({ stale: true, staleReason: 'newer_observation_due', fallback: null });
    const fresh = await svc.get('/v1/rates/risk-free?asOf=2022-10-31', key);
    expect(fresh.body.meta).toMatchObject({ stale: false, staleReason: null });
  });
});

describe('macro series without a FRED key', () => {
  let svc: Service;
  let key: string;

  beforeAll(async () => {
    svc = await serviceWith(null);
    key = await svc.keyWith(['macro:read']);
  });
  afterAll(() => svc?.stop());
  afterEach(() => clearMacro(svc));

  it('when nothing is stored, then 503 upstream_unavailable naming the missing key', async () => {
    await clearMacro(svc);
    const res = await svc.get('/v1/macro/series/DGS10', key);
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('upstream_unavailable');
    expect(res.body.error.details).toEqual({ seriesId: ['no_provider_key'] });
    expect(res.body.error.message).toContain('FRED_API_KEY');
  });

  it('when the demo copy is stored, then it is served, marked stale, with its real values (FEDFUNDS 19.08 in January 1981)', async () => {
    await clearMacro(svc);
    expect(await loadDemoMacroSeries(svc.sql)).toEqual({ rows: 5, inserted: 5, updated: 0, unchanged: 0 });
    expect(await loadDemoMacroSeries(svc.sql)).toEqual({ rows: 5, inserted: 0, updated: 0, unchanged: 5 });
    const res = await svc.get('/v1/macro/series/FEDFUNDS?start=1981-01-01&end=1981-02-01', key);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ seriesId: 'FEDFUNDS', title: 'Federal Funds Effective Rate', units: 'Percent', frequency: 'monthly' });
    expect(res.body.data.observations[0]).toEqual({ date: '1981-01-01', value: 19.08 });
    expect(res.body.meta).toMatchObject({ stale: true, staleReason: 'no_provider_key', source: 'gretl-data-2022c/fedstl (FRED)', providerUpdatedAt: null });
    const unrate = await svc.get('/v1/macro/series/UNRATE?start=2020-04-01&end=2020-04-01', key);
    expect(unrate.body.data.observations).toEqual([{ date: '2020-04-01', value: 14.7 }]);
  });

  it('when the risk-free rate is asked for, then the last month of the stored TB3MS history stands in with reason no_provider_key', async () => {
    const res = await svc.get('/v1/rates/risk-free', key);
    // The service stored the shipped history when it started; its last month is 2022-09, 3.13 % (fred_tb3ms_monthly.csv).
    expect(res.body.data).toEqual({
      rate: 0.0313,
      maturity: '3M',
      asOf: '2022-09-01',
      source: 'fallback',
      seriesId: 'TB3MS',
      knownFrom: '2022-10-01T00:00:00.000Z',
    });
    expect(res.body.meta).toMatchObject({ stale: true, staleReason: 'no_provider_key', source: 'gretl-data-2022c/fedstl (FRED)' });
    expect(res.body.meta.fallback).toMatchObject({ standIn: 'last_stored_observation', reason: 'no_provider_key' });
  });

  it('when asOf is given without a key, then the stored history answers as it stood then, whatever the live copy', async () => {
    await storeShippedRiskFreeRates(svc.sql);
    const res = await svc.get('/v1/rates/risk-free?asOf=2001-05-04T20:00:00Z', key);
    // TB3MS 2001-04 is 3.87 in the gretl snapshot.
    expect(res.body.data).toEqual({
      rate: 0.0387,
      maturity: '3M',
      asOf: '2001-04-01',
      source: 'fred',
      seriesId: 'TB3MS',
      knownFrom: '2001-05-01T00:00:00.000Z',
    });
    expect(res.body.meta).toEqual({
      asOf: '2001-05-04T20:00:00Z',
      source: 'gretl-data-2022c/fedstl (FRED)',
      stale: false,
      staleReason: null,
      seriesId: 'TB3MS',
      fallback: null,
    });
  });
});
