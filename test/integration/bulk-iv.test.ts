import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiContract } from '../support/contract.ts';
import { createInstrument, ingest } from './fixtures.ts';
import { startService, type Service } from './harness.ts';

// GET /v1/instruments/implied-volatility: each instrument's newest snapshot,
// present only when it is fresh, in the one answer without the envelope.

const ROUTE = '/v1/instruments/implied-volatility';
const DAY_MS = 86_400_000;
/** `day` shifted by `days` calendar days. */
const shift = (day: string, days: number) => new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);

/** A snapshot row as the iv-snapshots ingest takes it, every figure set unless overridden. */
function snapshot(instrumentId: string, asOfDate: string, fields: Record<string, unknown> = {}) {
  return {
    instrumentId,
    asOfDate,
    underlyingPrice: 101.25,
    atmImpliedVolatility: 0.31,
    impliedVolatility30d: 0.3,
    historicalVolatility30d: 0.24,
    parkinsonHistoricalVolatility30d: 0.22,
    putCallIvRatio30d: 1.08,
    termStructure: [],
    source: 'bulk-iv-test',
    ...fields,
  };
}

describe('bulk implied volatility', () => {
  let svc: Service;
  let key: string;
  const read = (query: string) => svc.get(`${ROUTE}?${query}`, key);
  const ids = (res: { body: { instruments: { instrumentId: string }[] } }) => res.body.instruments.map((r) => r.instrumentId);

  beforeAll(async () => {
    svc = await startService();
    key = await svc.keyWith(['options:read']);
  });
  afterAll(() => svc?.stop());

  it('when one instrument has a snapshot from yesterday and another one from 20 days ago, then with the default maxAgeDays only the first is present', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const fresh = await createInstrument(svc);
    const stale = await createInstrument(svc);
    await ingest(svc, '/iv-snapshots', [snapshot(fresh.id, shift(today, -1)), snapshot(stale.id, shift(today, -20))]);
    const res = await read(`instrumentIds=${stale.id},${fresh.id}`);
    expect(res.status).toBe(200);
    expect(ids(res)).toEqual([fresh.id]);
    expect(res.body.instruments[0]).toMatchObject({ symbol: fresh.symbol, asOfDate: shift(today, -1) });
    expect(res.body.assumptions).toEqual({
      maxAgeDays: 5,
      requestedInstruments: 2,
      returnedInstruments: 1,
      includeTermStructure: false,
      asOf: null,
      unknownInstrumentIds: [],
    });
  });

  it('when asOf is given, then a snapshot dated exactly asOf - maxAgeDays counts, one day older does not, and one after asOf is ignored', async () => {
    const [edge, tooOld, later, newest] = await Promise.all([1, 2, 3, 4].map(() => createInstrument(svc)));
    await ingest(svc, '/iv-snapshots', [
      snapshot(edge.id, '2021-03-05'),
      snapshot(tooOld.id, '2021-03-04'),
      // Only after asOf: no snapshot at all as of 2021-03-10.
      snapshot(later.id, '2021-03-11'),
      // Three snapshots: the newest on or before asOf is the one read, whatever comes after.
      snapshot(newest.id, '2021-03-01', { atmImpliedVolatility: 0.2 }),
      snapshot(newest.id, '2021-03-08', { atmImpliedVolatility: 0.25 }),
      snapshot(newest.id, '2021-03-12', { atmImpliedVolatility: 0.4 }),
    ]);
    const all = [edge, tooOld, later, newest].map((i) => i.id).join(',');
    const res = await read(`instrumentIds=${all}&asOf=2021-03-10&maxAgeDays=5`);
    expect(res.status).toBe(200);
    expect(res.body.instruments.map((r: any) => [r.instrumentId, r.asOfDate, r.atmImpliedVolatility])).toEqual([
      [edge.id, '2021-03-05', 0.31],
      [newest.id, '2021-03-08', 0.25],
    ]);
    expect(res.body.assumptions).toMatchObject({ maxAgeDays: 5, asOf: '2021-03-10', requestedInstruments: 4, returnedInstruments: 2 });
    // One more day of age admits the older one; maxAgeDays 1 keeps only a snapshot from asOf - 1 or later.
    expect(ids(await read(`instrumentIds=${all}&asOf=2021-03-10&maxAgeDays=6`))).toEqual([edge.id, tooOld.id, newest.id]);
    expect(ids(await read(`instrumentIds=${all}&asOf=2021-03-09&maxAgeDays=1`))).toEqual([newest.id]);
    // Without asOf (today), the newest stored snapshot is 2021 and long stale.
    expect(ids(await read(`instrumentIds=${all}&maxAgeDays=30`))).toEqual([]);
  });

  it('when ids are repeated, in another case, or unknown, then requestedInstruments counts distinct ids, rows keep the order asked, and unknown ids are listed', async () => {
    const [a, b] = await Promise.all([createInstrument(svc), createInstrument(svc)]);
    const withoutSnapshot = await createInstrument(svc);
    const unknown = randomUUID();
    await ingest(svc, '/iv-snapshots', [snapshot(a.id, '2022-06-01'), snapshot(b.id, '2022-06-02')]);
    const res = await read(`instrumentIds=${b.id},${unknown},${a.id},${b.id.toUpperCase()},${withoutSnapshot.id},${a.id}&asOf=2022-06-03`);
    expect(res.status).toBe(200);
    expect(ids(res)).toEqual([b.id, a.id]);
    expect(res.body.assumptions).toMatchObject({ requestedInstruments: 4, returnedInstruments: 2, unknownInstrumentIds: [unknown] });
  });

  it('when a snapshot has null figures, then they stay null, never 0', async () => {
    const { id } = await createInstrument(svc);
    await ingest(svc, '/iv-snapshots', [
      snapshot(id, '2022-01-10', {
        underlyingPrice: null,
        atmImpliedVolatility: null,
        impliedVolatility30d: null,
        historicalVolatility30d: 0.19,
        parkinsonHistoricalVolatility30d: null,
        putCallIvRatio30d: null,
      }),
    ]);
    const res = await read(`instrumentIds=${id}&asOf=2022-01-10`);
    expect(res.body.instruments[0]).toMatchObject({
      atmImpliedVolatility: null,
      underlyingPrice: null,
      volatilitySurface: {
        impliedVolatility30d: null,
        historicalVolatility30d: 0.19,
        parkinsonHistoricalVolatility30d: null,
        putCallIvRatio30d: null,
        asOfDate: '2022-01-10',
      },
    });
  });

  it('when includeTermStructure=true, then each row carries its term structure nearest expiry first, a null IV kept; otherwise there is none', async () => {
    const { id, symbol } = await createInstrument(svc);
    const termStructure = [
      { expiry: '2023-07-21', daysToExpiry: 50, atmImpliedVolatility: 0.27 },
      { expiry: '2023-06-09', daysToExpiry: 8, atmImpliedVolatility: 0.33 },
      { daysToExpiry: 22, atmImpliedVolatility: null },
    ];
    await ingest(svc, '/iv-snapshots', [snapshot(id, '2023-06-01', { termStructure })]);
    const withTerms = await read(`instrumentIds=${id}&asOf=2023-06-02&includeTermStructure=true`);
    expect(withTerms.body.instruments).toEqual([
      {
        instrumentId: id,
        symbol,
        atmImpliedVolatility: 0.31,
        underlyingPrice: 101.25,
        asOfDate: '2023-06-01',
        volatilitySurface: {
          impliedVolatility30d: 0.3,
          historicalVolatility30d: 0.24,
          parkinsonHistoricalVolatility30d: 0.22,
          putCallIvRatio30d: 1.08,
          asOfDate: '2023-06-01',
        },
        termStructure: [
          { daysToExpiry: 8, atmImpliedVolatility: 0.33 },
          { daysToExpiry: 22, atmImpliedVolatility: null },
          { daysToExpiry: 50, atmImpliedVolatility: 0.27 },
        ],
        source: 'bulk-iv-test',
      },
    ]);
    expect(withTerms.body.assumptions.includeTermStructure).toBe(true);
    for (const flag of ['', '&includeTermStructure=false']) {
      const res = await read(`instrumentIds=${id}&asOf=2023-06-02${flag}`);
      expect(res.body.instruments).toHaveLength(1);
      expect(res.body.instruments[0]).not.toHaveProperty('termStructure');
    }
  });

  it("when the instrument's symbol changed, then each row carries the symbol in effect on its own asOfDate", async () => {
    const before = `OLD${randomUUID().slice(0, 6).toUpperCase()}`;
    const after = `NEW${randomUUID().slice(0, 6).toUpperCase()}`;
    const { id } = await createInstrument(svc, {
      symbols: [
        { symbol: before, validFrom: '2019-01-01', validTo: '2020-06-30' },
        { symbol: after, validFrom: '2020-07-01', validTo: null },
      ],
    });
    await ingest(svc, '/iv-snapshots', [snapshot(id, '2020-06-29'), snapshot(id, '2020-07-02')]);
    const early = await read(`instrumentIds=${id}&asOf=2020-07-01`);
    expect(early.body.instruments.map((r: any) => [r.asOfDate, r.symbol])).toEqual([['2020-06-29', before]]);
    const late = await read(`instrumentIds=${id}&asOf=2020-07-03`);
    expect(late.body.instruments.map((r: any) => [r.asOfDate, r.symbol])).toEqual([['2020-07-02', after]]);
  });

  it('when instrumentIds is absent, empty, holds a non-UUID, or 501 distinct ids, then 400 names instrumentIds; 500 are served', async () => {
    const many = Array.from({ length: 501 }, () => randomUUID());
    for (const query of ['', 'instrumentIds=', 'instrumentIds=,', 'instrumentIds=abc', `instrumentIds=${many.join(',')}`]) {
      const res = await read(query);
      expect(res.status, query).toBe(400);
      expect(res.body.error.code, query).toBe('invalid_request');
      // The list as a whole, or the element at fault (instrumentIds.0).
      expect(
        Object.keys(res.body.error.details).map((k) => k.split('.')[0]),
        query,
      ).toEqual(['instrumentIds']);
    }
    const five00 = await read(`instrumentIds=${many.slice(0, 500).join(',')}`);
    expect(five00.status).toBe(200);
    expect(five00.body.assumptions).toMatchObject({ requestedInstruments: 500, returnedInstruments: 0 });
    expect(five00.body.assumptions.unknownInstrumentIds).toHaveLength(500);
  });

  it('when maxAgeDays is outside 1..30 or not an integer, or another parameter is malformed or unknown, then 400 names it', async () => {
    const id = randomUUID();
    const cases: [string, string][] = [
      ['maxAgeDays=0', 'maxAgeDays'],
      ['maxAgeDays=31', 'maxAgeDays'],
      ['maxAgeDays=2.5', 'maxAgeDays'],
      ['maxAgeDays=five', 'maxAgeDays'],
      ['includeTermStructure=yes', 'includeTermStructure'],
      ['asOf=2021-02-30', 'asOf'],
      ['asOf=2021-02-03T00:00:00Z', 'asOf'],
      ['days=5', 'days'],
    ];
    for (const [extra, field] of cases) {
      const res = await read(`instrumentIds=${id}&${extra}`);
      expect(res.status, extra).toBe(400);
      expect(Object.keys(res.body.error.details), extra).toEqual([field]);
    }
    for (const maxAgeDays of [1, 30]) {
      const res = await read(`instrumentIds=${id}&maxAgeDays=${maxAgeDays}`);
      expect(res.status).toBe(200);
      expect(res.body.assumptions.maxAgeDays).toBe(maxAgeDays);
    }
    // 30 days before the first storable day is before year 1 (1 BC): still a date to compare with.
    expect((await read(`instrumentIds=${id}&maxAgeDays=30&asOf=0001-01-01`)).status).toBe(200);
  });

  it('when the key lacks options:read, then 403 insufficient_scope', async () => {
    const other = await svc.keyWith(['instruments:read', 'prices:read']);
    const res = await svc.get(`${ROUTE}?instrumentIds=${randomUUID()}`, other);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
  });

  it('when an answer is checked against the OpenAPI document, then the bare { instruments, assumptions } passes and the envelope around it does not', async () => {
    // Every answer above passed the same check in the harness; this shows the check holds this route to its own body.
    const res = await read(`instrumentIds=${randomUUID()}`);
    const check = (body: unknown) => () => apiContract().check('GET', ROUTE, 200, 'application/json', body);
    expect(check(res.body)).not.toThrow();
    expect(check({ data: res.body, meta: { asOf: '2024-01-01T00:00:00.000Z', source: 'x', stale: false } })).toThrow(/does not allow/);
    expect(check({ ...res.body, assumptions: { ...res.body.assumptions, requestedInstruments: '1' } })).toThrow(/does not allow/);
  });
});
