import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoInstrumentId, demoInstruments } from '../../server/demo/catalog.ts';
import { syntheticEarnings } from '../../server/demo/synthetic-earnings.ts';
import { batchesOf } from '../../server/ingest/body.ts';
import { ingestRows } from '../../server/ingest/service.ts';
import { instrumentIngest } from '../../server/instruments/ingest.ts';
import { createInstrument } from './fixtures.ts';
import { startService, type Service } from './harness.ts';

// GET /v1/earnings, GET /v1/instruments/{id}/earnings and POST
// /admin/v1/earnings. The suite's database is shared with other files, so
// every test reports in a year of its own (2151, 2152, …) and its own
// instruments.

let svc: Service;
let key: string;

beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['earnings:read']);
});
afterAll(() => svc.stop());

interface Report {
  id?: string;
  instrumentId: string;
  reportDate: string;
  session: string;
  fiscalPeriod: string;
  fiscalYear: number | string;
  status: string;
  source: string;
}

function report(instrumentId: string, reportDate: string, fields: Partial<Report> = {}): Report {
  const quarter = Math.ceil(Number(reportDate.slice(5, 7)) / 3);
  return {
    instrumentId,
    reportDate,
    session: 'amc',
    fiscalPeriod: `Q${quarter}`,
    fiscalYear: Number(reportDate.slice(0, 4)),
    status: 'reported',
    source: 'test-fixture',
    ...fields,
  };
}

const post = (rows: unknown, contentType?: string) => svc.admin('POST', '/earnings', rows, contentType);

async function ingestOk(rows: unknown, contentType?: string) {
  const res = await post(rows, contentType);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

const market = (query: string, k = key) => svc.get(`/v1/earnings?${query}`, k);
const ofInstrument = (id: string, query = '', k = key) => svc.get(`/v1/instruments/${id}/earnings${query ? `?${query}` : ''}`, k);

const storedFor = async (ids: string[]) =>
  (await svc.sql`select count(*)::int as n from earnings_reports where instrument_id = any (${ids}::uuid[])`)[0].n as number;

describe('the market-wide window', () => {
  let a: { id: string; symbol: string };
  let b: { id: string; symbol: string };
  beforeAll(async () => {
    a = await createInstrument(svc, { symbols: [{ symbol: 'ZZEARNA', validFrom: '1990-01-01' }], displayName: 'Earnings A Corp' });
    b = await createInstrument(svc, { symbols: [{ symbol: 'ZZEARNB', validFrom: '1990-01-01' }], displayName: 'Earnings B Corp' });
    await ingestOk([
      report(b.id, '2151-12-31', { fiscalPeriod: 'Q3', session: 'bmo' }),
      report(a.id, '2151-01-01', { fiscalYear: 2150, fiscalPeriod: 'Q4' }),
      report(b.id, '2151-04-20', { fiscalPeriod: 'Q1' }),
      report(a.id, '2151-04-20', { fiscalPeriod: 'Q1', session: 'dmh' }),
      report(a.id, '2152-01-01', { fiscalYear: 2151, fiscalPeriod: 'Q4', status: 'scheduled', session: 'unknown' }),
    ]);
  });

  it('when the window is 2151-01-01..2151-12-31 (365 days, both counted), then 200 with the four reports earliest first, the 20 April tie by symbol', async () => {
    const res = await market('from=2151-01-01&to=2151-12-31');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toEqual([
      {
        instrumentId: a.id,
        symbol: 'ZZEARNA',
        displayName: 'Earnings A Corp',
        reportDate: '2151-01-01',
        session: 'amc',
        fiscalPeriod: 'Q4',
        fiscalYear: 2150,
        status: 'reported',
        source: 'test-fixture',
      },
      expect.objectContaining({ instrumentId: a.id, symbol: 'ZZEARNA', reportDate: '2151-04-20', session: 'dmh', fiscalPeriod: 'Q1' }),
      expect.objectContaining({ instrumentId: b.id, symbol: 'ZZEARNB', reportDate: '2151-04-20', fiscalPeriod: 'Q1' }),
      expect.objectContaining({ instrumentId: b.id, reportDate: '2151-12-31', session: 'bmo', fiscalPeriod: 'Q3', fiscalYear: 2151 }),
    ]);
    // The reports are of 2151, after the time of reading: test-fixture has no report dated in the 142 days before it.
    expect(res.body.meta).toMatchObject({ source: 'test-fixture', stale: true, staleReason: 'source_silent' });
    expect(Number.isNaN(Date.parse(res.body.meta.asOf))).toBe(false);
  });

  it('when the window is 2151-01-01..2152-01-01 (366 days), or the leap year 2152-01-01..2152-12-31 (366), then 400 naming to and the rule', async () => {
    for (const [query, message] of [
      [
        'from=2151-01-01&to=2152-01-01',
        'the window 2151-01-01..2152-01-01 spans 366 days, from and to both counted; at most 365, so 2151-12-31 at the latest; received "2152-01-01"',
      ],
      [
        'from=2152-01-01&to=2152-12-31',
        'the window 2152-01-01..2152-12-31 spans 366 days, from and to both counted; at most 365, so 2152-12-30 at the latest; received "2152-12-31"',
      ],
    ]) {
      const res = await market(query);
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.details, query).toEqual({ to: [message] });
    }
    // 2152-01-01..2152-12-30 is 365 days of the leap year: allowed, and holds the scheduled Q4 report.
    const leap = await market('from=2152-01-01&to=2152-12-30');
    expect(leap.status).toBe(200);
    expect(leap.body.data).toEqual([expect.objectContaining({ instrumentId: a.id, reportDate: '2152-01-01', status: 'scheduled', session: 'unknown' })]);
  });

  it('when from or to is missing, then 400 naming each missing one as required; to before from names to', async () => {
    for (const [query, details] of [
      ['to=2151-12-31', { from: ['required (a date yyyy-mm-dd)'] }],
      ['from=2151-01-01', { to: ['required (a date yyyy-mm-dd)'] }],
      ['', { from: ['required (a date yyyy-mm-dd)'], to: ['required (a date yyyy-mm-dd)'] }],
      [`instrumentId=${a.id}`, { from: ['required (a date yyyy-mm-dd)'], to: ['required (a date yyyy-mm-dd)'] }],
      ['from=2151-02-01&to=2151-01-31', { to: ['must be on or after from; received "2151-01-31"'] }],
      ['from=2151-02-30&to=2151-03-01', { from: ['is not a calendar date; received "2151-02-30"'] }],
    ] as const) {
      const res = await market(query);
      expect(res.status, query).toBe(400);
      expect(res.body.error.details, query).toEqual(details);
    }
  });

  it('when instrumentId narrows the window, then only its reports; an unknown one is 404 not_found and a malformed one 400', async () => {
    const res = await market(`from=2151-01-01&to=2151-12-31&instrumentId=${b.id.toUpperCase()}`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((r: Report) => [r.instrumentId, r.reportDate])).toEqual([
      [b.id, '2151-04-20'],
      [b.id, '2151-12-31'],
    ]);
    const unknown = await market(`from=2151-01-01&to=2151-12-31&instrumentId=${randomUUID()}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
    const malformed = await market('from=2151-01-01&to=2151-12-31&instrumentId=abc');
    expect(malformed.status).toBe(400);
    expect(Object.keys(malformed.body.error.details)).toEqual(['instrumentId']);
  });

  it('when the per-instrument read has no bounds, one bound or both, then they are inclusive on reportDate and rows come earliest first', async () => {
    const dates = async (query: string) => {
      const res = await ofInstrument(a.id, query);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.data.map((r: Report) => r.reportDate);
    };
    expect(await dates('')).toEqual(['2151-01-01', '2151-04-20', '2152-01-01']);
    expect(await dates('from=2151-04-20')).toEqual(['2151-04-20', '2152-01-01']);
    expect(await dates('to=2151-04-20')).toEqual(['2151-01-01', '2151-04-20']);
    expect(await dates('from=2151-01-02&to=2151-12-31')).toEqual(['2151-04-20']);
    expect(await dates('from=2153-01-01')).toEqual([]);
  });

  it('when the per-instrument read names an unknown instrument, then 404 not_found; to before from, or an unknown parameter, 400', async () => {
    const unknown = await ofInstrument(randomUUID());
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
    const reversed = await ofInstrument(a.id, 'from=2151-05-01&to=2151-04-30');
    expect(reversed.status).toBe(400);
    expect(reversed.body.error.details).toEqual({ to: ['must be on or after from; received "2151-04-30"'] });
    const eps = await ofInstrument(a.id, 'eps=true');
    expect(eps.status).toBe(400);
    expect(Object.keys(eps.body.error.details)).toEqual(['eps']);
  });

  it('when a key lacks earnings:read, then both reads answer 403 insufficient_scope naming it', async () => {
    const other = await svc.keyWith(['events:read', 'instruments:read']);
    for (const res of [await market('from=2151-01-01&to=2151-12-31', other), await ofInstrument(a.id, '', other)]) {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('insufficient_scope');
      expect(res.body.error.details.scope).toEqual(['requires earnings:read']);
    }
  });
});

describe('freshness: a report still scheduled after its date is past due', () => {
  it('when a 2160 report is scheduled, then fresh; when a 2001 report is still scheduled, then stale (report_past_due), in both reads; reported, fresh again', async () => {
    const { id } = await createInstrument(svc);
    // A source of its own that is still reporting: one of its reports is dated 30 days before the test runs, within the 142 days
    // the silence rule allows, so the reads below are judged on report_past_due alone.
    const source = `live-${randomUUID().slice(0, 8)}`;
    const { id: other } = await createInstrument(svc);
    const recent = new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10);
    await ingestOk([
      report(id, '2160-02-02', { status: 'scheduled', fiscalPeriod: 'Q4', fiscalYear: 2159, source }),
      report(id, '2001-04-20', { fiscalPeriod: 'Q1', source }),
      report(other, recent, { source }),
    ]);
    // Both rows: one reported, one scheduled in the future. Fresh.
    expect((await ofInstrument(id)).body.meta).toMatchObject({ stale: false, staleReason: null });

    // A report of 2001-07-19 still scheduled: its day is long past (docs/api.md, "Freshness").
    await ingestOk([report(id, '2001-07-19', { status: 'scheduled', fiscalPeriod: 'Q2', source })]);
    expect((await ofInstrument(id)).body.meta).toMatchObject({ stale: true, staleReason: 'report_past_due' });
    expect((await market(`from=2001-07-01&to=2001-07-31&instrumentId=${id}`)).body.meta).toMatchObject({ stale: true, staleReason: 'report_past_due' });
    // A window without the overdue row is fresh.
    expect((await ofInstrument(id, 'from=2001-01-01&to=2001-06-30')).body.meta).toMatchObject({ stale: false, staleReason: null });

    await ingestOk([report(id, '2001-07-19', { status: 'reported', fiscalPeriod: 'Q2', source })]);
    expect((await ofInstrument(id)).body.meta).toMatchObject({ stale: false, staleReason: null });
  });
});

describe('the symbol is the one in force on the report date', () => {
  it('when the instrument changed symbol on 2153-07-01, then reports up to 30 June carry the old one and from 1 July the new; before its first symbol, null', async () => {
    const { id } = await createInstrument(svc, {
      displayName: 'Renamed Holdings',
      symbols: [
        { symbol: 'ZZOLD', validFrom: '2153-02-01', validTo: '2153-06-30' },
        { symbol: 'ZZNEW', validFrom: '2153-07-01', validTo: null },
      ],
    });
    await ingestOk([
      report(id, '2153-01-25', { fiscalYear: 2152, fiscalPeriod: 'Q4' }),
      report(id, '2153-04-20', { fiscalPeriod: 'Q1' }),
      report(id, '2153-06-30', { fiscalPeriod: 'H1' }),
      report(id, '2153-07-01', { fiscalPeriod: 'Q2' }),
      report(id, '2153-10-20', { fiscalPeriod: 'Q3' }),
    ]);
    const expected = [
      ['2153-01-25', null],
      ['2153-04-20', 'ZZOLD'],
      ['2153-06-30', 'ZZOLD'],
      ['2153-07-01', 'ZZNEW'],
      ['2153-10-20', 'ZZNEW'],
    ];
    const perInstrument = await ofInstrument(id);
    expect(perInstrument.body.data.map((r: Report & { symbol: string | null }) => [r.reportDate, r.symbol])).toEqual(expected);
    const window = await market(`from=2153-01-01&to=2153-12-31&instrumentId=${id}`);
    expect(window.body.data.map((r: Report & { symbol: string | null }) => [r.reportDate, r.symbol])).toEqual(expected);
    expect(window.body.data.every((r: { displayName: string }) => r.displayName === 'Renamed Holdings')).toBe(true);
  });
});

describe('ingest: one row per fiscal period, the whole batch or nothing', () => {
  it('when a report is rescheduled and then reported, then it stays one row, counted updated each time and unchanged when posted again', async () => {
    const { id } = await createInstrument(svc);
    const first = report(id, '2154-04-20', { fiscalPeriod: 'Q1', status: 'scheduled', session: 'unknown' });
    expect(await ingestOk([first])).toEqual({ rows: 1, inserted: 1, updated: 0, unchanged: 0 });
    const [{ updated_at: insertedAt }] = await svc.sql`select updated_at from earnings_reports where instrument_id = ${id}`;
    const moved = { ...first, reportDate: '2154-04-27', session: 'bmo' };
    expect(await ingestOk([moved])).toEqual({ rows: 1, inserted: 0, updated: 1, unchanged: 0 });
    expect(await storedFor([id])).toBe(1);
    expect((await ofInstrument(id)).body.data).toEqual([expect.objectContaining({ reportDate: '2154-04-27', session: 'bmo', status: 'scheduled' })]);
    const reported = { ...moved, status: 'reported' };
    expect(await ingestOk([reported])).toEqual({ rows: 1, inserted: 0, updated: 1, unchanged: 0 });
    expect(await ingestOk([reported])).toEqual({ rows: 1, inserted: 0, updated: 0, unchanged: 1 });
    const [{ n, updated_at: updatedAt }] =
      await svc.sql`select count(*)::int as n, max(updated_at) as updated_at from earnings_reports where instrument_id = ${id}`;
    expect(n).toBe(1);
    expect(updatedAt.getTime()).toBeGreaterThan(insertedAt.getTime());
  });

  it('when a report has no id, then its id is derived from instrumentId, fiscalYear and fiscalPeriod; a different given id for it, or that id for another period, is refused', async () => {
    const instrumentId = 'e0000000-0000-4000-8000-000000002155';
    const res = await svc.admin('POST', '/instruments', [
      {
        id: instrumentId,
        assetClass: 'equity',
        displayName: 'Derived Id Corp',
        quoteCurrency: 'USD',
        quoteUnit: 'USD per share',
        brokerCodes: {},
        symbols: [{ symbol: 'ZZDERIV', validFrom: '2000-01-01', validTo: null }],
      },
    ]);
    expect(res.status).toBe(200);
    await svc.sql`delete from earnings_reports where instrument_id = ${instrumentId}`;
    const row = report(instrumentId.toUpperCase(), '2155-07-25', { fiscalPeriod: 'Q2' });
    expect(await ingestOk([row])).toEqual({ rows: 1, inserted: 1, updated: 0, unchanged: 0 });
    // Worked out with Python's hashlib: sha1 of earnings-report:["e0000000-0000-4000-8000-000000002155",2155,"Q2"] as a version-5 UUID.
    const derived = '872097a7-a0c8-5d6b-9666-c18d32cf4c70';
    expect((await svc.sql`select id::text from earnings_reports where instrument_id = ${instrumentId}`).map((r) => r.id)).toEqual([derived]);
    expect(await ingestOk([{ ...row, id: derived.toUpperCase(), session: 'bmo' }])).toEqual({ rows: 1, inserted: 0, updated: 1, unchanged: 0 });

    const otherId = await post([{ ...row, id: randomUUID() }]);
    expect(otherId.status).toBe(400);
    expect(Object.keys(otherId.body.error.details)).toEqual(['rows[0].id']);
    expect(otherId.body.error.details['rows[0].id'][0]).toMatch(/stored under another id/);
    const otherPeriod = await post([
      report(instrumentId, '2155-10-25', { fiscalPeriod: 'Q3' }),
      report(instrumentId, '2155-04-25', { id: derived, fiscalPeriod: 'Q1' }),
    ]);
    expect(otherPeriod.status).toBe(400);
    expect(Object.keys(otherPeriod.body.error.details)).toEqual(['rows[1].id']);
    expect(otherPeriod.body.error.details['rows[1].id'][0]).toMatch(/stored for another instrument, fiscalYear or fiscalPeriod/);
    expect(await storedFor([instrumentId])).toBe(1);
  });

  it('when one row is bad (unknown instrument, an enum outside its list, a fiscal year out of range, an EPS field), then 400 naming it and nothing of the batch is stored', async () => {
    const { id } = await createInstrument(svc);
    const good = [report(id, '2156-01-25', { fiscalYear: 2155, fiscalPeriod: 'Q4' }), report(id, '2156-04-25')];
    for (const [bad, field, message] of [
      [report(randomUUID(), '2156-07-25'), 'rows[2].instrumentId', 'unknown instrument'],
      [report(id, '2156-07-25', { session: 'pre' }), 'rows[2].session', 'must be one of: bmo, amc, dmh, unknown; received "pre"'],
      [report(id, '2156-07-25', { status: 'confirmed' }), 'rows[2].status', 'must be one of: scheduled, reported; received "confirmed"'],
      [report(id, '2156-07-25', { fiscalPeriod: 'Q5' }), 'rows[2].fiscalPeriod', 'must be one of: Q1, Q2, Q3, Q4, H1, H2, FY; received "Q5"'],
      [report(id, '2156-07-25', { fiscalYear: 1899 }), 'rows[2].fiscalYear', 'must be a whole number from 1900 to 2200; received 1899'],
      [report(id, '2156-07-25', { fiscalYear: 2201 }), 'rows[2].fiscalYear', 'must be a whole number from 1900 to 2200; received 2201'],
      [report(id, '2156-07-25', { fiscalYear: 2156.5 }), 'rows[2].fiscalYear', 'must be a whole number from 1900 to 2200; received 2156.5'],
      [report(id, '2156-07-25', { reportDate: '2156-02-30' }), 'rows[2].reportDate', 'is not a calendar date; received "2156-02-30"'],
      // An unknown field is named by itself with the fields accepted, as for every ingest kind.
      [{ ...report(id, '2156-07-25'), epsEstimate: 1.2 }, 'rows[2].epsEstimate', /^unknown field; accepted: /],
    ] as const) {
      const res = await post([...good, bad]);
      expect(res.status, field).toBe(400);
      expect(Object.keys(res.body.error.details), field).toEqual([field]);
      if (typeof message === 'string') expect(res.body.error.details[field], field).toEqual([message]);
      else expect(res.body.error.details[field][0], field).toMatch(message);
    }
    expect(await storedFor([id])).toBe(0);
  });

  it('when the same instrument and fiscal period appear twice in a batch, then 400 naming the second row, and nothing is stored', async () => {
    const { id } = await createInstrument(svc);
    const res = await post([
      report(id, '2157-04-20', { fiscalPeriod: 'Q1' }),
      report(id, '2157-07-20', { fiscalPeriod: 'Q2' }),
      report(id, '2157-04-27', { fiscalPeriod: 'Q1', session: 'bmo' }),
    ]);
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error.details)).toEqual(['rows[2].fiscalPeriod']);
    expect(await storedFor([id])).toBe(0);
  });

  it('when a read is posted back as JSON or CSV (with its symbol and displayName), then every row is unchanged', async () => {
    const { id } = await createInstrument(svc);
    await ingestOk([report(id, '2158-01-25', { fiscalYear: 2157, fiscalPeriod: 'FY' }), report(id, '2158-04-25', { status: 'scheduled', session: 'unknown' })]);
    const read = (await ofInstrument(id)).body.data;
    expect(read).toHaveLength(2);
    expect(await ingestOk(read)).toEqual({ rows: 2, inserted: 0, updated: 0, unchanged: 2 });
    const csv = [
      'instrumentId,symbol,displayName,reportDate,session,fiscalPeriod,fiscalYear,status,source',
      ...read.map((r: Report & { symbol: string; displayName: string }) =>
        [r.instrumentId, r.symbol, r.displayName, r.reportDate, r.session, r.fiscalPeriod, r.fiscalYear, r.status, r.source].join(','),
      ),
    ].join('\n');
    expect(await ingestOk(csv, 'text/csv')).toEqual({ rows: 2, inserted: 0, updated: 0, unchanged: 2 });
    expect((await ofInstrument(id)).body.data).toEqual(read);
  });
});

describe('the demo calendar', () => {
  it('when the demo earnings are ingested twice, then the second load changes nothing, and the point-in-time symbols read as the catalog states them', async () => {
    const instruments = demoInstruments().map(({ currentSymbol: _current, ...i }) => i);
    await ingestRows(svc.sql, instrumentIngest, batchesOf(instruments));
    const rows = syntheticEarnings();
    expect((await ingestOk(rows)).rows).toBe(rows.length);
    expect(await ingestOk(rows)).toEqual({ rows: rows.length, inserted: 0, updated: 0, unchanged: rows.length });
    // Citigroup's symbol history starts on 2001-01-02, so its reports of 2000 have no symbol; Alcoa traded as AA until 2016.
    const citi = await ofInstrument(demoInstrumentId('dow:C'), 'from=2000-01-01&to=2000-12-31');
    expect(citi.body.data).toHaveLength(4);
    expect(citi.body.data.every((r: { symbol: string | null; source: string }) => r.symbol === null && r.source === 'synthetic-demo')).toBe(true);
    const alcoa = await ofInstrument(demoInstrumentId('dow:AA'), 'from=2000-01-01&to=2000-12-31');
    expect(alcoa.body.data.map((r: { symbol: string }) => r.symbol)).toEqual(['AA', 'AA', 'AA', 'AA']);
    // IBM: bars end 2001-01-02, so its Q4 2000 report (late January 2001) is the scheduled one.
    const ibm = await ofInstrument(demoInstrumentId('dow:IBM'), 'from=2001-01-01');
    expect(ibm.body.data).toEqual([expect.objectContaining({ fiscalYear: 2000, fiscalPeriod: 'Q4', status: 'scheduled' })]);
  });
});
