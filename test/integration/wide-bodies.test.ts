import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from './harness.ts';

// Request shapes that cost the service work in proportion to their size
// (issue 38, point 1): an object of 80,000 unknown fields, a list of 100,000
// items where 8 are allowed, 900 KB of text where 200 characters are, 5,000
// unknown query parameters, field names of 100,000 characters. Each is a 400
// naming the problem within 8 KB, whatever was sent. The bounds expected are
// read from the reference the service serves (/v1/openapi.json and
// /admin/v1/openapi.json), the counts from what each test posts.

const MAX_ERROR_BYTES = 8 * 1024;

interface JsonSchema {
  properties?: Record<string, JsonSchema>;
  required?: string[];
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
}

interface Document {
  paths: Record<
    string,
    Record<string, { parameters?: { in: string; name: string; schema: JsonSchema }[]; requestBody?: { content: Record<string, { schema: JsonSchema }> } }>
  >;
}

let svc: Service;
let key: string;
let publicDoc: Document;
let adminDoc: Document;

beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['analytics:read', 'instruments:read']);
  publicDoc = (await svc.get('/v1/openapi.json')).body;
  adminDoc = (await svc.admin('GET', '/openapi.json')).body;
});
afterAll(() => svc.stop());

interface RawAnswer {
  status: number;
  bytes: number;
  body: { error: { code: string; message: string; details: Record<string, string[]> } };
}

/** The answer as sent: its status, its body's length in bytes and the body parsed. */
async function raw(url: string, init: RequestInit = {}): Promise<RawAnswer> {
  const res = await fetch(url, init);
  const buffer = Buffer.from(await res.arrayBuffer());
  return { status: res.status, bytes: buffer.length, body: JSON.parse(buffer.toString('utf8')) };
}

const post = (route: string, body: string) =>
  raw(`${svc.runtime.publicUrl}${route}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
const get = (route: string) => raw(`${svc.runtime.publicUrl}${route}`, { headers: { authorization: `Bearer ${key}` } });
const adminPost = (route: string, body: string) =>
  raw(`${svc.runtime.adminUrl}/admin/v1${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${svc.runtime.adminToken}`, 'content-type': 'application/json' },
    body,
  });

const bodySchema = (doc: Document, path: string) => doc.paths[path].post.requestBody!.content['application/json'].schema;

/** A JSON object of `n` fields `k0`, `k1`, … each holding 0, written directly (JSON.stringify of the object is no faster). */
const wideJson = (n: number, name = (i: number) => `k${i}`) => `{${Array.from({ length: n }, (_, i) => `${JSON.stringify(name(i))}:0`).join(',')}}`;

/** Expects a 400 invalid_request within MAX_ERROR_BYTES naming at most 20 fields, besides "_". */
function expectBoundedRefusal(res: RawAnswer) {
  expect(res.status).toBe(400);
  expect(res.body.error.code).toBe('invalid_request');
  expect(res.bytes).toBeLessThanOrEqual(MAX_ERROR_BYTES);
  expect(Object.keys(res.body.error.details).filter((k) => k !== '_').length).toBeLessThanOrEqual(20);
}

describe('wide objects', () => {
  it('when option-price is posted 80,000 unknown fields (about 1 MB), then one message names the count, the fields accepted and three unknown ones, within 8 KB', async () => {
    const json = wideJson(80_000);
    expect(json.length).toBeGreaterThan(800_000);
    const res = await post('/v1/analytics/option-price', json);
    expectBoundedRefusal(res);
    const accepted = Object.keys(bodySchema(publicDoc, '/v1/analytics/option-price').properties!);
    expect(res.body.error.details).toEqual({
      _: [`has 80000 fields; accepts at most ${accepted.length}: ${accepted.join(', ')}; unknown fields include "k0", "k1", "k2"`],
    });
  });

  it('when unknown fields have names of 100,000 characters, then each is named by its first 40 characters and its length, within 8 KB', async () => {
    const name = (i: number) => `${i}${'a'.repeat(100_000)}`;
    const res = await post('/v1/analytics/option-price', wideJson(9, name));
    expectBoundedRefusal(res);
    for (let i = 0; i < 9; i++) expect(res.body.error.details[`${name(i).slice(0, 40)}… (100001 characters)`]).toHaveLength(1);
  });

  it('when 27 unknown fields with names of 30,000 characters arrive without any required field, then 20 fields are named and the rest counted, within 8 KB', async () => {
    const schema = bodySchema(publicDoc, '/v1/analytics/option-price');
    const problems = 27 + schema.required!.length;
    const res = await post(
      '/v1/analytics/option-price',
      wideJson(27, (i) => `${i}${'b'.repeat(30_000)}`),
    );
    expectBoundedRefusal(res);
    expect(res.body.error.message).toBe(`invalid body: 20 of ${problems} problems shown`);
    expect(res.body.error.details._).toEqual([`${problems - 20} more problems not shown`]);
  });

  it('when a search is sent 5,000 unknown query parameters, then the parameters read are counted and the ones accepted named, within 8 KB', async () => {
    const params = Array.from({ length: 5_000 }, (_, i) => `p${i}=1`).join('&');
    const res = await get(`/v1/instruments?${params}`);
    expectBoundedRefusal(res);
    const accepted = publicDoc.paths['/v1/instruments'].get.parameters!.filter((p) => p.in === 'query').map((p) => p.name);
    // Node's query-string parser reads the first 1,000 parameters.
    expect(res.body.error.details).toEqual({
      _: [`has at least 1000 parameters; accepts at most ${accepted.length}: ${accepted.join(', ')}; unknown parameters include "p0", "p1", "p2"`],
    });
  });
});

describe('long lists and long text', () => {
  it('when strategy EV is posted 100,000 legs, then the bound and the count are told, within 8 KB', async () => {
    const legs = bodySchema(publicDoc, '/v1/analytics/strategy-ev').properties!.legs;
    const body = { structure: 'long_call', legs: Array(100_000).fill({}), spot: 100, expiryDays: 30, rate: 0.05, vol: 0.2 };
    const res = await post('/v1/analytics/strategy-ev', JSON.stringify(body));
    expectBoundedRefusal(res);
    expect(res.body.error.details).toEqual({ legs: [`must list ${legs.minItems} to ${legs.maxItems} items; received a list of 100000 items`] });
  });

  it('when derive is posted 20,000 instrument ids, then the bound and the count are told, within 8 KB', async () => {
    const ids = bodySchema(adminDoc, '/admin/v1/derive').properties!.instrumentIds;
    const res = await adminPost('/derive', JSON.stringify({ instrumentIds: Array.from({ length: 20_000 }, () => randomUUID()) }));
    expectBoundedRefusal(res);
    expect(res.body.error.details).toEqual({ instrumentIds: [`must list ${ids.minItems} to ${ids.maxItems} items; received a list of 20000 items`] });
  });

  it('when an account name of 900 KB is posted, then the bound and its length are told with 40 of its characters, within 8 KB', async () => {
    const name = bodySchema(adminDoc, '/admin/v1/accounts').properties!.name;
    const res = await adminPost('/accounts', JSON.stringify({ name: 'n'.repeat(900_000) }));
    expectBoundedRefusal(res);
    expect(res.body.error.details).toEqual({
      name: [`must be ${name.minLength} to ${name.maxLength} characters; received "${'n'.repeat(40)}…" (900000 characters)`],
    });
  });

  it('when a search query of 60,000 characters is sent, then the bound and its length are told with 40 of its characters', async () => {
    const query = publicDoc.paths['/v1/instruments'].get.parameters!.find((p) => p.name === 'query')!.schema;
    const res = await get(`/v1/instruments?query=${'q'.repeat(60_000)}`);
    expectBoundedRefusal(res);
    expect(res.body.error.details).toEqual({
      query: [`must be ${query.minLength} to ${query.maxLength} characters; received "${'q'.repeat(40)}…" (60000 characters)`],
    });
  });
});
