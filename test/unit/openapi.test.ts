import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { compileErrors, validate } from '@readme/openapi-parser';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../server/config.ts';
import { AREAS } from '../../server/wiring/areas.ts';
import { openApiPath } from '../../server/http/route.ts';
import { SCOPES } from '../../server/core/scopes.ts';
import { OPENAPI_DIR } from '../../server/http/write-openapi.ts';
import { openApiFiles } from '../../server/wiring/api-documents.ts';
import { apiContract } from '../support/contract.ts';

const generated = openApiFiles();

describe('the OpenAPI documents', () => {
  it('when the code is built, then docs/openapi/ holds exactly the documents it generates (run `npm run openapi` after changing a route)', async () => {
    for (const [name, text] of Object.entries(generated)) {
      expect(await readFile(path.join(OPENAPI_DIR, name), 'utf8'), `docs/openapi/${name} is stale: run npm run openapi`).toBe(text);
    }
  });

  it.each(Object.keys(generated))('when %s is checked by an OpenAPI 3.1 validator, then it is valid', async (name) => {
    const document = JSON.parse(generated[name as keyof typeof generated]);
    expect(document.openapi).toBe('3.1.0');
    const result = await validate(document);
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
  });

  // The one answer the spec exempts from the { data, meta } envelope.
  const UNWRAPPED = 'get /v1/instruments/implied-volatility';
  // The one answer of stored bytes, whole (200) or a range (206), in the file's own media type.
  const FILE = 'get /v1/exports/{id}/files/{name}';

  it('when a public route is declared, then the document lists it with its one scope on the bearer scheme, its parameters, its error answers and the envelope (one exception)', () => {
    const document = JSON.parse(generated['public.json']);
    const declared = AREAS.flatMap((a) => a.routes).map((r) => `${r.method} ${openApiPath('/v1', r.path)}`);
    const listed = Object.entries(document.paths).flatMap(([p, ops]) => Object.keys(ops as object).map((m) => `${m} ${p}`));
    expect(new Set(listed)).toEqual(new Set(declared));
    for (const [p, ops] of Object.entries(document.paths)) {
      for (const [method, op] of Object.entries(ops as Record<string, any>)) {
        const where = `${method} ${p}`;
        expect(op.security, where).toHaveLength(1);
        const scopes = op.security[0].apiKey;
        expect(scopes, where).toHaveLength(1);
        expect(SCOPES, where).toContain(scopes[0]);
        for (const name of p.match(/\{(\w+)\}/g) ?? []) {
          expect(
            op.parameters.some((x: any) => x.in === 'path' && `{${x.name}}` === name && x.required),
            `${where} path parameter ${name}`,
          ).toBe(true);
        }
        for (const status of ['400', '401', '403', '429', '503']) expect(Object.keys(op.responses), where).toContain(status);
        const success = Object.keys(op.responses).filter((s) => s.startsWith('2'));
        if (where === FILE) {
          expect(success, where).toEqual(['200', '206']);
          expect(Object.keys(op.responses['200'].content), where).not.toContain('application/json');
          continue;
        }
        expect(success, where).toHaveLength(1);
        const body = op.responses[success[0]].content['application/json'].schema;
        expect(Object.keys(body.properties), where).toEqual(where === UNWRAPPED ? ['instruments', 'assumptions'] : ['data', 'meta']);
      }
    }
    expect(document.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('when a public route answers, then its data schema is closed everywhere except the maps listed here', () => {
    // Open on purpose: maps whose keys are data, and free-form parameters.
    const allowed = new Set([
      'GET /v1/prices/bulk data', // instrument id → its bars
      '#/components/schemas/Instrument/properties/brokerCodes', // broker name → code
      '#/components/schemas/CorporateAction/properties/params', // the action type's own parameters
      '#/components/schemas/ExportJob/properties/actionSetVersions/anyOf/0', // instrument id → action-set version
    ]);
    const document = JSON.parse(generated['public.json']);
    const open: string[] = [];
    const seen = new Set<string>();
    const annotations = new Set(['description', 'title', 'examples', 'default', 'deprecated', 'readOnly']);
    const walk = (node: any, where: string): void => {
      if (node.$ref) {
        if (!seen.has(node.$ref)) {
          seen.add(node.$ref);
          walk(document.components.schemas[node.$ref.replace('#/components/schemas/', '')], node.$ref);
        }
        return;
      }
      if (Object.keys(node).every((k) => annotations.has(k))) open.push(`${where} (any value)`);
      if (node.type === 'object' || node.properties || node.additionalProperties !== undefined) {
        if (node.additionalProperties !== false) open.push(where);
        if (typeof node.additionalProperties === 'object' && Object.keys(node.additionalProperties).length)
          walk(node.additionalProperties, `${where}/additionalProperties`);
      }
      for (const [name, child] of Object.entries(node.properties ?? {})) walk(child, `${where}/properties/${name}`);
      if (node.items) walk(node.items, `${where}/items`);
      for (const key of ['prefixItems', 'anyOf', 'oneOf', 'allOf'] as const)
        (node[key] ?? []).forEach((child: any, i: number) => walk(child, `${where}/${key}/${i}`));
    };
    for (const [p, ops] of Object.entries(document.paths)) {
      for (const [method, op] of Object.entries(ops as Record<string, any>)) {
        if (`${method} ${p}` === FILE) continue;
        const success = Object.keys(op.responses).find((s) => s.startsWith('2'))!;
        const body = op.responses[success].content['application/json'].schema;
        if (`${method} ${p}` === UNWRAPPED) walk(body, `${method.toUpperCase()} ${p}`);
        else walk(body.properties.data, `${method.toUpperCase()} ${p} data`);
      }
    }
    expect(new Set(open)).toEqual(allowed);
  });
});

describe('the OpenAPI documents as third-party linters read them (redocly.yaml, .spectral.yaml)', () => {
  const names = Object.keys(generated) as (keyof typeof generated)[];
  const parsed = (name: keyof typeof generated) => JSON.parse(generated[name]);
  const operations = (document: any) =>
    Object.entries(document.paths).flatMap(([p, ops]) => Object.entries(ops as Record<string, any>).map(([method, op]) => ({ where: `${method} ${p}`, op })));
  /** Every object under `node` with the JSON pointer to it. */
  const objects = (node: unknown, where = '#'): [string, any][] =>
    node && typeof node === 'object'
      ? [[where, node], ...Object.entries(node).flatMap(([key, child]) => objects(child, `${where}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`))]
      : [];

  it.each(names)(
    'when %s is generated, then it names a relative server (the origin serving it), the licence of LICENSE (Apache-2.0, by its SPDX identifier), and every tag its operations use, with a description, in a declared order',
    (name) => {
      const document = parsed(name);
      expect(document.servers).toEqual([{ url: '/', description: expect.any(String) }]);
      expect(document.info.license).toEqual({ name: 'Apache-2.0', identifier: 'Apache-2.0' });
      expect(readFileSync(path.join(PROJECT_ROOT, 'LICENSE'), 'utf8')).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
      const declared = document.tags.map((t: { name: string }) => t.name);
      for (const tag of document.tags) expect(tag.description, tag.name).toMatch(/\S{3}/);
      const used = new Set(operations(document).flatMap(({ op }) => op.tags));
      expect(new Set(declared)).toEqual(used);
      expect(declared).toHaveLength(used.size);
    },
  );

  it.each(names)('when %s is generated, then every operation has a description that says more than its summary', (name) => {
    for (const { where, op } of operations(parsed(name))) {
      expect(op.description, where).toEqual(expect.any(String));
      expect(op.description.length, where).toBeGreaterThan(op.summary.length);
      expect(op.description.toLowerCase(), where).not.toContain(op.summary.toLowerCase());
    }
  });

  it.each(names)(
    "when %s is generated, then no schema keeps zod's safe-integer bounds, a tuple's `items: false`, or an anyOf that a member lets accept anything",
    (name) => {
      const found = objects(parsed(name)).flatMap(([where, node]) => [
        ...(Math.abs(node.minimum) === Number.MAX_SAFE_INTEGER || Math.abs(node.maximum) === Number.MAX_SAFE_INTEGER ? [`${where} safe-integer bound`] : []),
        ...(node.items === false ? [`${where} items: false`] : []),
        ...(Array.isArray(node.anyOf) && node.anyOf.some((m: object) => Object.keys(m).length === 0) ? [`${where} anyOf with {}`] : []),
      ]);
      expect(found).toEqual([]);
    },
  );

  it("when sentiment's scale is documented, then it is an array of exactly two numbers", () => {
    const { scale } = parsed('public.json').components.schemas.SentimentScore.properties;
    expect(scale).toMatchObject({ type: 'array', items: { type: 'number' }, minItems: 2, maxItems: 2 });
    expect(scale.prefixItems).toBeUndefined();
  });

  it.each(names)('when an integer is documented in %s, then it has a lower bound', (name) => {
    const unbounded = objects(parsed(name))
      .filter(([, node]) => [node.type].flat().includes('integer') && node.minimum === undefined && node.exclusiveMinimum === undefined)
      .map(([where]) => where);
    expect(unbounded).toEqual([]);
  });
});

describe('the contract check used by the integration tests', () => {
  const instrument = {
    id: '00000000-0000-4000-8000-000000000001',
    assetClass: 'equity',
    displayName: 'Example',
    exchange: null,
    region: null,
    isin: null,
    cusip: null,
    distributionPolicy: null,
    quoteCurrency: 'USD',
    quoteUnit: 'unit',
    isActive: true,
    currentSymbol: 'EX',
    brokerCodes: {},
    vendorCode: null,
  };
  const body = { data: instrument, meta: { asOf: '2020-01-01T00:00:00.000Z', source: 'mds-reference', stale: false, staleReason: null } };
  const check =
    (b: unknown, status = 200) =>
    () =>
      apiContract().check('GET', `http://h/v1/instruments/${instrument.id}`, status, 'application/json', b);

  it('when an answer matches its route schema, then it passes; one renamed field, a number for a string, or an undeclared status fails', () => {
    expect(check(body)).not.toThrow();
    const { displayName, ...rest } = instrument;
    expect(check({ ...body, data: { ...rest, name: displayName } })).toThrow(/does not allow/);
    expect(check({ ...body, data: { ...instrument, quoteCurrency: 840 } })).toThrow(/does not allow/);
    expect(check({ ...body, meta: { ...body.meta, extra: 1 } })).toThrow(/does not allow/);
    expect(check({ error: { code: 'not_found', message: 'instrument not found', docsUrl: 'x', details: {} } }, 404)).not.toThrow();
    expect(check({ error: { code: 'payload_too_large', message: 'x', docsUrl: 'x', details: {} } }, 404)).toThrow(/does not allow/);
    expect(check({ error: { code: 'request_timeout', message: 'x', docsUrl: 'x', details: {} } }, 408)).toThrow(/status the OpenAPI document does not list/);
  });
});
