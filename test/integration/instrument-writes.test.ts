import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Service, startService } from './harness.ts';
import { createInstrument, uniqueSymbol } from './fixtures.ts';

// POST /admin/v1/instruments takes an Instrument as GET returns it, and a
// file without ids can be posted twice without duplicating anything.

let svc: Service;
let key: string;
beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['instruments:read']);
});
afterAll(() => svc.stop());

const today = () => new Date().toISOString().slice(0, 10);

async function readBack(id: string) {
  const res = await svc.get(`/v1/instruments/${id}`, key);
  expect(res.status).toBe(200);
  return res.body.data;
}

const storedHistory = (id: string) =>
  svc.sql`select symbol, valid_from::text, valid_to::text from instrument_symbols where instrument_id = ${id} order by valid_from`;

const holdersOf = async (symbol: string) =>
  (await svc.sql`select distinct instrument_id from instrument_symbols where symbol = ${symbol}`).map((r) => r.instrument_id as string);

function newRow(symbol: string, extra: Record<string, unknown> = {}) {
  return {
    assetClass: 'equity',
    displayName: `Idless ${symbol}`,
    quoteCurrency: 'USD',
    quoteUnit: 'USD per share',
    symbols: [{ symbol, validFrom: '2001-01-01' }],
    ...extra,
  };
}

describe('posting back what GET returns', () => {
  it('when an operator posts back exactly what GET returned, then 200, nothing is duplicated and nothing changes, symbol history included', async () => {
    const oldSym = uniqueSymbol('RB');
    const newSym = uniqueSymbol('RB');
    const { id } = await createInstrument(svc, {
      symbols: [
        { symbol: oldSym, validFrom: '1995-01-01', validTo: '2002-05-03' },
        { symbol: newSym, validFrom: '2002-05-06' },
      ],
      brokerCodes: { ibkr: `${newSym}:NASDAQ`, other: 'X1' },
    });
    const before = await readBack(id);
    expect(before).toMatchObject({ currentSymbol: newSym, vendorCode: `${newSym}:NASDAQ` });
    const historyBefore = await storedHistory(id);

    const res = await svc.admin('POST', '/instruments', [before]);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ rows: 1, inserted: 0, updated: 0, unchanged: 1, ids: [id] });
    expect(await readBack(id)).toEqual(before);
    expect(await storedHistory(id)).toEqual(historyBefore);
    expect(historyBefore).toHaveLength(2);
    expect(await holdersOf(newSym)).toEqual([id]);
  });

  it('when a bulk read is posted back with one field edited, then only that instrument is updated and the edit is stored', async () => {
    const a = await createInstrument(svc);
    const b = await createInstrument(svc);
    const bulk = await svc.get(`/v1/instruments/bulk?ids=${a.id},${b.id}`, key);
    const [first, second] = bulk.body.data;
    const res = await svc.admin('POST', '/instruments', [first, { ...second, displayName: 'Edited After Reading' }]);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ rows: 2, inserted: 0, updated: 1, unchanged: 1 });
    expect(await readBack(second.id)).toEqual({ ...second, displayName: 'Edited After Reading' });
    expect(await readBack(first.id)).toEqual(first);
  });

  it('when currentSymbol contradicts the symbol history, then 400 names rows[0].currentSymbol and nothing in the row is stored', async () => {
    const { id, symbol } = await createInstrument(svc);
    const read = await readBack(id);
    const res = await svc.admin('POST', '/instruments', [{ ...read, displayName: 'Must Not Be Stored', currentSymbol: `${symbol}X` }]);
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error.details)).toEqual(['rows[0].currentSymbol']);
    expect(res.body.error.details['rows[0].currentSymbol'][0]).toContain(`${symbol} on ${today()}`);
    expect(await readBack(id)).toEqual(read);
  });

  it('when a row renames the ticker but keeps the old currentSymbol, then 400 names rows[0].currentSymbol and the old history stays', async () => {
    const { id, symbol } = await createInstrument(svc, { symbols: [{ symbol: uniqueSymbol('RN'), validFrom: '2000-01-01' }] });
    const read = await readBack(id);
    const history = await storedHistory(id);
    const renamed = [
      { symbol, validFrom: '2000-01-01', validTo: '2010-12-31' },
      { symbol: uniqueSymbol('RN'), validFrom: '2011-01-03' },
    ];
    const res = await svc.admin('POST', '/instruments', [{ ...read, symbols: renamed }]);
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error.details)).toEqual(['rows[0].currentSymbol']);
    expect(await storedHistory(id)).toEqual(history);
    const accepted = await svc.admin('POST', '/instruments', [{ ...read, symbols: renamed, currentSymbol: renamed[1].symbol }]);
    expect(accepted.status).toBe(200);
    expect((await readBack(id)).currentSymbol).toBe(renamed[1].symbol);
  });

  it("when vendorCode is none of the row's broker codes, then 400 names rows[0].vendorCode and nothing is stored", async () => {
    const { id } = await createInstrument(svc, { brokerCodes: { ibkr: 'VC1' } });
    const read = await readBack(id);
    expect(read.vendorCode).toBe('VC1');
    const res = await svc.admin('POST', '/instruments', [{ ...read, displayName: 'Must Not Be Stored', vendorCode: 'VC2' }]);
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error.details)).toEqual(['rows[0].vendorCode']);
    expect(await readBack(id)).toEqual(read);
  });

  it('when symbols are left out for an instrument not stored yet, then 400 names rows[0].symbols', async () => {
    const { symbols: _symbols, ...row } = newRow(uniqueSymbol('NS'));
    const res = await svc.admin('POST', '/instruments', [row]);
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error.details)).toEqual(['rows[0].symbols']);
  });
});

describe('rows without an id', () => {
  it('when the same id-less file is posted twice, then the second post is refused naming the stored ids, and nothing is duplicated', async () => {
    const symbols = [uniqueSymbol('ID'), uniqueSymbol('ID')];
    const rows = symbols.map((s) => newRow(s));
    const first = await svc.admin('POST', '/instruments', rows);
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ rows: 2, inserted: 2 });
    const ids: string[] = first.body.data.ids;

    const second = await svc.admin('POST', '/instruments', rows);
    expect(second.status).toBe(400);
    expect(Object.keys(second.body.error.details)).toEqual(['rows[0].id']);
    expect(second.body.error.details['rows[0].id'][0]).toContain(ids[0]);
    expect(await holdersOf(symbols[0])).toEqual([ids[0]]);
    expect(await holdersOf(symbols[1])).toEqual([ids[1]]);

    const withIds = await svc.admin(
      'POST',
      '/instruments',
      rows.map((r, i) => ({ ...r, id: ids[i] })),
    );
    expect(withIds.status).toBe(200);
    expect(withIds.body.data).toMatchObject({ rows: 2, inserted: 0, unchanged: 2 });
  });

  it('when two id-less rows of one batch hold the same symbol on overlapping days, then 400 names the later row and nothing is stored', async () => {
    const symbol = uniqueSymbol('DB');
    const res = await svc.admin('POST', '/instruments', [
      newRow(symbol),
      newRow(uniqueSymbol('DB')),
      newRow(symbol.toLowerCase(), { displayName: 'Same Ticker Again' }),
    ]);
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error.details)).toEqual(['rows[2].id']);
    expect(await holdersOf(symbol)).toEqual([]);
  });

  it('when a ticker is reused on days its stored holder no longer held it, or on another exchange, then the id-less row is a new instrument', async () => {
    const symbol = uniqueSymbol('RC');
    const delisted = await createInstrument(svc, { isActive: false, symbols: [{ symbol, validFrom: '1990-01-01', validTo: '1999-12-31' }] });
    const reused = await svc.admin('POST', '/instruments', [newRow(symbol, { symbols: [{ symbol, validFrom: '2005-01-03' }] })]);
    expect(reused.status).toBe(200);
    expect(reused.body.data).toMatchObject({ rows: 1, inserted: 1 });
    const elsewhere = await svc.admin('POST', '/instruments', [newRow(symbol, { exchange: 'XLON', symbols: [{ symbol, validFrom: '2005-01-03' }] })]);
    expect(elsewhere.status).toBe(200);
    expect((await holdersOf(symbol)).sort()).toEqual([delisted.id, reused.body.data.ids[0], elsewhere.body.data.ids[0]].sort());
  });
});
