import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoEconomicEvents } from '../../server/demo/economic-events.ts';
import { startService, type Service } from './harness.ts';

// GET /v1/economic-events and POST /admin/v1/economic-events. The suite's
// database is shared with other files, so every test writes releases in a
// year of its own (2101, 2102, …) and reads that year back with from/to.

let svc: Service;
let key: string;

beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['events:read']);
});
afterAll(() => svc.stop());

interface Release {
  id?: string;
  country: string;
  eventClass: string;
  importance: string;
  name: string;
  referencePeriod: string;
  scheduledAt: string;
  actual: string | null;
  forecast: string | null;
  previous: string | null;
  source: string;
}

function release(scheduledAt: string, fields: Partial<Release> = {}): Release {
  return {
    id: randomUUID(),
    country: 'US',
    eventClass: 'employment',
    importance: 'high',
    name: `Test release ${randomUUID().slice(0, 8)}`,
    referencePeriod: scheduledAt.slice(0, 7),
    scheduledAt,
    actual: null,
    forecast: null,
    previous: null,
    source: 'test-fixture',
    ...fields,
  };
}

const post = (rows: unknown, contentType?: string) => svc.admin('POST', '/economic-events', rows, contentType);

async function ingestOk(rows: unknown, contentType?: string) {
  const res = await post(rows, contentType);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

const read = (query: string, k = key) => svc.get(`/v1/economic-events?${query}`, k);

async function readYear(year: number, extra = '') {
  const res = await read(`from=${year}-01-01&to=${year}-12-31${extra}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const storedInYear = async (year: number) =>
  (
    await svc.sql`select count(*)::int as n from economic_events where scheduled_at >= ${`${year}-01-01T00:00:00Z`} and scheduled_at < ${`${year + 1}-01-01T00:00:00Z`}`
  )[0].n as number;

describe('closed enums and parameters', () => {
  it('when importance=urgent, then 400 invalid_request whose details list low, medium, high', async () => {
    const res = await read('importance=urgent');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.details).toEqual({ importance: ['must be one of: low, medium, high; received "urgent"'] });
  });

  it('when eventClass is not one of the classes, then 400 listing all thirteen', async () => {
    const res = await read('eventClass=earnings');
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual({
      eventClass: [
        'must be one of: central_bank, employment, inflation, growth, consumer, manufacturing, services, housing, trade, sentiment_survey, fiscal, bond_auction, energy; received "earnings"',
      ],
    });
  });

  it('when country is not two letters, limit is out of 1..500, or to is before from, then 400 naming the field', async () => {
    for (const [query, field] of [
      ['country=USA', 'country'],
      ['country=U1', 'country'],
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['limit=2.5', 'limit'],
      ['from=2101-02-01&to=2101-01-31', 'to'],
      ['from=2101-02-30', 'from'],
      ['colour=red', 'colour'],
    ]) {
      const res = await read(query);
      expect(res.status, query).toBe(400);
      expect(Object.keys(res.body.error.details), query).toEqual([field]);
    }
  });

  it('when a key lacks events:read, then 403 insufficient_scope naming it', async () => {
    const other = await svc.keyWith(['prices:read', 'macro:read']);
    const res = await read('limit=1', other);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
    expect(res.body.error.details.scope).toEqual(['requires events:read']);
  });
});

describe('provider strings are kept byte for byte', () => {
  const FIGURES = ['3.4%', '-12K', ' 1,234.5 K ', '\u22120.1%', '', 'n/a', '1\t2', '"quoted"', '\\N', '€ 5,3 Mrd.'];

  it('when actual, forecast and previous are posted as JSON, then GET returns exactly those strings', async () => {
    const rows = FIGURES.map((actual, i) =>
      release(`2101-03-${String(i + 1).padStart(2, '0')}T12:30:00.000Z`, {
        actual,
        forecast: FIGURES[(i + 1) % FIGURES.length],
        previous: FIGURES[(i + 2) % FIGURES.length],
      }),
    );
    expect(await ingestOk(rows)).toEqual({ rows: 10, inserted: 10, updated: 0, unchanged: 0 });
    const raw = await fetch(`${svc.runtime.publicUrl}/v1/economic-events?from=2101-03-01&to=2101-03-31`, { headers: { authorization: `Bearer ${key}` } });
    const bytes = Buffer.from(await raw.arrayBuffer());
    const { data } = JSON.parse(bytes.toString('utf8'));
    const byId = new Map(data.map((e: Release) => [e.id, e]));
    for (const r of rows) expect(byId.get(r.id)).toMatchObject({ actual: r.actual, forecast: r.forecast, previous: r.previous });
    // U+2212 MINUS SIGN goes out as its three UTF-8 bytes, not an escape or a hyphen.
    expect(bytes.includes(Buffer.from([0xe2, 0x88, 0x92, 0x30, 0x2e, 0x31, 0x25]))).toBe(true);
  });

  it('when the same strings come in CSV, then they come back the same; an empty unquoted cell is null and "" is the empty string', async () => {
    const csv = [
      'country,eventClass,importance,name,referencePeriod,scheduledAt,actual,forecast,previous,source',
      'de,sentiment_survey,medium,Ifo Business Climate,2102-04,2102-04-24T08:00:00Z," 1,234.5 K ",−0.1%,,test-fixture',
      'US,employment,high,Nonfarm Payrolls,2102-04,2102-05-07T12:30:00Z,-12K,"",3.4%,test-fixture',
    ].join('\n');
    expect(await ingestOk(csv, 'text/csv')).toEqual({ rows: 2, inserted: 2, updated: 0, unchanged: 0 });
    const { data } = await readYear(2102);
    expect(data.map((e: Release) => [e.country, e.actual, e.forecast, e.previous])).toEqual([
      ['US', '-12K', '', '3.4%'],
      ['DE', ' 1,234.5 K ', '\u22120.1%', null],
    ]);
  });

  it('when a figure holds NUL or is longer than 64 characters, then 400 naming the row and field, and nothing is stored', async () => {
    const nul = await post([release('2103-01-05T12:00:00Z'), release('2103-01-06T12:00:00Z', { actual: 'a\u0000b' })]);
    expect(nul.status).toBe(400);
    expect(Object.keys(nul.body.error.details)).toEqual(['rows[1].actual']);
    const long = await post([release('2103-01-07T12:00:00Z', { forecast: 'x'.repeat(65) })]);
    expect(long.status).toBe(400);
    expect(Object.keys(long.body.error.details)).toEqual(['rows[0].forecast']);
    const number = await post([{ ...release('2103-01-08T12:00:00Z'), actual: 3.4 }]);
    expect(number.status).toBe(400);
    expect(number.body.error.details).toEqual({ 'rows[0].actual': ["must be text (the provider's string) or null; received the number 3.4"] });
    expect(await storedInYear(2103)).toBe(0);
  });
});

describe('filters, ordering and limit', () => {
  // Year 2104: six releases, ids fixed so the tie order is known.
  const id = (n: number) => `00000000-0000-4000-8000-00000000210${n}`;
  const rows = [
    release('2104-01-31T23:59:59.999Z', { id: id(1), country: 'US', eventClass: 'employment', importance: 'high' }),
    release('2104-02-01T00:00:00.000Z', { id: id(2), country: 'EU', eventClass: 'inflation', importance: 'medium' }),
    release('2104-02-15T12:00:00.000Z', { id: id(4), country: 'GB', eventClass: 'inflation', importance: 'low' }),
    release('2104-02-15T12:00:00.000Z', { id: id(3), country: 'US', eventClass: 'central_bank', importance: 'high' }),
    release('2104-02-29T23:59:59.999Z', { id: id(5), country: 'JP', eventClass: 'trade', importance: 'low' }),
    release('2104-03-01T00:00:00.000Z', { id: id(6), country: 'US', eventClass: 'housing', importance: 'medium' }),
  ];
  beforeAll(() => ingestOk(rows));

  const ids = async (query: string) => {
    const res = await read(query);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data.map((e: Release) => e.id);
  };

  it('when nothing narrows the year, then all six come newest scheduledAt first, the two at 12:00 on 15 February by id', async () => {
    expect(await ids('from=2104-01-01&to=2104-12-31')).toEqual([id(6), id(5), id(3), id(4), id(2), id(1)]);
  });

  it('when from and to are given, then they are inclusive UTC days of scheduledAt: February holds 00:00:00.000 on the 1st to 23:59:59.999 on the 29th', async () => {
    expect(await ids('from=2104-02-01&to=2104-02-29')).toEqual([id(5), id(3), id(4), id(2)]);
    expect(await ids('from=2104-02-15&to=2104-02-15')).toEqual([id(3), id(4)]);
    expect(await ids('from=2104-03-01&to=2104-03-01')).toEqual([id(6)]);
  });

  it('when eventClass, country or importance is given, then only the matching releases come', async () => {
    const year = 'from=2104-01-01&to=2104-12-31';
    expect(await ids(`${year}&eventClass=inflation`)).toEqual([id(4), id(2)]);
    expect(await ids(`${year}&country=US`)).toEqual([id(6), id(3), id(1)]);
    expect(await ids(`${year}&country=us`)).toEqual([id(6), id(3), id(1)]);
    expect(await ids(`${year}&importance=low`)).toEqual([id(5), id(4)]);
    expect(await ids(`${year}&country=US&importance=high`)).toEqual([id(3), id(1)]);
    expect(await ids(`${year}&country=US&eventClass=housing&importance=medium`)).toEqual([id(6)]);
    expect(await ids(`${year}&country=FR`)).toEqual([]);
  });

  it('when more releases match than limit, then the newest limit come and meta.truncated is true; exactly limit or fewer, false', async () => {
    const page = await read('from=2104-01-01&to=2104-12-31&limit=2');
    expect(page.body.data.map((e: Release) => e.id)).toEqual([id(6), id(5)]);
    // The releases are of 2104, after the time of reading: none of test-fixture's is scheduled in the 106 days before it.
    expect(page.body.meta).toMatchObject({ limit: 2, truncated: true, stale: true, staleReason: 'source_silent', source: 'test-fixture' });
    expect((await read('from=2104-01-01&to=2104-12-31&limit=6')).body.meta).toMatchObject({ limit: 6, truncated: false });
    expect((await read('from=2104-01-01&to=2104-12-31&limit=7')).body.meta).toMatchObject({ limit: 7, truncated: false });
    const defaults = await read('from=2104-01-01&to=2104-12-31');
    expect(defaults.body.meta).toMatchObject({ limit: 100, truncated: false });
    expect(Number.isNaN(Date.parse(defaults.body.meta.asOf))).toBe(false);
  });

  it('when nothing matches, then an empty list with meta.source none', async () => {
    const res = await read('from=2104-06-01&to=2104-06-30');
    expect(res.body).toMatchObject({ data: [], meta: { source: 'none', truncated: false, nextCursor: null } });
  });

  /** Every page from `query`, following meta.nextCursor until null; truncated is true exactly when a cursor is given. */
  async function pages(query: string) {
    const out: string[][] = [];
    let cursor: string | null = null;
    do {
      const res = await read(`${query}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      out.push(res.body.data.map((e: Release) => e.id));
      cursor = res.body.meta.nextCursor;
      expect(res.body.meta.truncated).toBe(cursor !== null);
    } while (cursor !== null && out.length < 20);
    return out;
  }

  it('when paged with a cursor, then every release comes exactly once in the order newest first, ties by id, and the last page has no cursor', async () => {
    expect(await pages('from=2104-01-01&to=2104-12-31&limit=2')).toEqual([
      [id(6), id(5)],
      [id(3), id(4)],
      [id(2), id(1)],
    ]);
    // Page 1 ends between the two releases at 12:00 on 15 February: the id decides.
    expect(await pages('from=2104-01-01&to=2104-12-31&limit=3')).toEqual([
      [id(6), id(5), id(3)],
      [id(4), id(2), id(1)],
    ]);
    expect(await pages('from=2104-01-01&to=2104-12-31&country=US&limit=1')).toEqual([[id(6)], [id(3)], [id(1)]]);
  });

  it('when a cursor was made with other filters or for another list, or is malformed, then 400 naming cursor', async () => {
    const first = await read('from=2104-01-01&to=2104-12-31&limit=2');
    const cursor = first.body.meta.nextCursor as string;
    expect(typeof cursor).toBe('string');
    const newsKey = await svc.keyWith(['news:read', 'events:read']);
    const instrumentId = randomUUID();
    const instrument = await svc.admin('POST', '/instruments', [
      {
        id: instrumentId,
        assetClass: 'equity',
        displayName: 'Cursor Test Co',
        quoteCurrency: 'USD',
        quoteUnit: 'USD per share',
        isActive: true,
        brokerCodes: {},
        symbols: [{ symbol: `CUR${randomUUID().slice(0, 6).toUpperCase()}`, validFrom: '1990-01-01', validTo: null }],
      },
    ]);
    expect(instrument.status).toBe(200);
    for (const [path, k] of [
      [`/v1/economic-events?from=2104-01-01&to=2104-12-30&limit=2&cursor=${cursor}`, key],
      [`/v1/economic-events?from=2104-01-01&to=2104-12-31&country=US&cursor=${cursor}`, key],
      [`/v1/economic-events?cursor=${cursor}`, key],
      [`/v1/economic-events?from=2104-01-01&to=2104-12-31&cursor=${cursor.slice(0, -2)}`, key],
      [`/v1/economic-events?from=2104-01-01&to=2104-12-31&cursor=e30`, key],
      [`/v1/instruments/${instrumentId}/events?cursor=${cursor}`, newsKey],
      [`/v1/instruments?query=Cursor&cursor=${cursor}`, await svc.keyWith(['instruments:read'])],
    ] as const) {
      const res = await svc.get(path, k);
      expect(res.status, path).toBe(400);
      expect(res.body.error.code, path).toBe('invalid_request');
      expect(Object.keys(res.body.error.details), path).toEqual(['cursor']);
    }
  });

  it('when a release is added between pages, then one scheduled after the position (older) is read on a later page and one before it (newer) is not', async () => {
    const year = 'from=2110-01-01&to=2110-12-31';
    const rid = (n: number) => `00000000-0000-4000-8000-00000000310${n}`;
    await ingestOk([
      release('2110-05-01T12:00:00.000Z', { id: rid(1) }),
      release('2110-04-01T12:00:00.000Z', { id: rid(2) }),
      release('2110-03-01T12:00:00.000Z', { id: rid(3) }),
    ]);
    const first = await read(`${year}&limit=1`);
    expect(first.body.data.map((e: Release) => e.id)).toEqual([rid(1)]);
    await ingestOk([release('2110-06-01T12:00:00.000Z', { id: rid(4) }), release('2110-04-15T12:00:00.000Z', { id: rid(5) })]);
    const rest: string[] = [];
    let cursor = first.body.meta.nextCursor as string | null;
    while (cursor) {
      const page = await read(`${year}&limit=2&cursor=${cursor}`);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      rest.push(...page.body.data.map((e: Release) => e.id));
      cursor = page.body.meta.nextCursor;
    }
    expect(rest).toEqual([rid(5), rid(2), rid(3)]);
  });
});

describe('ingest: idempotent on id, the whole batch or nothing', () => {
  it('when the same releases are posted again, then unchanged; a filled-in actual and a rescheduled release are updates', async () => {
    const a = release('2105-01-08T13:30:00.000Z');
    const b = release('2105-01-13T13:30:00.000Z');
    expect(await ingestOk([a, b])).toEqual({ rows: 2, inserted: 2, updated: 0, unchanged: 0 });
    expect(await ingestOk([a, b])).toEqual({ rows: 2, inserted: 0, updated: 0, unchanged: 2 });
    const released = { ...a, actual: '0.3%', forecast: '0.2%', previous: '0.1%' };
    const moved = { ...b, scheduledAt: '2105-01-14T13:30:00.000Z' };
    expect(await ingestOk([released, moved])).toEqual({ rows: 2, inserted: 0, updated: 2, unchanged: 0 });
    const { data } = await readYear(2105);
    expect(data).toEqual([moved, released]);
  });

  it('when a release has no id, then its id is derived from country, name and referencePeriod, and posting it again (rescheduled) updates that row', async () => {
    const { id: _id, ...row } = release('2106-05-24T08:00:00.000Z', { country: 'de', name: 'Ifo Business Climate', referencePeriod: '2103-05' });
    expect(await ingestOk([row])).toEqual({ rows: 1, inserted: 1, updated: 0, unchanged: 0 });
    // Worked out with Python's hashlib: sha1 of economic-event:["DE","Ifo Business Climate","2103-05"] as a version-5 UUID.
    const derived = 'dc540792-b0e3-5ba7-b3f2-78edf2ad7db1';
    expect((await readYear(2106)).data.map((e: Release) => e.id)).toEqual([derived]);
    expect(await ingestOk([{ ...row, country: 'DE', scheduledAt: '2106-05-25T08:00:00.000Z' }])).toEqual({ rows: 1, inserted: 0, updated: 1, unchanged: 0 });
    expect((await readYear(2106)).data).toEqual([expect.objectContaining({ id: derived, country: 'DE', scheduledAt: '2106-05-25T08:00:00.000Z' })]);
  });

  it('when the same id appears twice in a batch, then 400 naming the second row, and nothing is stored', async () => {
    const a = release('2107-01-05T12:00:00.000Z');
    const { id: _, ...derivedTwice } = release('2107-02-05T12:00:00.000Z', { name: 'Twice', referencePeriod: '2107-01' });
    const res = await post([a, { ...a, actual: '1%' }]);
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error.details)).toEqual(['rows[1].id']);
    const derived = await post([derivedTwice, release('2107-03-05T12:00:00.000Z'), { ...derivedTwice, scheduledAt: '2107-02-06T12:00:00.000Z' }]);
    expect(derived.status).toBe(400);
    expect(Object.keys(derived.body.error.details)).toEqual(['rows[2].id']);
    expect(await storedInYear(2107)).toBe(0);
  });

  it('when one row of a batch is bad, then 400 naming it and none of the batch is stored, in JSON and in CSV', async () => {
    const good = [release('2108-01-05T12:00:00.000Z'), release('2108-01-06T12:00:00.000Z')];
    const res = await post([...good, release('2108-01-07T12:00:00.000Z', { importance: 'urgent' })]);
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual({ 'rows[2].importance': ['must be one of: low, medium, high; received "urgent"'] });
    const csv = [
      'id,country,eventClass,importance,name,referencePeriod,scheduledAt,actual,forecast,previous,source',
      `${randomUUID()},US,growth,high,GDP q/q,Q1 2108,2108-04-29T12:30:00Z,1.1%,,,test-fixture`,
      `${randomUUID()},US,growth,high,GDP q/q,Q2 2108,2108-07-29T12:30:00Z,2.0%,,,`,
    ].join('\n');
    const bad = await post(csv, 'text/csv');
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.error.details)).toEqual(['rows[1].source']);
    const missing = await post([{ ...good[0], actual: undefined }]);
    expect(missing.body.error.details).toEqual({ 'rows[0].actual': ['required (text of at most 64 characters or null)'] });
    expect(await storedInYear(2108)).toBe(0);
  });

  it('when a user posts back exactly what GET returned, then every row is unchanged and the next GET is identical', async () => {
    await ingestOk([
      release('2109-02-01T13:30:00.000Z', { actual: '−0.1%', forecast: ' 1,234.5 K ' }),
      release('2109-03-01T13:30:00.000Z', { country: 'EU', eventClass: 'bond_auction', importance: 'low' }),
      release('2109-04-01T13:30:00.000Z', { eventClass: 'energy', previous: '-12K', source: 'other-fixture' }),
    ]);
    const first = await readYear(2109);
    expect(first.data).toHaveLength(3);
    expect(first.meta.source).toBe('other-fixture, test-fixture');
    expect(await ingestOk(first.data)).toEqual({ rows: 3, inserted: 0, updated: 0, unchanged: 3 });
    const ndjson = first.data.map((e: Release) => JSON.stringify(e)).join('\n');
    expect(await ingestOk(ndjson, 'application/x-ndjson')).toEqual({ rows: 3, inserted: 0, updated: 0, unchanged: 3 });
    expect((await readYear(2109)).data).toEqual(first.data);
  });
});

describe('the demo calendar', () => {
  it('when the demo rows are ingested twice, then 290 rows once and unchanged after, and April 2020 payrolls read back as calendars print them', async () => {
    const first = await ingestOk(demoEconomicEvents());
    expect(first.rows).toBe(290);
    expect(await ingestOk(demoEconomicEvents())).toEqual({ rows: 290, inserted: 0, updated: 0, unchanged: 290 });
    const res = await read('from=2020-05-01&to=2020-05-01&country=US&eventClass=employment');
    // Both at 08:30 New York on the first Friday of May 2020; ties by id, 6fe5267f… (UNRATE) before 6ff16291… (PAYEMS).
    expect(res.body.data).toEqual([
      expect.objectContaining({ id: '6fe5267f-86d0-5704-8310-0932f46e2c62', name: 'Unemployment Rate', actual: '14.7%', previous: '4.4%' }),
      {
        id: '6ff16291-cfb7-544d-bc76-933c42d206eb',
        country: 'US',
        eventClass: 'employment',
        importance: 'high',
        name: 'Nonfarm Payrolls',
        referencePeriod: '2020-04',
        scheduledAt: '2020-05-01T12:30:00.000Z',
        actual: '-20493K',
        forecast: null,
        previous: '-1498K',
        source: 'synthetic-demo',
      },
    ]);
    const scheduled = await read('from=2027-01-01&to=2027-01-31&country=US');
    expect(scheduled.body.data).toHaveLength(5);
    expect(scheduled.body.data.every((e: Release) => e.actual === null && e.forecast === null && e.previous === null)).toBe(true);
  });
});
