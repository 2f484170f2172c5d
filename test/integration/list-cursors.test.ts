import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstrument } from './fixtures.ts';
import { startService, type Service } from './harness.ts';

// Instrument search in pages (docs/api.md, "Pages and cursors" and
// "Instrument search"): meta.truncated and meta.nextCursor say the search was
// cut and read on; a cursor is bound to the search it was made for, and only
// a cursor the service made is read.

let svc: Service;
let key: string;

beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['instruments:read']);
});
afterAll(() => svc.stop());

/** Eight random upper-case letters: a stem no other instrument's symbol or name shares. */
const letters = () =>
  randomUUID()
    .replace(/-/g, '')
    .slice(0, 8)
    .replace(/[0-9]/g, (d) => 'GHIJKLMNOP'[Number(d)])
    .toUpperCase();

async function search(query: string) {
  const res = await svc.get(`/v1/instruments?${query}`, key);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** Every page of a search, following meta.nextCursor; truncated is true exactly when a cursor is given. */
async function allPages(query: string) {
  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const body = await search(`${query}${cursor ? `&cursor=${cursor}` : ''}`);
    pages.push(body.data.map((i: { currentSymbol: string }) => i.currentSymbol));
    cursor = body.meta.nextCursor;
    expect(body.meta.truncated).toBe(cursor !== null);
  } while (cursor !== null && pages.length < 20);
  return pages;
}

describe('instrument search in pages', () => {
  // Seven instruments whose names all begin with one word, the query: each is a
  // name-prefix match (rank 1) with word similarity 1, so the ranking orders
  // them active first, then by symbol (docs: rank, active, similarity, symbol, id).
  // C and F are delisted.
  const stem = letters();
  const word = `Pg${stem.toLowerCase()}`;
  const symbol = (s: string) => `Q${stem}${s}`;
  beforeAll(async () => {
    for (const s of ['D', 'A', 'F', 'G', 'B', 'C', 'E']) {
      await createInstrument(svc, {
        displayName: `${word} Holdings ${s}`,
        symbols: [{ symbol: symbol(s), validFrom: '1990-01-01', validTo: null }],
        isActive: !['C', 'F'].includes(s),
      });
    }
  });

  it('when more instruments match than limit, then meta says truncated with a cursor, and the pages give each match once, in ranking order', async () => {
    const expected = ['A', 'B', 'D', 'E', 'G', 'C', 'F'].map(symbol);
    expect(await allPages(`query=${word}&limit=2`)).toEqual([expected.slice(0, 2), expected.slice(2, 4), expected.slice(4, 6), expected.slice(6)]);
    expect(await allPages(`query=${word}&limit=3`)).toEqual([expected.slice(0, 3), expected.slice(3, 6), expected.slice(6)]);

    const cut = await search(`query=${word}&limit=6`);
    expect(cut.meta).toMatchObject({ mode: 'search', limit: 6, truncated: true });
    expect(typeof cut.meta.nextCursor).toBe('string');
    const whole = await search(`query=${word}&limit=7`);
    expect(whole.meta).toMatchObject({ limit: 7, truncated: false, nextCursor: null });
    expect(whole.data.map((i: { currentSymbol: string }) => i.currentSymbol)).toEqual(expected);
    expect((await search(`query=${word}`)).meta).toMatchObject({ limit: 25, truncated: false, nextCursor: null });
  });

  it('when instruments are added between pages, then one ranking after the position comes on a later page and one ranking before it does not', async () => {
    const w = `Pn${letters().toLowerCase()}`;
    const sym = (s: string) => `R${w.toUpperCase()}${s}`;
    for (const s of ['A', 'B', 'D', 'E'])
      await createInstrument(svc, { displayName: `${w} Group ${s}`, symbols: [{ symbol: sym(s), validFrom: '1990-01-01' }] });
    const first = await search(`query=${w}&limit=2`);
    expect(first.data.map((i: { currentSymbol: string }) => i.currentSymbol)).toEqual([sym('A'), sym('B')]);
    // AA sorts between A and B (before the position, B): never seen; C between B and D: seen.
    for (const s of ['AA', 'C']) await createInstrument(svc, { displayName: `${w} Group ${s}`, symbols: [{ symbol: sym(s), validFrom: '1990-01-01' }] });
    const rest: string[] = [];
    let cursor = first.meta.nextCursor as string | null;
    while (cursor) {
      const page = await search(`query=${w}&limit=2&cursor=${cursor}`);
      rest.push(...page.data.map((i: { currentSymbol: string }) => i.currentSymbol));
      cursor = page.meta.nextCursor;
    }
    expect(rest).toEqual([sym('C'), sym('D'), sym('E')]);
  });

  it('when matches differ in similarity (fuzzy matches), then paging one by one gives the same sequence as one page: the cursor keeps the score exactly', async () => {
    const w = `Zq${letters().toLowerCase().slice(0, 6)}`;
    // The query w + 'ite': exact name prefixes (rank 1) and near misses of decreasing similarity (rank 2).
    const names = [`${w}ite`, `${w}iteum`, `${w}it Mining`, `${w}i`, `${w}`, `${w}itx`, `${w}ate`];
    for (const [i, name] of names.entries())
      await createInstrument(svc, { displayName: name, symbols: [{ symbol: `S${w.toUpperCase()}${i}`, validFrom: '1990-01-01' }] });
    const whole = await search(`query=${w}ite&limit=100`);
    const ranked = whole.data.map((i: { currentSymbol: string }) => i.currentSymbol);
    expect(ranked.length).toBeGreaterThanOrEqual(4);
    expect(new Set(ranked).size).toBe(ranked.length);
    expect((await allPages(`query=${w}ite&limit=1`)).flat()).toEqual(ranked);
  });

  it('when a cursor is used with another query, assetClass, asOf or mode, or is malformed, then 400 naming cursor', async () => {
    const cursor = (await search(`query=${word}&limit=2`)).meta.nextCursor as string;
    const dated = (await search(`query=${word}&limit=2&asOf=2020-01-01`)).meta.nextCursor as string;
    expect(typeof cursor).toBe('string');
    expect(typeof dated).toBe('string');
    // The same search reads on with either cursor.
    expect((await search(`query=${word}&limit=2&cursor=${cursor}`)).data).toHaveLength(2);
    expect((await search(`query=${word}&limit=2&asOf=2020-01-01&cursor=${dated}`)).data).toHaveLength(2);
    for (const query of [
      `query=${word}x&cursor=${cursor}`,
      `query=${word}&assetClass=equity&cursor=${cursor}`,
      `query=${word}&asOf=2020-01-01&cursor=${cursor}`,
      `query=${word}&asOf=2021-01-01&cursor=${dated}`,
      `query=${word}&cursor=${dated}`,
      `brokerCode=X&broker=ibkr&cursor=${cursor}`,
      `query=${word}&cursor=${cursor.slice(1)}`,
      `query=${word}&cursor=${Buffer.from('{"v":1}').toString('base64url')}`,
      `query=${word}&cursor=a.b`,
    ]) {
      const res = await svc.get(`/v1/instruments?${query}`, key);
      expect(res.status, query).toBe(400);
      expect(res.body.error.code, query).toBe('invalid_request');
      expect(Object.keys(res.body.error.details), query).toEqual(['cursor']);
    }
  });

  it('when limit is out of 1..100, then the message names the range', async () => {
    for (const [query, message] of [
      ['limit=101', 'must be an integer between 1 and 100; received 101'],
      ['limit=0', 'must be an integer between 1 and 100; received 0'],
      ['limit=1.5', 'must be an integer between 1 and 100; received 1.5'],
    ]) {
      const res = await svc.get(`/v1/instruments?query=${word}&${query}`, key);
      expect(res.status, query).toBe(400);
      expect(res.body.error.details, query).toEqual({ limit: [message] });
    }
  });
});

describe('cursors only the service made', () => {
  // A second app on the same database: another process of the same deployment.
  let other: Service;
  const otherLog: string[] = [];
  const w = `Pk${letters().toLowerCase()}`;
  const sym = (s: string) => `T${w.toUpperCase()}${s}`;
  // Six name-prefix matches of one rank and similarity: ranked by symbol (docs/api.md, "Instrument search").
  const ranked = ['A', 'B', 'C', 'D', 'E', 'F'].map(sym);
  beforeAll(async () => {
    other = await startService({ LOG_LEVEL: 'trace' }, { write: (line: string) => void otherLog.push(line) });
    for (const s of ['D', 'F', 'A', 'C', 'E', 'B'])
      await createInstrument(svc, { displayName: `${w} Trust ${s}`, symbols: [{ symbol: sym(s), validFrom: '1990-01-01' }] });
  });
  afterAll(() => other?.stop());

  const symbols = (body: { data: { currentSymbol: string }[] }) => body.data.map((i) => i.currentSymbol);
  const NOT_MADE_HERE = /^is not a cursor this service made/;

  async function refused(on: Service, cursor: string) {
    const res = await on.get(`/v1/instruments?query=${w}&limit=2&cursor=${cursor}`, key);
    expect(res.status, cursor).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(Object.keys(res.body.error.details)).toEqual(['cursor']);
    expect(res.body.error.details.cursor).toEqual([expect.stringMatching(NOT_MADE_HERE)]);
  }

  it('when pages are read from two processes of one deployment in turn, then each reads on from the cursor the other made', async () => {
    const seen: string[][] = [];
    let cursor: string | null = null;
    for (const on of [svc, other, svc]) {
      const res = await on.get(`/v1/instruments?query=${w}&limit=2${cursor ? `&cursor=${cursor}` : ''}`, key);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      seen.push(symbols(res.body));
      cursor = res.body.meta.nextCursor;
    }
    expect(seen).toEqual([ranked.slice(0, 2), ranked.slice(2, 4), ranked.slice(4, 6)]);
    expect(cursor).toBeNull();
  });

  it('when a cursor is decoded, re-positioned and encoded again, then 400 invalid_request: not a cursor this service made', async () => {
    const first = (await search(`query=${w}&limit=2`)).meta.nextCursor as string;
    // The genuine cursor reads on from B.
    expect(symbols(await search(`query=${w}&limit=2&cursor=${first}`))).toEqual(ranked.slice(2, 4));
    // What a client finds in it: JSON holding B's symbol, after some bytes.
    const bytes = Buffer.from(first, 'base64url');
    const at = bytes.indexOf('{"v":');
    expect(at).toBeGreaterThan(0);
    const json = bytes.subarray(at).toString('utf8');
    expect(json).toContain(`"${ranked[1]}"`);
    // Moved to D, to skip C and D.
    const moved = json.replace(`"${ranked[1]}"`, `"${ranked[3]}"`);
    for (const forged of [Buffer.concat([bytes.subarray(0, at), Buffer.from(moved)]), Buffer.from(moved), Buffer.from(json)]) {
      await refused(svc, forged.toString('base64url'));
      await refused(other, forged.toString('base64url'));
    }
  });

  it('when a byte of a cursor is flipped, or the cursor is cut, then 400 invalid_request: not a cursor this service made', async () => {
    const cursor = (await search(`query=${w}&limit=2`)).meta.nextCursor as string;
    const bytes = Buffer.from(cursor, 'base64url');
    for (const i of [0, 7, 15, bytes.length - 1]) {
      const flipped = Buffer.from(bytes);
      flipped[i] ^= 0x01;
      await refused(svc, flipped.toString('base64url'));
    }
    await refused(svc, bytes.subarray(0, bytes.length - 1).toString('base64url'));
    await refused(svc, bytes.subarray(1).toString('base64url'));
  });

  it('when a deployment has another signing key, then its cursors and ours are each 400 on the other', async () => {
    const [{ secret }] = await svc.sql<{ secret: Buffer }[]>`select secret from cursor_signing_key`;
    await svc.sql`update cursor_signing_key set secret = ${randomBytes(32)}`;
    // Started now, it reads the other key; svc and other keep the one they read at start.
    const elsewhere = await startService();
    try {
      const ours = (await search(`query=${w}&limit=2`)).meta.nextCursor as string;
      const res = await elsewhere.get(`/v1/instruments?query=${w}&limit=2`, key);
      expect(symbols(res.body)).toEqual(ranked.slice(0, 2));
      const theirs = res.body.meta.nextCursor as string;
      expect(theirs).not.toBe(ours);
      await refused(elsewhere, ours);
      await refused(svc, theirs);
      await refused(other, theirs);
    } finally {
      await elsewhere.stop();
      await svc.sql`update cursor_signing_key set secret = ${secret}`;
    }
  });

  it('when the service starts and answers, then its signing key is in no log line, error body, status or metrics', async () => {
    const [{ secret }] = await svc.sql<{ secret: Buffer }[]>`select secret from cursor_signing_key`;
    expect(secret).toHaveLength(32);
    const cursor = (await other.get(`/v1/instruments?query=${w}&limit=2`, key)).body.meta.nextCursor as string;
    const error = await other.get(`/v1/instruments?query=${w}&limit=2&cursor=${cursor.slice(0, -1)}`, key);
    expect(error.status).toBe(400);
    const texts = [
      otherLog.join(''),
      JSON.stringify(error.body),
      JSON.stringify((await other.admin('GET', '/status')).body),
      await (await fetch(`${other.runtime.adminUrl}/metrics`)).text(),
    ];
    // The log is not empty: it holds the start and the requests above.
    expect(otherLog.length).toBeGreaterThan(0);
    for (const text of texts) {
      for (const form of [secret.toString('hex'), secret.toString('base64'), secret.toString('base64url')]) expect(text).not.toContain(form);
    }
  });
});
