import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMPORTANCES } from '../../server/economic-events/schema.ts';
import { SCOPES } from '../../server/core/scopes.ts';
import { numberWords, receivedNumber, type NumberSchema } from '../support/range-words.ts';
import { createInstrument } from './fixtures.ts';
import { startService, type Service } from './harness.ts';

// Every 400 names the field, what was received and what is accepted
// (docs/api.md, "Errors"). The walk below reads every public route's query
// parameters and the analytics bodies from the OpenAPI document the service
// serves, sends each a repeated value, an empty one and a wrong one, and
// works the expected message out of the parameter's documented schema: its
// enum, its bounds (test/support/range-words.ts), its length, or its format.

interface JsonSchema extends NumberSchema {
  enum?: string[];
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  $ref?: string;
}

interface Operation {
  parameters?: { in: string; name: string; schema: JsonSchema }[];
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
}

interface Document {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

let svc: Service;
let key: string;
let instrumentId: string;
let doc: Document;

beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith([...SCOPES]);
  ({ id: instrumentId } = await createInstrument(svc));
  doc = (await svc.get('/v1/openapi.json')).body;
});
afterAll(() => svc.stop());

const DATE_PATTERN = String.raw`^\d{4}-\d{2}-\d{2}$`;

const resolve = (s: JsonSchema): JsonSchema => (s.$ref ? resolve(doc.components!.schemas![s.$ref.split('/').at(-1)!]) : s);
const isNumber = (s: JsonSchema) => s.type === 'integer' || s.type === 'number';
const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** A text's documented length: "1 to 100 characters", "at least 1 character"; null without one. */
function lengthWords(s: JsonSchema): string | null {
  if (s.minLength !== undefined && s.maxLength !== undefined) return `${s.minLength} to ${s.maxLength} characters`;
  if (s.minLength !== undefined) return `at least ${plural(s.minLength, 'character')}`;
  if (s.maxLength !== undefined) return `at most ${plural(s.maxLength, 'character')}`;
  return null;
}

const oneOf = (values: string[]) =>
  values.length === 2 && values.includes('true') && values.includes('false') ? 'true or false' : `one of: ${values.join(', ')}`;

/**
 * What the document says a field accepts, in the docs' words: its enum, its
 * range, a calendar date, a UUID, or text of a length; null where the
 * document cannot tell (a pattern other than a date's).
 */
function accepted(s: JsonSchema, field: string): string | null {
  if (s.enum) return oneOf(s.enum);
  if (isNumber(s)) return numberWords(s, field).words;
  if (s.format === 'uuid') return 'a UUID';
  if (s.pattern === DATE_PATTERN) return 'a date yyyy-mm-dd';
  if (s.pattern || s.format) return null;
  const length = lengthWords(s);
  return length ? `text of ${length}` : null;
}

/** What a field is told for `received`, where the document can tell it; null otherwise. */
function expected(s: JsonSchema, field: string, received: string): string | null {
  const words = accepted(s, field);
  if (!words) return null;
  // A length broken is worded as the length alone: "must be 1 to 300 characters".
  const length = !s.enum && !isNumber(s) && !s.format && !s.pattern && received === 'an empty string' ? lengthWords(s) : null;
  return `must be ${length ?? words}; received ${received}`;
}

/** A value for each path parameter that passes validation, so the query's are the ones refused. */
function fill(path: string): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (name === 'id') return path.startsWith('/v1/options/') ? randomUUID() : instrumentId;
    if (name === 'seriesId') return 'DGS10';
    if (name === 'base') return 'USD';
    if (name === 'quote') return 'EUR';
    if (name === 'name') return '2020.csv';
    throw new Error(`no value for path parameter ${name} of ${path}: add one here`);
  });
}

/** The messages a GET with `query` gets for `field`, after checking it is a 400 invalid_request. */
async function messages(path: string, query: string, field: string): Promise<string[]> {
  const res = await svc.get(`${path}?${query}`, key);
  expect(res.status, `${path}?${query}: ${JSON.stringify(res.body)}`).toBe(400);
  expect(res.body.error.code).toBe('invalid_request');
  const details = res.body.error.details[field];
  expect(details, `${path}?${query}: ${JSON.stringify(res.body.error.details)}`).toBeDefined();
  return details;
}

const queryParameters = () =>
  Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([method]) => method === 'get')
      .flatMap(([, op]) => (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => ({ path: fill(path), name: p.name, schema: p.schema }))),
  );

describe('query parameters', () => {
  it('when any query parameter of any route is given twice, then it must be given once, as what it accepts, and the two values are counted', async () => {
    const parameters = queryParameters();
    expect(parameters.length).toBeGreaterThan(30);
    for (const { path, name, schema } of parameters) {
      const [message, ...rest] = await messages(path, `${name}=zzz&${name}=zzz`, name);
      const words = accepted(schema, name);
      const tail = '; received 2 values: the parameter was given more than once';
      if (words) expect(message, `${path} ${name}`).toBe(`must be given once, as ${words}${tail}`);
      // Where the document cannot word it, the service still names what it accepts.
      else expect(message, `${path} ${name}`).toMatch(new RegExp(`^must be given once, as .+${tail}$`));
      expect(rest, `${path} ${name}`).toEqual([]);
    }
  });

  it('when any query parameter is empty, then its message says it received an empty string and names what it accepts', async () => {
    for (const { path, name, schema } of queryParameters()) {
      // An empty number is read as 0 (zod's coerce), which a range starting at 0 accepts (actionSetVersion).
      const admitsZero = schema.minimum !== undefined ? schema.minimum <= 0 : schema.exclusiveMinimum === undefined;
      if (isNumber(schema) && admitsZero) continue;
      const [message] = await messages(path, `${name}=`, name);
      const want = expected(schema, name, 'an empty string');
      if (want) expect(message, `${path} ${name}`).toBe(want);
      else expect(message, `${path} ${name}`).toMatch(/^(must be|is not) .+; received an empty string$/);
    }
  });

  it('when an enumerated or numeric parameter gets a value outside what it accepts, then the message lists the values or gives the range, and the value', async () => {
    let checked = 0;
    for (const { path, name, schema } of queryParameters()) {
      if (!schema.enum && !isNumber(schema)) continue;
      checked++;
      expect((await messages(path, `${name}=zzz`, name))[0], `${path} ${name}`).toBe(expected(schema, name, '"zzz"'));
      if (!isNumber(schema)) continue;
      const w = numberWords(schema, name);
      if (w.hi) expect((await messages(path, `${name}=${w.hi.v + 1}`, name))[0]).toBe(`${w.rule}; ${receivedNumber(w.hi.v + 1, w.unit)}`);
      if (w.lo) expect((await messages(path, `${name}=${w.lo.v - 1}`, name))[0]).toBe(`${w.rule}; ${receivedNumber(w.lo.v - 1, w.unit)}`);
    }
    // The enums and bounded numbers of the spec: right, assetClass, method, interval, importance, limit, lookbackDays, ...
    expect(checked).toBeGreaterThan(15);
  });

  it('when the cases issue 37 names are sent, then each names the field, what was received and what is accepted', async () => {
    const optionsPath = `/v1/instruments/${instrumentId}/options`;
    expect(await messages(optionsPath, 'right=calls', 'right')).toEqual(['must be one of: call, put; received "calls"']);
    expect(await messages('/v1/instruments', 'assetClass=stock&query=a', 'assetClass')).toEqual([
      'must be one of: equity, etf, index, crypto, fx, future, metal, other, fund, bond; received "stock"',
    ]);
    expect(await messages('/v1/correlations', `instrumentIds=${instrumentId},${randomUUID()}&method=kendall`, 'method')).toEqual([
      'must be one of: pearson, spearman; received "kendall"',
    ]);
    // query: the spec's free text, 1 to 100 characters.
    expect(await messages('/v1/instruments', 'query=AAPL&query=MSFT', 'query')).toEqual([
      'must be given once, as text of 1 to 100 characters; received 2 values: the parameter was given more than once',
    ]);
    expect(await messages(`/v1/instruments/${instrumentId}/sentiment`, 'source=', 'source')).toEqual(['must be 1 to 300 characters; received an empty string']);
  });
});

describe('instruments named by something other than their id', () => {
  // The spec names an instrument by its UUID wherever one is named; a symbol
  // sent instead is refused with where to find the id (issue 42, item 1).
  const HOW = "find an instrument's id with GET /v1/instruments?query=MSFT";

  it('when a path names an instrument by its symbol, then 400 says the id must be a UUID and how to find it, without quoting the segment', async () => {
    for (const path of [
      '/v1/instruments/MSFT/prices?from=2024-01-02&to=2024-01-05',
      '/v1/instruments/MSFT/intraday?from=2024-01-02&to=2024-01-02&interval=1hour',
      '/v1/instruments/MSFT',
    ]) {
      const res = await svc.get(path, key);
      expect(res.status, path).toBe(400);
      expect(res.body.error.details, path).toEqual({ id: ['must be a UUID; received a path segment of 4 characters (not shown)', HOW] });
    }
  });

  it('when a list or a query parameter names instruments by symbol, then each entry that is not a UUID is told the same', async () => {
    expect(await messages('/v1/prices/bulk', 'instrumentIds=msft,AAPL&from=2024-01-02&to=2024-01-05', 'instrumentIds.0')).toEqual([
      'must be a UUID; received "msft"',
      HOW,
    ]);
    expect(await messages('/v1/instruments/bulk', `ids=${instrumentId},spy`, 'ids.1')).toEqual(['must be a UUID; received "spy"', HOW]);
    expect(await messages(`/v1/instruments/${instrumentId}/beta`, 'benchmarkId=SPY', 'benchmarkId')).toEqual(['must be a UUID; received "SPY"', HOW]);
    expect(await messages('/v1/earnings', 'from=2024-01-01&to=2024-03-31&instrumentId=MSFT', 'instrumentId')).toEqual(['must be a UUID; received "MSFT"', HOW]);
    const posted = await svc.post('/v1/exports', key, {
      dataset: 'daily-prices',
      instrumentIds: ['MSFT'],
      from: '2020-01-01',
      to: '2020-12-31',
      format: 'csv',
    });
    expect(posted.status).toBe(400);
    expect(posted.body.error.details['instrumentIds.0']).toEqual(['must be a UUID; received "MSFT"', HOW]);
  });

  it('when a parameter that is not an instrument id is not a UUID, then it is told it must be a UUID, and nothing about instruments', async () => {
    const res = await svc.get('/v1/options/not-a-contract', key);
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual({ id: ['must be a UUID; received a path segment of 14 characters (not shown)'] });
  });
});

const BODIES: Record<string, Record<string, unknown>> = {
  '/v1/analytics/option-price': { spot: 100, strike: 100, expiryDays: 30, rate: 0.05, vol: 0.2, type: 'call' },
  '/v1/analytics/probability': { spot: 100, target: 110, expiryDays: 30, rate: 0.05, vol: 0.2, direction: 'long' },
  '/v1/analytics/strategy-ev': {
    structure: 'long_call',
    legs: [{ action: 'buy', type: 'call', strike: 100, quantity: 1 }],
    spot: 100,
    expiryDays: 30,
    rate: 0.05,
    vol: 0.2,
  },
};

/** The messages a POST of `body` gets for `field` (a dotted path), after checking it is a 400 invalid_request. */
async function bodyMessages(path: string, body: unknown, field: string): Promise<string[]> {
  const res = await svc.post(path, key, body);
  expect(res.status, `${path} ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`).toBe(400);
  const details = res.body.error.details[field];
  expect(details, `${path} ${field}: ${JSON.stringify(res.body.error.details)}`).toBeDefined();
  return details;
}

describe('analytics bodies', () => {
  it('when a body field is of the wrong type, outside its enum or range, or absent, then its message names what it accepts and what was received', async () => {
    let checked = 0;
    for (const [path, valid] of Object.entries(BODIES)) {
      const schema = resolve(doc.paths[path].post.requestBody!.content['application/json'].schema);
      // The top-level fields, and those of the first leg.
      const fields: [string[], JsonSchema, (v: unknown) => unknown][] = Object.entries(schema.properties!).map(([name, s]) => [
        [name],
        resolve(s),
        (v) => ({ ...valid, [name]: v }),
      ]);
      const legs = schema.properties!.legs && resolve(resolve(schema.properties!.legs).items!);
      for (const [name, s] of Object.entries(legs?.properties ?? {})) {
        fields.push([['legs', '0', name], resolve(s), (v) => ({ ...valid, legs: [{ ...(valid.legs as object[])[0], [name]: v }] })]);
      }
      for (const [steps, s, withValue] of fields) {
        const field = steps.join('.');
        const name = steps.at(-1)!;
        if (s.enum) {
          checked++;
          expect((await bodyMessages(path, withValue('zzz'), field))[0], `${path} ${field}`).toBe(`must be ${oneOf(s.enum)}; received "zzz"`);
          expect((await bodyMessages(path, withValue(5), field))[0], `${path} ${field}`).toBe(`must be ${oneOf(s.enum)}; received the number 5`);
        }
        if (isNumber(s) && (s.minimum ?? s.exclusiveMinimum ?? s.maximum ?? s.exclusiveMaximum) !== undefined) {
          checked++;
          const w = numberWords(s, name);
          expect((await bodyMessages(path, withValue('abc'), field))[0], `${path} ${field}`).toBe(`${w.rule}; received "abc"`);
          if (w.hi) {
            const above = w.integer ? w.hi.v + 1 : w.hi.v * 2 + 1;
            expect((await bodyMessages(path, withValue(above), field))[0], `${path} ${field}`).toBe(`${w.rule}; ${receivedNumber(above, w.unit)}`);
          }
        }
        if (steps.length === 1 && schema.required?.includes(name)) {
          const words = accepted(s, name);
          const { [name]: _absent, ...without } = valid;
          if (words) expect(await bodyMessages(path, without, field), `${path} ${field}`).toEqual([`required (${words})`]);
        }
      }
    }
    expect(checked).toBeGreaterThan(20);
  });

  it('when expiryDays is under a minute, then the range is told in days with the minimum as one minute, and the value in days and seconds', async () => {
    // One minute is 1/1440 of a day; 0.0001 days is 8.64 seconds.
    const res = await svc.post('/v1/analytics/option-price', key, { ...BODIES['/v1/analytics/option-price'], expiryDays: 0.0001 });
    expect(res.status).toBe(400);
    expect(res.body.error.details.expiryDays[0]).toBe('must be a number of days between 1/1440 (1 minute) and 3650; received 0.0001 days (8.64 seconds)');
  });
});

describe('upload rows', () => {
  it('when an upload row has a value outside its enum, then the row’s field names the values accepted and the one received', async () => {
    const row = {
      id: randomUUID(),
      country: 'US',
      eventClass: 'growth',
      importance: 'urgent',
      name: 'GDP q/q',
      referencePeriod: 'Q1 2109',
      scheduledAt: '2109-04-29T12:30:00.000Z',
      actual: null,
      forecast: null,
      previous: null,
      source: 'test-fixture',
    };
    const res = await svc.admin('POST', '/economic-events', [row]);
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual({ 'rows[0].importance': [`must be one of: ${IMPORTANCES.join(', ')}; received "urgent"`] });
  });
});
