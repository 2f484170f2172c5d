import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminDocument, publicDocument } from '../../server/wiring/api-documents.ts';
import { VERSION } from '../../server/core/version.ts';
import { launchChromium, SKIP_BROWSER } from '../support/chromium.ts';
import { servedRoutes } from '../support/served-routes.ts';
import { Service, startService } from './harness.ts';
import { ERRORS } from '../../server/core/errors.ts';
import { demoInstrumentId } from '../../server/demo/catalog.ts';

let svc: Service;
beforeAll(async () => {
  // The demo data set, loaded on this file's empty database at start: the document's examples are taken from it.
  svc = await startService({ DEMO_DATA: 'auto' });
});
afterAll(() => svc.stop());

/** The spec's public routes (market-data-service.md), every one served, and the five of export jobs (issue 41: POST and GET /exports, GET and DELETE /exports/{id}, its files). */
const SPEC_PUBLIC_ROUTES = 29 + 5;

const ERROR_CODE_COUNT = Object.keys(ERRORS).length;

const documented = (document: ReturnType<typeof publicDocument>) =>
  Object.entries(document.paths ?? {}).flatMap(([p, ops]) => Object.keys(ops as object).map((m) => `${m} ${p.replace(/\{(\w+)\}/g, ':$1')}`));

describe('the API describes itself', () => {
  it('when the apps are built, then every route they serve is in their OpenAPI document, and every documented route is served', () => {
    // The routes of the /v1 and /admin/v1 routers; the apps' own routes (/healthz, /readyz, /docs, /account, the documents, /metrics) are outside the API.
    const publicServed = servedRoutes(svc.runtime.app('public'), '/v1').filter((r) => !r.endsWith('/openapi.json'));
    const adminServed = servedRoutes(svc.runtime.app('admin'), '/admin/v1').filter((r) => !r.endsWith('/openapi.json') && !r.endsWith('/metrics'));
    expect(new Set(publicServed)).toEqual(new Set(documented(publicDocument(VERSION))));
    expect(new Set(adminServed)).toEqual(new Set(documented(adminDocument(VERSION))));
    expect(publicServed.length).toBe(SPEC_PUBLIC_ROUTES);
  });

  it('when /v1/openapi.json is fetched without a key, then it is the public document; the admin document needs the admin token', async () => {
    const open = await svc.get('/v1/openapi.json');
    expect(open.status).toBe(200);
    expect(open.body).toEqual(JSON.parse(JSON.stringify(publicDocument(VERSION))));
    const admin = await svc.admin('GET', '/openapi.json');
    expect(admin.status).toBe(200);
    expect(admin.body).toEqual(JSON.parse(JSON.stringify(adminDocument(VERSION))));
    const anonymous = await fetch(`${svc.runtime.adminUrl}/admin/v1/openapi.json`);
    expect(anonymous.status).toBe(401);
  });

  it('when /docs is fetched, then the page and every asset it names come from this server, under a policy that refuses any other origin', async () => {
    const res = await fetch(`${svc.runtime.publicUrl}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
    const html = await res.text();
    // What the page loads: its stylesheets, icon and scripts (an <a href> is a link, not an asset).
    const refs = [...html.matchAll(/<(?:link|script|img)\b[^>]*\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(refs.length).toBeGreaterThanOrEqual(4);
    for (const ref of refs) {
      expect(ref, 'a same-origin path').toMatch(/^\/(?!\/)/);
      expect((await fetch(`${svc.runtime.publicUrl}${ref}`)).status, ref).toBe(200);
    }
    for (const code of ['not_found', 'invalid_request', 'rate_limited', 'overloaded']) expect(html).toContain(`id="${code}"`);
  });

  it('when /docs or any of its assets is fetched, then no page may frame it: frame-ancestors none and X-Frame-Options DENY', async () => {
    for (const ref of ['/docs', '/docs/reference.js', '/docs/reference.css', '/docs/assets/swagger-ui.css']) {
      const res = await fetch(`${svc.runtime.publicUrl}${ref}`);
      expect(res.status, ref).toBe(200);
      expect(res.headers.get('content-security-policy'), ref).toContain("frame-ancestors 'none'");
      expect(res.headers.get('x-frame-options'), ref).toBe('DENY');
    }
  });

  it('when /docs is fetched without running its scripts, then its <noscript> reference lists every public operation with its parameters (description, default, example) and answers, and the page has no inline script', async () => {
    const html = await (await fetch(`${svc.runtime.publicUrl}/docs`)).text();
    const noscript = html.slice(html.indexOf('<noscript>'), html.indexOf('</noscript>'));
    const document = publicDocument(VERSION);
    let operations = 0;
    for (const [template, item] of Object.entries(document.paths ?? {})) {
      for (const [method, op] of Object.entries(item as Record<string, { operationId: string; parameters?: { name: string }[] }>)) {
        operations++;
        const start = noscript.indexOf(`<article class="operation" id="operation-${op.operationId}">`);
        expect(start, op.operationId).toBeGreaterThan(0);
        const article = noscript.slice(start, noscript.indexOf('</article>', start));
        expect(article, op.operationId).toContain(`<code>${method.toUpperCase()} ${template}</code>`);
        for (const parameter of op.parameters ?? []) expect(article, `${op.operationId} ${parameter.name}`).toContain(`<code>${parameter.name}</code>`);
        expect(article, op.operationId).toContain('<a href="#invalid_request"><code>invalid_request</code></a>');
      }
    }
    expect(operations).toBe(SPEC_PUBLIC_ROUTES);
    const prices = noscript.slice(noscript.indexOf('id="operation-getDailyPrices"'));
    const adjusted = prices.slice(prices.indexOf('<code>adjusted</code>'), prices.indexOf('</tr>', prices.indexOf('<code>adjusted</code>')));
    expect(adjusted).toContain('true: prices adjusted backward');
    expect(adjusted).toMatch(/<td><code>false<\/code><\/td><td><code>true<\/code><\/td>$/);
    expect(prices).toContain(`Example request: <code>GET /v1/instruments/${demoInstrumentId('MSFT')}/prices?from=`);
    for (const tag of html.matchAll(/<script\b[^>]*>([^<]*)<\/script>/g)) {
      expect(tag[0]).toMatch(/^<script src="\/docs\//);
      expect(tag[1]).toBe('');
    }
  });

  it("when /docs is fetched, then the error table shows the codes' texts with their code spans as <code>, and no Markdown backtick", async () => {
    const html = await (await fetch(`${svc.runtime.publicUrl}/docs`)).text();
    const start = html.indexOf('<section id="errors">');
    const table = html.slice(start, html.indexOf('</section>', start));
    expect(table).not.toContain('`');
    expect(table).toContain('<code>Retry-After</code>');
    expect(table).toContain('<code>Authorization: Bearer &#60;key&#62;</code>');
  });

  it('when the icon is fetched, as /favicon.ico (what a browser asks any page for) or the /favicon.svg that /docs links, then it is an image cached for a day, and its ETag revalidates to 304', async () => {
    for (const [ref, type] of [
      ['/favicon.ico', 'image/vnd.microsoft.icon'],
      ['/favicon.svg', 'image/svg+xml'],
    ]) {
      const res = await fetch(`${svc.runtime.publicUrl}${ref}`);
      expect(res.status, ref).toBe(200);
      expect(res.headers.get('content-type'), ref).toBe(type);
      expect(res.headers.get('cache-control'), ref).toBe('public, max-age=86400');
      const bytes = Buffer.from(await res.arrayBuffer());
      if (ref.endsWith('.ico')) expect([...bytes.subarray(0, 6)], 'ICO header: one icon').toEqual([0, 0, 1, 0, 1, 0]);
      else expect(bytes.toString()).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      const again = await fetch(`${svc.runtime.publicUrl}${ref}`, { headers: { 'if-none-match': res.headers.get('etag')! } });
      expect(again.status, ref).toBe(304);
    }
    expect(await (await fetch(`${svc.runtime.publicUrl}/docs`)).text()).toContain('<link rel="icon" href="/favicon.svg" type="image/svg+xml">');
  });
});

describe('errors that teach', () => {
  let key: string;
  beforeAll(async () => {
    key = await svc.keyWith(['prices:read', 'instruments:read', 'analytics:read']);
  });

  it("when an error is answered, then docsUrl is the reference page's anchor for its code", async () => {
    const res = await svc.get('/v1/instruments/00000000-0000-4000-8000-00000000abcd', key);
    expect(res.status).toBe(404);
    expect(res.body.error.docsUrl).toMatch(/\/docs#not_found$/);
  });

  it('when a query parameter is unknown, then it is named with the accepted ones; a missing one is "required"; a bad from is reported alone', async () => {
    const id = '00000000-0000-4000-8000-00000000abcd';
    const unknown = await svc.get(`/v1/instruments/${id}/prices?from=2020-01-01&to=2020-02-01&form=x`, key);
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details).toEqual({
      form: ['unknown parameter; accepted: from, to, adjusted, asOf, includeBackfilled, actionSetVersion, format'],
    });
    const missing = await svc.get(`/v1/instruments/${id}/prices?from=2020-01-01`, key);
    expect(missing.body.error.details).toEqual({ to: ['required (a date yyyy-mm-dd)'] });
    const badFrom = await svc.get(`/v1/instruments/${id}/prices?from=2020-13-01&to=2020-02-01`, key);
    expect(badFrom.body.error.details).toEqual({ from: ['is not a calendar date; received "2020-13-01"'] });
    const body = await svc.post('/v1/analytics/option-price', key, { spot: 100, strike: 100, expiryDays: 30, rate: 0.01, type: 'call' });
    expect(body.status).toBe(400);
    expect(body.body.error.details).toEqual({ vol: ['required (a number greater than 0 and at most 5)'] });
  });

  it('when a path is served for other methods, then 405 with Allow; OPTIONS answers 204 with Allow', async () => {
    const res = await fetch(`${svc.runtime.publicUrl}/v1/instruments/bulk`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    expect((await res.json()).error.code).toBe('method_not_allowed');
    const get = await fetch(`${svc.runtime.publicUrl}/v1/analytics/option-price`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST, OPTIONS');
    const options = await fetch(`${svc.runtime.publicUrl}/v1/prices/bulk`, { method: 'OPTIONS' });
    expect(options.status).toBe(204);
    expect(options.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    const admin = await fetch(`${svc.runtime.adminUrl}/admin/v1/status`, { method: 'POST', headers: { authorization: `Bearer ${svc.runtime.adminToken}` } });
    expect(admin.status).toBe(405);
    expect(admin.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
  });
});

describe.skipIf(SKIP_BROWSER)('the reference page in a browser', () => {
  it('when /docs is opened, then it renders every public operation and requests nothing from any other origin', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const origin = new URL(svc.runtime.publicUrl).origin;
      const requested: string[] = [];
      page.on('request', (r) => requested.push(r.url()));
      await page.goto(`${svc.runtime.publicUrl}/docs`);
      await page.waitForSelector('.opblock', { timeout: 20_000 });
      const operations = await page.locator('.opblock').count();
      expect(operations).toBe(SPEC_PUBLIC_ROUTES);
      const elsewhere = requested.filter((u) => !u.startsWith(origin) && !u.startsWith('data:'));
      expect(elsewhere).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it('when /docs is opened, then the error table renders code spans, the conventions head the page, the browser decodes both icons, and nothing fails or logs an error', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(`console: ${m.text()}`);
      });
      page.on('response', (r) => {
        if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
      });
      await page.goto(`${svc.runtime.publicUrl}/docs`);
      await page.waitForSelector('.opblock', { timeout: 20_000 });
      const table = page.locator('#errors table');
      expect(await table.locator('td code').count()).toBeGreaterThan(ERROR_CODE_COUNT);
      expect(await table.innerText()).not.toContain('`');
      expect(await table.locator('#rate_limited td code').allInnerTexts()).toEqual(['rate_limited', 'Retry-After']);
      const description = await page.locator('.info .description').innerText();
      expect(description).toContain('Point in time.');
      expect(description).not.toContain('docs/api.md');
      expect(await page.locator('.info .description a[href="/docs#errors"]').count()).toBe(1);
      const sizes = await page.evaluate(() =>
        Promise.all(
          ['/favicon.ico', '/favicon.svg'].map(async (src) => {
            const image = new Image();
            image.src = src;
            await image.decode();
            return [src, image.naturalWidth, image.naturalHeight];
          }),
        ),
      );
      expect(sizes).toEqual([
        ['/favicon.ico', 32, 32],
        ['/favicon.svg', 32, 32],
      ]);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  /**
   * Opens /docs in Chromium with `key` authorised, runs "Try it out" on the
   * operation `operation` (its Swagger UI element id) as the page fills it in,
   * and hands the answer to the request whose URL starts with `path` to `check`.
   */
  async function tryItOut(key: string, operation: string, path: string, check: (res: Response) => Promise<void>) {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const origin = new URL(svc.runtime.publicUrl).origin;
      await page.goto(`${svc.runtime.publicUrl}/docs`);
      await page.waitForSelector('.opblock', { timeout: 20_000 });
      await page.evaluate(
        (k) => (window as typeof window & { ui: { preauthorizeApiKey(name: string, value: string): void } }).ui.preauthorizeApiKey('apiKey', k),
        key,
      );
      const block = page.locator(`#${operation}`);
      await block.locator('.opblock-summary').click();
      await block.locator('button.try-out__btn').click();
      const answered = page.waitForResponse((r) => r.url().startsWith(`${origin}${path}`));
      await block.locator('button.execute').click();
      await check(await answered);
    } finally {
      await browser.close();
    }
  }

  it('when "Try it out" runs an operation with an authorized key, then the request goes to this origin under /v1 and is answered', async () => {
    const key = await svc.keyWith(['sentiment:read']);
    await tryItOut(key, 'operations-Sentiment-listSentimentSourceLeads', '/v1/sentiment/source-leads', async (res) => {
      expect(new URL(res.url()).pathname).toBe('/v1/sentiment/source-leads');
      expect(res.request().headers().authorization).toBe(`Bearer ${key}`);
      expect(res.status()).toBe(200);
    });
  });

  it('when /docs is opened with scripts off, then the reference shows every public operation, with the examples as text', async () => {
    const browser = await launchChromium();
    try {
      const page = await (await browser.newContext({ javaScriptEnabled: false })).newPage();
      await page.goto(`${svc.runtime.publicUrl}/docs`);
      const operations = page.locator('#reference .operation');
      expect(await operations.count()).toBe(SPEC_PUBLIC_ROUTES);
      const prices = page.locator('#operation-getDailyPrices');
      expect(await prices.isVisible()).toBe(true);
      expect(await prices.innerText()).toContain(`GET /v1/instruments/${demoInstrumentId('MSFT')}/prices?from=`);
      expect(await page.locator('#errors #not_found').isVisible()).toBe(true);
    } finally {
      await browser.close();
    }
  });

  it('when "Try it out" runs the daily prices read with the examples it fills in, then the demo data answers 200 with the bars of MSFT the examples name', async () => {
    const key = await svc.keyWith(['prices:read']);
    const document = publicDocument(VERSION);
    const examples = Object.fromEntries(
      ((document.paths?.['/v1/instruments/{id}/prices'] as { get: { parameters: { name: string; example?: unknown }[] } }).get.parameters ?? []).map((p) => [
        p.name,
        String(p.example),
      ]),
    );
    await tryItOut(key, 'operations-Prices-getDailyPrices', '/v1/instruments/', async (res) => {
      const url = new URL(res.url());
      expect(url.pathname).toBe(`/v1/instruments/${examples.id}/prices`);
      const { id: _id, ...query } = examples;
      expect(Object.fromEntries(url.searchParams)).toEqual(query);
      expect(res.status()).toBe(200);
      const body = await res.json();
      expect(body.data.length).toBeGreaterThan(0);
      expect(body.data.at(-1).barDate).toBe(examples.to);
    });
  });

  it('when another origin frames /docs, then the browser refuses to render it in the frame', async () => {
    // Another origin: the same loopback address on another port.
    const docs = `${svc.runtime.publicUrl}/docs`;
    const framing = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><title>framing</title><iframe id="docs" src="${docs}" width="800" height="600"></iframe>`);
    });
    await new Promise<void>((resolve) => framing.listen(0, '127.0.0.1', resolve));
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const answered = page.waitForResponse((r) => r.url() === docs);
      await page.goto(`http://127.0.0.1:${(framing.address() as AddressInfo).port}/`);
      expect((await answered).status()).toBe(200);
      await page.waitForLoadState('load');
      // A refused frame is left on the browser's error page: it never runs the reference's scripts.
      const frame = page.frames().find((f) => f !== page.mainFrame());
      expect(frame).toBeDefined();
      expect(await frame!.locator('#api, .opblock').count()).toBe(0);
    } finally {
      await browser.close();
      await new Promise((resolve) => framing.close(resolve));
    }
  });
});
