import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { adminRoutes, publicRouteDefinitions } from '../../server/wiring/areas.ts';
import { AppError } from '../../server/core/errors.ts';
import { parse } from '../../server/core/validate.ts';
import { openApiPath, type RouteDefinition } from '../../server/http/route.ts';
import { openApiFiles } from '../../server/wiring/api-documents.ts';
import { numberWords, receivedNumber, type NumberSchema } from '../support/range-words.ts';

// Every bounded integer or number a route takes, in its query or its JSON
// body, as the OpenAPI documents state it: a refusal names the range and
// what was received (docs/api.md, "Errors"). The bounds are read from the
// documents, not from the schemas' own checks, and the expected wording is
// written out in test/support/range-words.ts, whatever was wrong with the value:
//   an integer in [a, b]          -> "must be an integer between a and b; received <value>"
//   a number in (a, b]            -> "must be a number greater than a and at most b; received <value>"
//   one-sided                     -> "must be an integer of at least a", "must be a number greater than a"
//   a field named ...Days/...Hours -> "must be a whole number of days between a and b; received <value> days",
//                                    a fraction of a day as minutes: "1/1440 (1 minute)"

interface JsonSchema extends NumberSchema {
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  $ref?: string;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
}

interface Document {
  paths: Record<
    string,
    Record<string, { parameters?: { in: string; name: string; schema: JsonSchema }[]; requestBody?: { content: Record<string, { schema: JsonSchema }> } }>
  >;
  components?: { schemas?: Record<string, JsonSchema> };
}

interface Bounded {
  where: string;
  route: RouteDefinition;
  part: 'query' | 'body';
  /** The field's path: a name, or body path steps (array items as index 0). */
  path: (string | number)[];
  schema: JsonSchema;
}

const isNumeric = (s: JsonSchema) => s.type === 'integer' || s.type === 'number';
const hasBound = (s: JsonSchema) => [s.minimum, s.maximum, s.exclusiveMinimum, s.exclusiveMaximum].some((v) => v !== undefined);

function resolve(doc: Document, s: JsonSchema): JsonSchema {
  if (s.$ref) return resolve(doc, doc.components!.schemas![s.$ref.split('/').at(-1)!]);
  return s;
}

/** The bounded numbers of a body schema, down through objects and arrays. */
function bodyFields(doc: Document, s: JsonSchema, path: (string | number)[], out: [(string | number)[], JsonSchema][], depth = 0) {
  if (depth > 6) return;
  const r = resolve(doc, s);
  if (isNumeric(r) && hasBound(r)) out.push([path, r]);
  for (const [name, p] of Object.entries(r.properties ?? {})) bodyFields(doc, p, [...path, name], out, depth + 1);
  if (r.items) bodyFields(doc, r.items, [...path, 0], out, depth + 1);
  for (const alt of [...(r.anyOf ?? []), ...(r.oneOf ?? [])]) bodyFields(doc, alt, path, out, depth + 1);
}

function boundedParameters(): Bounded[] {
  const files = openApiFiles();
  const out: Bounded[] = [];
  for (const [file, prefix, routes] of [
    ['public.json', '/v1', publicRouteDefinitions()],
    ['admin.json', '/admin/v1', adminRoutes()],
  ] as const) {
    const doc = JSON.parse(files[file]) as Document;
    for (const route of routes as readonly RouteDefinition[]) {
      const op = doc.paths[openApiPath(prefix, route.path)]?.[route.method];
      if (!op) continue;
      const where = `${route.method} ${prefix}${route.path}`;
      for (const p of op.parameters ?? []) {
        if (p.in === 'query' && isNumeric(p.schema) && hasBound(p.schema)) out.push({ where, route, part: 'query', path: [p.name], schema: p.schema });
      }
      const body = op.requestBody?.content['application/json']?.schema;
      if (body && route.body) {
        const fields: [(string | number)[], JsonSchema][] = [];
        bodyFields(doc, body, [], fields);
        for (const [path, schema] of fields) out.push({ where, route, part: 'body', path, schema });
      }
    }
  }
  return out;
}

/** The input holding `value` at `path`, everything else absent. */
function input(path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  if (typeof head === 'number') return [input(rest, value)];
  return { [head]: input(rest, value) };
}

function messagesFor(b: Bounded, value: number | string): string[] {
  const sent = b.part === 'query' ? String(value) : value;
  try {
    parse(b.route[b.part === 'query' ? 'query' : 'body'] as z.ZodType, input(b.path, sent), b.part);
  } catch (e) {
    if (!(e instanceof AppError)) throw e;
    return e.details[b.path.join('.')] ?? [];
  }
  return [];
}

describe('bounded numbers name their range', () => {
  const bounded = boundedParameters();

  it('when the routes are read, then the spec-bounded parameters are among the bounded ones found', () => {
    const found = new Set(bounded.map((b) => `${b.where} ${b.path.join('.')}`));
    for (const expected of [
      'get /v1/instruments/:id/news limit',
      'get /v1/instruments/:id/events limit',
      'get /v1/economic-events limit',
      'get /v1/instruments/event-reaction-coverage minReactions',
      'get /v1/instruments/event-reaction-coverage minWindowDays',
      'get /v1/instruments/event-reaction-coverage limit',
      'get /v1/instruments/:id/technicals lookbackDays',
      'get /v1/correlations lookbackDays',
      'get /v1/instruments/implied-volatility maxAgeDays',
      'post /v1/analytics/option-price vol',
    ]) {
      expect(found, expected).toContain(expected);
    }
  });

  it.each(bounded.map((b) => [`${b.where} ${b.part} ${b.path.join('.')}`, b] as const))(
    'when %s is outside its range or not a number, then its first message names the range and the value received',
    (_name, b) => {
      const w = numberWords(b.schema, String(b.path.at(-1)));
      // A number received is told as sent, in the field's unit; a fraction of a unit is also told in a smaller one.
      const received = (v: number) => `${w.rule}; ${receivedNumber(v, w.unit)}`;
      const first = (v: number | string) => messagesFor(b, v)[0];
      if (w.hi) {
        const above = w.integer ? w.hi.v + 1 : w.hi.v + Math.max(1, Math.abs(w.hi.v));
        if (Number.isSafeInteger(above) || !w.integer) expect(first(above).startsWith(received(above)), `${above}: ${first(above)}`).toBe(true);
      }
      if (w.lo) {
        const below = w.integer ? w.lo.v - 1 : w.lo.v - Math.max(1, Math.abs(w.lo.v));
        if (Number.isSafeInteger(below) || !w.integer) expect(first(below).startsWith(received(below)), `${below}: ${first(below)}`).toBe(true);
      }
      expect(first('x'), 'x').toBe(`${w.rule}; received "x"`);
      if (w.integer && w.lo) expect(first(w.lo.v + 0.5).startsWith(received(w.lo.v + 0.5)), `${w.lo.v + 0.5}`).toBe(true);
    },
  );
});
