import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstrument } from './fixtures.ts';
import { startService, type Service } from './harness.ts';

// GET /v1/instruments/{id}/news and /events, POST /admin/v1/news. Each test
// writes the news of instruments of its own.

let svc: Service;
let key: string;

beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['news:read', 'events:read']);
});
afterAll(() => svc.stop());

interface Item {
  id?: string;
  instrumentId: string;
  eventClass: string;
  headline: string;
  source: string;
  url: string;
  publishedAt: string;
  isCompanyConfirmed: boolean | string;
}

function newsItem(instrumentId: string, publishedAt: string, fields: Partial<Item> = {}): Item {
  return {
    id: randomUUID(),
    instrumentId,
    eventClass: 'earnings_release',
    headline: `Test headline ${randomUUID().slice(0, 8)}`,
    source: 'test-fixture',
    url: `https://news.example.test/${randomUUID()}`,
    publishedAt,
    isCompanyConfirmed: true,
    ...fields,
  };
}

const post = (rows: unknown, contentType?: string) => svc.admin('POST', '/news', rows, contentType);

async function ingestOk(rows: unknown, contentType?: string) {
  const res = await post(rows, contentType);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

async function read(route: 'news' | 'events', instrumentId: string, query = '') {
  const res = await svc.get(`/v1/instruments/${instrumentId}/${route}?${query}`, key);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

describe('POST /admin/v1/news', () => {
  it('when an item comes without an id, then its id is derived from instrumentId, source and url, and posting it again with a corrected headline updates that row and keeps createdAt', async () => {
    const { id: instrumentId } = await createInstrument(svc, { id: '5f0e2a41-7c3b-4d8e-9a61-2b4c8d0e1f37' });
    const { id: _id, ...row } = newsItem(instrumentId, '2031-03-04T14:00:00Z', { url: 'https://news.example.test/derived-id' });
    expect(await ingestOk([row])).toMatchObject({ rows: 1, inserted: 1, updated: 0, unchanged: 0 });
    const [first] = (await read('news', instrumentId)).data;
    // docs/api.md, news ingest: the name-based UUID of `news:` followed by the JSON array [instrumentId, source, url],
    // that is the first 16 bytes of the text's SHA-1 with the version nibble 5 and the variant bits 10 ("Ids"); worked
    // out with Python's hashlib for news:["5f0e2a41-7c3b-4d8e-9a61-2b4c8d0e1f37","test-fixture","https://news.example.test/derived-id"].
    expect(first.id).toBe('449a6666-5f65-5716-b76c-8a58bc9533d7');
    expect(first).toMatchObject({ headline: row.headline, publishedAt: '2031-03-04T14:00:00.000Z', isCompanyConfirmed: true });

    expect(await ingestOk([row])).toMatchObject({ rows: 1, inserted: 0, updated: 0, unchanged: 1 });
    const corrected = { ...row, headline: 'Corrected headline', eventClass: 'guidance', isCompanyConfirmed: 'false' };
    expect(await ingestOk([corrected])).toMatchObject({ rows: 1, inserted: 0, updated: 1, unchanged: 0 });
    const { data } = await read('news', instrumentId);
    expect(data).toEqual([{ ...first, headline: 'Corrected headline', eventClass: 'guidance', isCompanyConfirmed: false }]);
  });

  it('when a row names an unknown instrument, repeats an id, moves an id to another instrument, or has a bad url or class, then 400 names the row and field and nothing is stored', async () => {
    const { id: instrumentId } = await createInstrument(svc);
    const { id: otherId } = await createInstrument(svc);
    const stored = newsItem(otherId, '2031-01-05T12:00:00Z');
    await ingestOk([stored]);
    const good = () => newsItem(instrumentId, '2031-01-06T12:00:00Z');
    const repeated = good();
    const cases: [unknown[], string][] = [
      [[good(), newsItem(randomUUID(), '2031-01-06T12:00:00Z')], 'rows[1].instrumentId'],
      [[repeated, good(), { ...repeated, url: 'https://news.example.test/other' }], 'rows[2].id'],
      [[good(), { ...stored, instrumentId }], 'rows[1].instrumentId'],
      [[{ ...good(), url: 'ftp://news.example.test/a' }], 'rows[0].url'],
      [[{ ...good(), url: '/relative/path' }], 'rows[0].url'],
      [[{ ...good(), url: 'https://news.example.test/a b' }], 'rows[0].url'],
      [[{ ...good(), eventClass: '' }], 'rows[0].eventClass'],
      [[{ ...good(), eventClass: 'x'.repeat(65) }], 'rows[0].eventClass'],
      [[{ ...good(), headline: '   ' }], 'rows[0].headline'],
      [[{ ...good(), publishedAt: '2031-01-06' }], 'rows[0].publishedAt'],
      [[{ ...good(), isCompanyConfirmed: 'yes' }], 'rows[0].isCompanyConfirmed'],
      [[{ ...good(), createdAt: '2031-01-06T12:00:00Z' }], 'rows[0].createdAt'],
    ];
    for (const [rows, field] of cases) {
      const res = await post(rows);
      expect(res.status, field).toBe(400);
      expect(Object.keys(res.body.error.details), JSON.stringify(res.body)).toEqual([field]);
    }
    expect((await read('news', instrumentId)).data).toEqual([]);
    expect((await read('news', otherId)).data.map((e: Item) => e.id)).toEqual([stored.id]);
  });

  it('when the items come as CSV, then they are stored as JSON rows would be', async () => {
    const { id: instrumentId } = await createInstrument(svc);
    const csv = [
      'instrumentId,eventClass,headline,source,url,publishedAt,isCompanyConfirmed',
      `${instrumentId},dividend,"Board declares a dividend, payable in May",test-fixture,https://news.example.test/csv-1,2031-04-01T20:30:00Z,true`,
      `${instrumentId},media_report,Press report,test-fixture,https://news.example.test/csv-2,2031-04-02T08:00:00Z,false`,
    ].join('\n');
    expect(await ingestOk(csv, 'text/csv')).toMatchObject({ rows: 2, inserted: 2, updated: 0, unchanged: 0 });
    const { data } = await read('news', instrumentId);
    expect(data.map((e: Item) => [e.eventClass, e.headline, e.isCompanyConfirmed])).toEqual([
      ['media_report', 'Press report', false],
      ['dividend', 'Board declares a dividend, payable in May', true],
    ]);
  });
});

describe('news and catalyst events', () => {
  let instrumentId: string;
  let items: Item[];

  beforeAll(async () => {
    ({ id: instrumentId } = await createInstrument(svc));
    // Twelve items over three days, classes and confirmation varied; two pairs share a publication instant.
    const instants = [
      '2032-05-01T00:00:00.000Z',
      '2032-05-01T13:30:00.000Z',
      '2032-05-01T13:30:00.000Z',
      '2032-05-01T23:59:59.999Z',
      '2032-05-02T00:00:00.000Z',
      '2032-05-02T09:00:00.000Z',
      '2032-05-02T16:00:00.000Z',
      '2032-05-02T16:00:00.000Z',
      '2032-05-02T21:00:00.000Z',
      '2032-05-03T10:00:00.000Z',
      '2032-05-03T12:00:00.000Z',
      '2032-05-03T23:00:00.000Z',
    ];
    const classes = ['earnings_release', 'guidance', 'media_report'];
    items = instants.map((publishedAt, i) =>
      newsItem(instrumentId, publishedAt, { eventClass: classes[i % 3], isCompanyConfirmed: i % 4 !== 1 && i % 5 !== 0 }),
    );
    await ingestOk(items);
  });

  /** The items a filter selects, newest first, ties by id: the expectation, from the posted rows. */
  function expected(f: { from?: string; to?: string; eventClass?: string; confirmedOnly?: boolean }) {
    return items
      .filter((e) => (!f.from || e.publishedAt.slice(0, 10) >= f.from) && (!f.to || e.publishedAt.slice(0, 10) <= f.to))
      .filter((e) => !f.eventClass || e.eventClass === f.eventClass)
      .filter((e) => !f.confirmedOnly || e.isCompanyConfirmed)
      .sort((a, b) => (a.publishedAt === b.publishedAt ? (a.id! < b.id! ? -1 : 1) : a.publishedAt < b.publishedAt ? 1 : -1))
      .map((e) => e.id);
  }

  it('when read with any combination of filters, then events are exactly the news with isCompanyConfirmed true, and a strict subset', async () => {
    const filters: Record<string, string>[] = [
      {},
      { eventClass: 'earnings_release' },
      { eventClass: 'guidance' },
      { from: '2032-05-02' },
      { to: '2032-05-01' },
      { from: '2032-05-02', to: '2032-05-02' },
      { from: '2032-05-02', to: '2032-05-03', eventClass: 'media_report' },
      { eventClass: 'no_such_class' },
    ];
    for (const f of filters) {
      const query = new URLSearchParams({ ...f, limit: '500' }).toString();
      const news = (await read('news', instrumentId, query)).data as Item[];
      const events = (await read('events', instrumentId, query)).data as Item[];
      expect(
        news.map((e) => e.id),
        query,
      ).toEqual(expected(f));
      expect(events, query).toEqual(news.filter((e) => e.isCompanyConfirmed === true));
      if (news.some((e) => !e.isCompanyConfirmed)) expect(events.length, query).toBeLessThan(news.length);
    }
    // The filters above are not vacuous: unconfirmed items are in the fixture and some filters keep them.
    expect(items.filter((e) => !e.isCompanyConfirmed).length).toBeGreaterThan(2);
  });

  it('when from and to are given, then they bound the UTC day of publishedAt, both inclusive', async () => {
    const { data } = await read('news', instrumentId, 'from=2032-05-01&to=2032-05-01');
    expect(data.map((e: Item) => e.publishedAt)).toEqual([
      '2032-05-01T23:59:59.999Z',
      '2032-05-01T13:30:00.000Z',
      '2032-05-01T13:30:00.000Z',
      '2032-05-01T00:00:00.000Z',
    ]);
  });

  it('when more items match than limit, then the newest come first, ties by id, and meta says truncated', async () => {
    const first = await read('news', instrumentId, 'limit=7');
    expect(first.data.map((e: Item) => e.id)).toEqual(expected({}).slice(0, 7));
    // The items are of 2032, after the time of reading: test-fixture has published nothing in the 7 days before it.
    expect(first.meta).toMatchObject({ limit: 7, truncated: true, source: 'test-fixture', stale: true, staleReason: 'source_silent' });
    const all = await read('news', instrumentId, 'limit=12');
    expect(all.meta).toMatchObject({ limit: 12, truncated: false });
    const events = await read('events', instrumentId, 'limit=2');
    expect(events.data.map((e: Item) => e.id)).toEqual(expected({ confirmedOnly: true }).slice(0, 2));
    expect(events.meta.truncated).toBe(true);
    const defaulted = await read('news', instrumentId);
    expect(defaulted.meta.limit).toBe(100);
  });

  it('when the instrument is unknown, then 404 not_found; when the key lacks the scope, 403; when a parameter is out of range, 400 naming it', async () => {
    for (const route of ['news', 'events']) {
      const res = await svc.get(`/v1/instruments/${randomUUID()}/${route}`, key);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    const newsOnly = await svc.keyWith(['news:read']);
    const denied = await svc.get(`/v1/instruments/${instrumentId}/events`, newsOnly);
    expect(denied.status).toBe(403);
    expect(denied.body.error.details.scope).toEqual(['requires events:read']);
    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['eventClass=', 'eventClass'],
      ['from=2032-05-03&to=2032-05-01', 'to'],
      ['from=2032-02-30', 'from'],
      ['colour=red', 'colour'],
    ]) {
      const res = await svc.get(`/v1/instruments/${instrumentId}/news?${query}`, key);
      expect(res.status, query).toBe(400);
      expect(Object.keys(res.body.error.details), query).toEqual([field]);
    }
  });
});

describe('pages and cursors (docs/api.md, "Pages and cursors")', () => {
  /** Every page of a read, following meta.nextCursor until it is null. */
  async function allPages(route: 'news' | 'events', instrumentId: string, query: Record<string, string>) {
    const pages: { data: Item[]; meta: Record<string, unknown> }[] = [];
    let cursor: string | null = null;
    do {
      const page = await read(route, instrumentId, new URLSearchParams({ ...query, ...(cursor ? { cursor } : {}) }).toString());
      pages.push(page);
      cursor = page.meta.nextCursor as string | null;
      expect(page.meta.truncated).toBe(cursor !== null);
    } while (cursor !== null && pages.length < 50);
    return pages;
  }

  /** Newest publishedAt first, ties by id: the order the docs give, computed from the posted rows. */
  const newestFirst = (rows: Item[]) =>
    [...rows].sort((a, b) => (a.publishedAt === b.publishedAt ? (a.id! < b.id! ? -1 : 1) : a.publishedAt < b.publishedAt ? 1 : -1)).map((r) => r.id);

  it('when paged with limit=3, then every item comes exactly once in order, the last page says no more, and events page the same way', async () => {
    const { id: instrumentId } = await createInstrument(svc);
    // Eleven items, five of them at one instant (ties broken by id only), three unconfirmed.
    const instants = ['2033-01-01T10:00:00Z', '2033-01-02T10:00:00Z', '2033-01-03T10:00:00Z', '2033-01-04T10:00:00Z'];
    const items = Array.from({ length: 11 }, (_, i) =>
      newsItem(instrumentId, i < 5 ? '2033-01-02T10:00:00.000Z' : new Date(instants[i % 4]).toISOString(), { isCompanyConfirmed: i % 4 !== 0 }),
    );
    await ingestOk(items);

    const pages = await allPages('news', instrumentId, { limit: '3' });
    expect(pages.map((p) => p.data.length)).toEqual([3, 3, 3, 2]);
    expect(pages.flatMap((p) => p.data.map((r) => r.id))).toEqual(newestFirst(items));
    expect(pages.at(-1)!.meta).toMatchObject({ truncated: false, nextCursor: null, limit: 3 });

    const eventPages = await allPages('events', instrumentId, { limit: '2' });
    expect(eventPages.flatMap((p) => p.data.map((r) => r.id))).toEqual(newestFirst(items.filter((r) => r.isCompanyConfirmed)));

    // limit may change from page to page: 4, then the rest in one page of 100.
    const first = await read('news', instrumentId, 'limit=4');
    const rest = await read('news', instrumentId, `limit=100&cursor=${first.meta.nextCursor}`);
    expect([...first.data, ...rest.data].map((r: Item) => r.id)).toEqual(newestFirst(items));
    expect(rest.meta).toMatchObject({ truncated: false, nextCursor: null });
  });

  it('when filters are given, then the pages hold exactly the filtered items', async () => {
    const { id: instrumentId } = await createInstrument(svc);
    const items = Array.from({ length: 9 }, (_, i) =>
      newsItem(instrumentId, `2033-02-0${1 + (i % 5)}T1${i}:00:00.000Z`, { eventClass: i % 2 ? 'guidance' : 'earnings_release' }),
    );
    await ingestOk(items);
    const pages = await allPages('news', instrumentId, { limit: '2', eventClass: 'guidance', from: '2033-02-02', to: '2033-02-04' });
    const inWindow = items.filter((r) => r.eventClass === 'guidance' && r.publishedAt >= '2033-02-02' && r.publishedAt < '2033-02-05');
    expect(inWindow.length).toBeGreaterThan(2);
    expect(pages.flatMap((p) => p.data.map((r) => r.id))).toEqual(newestFirst(inWindow));
  });

  it('when items are added between pages, then those sorting after the cursor position come on later pages and those sorting before it never do', async () => {
    const { id: instrumentId } = await createInstrument(svc);
    const day = (d: number) => `2033-03-${String(d).padStart(2, '0')}T12:00:00.000Z`;
    const items = [10, 9, 8, 7, 6, 5].map((d) => newsItem(instrumentId, day(d)));
    await ingestOk(items);
    const first = await read('news', instrumentId, 'limit=2');
    expect(first.data.map((r: Item) => r.id)).toEqual([items[0].id, items[1].id]);

    // Added after the first page was read: one newer than everything (before the position),
    // one at the position's own instant (its id decides its side), one in the middle and one older than everything.
    const newer = newsItem(instrumentId, day(20));
    const olderMiddle = newsItem(instrumentId, '2033-03-07T18:00:00.000Z');
    const oldest = newsItem(instrumentId, day(1));
    const sameInstant = [
      newsItem(instrumentId, day(9), { id: '00000000-0000-4000-8000-000000000000' }),
      newsItem(instrumentId, day(9), { id: 'ffffffff-ffff-4fff-bfff-ffffffffffff' }),
    ];
    await ingestOk([newer, olderMiddle, oldest, ...sameInstant]);

    const rest: Item[] = [];
    let cursor = first.meta.nextCursor as string | null;
    while (cursor) {
      const page = await read('news', instrumentId, `limit=2&cursor=${cursor}`);
      rest.push(...page.data);
      cursor = page.meta.nextCursor;
    }
    // Items[1] (day 9) was the last row read. Of the two at its instant, the id below its id sorts before it (not seen), the one above after (seen).
    const position = items[1].id!;
    const sameAfter = sameInstant.filter((r) => r.id! > position);
    const sameBefore = sameInstant.filter((r) => r.id! < position);
    expect(sameAfter.length + sameBefore.length).toBe(2);
    expect(rest.map((r) => r.id)).toEqual(newestFirst([...sameAfter, ...items.slice(2), olderMiddle, oldest]));
    expect(rest.map((r) => r.id)).not.toContain(newer.id);
    for (const r of sameBefore) expect(rest.map((x) => x.id)).not.toContain(r.id);
    // Starting again without a cursor sees every item.
    const all = await allPages('news', instrumentId, { limit: '500' });
    expect(all.flatMap((p) => p.data.map((r) => r.id))).toEqual(newestFirst([...items, newer, olderMiddle, oldest, ...sameInstant]));
  });

  it('when items differ in publishedAt by a microsecond, then the cursor keeps them apart (it holds the stored instant, not milliseconds)', async () => {
    const { id: instrumentId } = await createInstrument(svc);
    const ids = ['a0000000-0000-4000-8000-000000000001', 'a0000000-0000-4000-8000-000000000002', 'a0000000-0000-4000-8000-000000000003'];
    // Stored directly: the upload keeps milliseconds, another writer may not. Newest first: 3 (…0.000003), 1 (…0.000002), 2 (…0.000001).
    const micros = ['2033-04-01 12:00:00.000002+00', '2033-04-01 12:00:00.000001+00', '2033-04-01 12:00:00.000003+00'];
    for (const [i, id] of ids.entries()) {
      await svc.sql`
        insert into news (id, instrument_id, event_class, headline, source, url, published_at, is_company_confirmed)
        values (${id}, ${instrumentId}, 'guidance', ${`Micro ${i}`}, 'test-fixture', ${`https://news.example.test/micro/${id}`}, ${micros[i]}::text::timestamptz, true)
      `;
    }
    const pages = await allPages('news', instrumentId, { limit: '1' });
    expect(pages.flatMap((p) => p.data.map((r) => r.id))).toEqual([ids[2], ids[0], ids[1]]);
  });

  it('when a cursor is malformed, or made for the other list, another instrument or other filters, then 400 invalid_request naming cursor', async () => {
    const { id: instrumentId } = await createInstrument(svc);
    const { id: otherId } = await createInstrument(svc);
    const items = [1, 2, 3].map((d) => newsItem(instrumentId, `2033-05-0${d}T12:00:00.000Z`));
    await ingestOk([...items, ...[1, 2, 3].map((d) => newsItem(otherId, `2033-05-0${d}T12:00:00.000Z`))]);
    const newsCursor = (await read('news', instrumentId, 'limit=1')).meta.nextCursor as string;
    const filteredCursor = (await read('news', instrumentId, 'limit=1&eventClass=earnings_release')).meta.nextCursor as string;
    expect(typeof newsCursor).toBe('string');
    expect(typeof filteredCursor).toBe('string');
    const encode = (payload: unknown) => Buffer.from(JSON.stringify(payload)).toString('base64url');
    // The JSON after the cursor's 16-byte tag (server/core/cursor.ts); re-encoded without the tag, each is refused.
    const decoded = JSON.parse(Buffer.from(newsCursor, 'base64url').subarray(16).toString('utf8'));

    const refused: [string, string, string][] = [
      ['news', instrumentId, 'cursor=not-a-cursor'],
      ['news', instrumentId, 'cursor=%25%25%25'],
      ['news', instrumentId, 'cursor='],
      ['news', instrumentId, `cursor=${'A'.repeat(2000)}`],
      ['news', instrumentId, `cursor=${encode({ ...decoded, v: 2 })}`],
      ['news', instrumentId, `cursor=${encode({ ...decoded, k: ['2033-02-30T12:00:00.000000', decoded.k[1]] })}`],
      ['news', instrumentId, `cursor=${encode({ ...decoded, k: [decoded.k[0], 'not-a-uuid'] })}`],
      ['news', instrumentId, `cursor=${encode({ ...decoded, k: [decoded.k[0], '\u0000'] })}`],
      ['news', instrumentId, `cursor=${encode([1, 2, 3])}`],
      ['news', instrumentId, `cursor=${newsCursor}x`],
      // Foreign: made for news, used on events; another instrument; other filters.
      ['events', instrumentId, `cursor=${newsCursor}`],
      ['news', otherId, `cursor=${newsCursor}`],
      ['news', instrumentId, `cursor=${newsCursor}&eventClass=earnings_release`],
      ['news', instrumentId, `cursor=${filteredCursor}`],
      ['news', instrumentId, `cursor=${newsCursor}&from=2033-05-01`],
    ];
    for (const [route, id, query] of refused) {
      const res = await svc.get(`/v1/instruments/${id}/${route}?${query}`, key);
      expect(res.status, `${route} ${query}`).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(Object.keys(res.body.error.details), `${route} ${query}`).toEqual(['cursor']);
    }
    // The cursor still works where it was made, with another limit.
    const next = await read('news', instrumentId, `cursor=${newsCursor}&limit=5`);
    expect(next.data.map((r: Item) => r.id)).toEqual(newestFirst(items).slice(1));
  });

  it('when limit is out of range or not an integer, then the message names the range 1..500 the spec gives', async () => {
    const { id: instrumentId } = await createInstrument(svc);
    for (const route of ['news', 'events']) {
      for (const [query, message] of [
        ['limit=501', 'must be an integer between 1 and 500; received 501'],
        ['limit=0', 'must be an integer between 1 and 500; received 0'],
        ['limit=2.5', 'must be an integer between 1 and 500; received 2.5'],
        ['limit=ten', 'must be an integer between 1 and 500; received "ten"'],
      ]) {
        const res = await svc.get(`/v1/instruments/${instrumentId}/${route}?${query}`, key);
        expect(res.status, query).toBe(400);
        expect(res.body.error.details, query).toEqual({ limit: [message] });
      }
    }
  });
});
