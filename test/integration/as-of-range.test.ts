import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { derivedContractId } from '../../server/options/schema.ts';
import { SCOPES } from '../../server/core/scopes.ts';
import { createInstrument, dailyBar, ingest, minuteBar } from './fixtures.ts';
import { Service, startService } from './harness.ts';
import type { InstrumentId } from '../../server/core/ids.ts';

// Every asOf the parameter's format admits, from 0001-01-01 to 9999-12-31,
// gets a 200 or a typed 4xx on every route that takes one: the first week of
// year 1 (where a lookback or a freshness window reaches before the first
// date PostgreSQL and yyyy-mm-dd can write) and the last day of year 9999
// among them. The routes are the public document's, so a new route with an
// asOf is covered once its base query is given here.

const EDGES = [
  '0001-01-01',
  '0001-01-02',
  '0001-01-03',
  '0001-01-04',
  '0001-01-05',
  '0001-01-06',
  '0001-01-07',
  '0001-01-08',
  '0001-01-01T00:00:00Z',
  '0001-01-07T23:59:59.999Z',
  '1969-12-31T23:59:59.999Z',
  '9999-12-31',
  '9999-12-31T23:59:59.999Z',
];

let svc: Service;
let key: string;
let id: InstrumentId;
let other: string;
let contractId: string;

beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith([...SCOPES]);
  id = (await createInstrument(svc, { exchange: 'XNYS', region: 'US' })).id;
  other = (await createInstrument(svc)).id;
  await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2001-01-02', close: 10 }), dailyBar(other, { barDate: '2001-01-02', close: 20 })]);
  await ingest(svc, '/bars/intraday', [minuteBar(id, '2001-01-02T14:30:00Z', 10)]);
  await ingest(svc, '/options/contracts', [{ instrumentId: id, contractSymbol: 'EDGE', expiry: '2001-02-16', strike: 10, right: 'call', multiplier: 100 }]);
  contractId = derivedContractId(id, 'EDGE');
});
afterAll(() => svc?.stop());

/** Each public route that takes asOf, as its document names it, with the rest of a valid request. */
const BASE: Record<string, () => string> = {
  '/v1/instruments': () => '/v1/instruments?query=T',
  '/v1/instruments/{id}/prices': () => `/v1/instruments/${id}/prices?from=2001-01-01&to=2001-01-31`,
  '/v1/prices/bulk': () => `/v1/prices/bulk?instrumentIds=${id},${other}&from=2001-01-01&to=2001-01-31`,
  '/v1/instruments/{id}/intraday': () => `/v1/instruments/${id}/intraday?from=2001-01-02&to=2001-01-02&interval=1hour`,
  '/v1/instruments/{id}/corporate-actions': () => `/v1/instruments/${id}/corporate-actions?from=2001-01-01&to=2001-12-31`,
  '/v1/instruments/{id}/technicals': () => `/v1/instruments/${id}/technicals?lookbackDays=1000`,
  '/v1/correlations': () => `/v1/correlations?instrumentIds=${id},${other}&lookbackDays=504`,
  '/v1/instruments/{id}/beta': () => `/v1/instruments/${id}/beta?benchmarkId=${other}&lookbackDays=504`,
  '/v1/instruments/{id}/options': () => `/v1/instruments/${id}/options?`,
  '/v1/instruments/{id}/options/expiries': () => `/v1/instruments/${id}/options/expiries?`,
  '/v1/options/{id}': () => `/v1/options/${contractId}?`,
  '/v1/instruments/implied-volatility': () => `/v1/instruments/implied-volatility?instrumentIds=${id}`,
  '/v1/fx/{base}/{quote}': () => '/v1/fx/USD/CHF?date=2001-01-02',
  '/v1/rates/risk-free': () => '/v1/rates/risk-free?',
};

type Operation = { parameters?: { name: string; schema?: { enum?: string[] } }[] };

/** The public document's routes whose operation has a parameter `name` that `admits`. */
function routesWith(name: string, admits: (parameter: { schema?: { enum?: string[] } }) => boolean = () => true): string[] {
  const doc = JSON.parse(readFileSync(new URL('../../docs/openapi/public.json', import.meta.url), 'utf8')) as {
    paths: Record<string, Record<string, Operation>>;
  };
  return Object.entries(doc.paths)
    .filter(([, ops]) => Object.values(ops).some((op) => op.parameters?.some((p) => p.name === name && admits(p))))
    .map(([path]) => path)
    .sort();
}

/** The routes with an asOf that answer CSV too (format=csv), each asked for it at every edge. */
const CSV_ROUTES = ['/v1/instruments/{id}/intraday', '/v1/instruments/{id}/prices', '/v1/prices/bulk'];

/**
 * Asks `path` with every edge asOf: a 200 (CSV when `csv`), or a 4xx with a
 * typed error, never a 5xx. A CSV read in year 9999 knows the bars of 2001, so
 * it is a 200 there.
 */
async function expectEveryEdgeAnswered(route: string, path: string, csv: boolean) {
  for (const asOf of EDGES) {
    const res = await svc.get(`${path}${path.endsWith('?') ? '' : '&'}asOf=${encodeURIComponent(asOf)}`, key);
    const where = `${route}${csv ? ' (CSV)' : ''} asOf=${asOf}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
    expect(res.status < 500, where).toBe(true);
    if (csv && asOf.startsWith('9999')) expect(res.status, where).toBe(200);
    if (res.status >= 400) {
      expect(typeof res.body.error.code, where).toBe('string');
      expect(typeof res.body.error.message, where).toBe('string');
    } else if (csv) {
      expect(res.headers.get('content-type'), where).toMatch(/^text\/csv/);
    }
  }
}

describe('asOf at the edges of the calendar', () => {
  it('the routes with an asOf are the ones this test knows a request for', () => {
    expect(routesWith('asOf')).toEqual(Object.keys(BASE).sort());
  });

  it('the routes with an asOf that answer CSV are the ones this test asks for CSV', () => {
    const csv = routesWith('format', (p) => p.schema?.enum?.includes('csv') ?? false);
    expect(csv.filter((route) => route in BASE)).toEqual(CSV_ROUTES);
  });

  for (const [route, base] of Object.entries(BASE)) {
    it(`${route}: every edge asOf gets a 200 or a typed 4xx, never a 5xx`, () => expectEveryEdgeAnswered(route, base(), false));
  }

  for (const route of CSV_ROUTES) {
    it(`${route} as CSV: every edge asOf gets a 200 or a typed 4xx, never a 5xx`, () => expectEveryEdgeAnswered(route, `${BASE[route]()}&format=csv`, true));
  }
});
