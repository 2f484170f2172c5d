import { createRequire } from 'node:module';
import path from 'node:path';
import express, { type Router } from 'express';
import { adminRoutes, publicRouteDefinitions } from './areas.ts';
import { ERROR_CODES, ERRORS } from './http/errors.ts';
import { openApiDocument, type Listener } from './http/openapi.ts';

// Every route can answer these: the envelope's own failures (400, 405), the
// key check (401, 403), the rate windows (429), and shedding (503).
const PUBLIC_ERRORS = [
  'invalid_request',
  'missing_api_key',
  'invalid_api_key',
  'revoked_api_key',
  'insufficient_scope',
  'method_not_allowed',
  'rate_limited',
  'internal_error',
  'overloaded',
] as const;
const ADMIN_ERRORS = ['invalid_request', 'missing_api_key', 'invalid_api_key', 'method_not_allowed', 'internal_error', 'overloaded'] as const;
const BODY_ERRORS = ['payload_too_large', 'unsupported_media_type'] as const;

export function publicDocument(version: string) {
  const listener: Listener = {
    title: 'Market data API',
    description:
      'Daily and intraday prices with point-in-time adjustment, corporate actions, and analytics. Conventions a schema cannot hold (adjustment, point-in-time rules, formulas, limits) are in docs/api.md; error codes are listed on /docs.',
    prefix: '/v1',
    security: { name: 'apiKey', description: 'an API key (pk_live_… or pk_test_…); each operation names the one scope it needs' },
    errors: PUBLIC_ERRORS,
    bodyErrors: BODY_ERRORS,
    routes: publicRouteDefinitions(),
  };
  return openApiDocument(listener, version);
}

export function adminDocument(version: string) {
  const listener: Listener = {
    title: 'Market data admin API',
    description: 'Accounts, keys, usage, status and ingest, on the admin listener (loopback by default), behind the admin token.',
    prefix: '/admin/v1',
    security: { name: 'adminToken', description: 'the ADMIN_TOKEN (generated into DATA_DIR on first start when not set)' },
    errors: ADMIN_ERRORS,
    bodyErrors: BODY_ERRORS,
    routes: adminRoutes(),
  };
  return openApiDocument(listener, version);
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The reference page: the error codes (each an anchor that `docsUrl` points at), then the public document rendered by Swagger UI. */
function page(): string {
  const rows = ERROR_CODES.map(
    (code) => `<tr id="${code}"><td><code>${code}</code></td><td>${ERRORS[code][0]}</td><td>${escapeHtml(ERRORS[code][1])}</td></tr>`,
  ).join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Market data API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="stylesheet" href="/docs/reference.css">
</head>
<body>
<main>
<div id="api"></div>
<section id="errors">
<h2>Error codes</h2>
<p>Every error answer is <code>{"error": {"code", "message", "docsUrl", "details"}}</code>; <code>details</code> names each bad field. The document itself: <a href="/v1/openapi.json">/v1/openapi.json</a>.</p>
<table><thead><tr><th>code</th><th>status</th><th>meaning</th></tr></thead>
<tbody>
${rows}
</tbody></table>
</section>
</main>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/reference.js"></script>
</body>
</html>
`;
}

const SCRIPT = `window.ui = SwaggerUIBundle({ url: '/v1/openapi.json', dom_id: '#api', deepLinking: true, validatorUrl: null });
if (location.hash && document.getElementById(location.hash.slice(1))) document.getElementById(location.hash.slice(1)).scrollIntoView();
`;

const STYLE = `#errors { max-width: 1460px; margin: 0 auto 40px; padding: 0 20px; font-family: sans-serif; }
#errors table { border-collapse: collapse; width: 100%; }
#errors td, #errors th { border-bottom: 1px solid #ddd; padding: 6px 8px; text-align: left; vertical-align: top; }
#errors tr:target { background: #fff6d5; }
`;

// Everything the page loads comes from this server: the policy makes the
// browser refuse anything else (Swagger UI sets inline styles and uses data:
// images). No page may frame it (frame-ancestors, and X-Frame-Options for
// browsers that predate it): its Authorize dialog takes an API key.
const CONTENT_SECURITY_POLICY = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'";

/** GET /docs and its assets, served from the swagger-ui-dist package; no CDN. */
export function referencePage(): Router {
  const router = express.Router();
  const assets = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const html = page();
  router.use('/docs', (_req, res, next) => {
    res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    res.setHeader('X-Frame-Options', 'DENY');
    next();
  });
  router.get('/docs', (_req, res) => {
    res.type('html').send(html);
  });
  router.get('/docs/reference.js', (_req, res) => {
    res.type('js').send(SCRIPT);
  });
  router.get('/docs/reference.css', (_req, res) => {
    res.type('css').send(STYLE);
  });
  router.use('/docs/assets', express.static(assets, { index: false }));
  return router;
}
