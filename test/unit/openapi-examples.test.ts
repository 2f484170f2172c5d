import { Ajv2020 } from 'ajv/dist/2020.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { VERSION } from '../../server/core/version.ts';
import { demoApiExamples, SERVICE_MADE_PARAMETERS, type DemoApiExamples } from '../../server/demo/api-examples.ts';
import { demoDailyBars, demoInstrumentId, demoInstruments, type DemoDailyBar } from '../../server/demo/catalog.ts';
import { syntheticMinuteBars } from '../../server/demo/synthetic-intraday.ts';
import { syntheticOptionContracts, syntheticOptionQuotes } from '../../server/demo/synthetic-options.ts';
import { openApiPath, type RouteDefinition } from '../../server/http/route.ts';
import { committedExamples, publicDocument } from '../../server/wiring/api-documents.ts';
import { publicRouteDefinitions } from '../../server/wiring/areas.ts';
import { apiContract } from '../support/contract.ts';

// The examples of the public document come from the demo data set
// (server/demo/api-examples.ts) and the service's answers to them, written
// to docs/openapi/examples.json by `npm run openapi:examples`. These tests
// hold them to the route schemas and to the demo data itself.

// Read as JSON, as a client reads the document.
const document: { paths: Record<string, Record<string, Operation>> } = JSON.parse(JSON.stringify(publicDocument(VERSION)));
const committed = committedExamples();
const routes = publicRouteDefinitions();

interface Parameter {
  name: string;
  in: 'path' | 'query';
  description?: string;
  example?: unknown;
  schema: { default?: unknown; examples?: unknown[] };
}
interface Operation {
  operationId: string;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { example?: unknown }> };
  responses: Record<string, { content?: Record<string, { examples?: Record<string, { value: unknown }> }> }>;
}

const operationOf = (route: RouteDefinition) => document.paths[openApiPath('/v1', route.path)][route.method];
const serviceMade = (route: RouteDefinition, name: string) => SERVICE_MADE_PARAMETERS[`${route.operationId} ${name}`] ?? SERVICE_MADE_PARAMETERS[name];
/** The one operation whose success answer is a file's bytes, not JSON. */
const FILE_DOWNLOAD = 'getExportFile';

/** The fields of a route's query or path schema, each parsing one parameter as it arrives. */
function fieldsOf(schema: z.ZodType | undefined): Record<string, z.ZodType> {
  let object: unknown = schema;
  // A schema that transforms its fields (aliases folded into one name) reads them first.
  while (object instanceof z.ZodPipe) object = object.in;
  if (object === undefined) return {};
  if (!(object instanceof z.ZodObject)) throw new Error('a query or path schema that is not an object');
  return object.shape as Record<string, z.ZodType>;
}

describe('the parameters of the public document', () => {
  it('when a parameter is documented, then it has a description; a default its schema parses an absent value to is stated, and parses to the same value', () => {
    let defaults = 0;
    for (const route of routes) {
      const fields = { ...fieldsOf(route.params), ...fieldsOf(route.query) };
      for (const parameter of operationOf(route).parameters ?? []) {
        const where = `${route.operationId} ${parameter.name}`;
        expect(parameter.description, where).toMatch(/\S{3}/);
        const absent = fields[parameter.name].safeParse(undefined);
        if (!absent.success || absent.data === undefined) continue;
        defaults++;
        expect(parameter.schema.default, `${where} default`).toBeDefined();
        expect(fields[parameter.name].parse(parameter.schema.default), `${where} default`).toEqual(absent.data);
      }
    }
    expect(defaults).toBeGreaterThan(10);
    const prices = operationOf(routes.find((r) => r.operationId === 'getDailyPrices')!).parameters!;
    expect(prices.find((p) => p.name === 'adjusted')?.schema.default).toBe('false');
    expect(prices.find((p) => p.name === 'id')?.description).toContain('GET /v1/instruments?query=');
  });

  it('when a person types a parameter, then it has an example its schema accepts, and the examples of each operation together pass its route; a value the service makes has none', () => {
    const ajv = new Ajv2020({ strict: false });
    for (const route of routes) {
      const operation = operationOf(route);
      const sent: Record<string, Record<string, string>> = { path: {}, query: {} };
      // A path without the id the service made cannot be tried with the examples alone; an optional query parameter can be left out.
      let pathComplete = true;
      for (const parameter of operation.parameters ?? []) {
        const where = `${route.operationId} ${parameter.name}`;
        if (serviceMade(route, parameter.name)) {
          expect(parameter.example, where).toBeUndefined();
          if (parameter.in === 'path') pathComplete = false;
          continue;
        }
        const alternative = parameter.schema.examples?.[0];
        const example = parameter.example ?? alternative;
        expect(example, `${where} has an example`).toBeDefined();
        expect(ajv.validate(parameter.schema, example), `${where}: ${JSON.stringify(example)}`).toBe(true);
        // What "Try it out" fills in, as text; an alternative is left empty.
        if (parameter.example !== undefined) sent[parameter.in][parameter.name] = String(parameter.example);
      }
      if (pathComplete) expect(route.params?.safeParse(sent.path).error, route.operationId).toBeUndefined();
      expect(route.query.safeParse(sent.query).error, route.operationId).toBeUndefined();
      if (operation.requestBody) {
        const body = operation.requestBody.content['application/json']?.example;
        expect(body, `${route.operationId} body`).toBeDefined();
        expect(route.body?.safeParse(body).error, `${route.operationId} body`).toBeUndefined();
      }
    }
  });

  it('when an example names a parameter or an operation, then the document has it (a renamed parameter needs `npm run openapi:examples`)', () => {
    const byId = new Map(routes.map((r) => [r.operationId, new Set((operationOf(r).parameters ?? []).map((p) => p.name))]));
    for (const kind of ['parameters', 'alternatives'] as const) {
      for (const [operationId, values] of Object.entries(committed?.[kind] ?? {})) {
        expect(byId.has(operationId), operationId).toBe(true);
        for (const name of Object.keys(values)) expect(byId.get(operationId), `${kind} ${operationId} ${name}`).toContain(name);
      }
    }
    for (const operationId of [...Object.keys(committed?.bodies ?? {}), ...Object.keys(committed?.answers ?? {})])
      expect(byId.has(operationId), operationId).toBe(true);
  });

  it('when the instruments are searched by text from the examples, then the other mode (broker code) is shown but not filled in, since both together are refused', () => {
    const search = operationOf(routes.find((r) => r.operationId === 'searchInstruments')!).parameters!;
    for (const name of ['brokerCode', 'broker']) {
      const parameter = search.find((p) => p.name === name)!;
      expect(parameter.example, name).toBeUndefined();
      expect(parameter.schema.examples, name).toHaveLength(1);
    }
    expect(search.find((p) => p.name === 'query')?.example).toBe('MSFT');
  });
});

describe('the examples as the demo data set gives them (docs/openapi/examples.json)', () => {
  let demo: DemoApiExamples;
  let bars: Map<string, DemoDailyBar>;
  beforeAll(() => {
    demo = demoApiExamples();
    bars = new Map([...demoDailyBars()].map((b) => [`${b.instrumentId} ${b.barDate}`, b]));
  });

  it('when the committed examples are read, then their parameters and bodies are those the demo data set gives now (run `npm run openapi:examples` after changing either)', () => {
    expect(committed, 'docs/openapi/examples.json').toBeDefined();
    expect(committed!.parameters).toEqual(demo.parameters);
    expect(committed!.alternatives).toEqual(demo.alternatives);
    expect(committed!.bodies).toEqual(demo.bodies);
  });

  it('when an example names an instrument, then it is one of the demo set', () => {
    const ids = new Set(demoInstruments().map((i) => i.id));
    const named = Object.entries(demo.parameters).flatMap(([operationId, values]) =>
      Object.entries(values)
        .filter(([name]) => ['id', 'ids', 'instrumentId', 'instrumentIds', 'benchmarkId'].includes(name) && operationId !== 'getOptionContract')
        .flatMap(([, value]) => String(value).split(',')),
    );
    expect(named.length).toBeGreaterThan(20);
    for (const id of named) expect(ids, id).toContain(id);
  });

  it('when an operation answers JSON, then its example answer is in the document, to the request its examples make, with a status and body its schema allows', () => {
    const contract = apiContract();
    for (const route of routes) {
      if (route.operationId === FILE_DOWNLOAD) continue;
      const answer = committed?.answers[route.operationId];
      expect(answer, route.operationId).toBeDefined();
      const [method, target] = answer!.request.split(' ');
      const url = new URL(target, 'http://example.invalid');
      expect(method, route.operationId).toBe(route.method.toUpperCase());
      expect(contract.operationOf(method, url.pathname)?.template, route.operationId).toBe(openApiPath('/v1', route.path));
      const typed = Object.fromEntries(
        Object.entries(demo.parameters[route.operationId] ?? {})
          .filter(([name]) => !route.path.includes(`:${name}`))
          .map(([name, value]) => [name, String(value)]),
      );
      expect(Object.fromEntries(url.searchParams), route.operationId).toEqual(typed);
      expect(() => contract.check(method, url.pathname, answer!.status, 'application/json', answer!.body), route.operationId).not.toThrow();
      expect(operationOf(route).responses[String(answer!.status)].content?.['application/json']?.examples?.demo.value, route.operationId).toEqual(answer!.body);
    }
  });

  it("when the daily-price example answers, then its bars are MSFT's demo bars of those days: no action known by its asOf applies to them", () => {
    const { parameters, answers } = committed!;
    const msft = demoInstrumentId('MSFT');
    const answer = answers.getDailyPrices.body as { data: { barDate: string; closePrice: number; openPrice: number }[]; meta: { actionSetVersion: number } };
    expect(answer.data.length).toBeGreaterThan(0);
    for (const bar of answer.data) {
      expect(bar.barDate >= String(parameters.getDailyPrices.from) && bar.barDate <= String(parameters.getDailyPrices.to)).toBe(true);
      const demoBar = bars.get(`${msft} ${bar.barDate}`);
      expect({ open: bar.openPrice, close: bar.closePrice }, bar.barDate).toEqual({ open: demoBar?.openPrice, close: demoBar?.closePrice });
    }
    expect(answer.meta.actionSetVersion).toBe(parameters.getDailyPrices.actionSetVersion);
    const bulk = answers.getBulkPrices.body as { data: Record<string, { barDate: string; closePrice: number }[]> };
    const ids = String(parameters.getBulkPrices.instrumentIds).split(',');
    expect(Object.keys(bulk.data).sort()).toEqual([...ids].sort());
    for (const [id, series] of Object.entries(bulk.data)) {
      for (const bar of series) expect(bar.closePrice, `${id} ${bar.barDate}`).toBe(bars.get(`${id} ${bar.barDate}`)?.closePrice);
    }
  });

  it("when the intraday example answers, then its first hourly bar rolls up MSFT's synthetic minutes of that hour", () => {
    const msft = demoInstrumentId('MSFT');
    const [first] = (committed!.answers.getIntradayBars.body as { data: { barTimestamp: string; openPrice: number; highPrice: number; lowPrice: number }[] })
      .data;
    const hour = Date.parse(first.barTimestamp);
    const minutes = syntheticMinuteBars().filter(
      (b) => b.instrumentId === msft && Date.parse(b.barTimestamp) >= hour && Date.parse(b.barTimestamp) < hour + 3_600_000,
    );
    expect(minutes.length).toBeGreaterThan(0);
    expect(first.openPrice).toBe(minutes[0].openPrice);
    expect(first.highPrice).toBe(Math.max(...minutes.map((m) => m.highPrice)));
    expect(first.lowPrice).toBe(Math.min(...minutes.map((m) => m.lowPrice)));
  });

  it('when the option-chain example answers, then its contract and quote are the synthetic ones observed at its asOf', () => {
    const { parameters, answers } = committed!;
    const [row] = (answers.getOptionChain.body as { data: { contract: { id: string }; quote: { bid: number; ask: number } }[] }).data;
    const contract = syntheticOptionContracts().find((c) => c.id === row.contract.id);
    expect(contract).toMatchObject({ expiry: parameters.getOptionChain.expiry, strike: Number(parameters.getOptionChain.strike), right: 'call' });
    const quote = syntheticOptionQuotes().find(
      (q) => q.contractId === row.contract.id && q.observedAt === new Date(String(parameters.getOptionChain.asOf)).toISOString(),
    );
    expect({ bid: row.quote.bid, ask: row.quote.ask }).toEqual({ bid: quote?.bid, ask: quote?.ask });
    expect(parameters.getOptionContract.id).toBe(row.contract.id);
  });
});
