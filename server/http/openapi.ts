import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject, type ZodOpenApiResponsesObject } from 'zod-openapi';
import { openApiPath, type RouteDefinition } from './route.ts';
import { ERROR_CODES, type ErrorCode, STATUS } from '../core/errors.ts';
import { IMMUTABLE, REVALIDATE } from './envelope.ts';
import { FORMAT_TYPES } from './format.ts';

export interface Listener {
  title: string;
  description: string;
  /** Mount point of the routes: /v1 or /admin/v1. */
  prefix: string;
  security: { name: string; description: string };
  /** Every tag the routes use, by name, with what its operations have in common; the reference groups them in this order. */
  tags: Record<string, string>;
  /** Error codes any route of the listener can answer. */
  errors: readonly ErrorCode[];
  /** Error codes any route with a request body can answer. */
  bodyErrors: readonly ErrorCode[];
  /**
   * What a parameter is, for those whose schema has no description: by
   * `<operationId> <name>` for one operation, else by name.
   */
  parameterWords: Readonly<Record<string, string>>;
  /** Each operation's examples, which the document embeds (docs/openapi/examples.json, read by server/wiring/api-documents.ts). */
  examples?: OperationExamples;
  routes: readonly RouteDefinition[];
}

/** One operation's success answer to its example request. */
export interface ExampleAnswer {
  /** The request, `GET /v1/…?…`, made with the operation's examples. */
  request: string;
  status: number;
  /** The arrays cut to their first items, each as `<path>: <kept> of <length>`; empty when the answer is whole. */
  trimmed: string[];
  body: unknown;
}

/** The examples of a listener's operations, each by operationId. */
export interface OperationExamples {
  /** What a person types, by parameter name: "Try it out" fills these in. */
  parameters: Record<string, Record<string, string | number>>;
  /** Parameters that replace some of those (another mode of the same read): shown as an example of the schema, which "Try it out" leaves empty. */
  alternatives: Record<string, Record<string, string | number>>;
  /** The JSON request body. */
  bodies: Record<string, unknown>;
  answers: Record<string, ExampleAnswer>;
}

const RETRY_AFTER = z.string().meta({ description: 'seconds to wait before retrying' });

// Every error answer's headers, by code; X-Request-Id is on every answer.
const ERROR_HEADERS: Partial<Record<ErrorCode, Record<string, z.ZodType>>> = {
  rate_limited: { 'Retry-After': RETRY_AFTER },
  overloaded: { 'Retry-After': RETRY_AFTER },
  method_not_allowed: { Allow: z.string().meta({ description: 'the methods the path serves' }) },
  range_not_satisfiable: { 'Content-Range': z.string().meta({ description: '`bytes */<size>`: the size of the file' }) },
};

const REQUEST_ID = z.string().meta({
  description:
    "this request's id: the caller's X-Request-Id when it is 1-128 characters of [A-Za-z0-9._-], else a new UUID; it is in the service's log line for the request",
});

/** The error envelope with `code` narrowed to the codes one status carries. */
function errorEnvelope(codes: ErrorCode[]) {
  return z.strictObject({
    error: z.strictObject({
      code: z.enum(codes as [ErrorCode, ...ErrorCode[]]),
      message: z.string().meta({ description: 'what went wrong, for a person' }),
      docsUrl: z.string().meta({ description: "the reference page's entry for the code" }),
      details: z.record(z.string(), z.array(z.string())).meta({ description: 'the problems, by field (dotted path; `_` for the input as a whole)' }),
    }),
  });
}

function errorResponses(codes: ErrorCode[]): ZodOpenApiResponsesObject {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of ERROR_CODES) if (codes.includes(code)) byStatus.set(STATUS[code], [...(byStatus.get(STATUS[code]) ?? []), code]);
  const responses: ZodOpenApiResponsesObject = {};
  for (const [status, atStatus] of [...byStatus].sort(([a], [b]) => a - b)) {
    const headers = Object.assign({ 'X-Request-Id': REQUEST_ID }, ...atStatus.map((c) => ERROR_HEADERS[c] ?? {}));
    responses[String(status) as `${1 | 2 | 3 | 4 | 5}${string}`] = {
      description: atStatus.join(', '),
      headers: z.object(headers),
      content: { 'application/json': { schema: errorEnvelope(atStatus) } },
    };
  }
  return responses;
}

/** Stored bytes with ranges (http/file-body.ts): the whole (200), one range (206), or unchanged (304). */
function fileResponses(types: Record<string, string>, description: string, headers: Record<string, z.ZodType>): ZodOpenApiResponsesObject {
  const content = Object.fromEntries(
    Object.entries(types).map(([type, holds]) => [type, { schema: z.string().meta({ description: holds, format: 'binary' }) }]),
  );
  const fileHeaders = {
    ...headers,
    ETag: z.string().meta({ description: 'the quoted hex SHA-256 of the bytes' }),
    'Accept-Ranges': z.string().meta({ description: '`bytes`: a `Range` of one byte range is served as 206' }),
  };
  return {
    '200': { description, headers: z.object(fileHeaders), content },
    '206': {
      description: 'the one byte range the `Range` header asked for (an `If-Range` naming another ETag gets the whole, 200)',
      headers: z.object({ ...fileHeaders, 'Content-Range': z.string().meta({ description: '`bytes <first>-<last>/<size>`' }) }),
      content,
    },
    '304': { description: 'If-None-Match named the ETag: no body', headers: z.object(fileHeaders) },
  };
}

/** The success answer's schema: the envelope around the route's data and meta, or the route's own body. */
function successBody(response: RouteDefinition['response']): z.ZodType {
  if (response.body) return response.body;
  if (response.file) return z.never();
  return response.meta ? z.strictObject({ data: response.data, meta: response.meta }) : z.strictObject({ data: response.data });
}

function operation(listener: Listener, route: RouteDefinition): ZodOpenApiOperationObject {
  const { response } = route;
  const successHeaders: Record<string, z.ZodType> = { 'X-Request-Id': REQUEST_ID };
  for (const [name, description] of Object.entries(response.headers ?? {})) successHeaders[name] = z.string().meta({ description });
  if (response.validated) {
    successHeaders.ETag = z.string().meta({
      description:
        'a SHA-256 of the answer (before content coding), changing whenever it does; weak (W/) when the meta carries the time of reading, which it leaves out',
    });
    successHeaders['Cache-Control'] = z.string().meta({
      description: `\`${REVALIDATE}\`: a client may keep the answer for itself and reuse it after revalidating. \`${IMMUTABLE}\` on a read whose bytes can never change: daily prices pinned to an actionSetVersion, for a window that ended before today and either on or before the latest bar or in a superseded version`,
    });
  }
  const withBody = route.body !== undefined || route.upload !== undefined;
  const codes = [...listener.errors, ...(withBody ? listener.bodyErrors : []), ...route.errors];
  if (!route.description) throw new Error(`${route.method.toUpperCase()} ${route.path}: every operation needs a description beyond its summary`);
  if (!(route.tag in listener.tags)) throw new Error(`${route.method.toUpperCase()} ${route.path}: tag "${route.tag}" is not declared by its listener`);
  return {
    operationId: route.operationId,
    tags: [route.tag],
    summary: route.summary,
    description: route.description,
    security: [{ [listener.security.name]: route.scope ? [route.scope] : [] }],
    requestParams: {
      ...(route.params ? { path: route.params as z.ZodObject } : {}),
      query: route.query as z.ZodObject,
    },
    ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: route.body } } } } : {}),
    ...(route.upload
      ? {
          requestBody: {
            required: true,
            description: route.upload.description,
            content: {
              'application/json': { schema: z.array(route.upload.rows) },
              'application/x-ndjson': { schema: route.upload.rows },
              'text/csv': { schema: z.string().meta({ description: 'a header line naming the fields, then one row per line; nested values as JSON text' }) },
            },
          },
        }
      : {}),
    responses: {
      [String(response.status)]: {
        description: response.description,
        headers: z.object(successHeaders),
        content: {
          'application/json': { schema: successBody(response) },
          ...(response.csv ? { 'text/csv': { schema: z.string().meta({ description: response.csv }) } } : {}),
          ...('columnar' in response && response.columnar
            ? Object.fromEntries(
                (['arrow', 'parquet'] as const).map((f) => [
                  FORMAT_TYPES[f],
                  { schema: z.string().meta({ format: 'binary', description: response.columnar }) },
                ]),
              )
            : {}),
        },
      },
      // A file route's 200 is its bytes, which replace the JSON entry above.
      ...(response.file ? fileResponses(response.file, response.description, successHeaders) : {}),
      ...(response.validated
        ? { '304': { description: 'If-None-Match named the ETag of the answer the request would get: no body', headers: z.object(successHeaders) } }
        : {}),
      ...errorResponses([...new Set(codes)]),
    },
  };
}

// OpenAPI 3.1 resolves a relative server URL against the URL the document was
// fetched from (§4.8.5.1), so `/` is the origin that serves it: the public
// document's for /docs "Try it out", the admin listener's for the admin one.
// Paths carry the listener's prefix (/v1, /admin/v1) themselves.
const SERVERS = [{ url: '/', description: 'the origin that serves this document' }];

// The code's licence (LICENSE); the demo data keep their own (docs/demo-data.md).
const LICENSE = { name: 'Apache-2.0', identifier: 'Apache-2.0' };

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const ANNOTATIONS = new Set(['description', 'title', 'examples', 'default', 'deprecated', 'readOnly', 'writeOnly']);
type JsonNode = { [key: string]: unknown };
const isNode = (value: unknown): value is JsonNode => typeof value === 'object' && value !== null;
/** A schema that accepts any value: nothing in it but annotations. */
const acceptsAnything = (schema: unknown) => isNode(schema) && !Array.isArray(schema) && Object.keys(schema).every((k) => ANNOTATIONS.has(k));

/**
 * Rewrites, throughout the document and in place, three things zod's JSON
 * Schema says that are no rule of this API, and that linters flag:
 * - the ±(2^53 − 1) bounds zod puts on every integer because it refuses
 *   integers a double cannot hold exactly. A reader takes -9007199254740991
 *   for a real minimum; the bounds a schema sets itself (a count's 0, a
 *   limit's 500) stay.
 * - an `anyOf` with a member that accepts any value accepts any value: an
 *   upload field parsed by a transform (a number or numeric text) renders as
 *   `{}`, and "`{}` or null" is `{}`.
 * - a tuple: zod writes `prefixItems` with `items: false`, which `maxItems`
 *   (their count) already implies, and linters read as an array without an
 *   item schema. Items all alike become `items`; otherwise `items` is the
 *   union of the prefixItems, which maxItems never lets apply.
 * Children are rewritten before their parent, so a parent sees them final.
 */
function normaliseSchemas(node: unknown): void {
  if (!isNode(node)) return;
  for (const child of Object.values(node)) normaliseSchemas(child);
  if (Array.isArray(node)) return;
  const types = Array.isArray(node.type) ? node.type : [node.type];
  if (types.includes('integer')) {
    if (node.minimum === -MAX_SAFE) delete node.minimum;
    if (node.maximum === MAX_SAFE) delete node.maximum;
  }
  const { anyOf, prefixItems } = node;
  if (Array.isArray(anyOf) && anyOf.some(acceptsAnything)) {
    delete node.anyOf;
    for (const member of anyOf.filter(acceptsAnything)) for (const [key, value] of Object.entries(member as JsonNode)) node[key] ??= value;
  }
  if (Array.isArray(prefixItems) && node.items === false && node.maxItems === prefixItems.length) {
    const distinct = [...new Map(prefixItems.map((item) => [JSON.stringify(item), item])).values()];
    if (distinct.length === 1) {
      delete node.prefixItems;
      node.items = distinct[0];
    } else {
      node.items = { anyOf: distinct };
    }
  }
}

/** A default or example as a parameter's schema states it: text for a parameter read as text (`adjusted=false`, `strike=67.5`), else the value itself. */
function parameterValue(value: unknown, schema: JsonNode | undefined): unknown {
  return schema?.type === 'string' && typeof value !== 'string' ? String(value) : value;
}

/**
 * The input's default of each field of a route's query or path schema that
 * declares one with `.default()`. zod's JSON Schema leaves out the default of
 * a field parsed by a transform (`adjusted`: the text "false" parsed to
 * false), whose input and output differ; the document states it as input.
 */
function fieldDefaults(schema: z.ZodType | undefined): Map<string, unknown> {
  let object: unknown = schema;
  while (object instanceof z.ZodPipe) object = object.in;
  if (!(object instanceof z.ZodObject)) return new Map();
  const defaults = new Map<string, unknown>();
  for (const [name, field] of Object.entries(object.shape as Record<string, z.ZodType>)) {
    let s: unknown = field;
    while (s instanceof z.ZodOptional || s instanceof z.ZodPipe) s = s instanceof z.ZodOptional ? s.unwrap() : s.in;
    if (s instanceof z.ZodDefault) defaults.set(name, s.def.defaultValue);
  }
  return defaults;
}

/**
 * Completes one operation of the generated document from its route and the
 * listener: each parameter's description (its schema's, else the
 * listener's words for it) and default, and the examples of its parameters,
 * its request body and its success answer. A parameter left without a
 * description is an error, as an operation without one is.
 */
function annotate(operation: JsonNode, route: RouteDefinition, listener: Listener): void {
  const where = `${route.method.toUpperCase()} ${route.path}`;
  const defaults = new Map([...fieldDefaults(route.params), ...fieldDefaults(route.query)]);
  const examples = listener.examples;
  for (const parameter of (operation.parameters ?? []) as JsonNode[]) {
    const name = String(parameter.name);
    const schema = parameter.schema as JsonNode | undefined;
    parameter.description ??= schema?.description ?? listener.parameterWords[`${route.operationId} ${name}`] ?? listener.parameterWords[name];
    if (typeof parameter.description !== 'string') throw new Error(`${where}: parameter ${name} needs a description`);
    if (schema && schema.default === undefined && defaults.has(name)) schema.default = parameterValue(defaults.get(name), schema);
    const example = examples?.parameters[route.operationId]?.[name];
    if (example !== undefined) parameter.example = parameterValue(example, schema);
    const alternative = examples?.alternatives[route.operationId]?.[name];
    if (alternative !== undefined && schema) schema.examples = [parameterValue(alternative, schema)];
  }
  const body = examples?.bodies[route.operationId];
  const bodyContent = (operation.requestBody as JsonNode | undefined)?.content as Record<string, JsonNode> | undefined;
  if (body !== undefined && bodyContent?.['application/json']) bodyContent['application/json'].example = body;
  const answer = examples?.answers[route.operationId];
  const answerContent = ((operation.responses as Record<string, JsonNode>)[String(answer?.status)]?.content as Record<string, JsonNode> | undefined)?.[
    'application/json'
  ];
  if (answer && answerContent) {
    answerContent.examples = {
      demo: {
        summary: `the demo data set's answer to ${answer.request}`,
        ...(answer.trimmed.length ? { description: `Trimmed to the first items of each long list: ${answer.trimmed.join('; ')}.` } : {}),
        value: answer.body,
      },
    };
  }
}

/** The OpenAPI 3.1 document of one listener's API, built from its route definitions. */
export function openApiDocument(listener: Listener, version: string) {
  const paths: ZodOpenApiPathsObject = {};
  const sorted = [...listener.routes].sort((a, b) => (a.path === b.path ? a.method.localeCompare(b.method) : a.path.localeCompare(b.path)));
  for (const route of sorted) {
    const path = openApiPath(listener.prefix, route.path) as `/${string}`;
    paths[path] = { ...paths[path], [route.method]: operation(listener, route) };
  }
  const unused = Object.keys(listener.tags).filter((tag) => !listener.routes.some((route) => route.tag === tag));
  if (unused.length > 0) throw new Error(`tags declared but used by no route: ${unused.join(', ')}`);
  const document = createDocument({
    openapi: '3.1.0',
    info: { title: listener.title, version, description: listener.description, license: LICENSE },
    servers: SERVERS,
    tags: Object.entries(listener.tags).map(([name, description]) => ({ name, description })),
    security: [{ [listener.security.name]: [] }],
    components: {
      securitySchemes: {
        [listener.security.name]: { type: 'http', scheme: 'bearer', description: listener.security.description },
      },
    },
    paths,
  });
  normaliseSchemas(document);
  for (const route of sorted) {
    const item = document.paths?.[openApiPath(listener.prefix, route.path)] as Record<string, JsonNode> | undefined;
    if (item?.[route.method]) annotate(item[route.method], route, listener);
  }
  return document;
}
