import { matchesAny } from './envelope.ts';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import express, { type RequestHandler, type Router } from 'express';
import { openApiDocument, type Listener, type OperationExamples } from './openapi.ts';
import { ADMIN_PARAMETER_WORDS, PUBLIC_PARAMETER_WORDS } from './parameter-words.ts';
import { inlineCodeHtml, referenceHtml, type ReferenceDocument } from './reference-html.ts';
import type { RouteDefinition } from './route.ts';
import { ERROR_CODES, ERRORS } from '../core/errors.ts';
import { servedAs } from './observe.ts';

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

// The public document's description, which /docs shows above the operations:
// the conventions every operation shares, briefly; docs/api.md in the
// repository holds them in full.
const PUBLIC_DESCRIPTION = `Daily and intraday prices with point-in-time adjustment, corporate actions, options, earnings, economic and news events, sentiment, and analytics over them.

- **Keys.** Every operation takes \`Authorization: Bearer <key>\` (a \`pk_live_…\` or \`pk_test_…\` key) and needs the one scope it names. The **Authorize** button sets it for "Try it out".
- **Answers.** A success is \`{ "data": …, "meta": … }\` (one exception, the bulk implied-volatility read): \`meta.asOf\` is the \`asOf\` asked for or the time of the read, \`meta.source\` where the numbers came from, \`meta.stale\` whether any is marked stale. An error is \`{ "error": { "code", "message", "docsUrl", "details" } }\`: branch on \`code\` (every code and its status are under [Error codes](/docs#errors) below), and \`details\` names each bad field.
- **Missing numbers** are \`null\` or absent, never 0. An unknown query parameter or body field is a 400 naming it, never ignored.
- **Point in time.** \`asOf\` is a date (the end of that UTC day) or a UTC instant \`yyyy-mm-ddThh:mm:ss[.fff]Z\`, used exactly; each operation says what it limits to what was known then. \`actionSetVersion\` pins an instrument's set of corporate actions, so a daily-price read can be repeated byte for byte.
- **Rate limits** are per account and environment, per minute and per UTC day. A counted answer carries \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\`; a 429 also \`Retry-After\`.
- **Formats and caching.** The price reads also answer CSV (\`format=csv\`, or \`Accept: text/csv\`), Apache Arrow IPC streams (\`format=arrow\`) and Parquet files (\`format=parquet\`), the meta under the key \`meta\` of the schema or file metadata; the single-instrument ones carry an \`ETag\` for \`If-None-Match\`. Answers of 1 KiB or more are compressed with zstd, br or gzip when \`Accept-Encoding\` allows (Parquet is zstd inside).`;

// In the order /docs shows them: the order of the areas (server/wiring/areas.ts).
const PUBLIC_TAGS = {
  Instruments:
    "Reference data: search by text or broker code, and reads by id. Symbols follow each instrument's symbol history; a delisted instrument stays, inactive.",
  Prices:
    'Daily bars, raw or adjusted backward for splits and dividends as known at a point in time, for one instrument or up to 500 streamed; intraday bars in UTC buckets. JSON or CSV.',
  'Corporate actions':
    "Splits, dividends and other actions as append-only revisions under each instrument's action-set version, each with when it became knowable.",
  Analytics:
    'Technicals, correlations and beta over adjusted daily bars in a lookback window ending at asOf; option price, probability and strategy EV computed from the request alone.',
  Macro: 'Allowlisted FRED series, stored and refreshed when stale, and the risk-free rate taken from them.',
  FX: 'Stored FX rates by currency pair and date, never interpolated.',
  'Economic calendar': "Scheduled macro releases with the provider's actual, forecast and previous figures.",
  Options: 'Option chains, contracts and expiries as they stood at a cut-off, with provider or computed Greeks, and implied-volatility snapshots.',
  Earnings: 'Scheduled and reported earnings, per instrument or market-wide in a window.',
  Sentiment: 'Sentiment scores exactly as their sources gave them, and how far each source leads the price.',
  'News and events': 'News items, company-confirmed catalyst events, and the price reactions measured on them.',
  Exports:
    'Export jobs: a pinned point-in-time read of many instruments written off the request path into Parquet, Arrow or CSV files, one per year (daily) or month (intraday), with checksums and signed, resumable links.',
};

const ADMIN_TAGS = {
  Service: 'The running service: storage tier, migrations, worker pool, version.',
  'Accounts and keys': 'Accounts, their API keys (created, listed, rolled, revoked), dashboard logins and invitations, and request counts.',
  Ingest: 'Uploads of market data, each stored in one transaction, and the derivations the service runs over stored data.',
};

const PUBLIC_LISTENER: Omit<Listener, 'routes'> = {
  title: 'Market data API',
  description: PUBLIC_DESCRIPTION,
  prefix: '/v1',
  security: { name: 'apiKey', description: 'an API key (pk_live_… or pk_test_…); each operation names the one scope it needs' },
  tags: PUBLIC_TAGS,
  errors: PUBLIC_ERRORS,
  bodyErrors: BODY_ERRORS,
  parameterWords: PUBLIC_PARAMETER_WORDS,
};

const ADMIN_LISTENER: Omit<Listener, 'routes'> = {
  title: 'Market data admin API',
  description:
    'Accounts, keys, usage, status and ingest, on the admin listener (loopback by default), behind the admin token. A success is `{ "data": … }`, without `meta`; an error has the public API\'s envelope and codes (listed on the public listener\'s /docs).',
  prefix: '/admin/v1',
  security: { name: 'adminToken', description: 'the ADMIN_TOKEN (generated into DATA_DIR on first start when not set)' },
  tags: ADMIN_TAGS,
  errors: ADMIN_ERRORS,
  bodyErrors: BODY_ERRORS,
  parameterWords: ADMIN_PARAMETER_WORDS,
};

/** The public listener's OpenAPI document for `routes` (the areas' routes, server/wiring/areas.ts), with the operations' examples. */
export const publicDocument = (routes: readonly RouteDefinition[], version: string, examples?: OperationExamples) =>
  openApiDocument({ ...PUBLIC_LISTENER, routes, examples }, version);

/** The admin listener's OpenAPI document for `routes` (the admin routes with the areas' ingest kinds, server/wiring/areas.ts). */
export const adminDocument = (routes: readonly RouteDefinition[], version: string) => openApiDocument({ ...ADMIN_LISTENER, routes }, version);

/**
 * The reference page: the public document rendered by Swagger UI, or without
 * scripts as plain HTML (<noscript>, reference-html.ts), then the error codes
 * (each an anchor that `docsUrl` points at).
 */
function page(document: ReferenceDocument): string {
  const rows = ERROR_CODES.map(
    (code) => `<tr id="${code}"><td><code>${code}</code></td><td>${ERRORS[code][0]}</td><td>${inlineCodeHtml(ERRORS[code][1])}</td></tr>`,
  ).join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Market data API reference</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="stylesheet" href="/docs/reference.css">
</head>
<body>
<main>
<noscript>
${referenceHtml(document, new Set(ERROR_CODES))}
</noscript>
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

const STYLE = `#errors, #reference { max-width: 1460px; margin: 0 auto 40px; padding: 0 20px; font-family: sans-serif; }
#errors table, #reference table { border-collapse: collapse; width: 100%; }
#errors td, #errors th, #reference td, #reference th { border-bottom: 1px solid #ddd; padding: 6px 8px; text-align: left; vertical-align: top; }
#errors tr:target { background: #fff6d5; }
#reference .operation { border-top: 1px solid #bbb; margin: 24px 0; }
#reference pre { background: #f5f5f5; padding: 8px; overflow-x: auto; }
#reference td code { overflow-wrap: anywhere; }
`;

// The service's icon, drawn here as rectangles on a 32-pixel grid: three
// candlesticks, one falling and two rising, on a dark rounded square. /docs
// links the SVG; a browser asks for /favicon.ico on every other page (the
// account dashboard, a JSON answer opened in a tab), which gets the same
// drawing as an ICO.
const ICON_SIZE = 32;
const ICON_CORNER_RADIUS = 6;
const ICON_BACKGROUND = '#17324d';
const ICON_RECTS: readonly (readonly [x: number, y: number, width: number, height: number, fill: string])[] = [
  [8, 11, 2, 16, '#e76f51'],
  [6, 15, 6, 9, '#e76f51'],
  [15, 7, 2, 17, '#52b788'],
  [13, 10, 6, 10, '#52b788'],
  [22, 3, 2, 16, '#52b788'],
  [20, 6, 6, 9, '#52b788'],
];

const FAVICON_SVG = Buffer.from(
  `<svg xmlns="http://www.w3.org/2000/svg" width="${ICON_SIZE}" height="${ICON_SIZE}" viewBox="0 0 ${ICON_SIZE} ${ICON_SIZE}">` +
    `<rect width="${ICON_SIZE}" height="${ICON_SIZE}" rx="${ICON_CORNER_RADIUS}" fill="${ICON_BACKGROUND}"/>` +
    ICON_RECTS.map(([x, y, width, height, fill]) => `<rect x="${x}" y="${y}" width="${width}" height="${height}" fill="${fill}"/>`).join('') +
    '</svg>\n',
);

/** The icon as an ICO: one 32×32 32-bit bitmap, rows bottom first, its AND mask clear (the alpha channel cuts the corners). */
function faviconIco(): Buffer {
  const size = ICON_SIZE;
  const r = ICON_CORNER_RADIUS;
  const pixels = Buffer.alloc(size * size * 4);
  const mask = Buffer.alloc((size / 8) * size);
  const bgr = (hex: string) => [5, 3, 1].map((i) => parseInt(hex.slice(i, i + 2), 16));
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const cornerX = Math.min(Math.max(x + 0.5, r), size - r);
      const cornerY = Math.min(Math.max(y + 0.5, r), size - r);
      if (Math.hypot(x + 0.5 - cornerX, y + 0.5 - cornerY) > r) continue;
      let fill = ICON_BACKGROUND;
      for (const [rx, ry, width, height, rectFill] of ICON_RECTS) if (x >= rx && x < rx + width && y >= ry && y < ry + height) fill = rectFill;
      pixels.set([...bgr(fill), 255], ((size - 1 - y) * size + x) * 4);
    }
  }
  const header = Buffer.alloc(6 + 16 + 40);
  header.writeUInt16LE(1, 2); // an icon
  header.writeUInt16LE(1, 4); // one image
  header.writeUInt8(size, 6);
  header.writeUInt8(size, 7);
  header.writeUInt16LE(1, 10); // planes
  header.writeUInt16LE(32, 12); // bits per pixel
  header.writeUInt32LE(40 + pixels.length + mask.length, 14);
  header.writeUInt32LE(22, 18); // the bitmap follows the directory
  header.writeUInt32LE(40, 22); // BITMAPINFOHEADER
  header.writeInt32LE(size, 26);
  header.writeInt32LE(size * 2, 30); // the colour rows and the mask rows
  header.writeUInt16LE(1, 34);
  header.writeUInt16LE(32, 36);
  header.writeUInt32LE(pixels.length + mask.length, 42);
  return Buffer.concat([header, pixels, mask]);
}

// A day: the icon changes only with a release, and with the ETag a browser's
// check after that costs a 304.
const ICON_CACHE_CONTROL = 'public, max-age=86400';

function sendIcon(bytes: Buffer, type: string): RequestHandler {
  const etag = `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 32)}"`;
  return (req, res) => {
    res.set({ 'Content-Type': type, 'Cache-Control': ICON_CACHE_CONTROL, ETag: etag });
    // Whatever Cache-Control the request carries.
    if (matchesAny(req.get('if-none-match'), etag)) return void res.status(304).end();
    res.send(bytes);
  };
}

// Everything the page loads comes from this server: the policy makes the
// browser refuse anything else (Swagger UI sets inline styles and uses data:
// images). No page may frame it (frame-ancestors, and X-Frame-Options for
// browsers that predate it): its Authorize dialog takes an API key.
const CONTENT_SECURITY_POLICY = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'";

/** GET /docs for the public `document`, its assets, served from the swagger-ui-dist package (no CDN), and the service's icon. */
export function referencePage(document: ReferenceDocument): Router {
  const router = express.Router();
  const assets = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const html = page(document);
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
  router.use('/docs/assets', servedAs('/docs/assets/*'), express.static(assets, { index: false }));
  router.get('/favicon.ico', sendIcon(faviconIco(), 'image/vnd.microsoft.icon'));
  router.get('/favicon.svg', sendIcon(FAVICON_SVG, 'image/svg+xml'));
  return router;
}
