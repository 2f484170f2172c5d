import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject, type ZodOpenApiResponsesObject } from 'zod-openapi';
import { ERROR_CODES, STATUS, type ErrorCode } from './errors.ts';
import { IMMUTABLE, REVALIDATE } from './envelope.ts';
import { openApiPath, type RouteDefinition } from './route.ts';

export interface Listener {
  title: string;
  description: string;
  /** Mount point of the routes: /v1 or /admin/v1. */
  prefix: string;
  security: { name: string; description: string };
  /** Error codes any route of the listener can answer. */
  errors: readonly ErrorCode[];
  /** Error codes any route with a request body can answer. */
  bodyErrors: readonly ErrorCode[];
  routes: readonly RouteDefinition[];
}

const RETRY_AFTER = z.string().meta({ description: 'seconds to wait before retrying' });

// Every error answer's headers, by code; X-Request-Id is on every answer.
const ERROR_HEADERS: Partial<Record<ErrorCode, Record<string, z.ZodType>>> = {
  rate_limited: { 'Retry-After': RETRY_AFTER },
  overloaded: { 'Retry-After': RETRY_AFTER },
  method_not_allowed: { Allow: z.string().meta({ description: 'the methods the path serves' }) },
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

/** The success answer's schema: the envelope around the route's data and meta, or the route's own body. */
function successBody(response: RouteDefinition['response']): z.ZodType {
  if (response.body) return response.body;
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
  return {
    operationId: route.operationId,
    tags: [route.tag],
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
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
        },
      },
      ...(response.validated
        ? { '304': { description: 'If-None-Match named the ETag of the answer the request would get: no body', headers: z.object(successHeaders) } }
        : {}),
      ...errorResponses([...new Set(codes)]),
    },
  };
}

/** The OpenAPI 3.1 document of one listener's API, built from its route definitions. */
export function openApiDocument(listener: Listener, version: string) {
  const paths: ZodOpenApiPathsObject = {};
  const sorted = [...listener.routes].sort((a, b) => (a.path === b.path ? a.method.localeCompare(b.method) : a.path.localeCompare(b.path)));
  for (const route of sorted) {
    const path = openApiPath(listener.prefix, route.path) as `/${string}`;
    paths[path] = { ...paths[path], [route.method]: operation(listener, route) };
  }
  return createDocument({
    openapi: '3.1.0',
    info: { title: listener.title, version, description: listener.description },
    security: [{ [listener.security.name]: [] }],
    components: {
      securitySchemes: {
        [listener.security.name]: { type: 'http', scheme: 'bearer', description: listener.security.description },
      },
    },
    paths,
  });
}
