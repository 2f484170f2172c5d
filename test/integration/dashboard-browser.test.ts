import { createHash, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Browser, BrowserContext, BrowserContextOptions, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../server/core/scopes.ts';
import { launchChromium, SKIP_BROWSER } from '../support/chromium.ts';
import { Service, startService } from './harness.ts';

// The dashboard as a holder uses it: a real Chromium (one browser, one
// context per signed-in holder) against the real service, whose every log
// line is kept for the last test.

const logLines: string[] = [];
/** Every password typed, key shown, cookie value and CSRF token seen: none may be in the log. */
const secrets = new Set<string>();
/** Content-Security-Policy violations and script errors reported by any page. */
const pageProblems: string[] = [];

let svc: Service;
let browser: Browser;
let base: string;
let holderA: Holder;
let holderB: Holder;

interface Holder {
  accountId: string;
  login: string;
  password: string;
  context: BrowserContext;
  page: Page;
  csrf: string;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest();

/** A new account with a dashboard login set through the admin API. */
async function newLogin(): Promise<{ accountId: string; login: string; password: string }> {
  const accountId = await svc.createAccount();
  const login = `browser-${randomUUID()}@example.com`;
  const password = `pw-${randomUUID()}`;
  secrets.add(password);
  expect((await svc.admin('POST', `/accounts/${accountId}/password`, { login, password })).status).toBe(200);
  return { accountId, login, password };
}

async function newContext(options: BrowserContextOptions = {}): Promise<BrowserContext> {
  const context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'], ...options });
  // A missing element fails its test well inside the 30 s test timeout.
  context.setDefaultTimeout(10_000);
  context.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) pageProblems.push(m.text());
  });
  context.on('weberror', (e) => pageProblems.push(String(e.error())));
  return context;
}

/** Keeps the context's cookie values and the page's CSRF tokens as secrets. */
async function keepSecretsOf(context: BrowserContext, page: Page): Promise<void> {
  for (const c of await context.cookies()) secrets.add(c.value);
  for (const token of await page.locator('input[name="csrf"]').evaluateAll((inputs) => inputs.map((i) => (i as HTMLInputElement).value))) secrets.add(token);
}

async function signIn(page: Page, login: string, password: string): Promise<void> {
  await page.goto(`${base}/account/sign-in`);
  await keepSecretsOf(page.context(), page);
  await page.fill('#login', login);
  await page.fill('#password', password);
  await Promise.all([page.waitForURL(/\/account\/(keys|sign-in)$/), page.click('form[action="/account/sign-in"] button')]);
}

async function signedInHolder(options: BrowserContextOptions = {}): Promise<Holder> {
  const { accountId, login, password } = await newLogin();
  const context = await newContext(options);
  const page = await context.newPage();
  await signIn(page, login, password);
  expect(page.url()).toBe(`${base}/account/keys`);
  await keepSecretsOf(context, page);
  return { accountId, login, password, context, page, csrf: await page.locator('input[name="csrf"]').first().inputValue() };
}

/** Creates a key with the form on the keys page; the full key shown, and its id. */
async function createKey(page: Page, name: string, environment: 'sandbox' | 'live', scopes: readonly string[] | 'all'): Promise<{ key: string; id: string }> {
  await page.goto(`${base}/account/keys`);
  await page.fill('#key-name', name);
  await page.check(`input[name="environment"][value="${environment}"]`);
  if (scopes === 'all') await page.check('#select-all');
  else for (const s of scopes) await page.check(`input[name="scopes"][value="${s}"]`);
  await page.click('#create-key button[type="submit"]');
  const key = await page.inputValue('#full-key');
  secrets.add(key);
  return { key, id: await keyIdOf(page, key) };
}

/** The id of a key of the signed-in account, found by its prefix in the keys list. */
async function keyIdOf(page: Page, key: string): Promise<string> {
  const list = await (await page.context().request.get(`${base}/account/keys`)).text();
  const row = list
    .split('<tr data-key-id="')
    .slice(1)
    .find((r) => r.includes(`<code>${key.slice(0, 12)}…</code>`));
  if (!row) throw new Error('the new key is not in the list');
  return row.slice(0, 36);
}

/** Reloads the page, then counts the elements of `locator` (for lastUsedAt, written within a second). */
async function reloadedCount(page: Page, locator: ReturnType<Page['locator']>): Promise<number> {
  await page.reload();
  return locator.count();
}

const v1 = (key: string) => svc.get('/v1/instruments?query=zz', key);

/** How far the page reaches past the window's right edge, in CSS px (0 when it does not scroll sideways). */
const sidewaysOverflow = (page: Page) => page.evaluate(() => Math.max(0, document.documentElement.scrollWidth - window.innerWidth));

/** The space between two elements' boxes: across when they share a line, else down; negative when they overlap. */
async function gapBetween(a: Locator, b: Locator): Promise<number> {
  const [p, q] = [(await a.boundingBox())!, (await b.boundingBox())!];
  const across = Math.max(q.x - (p.x + p.width), p.x - (q.x + q.width));
  const down = Math.max(q.y - (p.y + p.height), p.y - (q.y + q.height));
  return Math.max(across, down);
}

/** The usage chart's drawing and its container, in CSS px. */
const chartWidths = (chart: Locator) => chart.evaluate((c) => ({ drawn: c.querySelector('.uplot')!.getBoundingClientRect().width, container: c.clientWidth }));

beforeAll(async () => {
  svc = await startService({ LOG_LEVEL: 'info' }, { write: (line: string) => void logLines.push(line) });
  // 127.0.0.1, not the listener's 0.0.0.0: a loopback origin is a secure context, which the clipboard API needs.
  base = svc.runtime.publicUrl.replace('//0.0.0.0:', '//127.0.0.1:');
  // Earlier test files share the database and the address 127.0.0.1: start with fresh sign-in windows.
  await svc.sql`delete from dashboard_sign_in_attempts`;
  if (SKIP_BROWSER) return;
  browser = await launchChromium();
  [holderA, holderB] = [await signedInHolder(), await signedInHolder()];
});

afterAll(async () => {
  await browser?.close();
  await svc.stop();
});

describe.skipIf(SKIP_BROWSER)('dashboard in a browser', () => {
  it('when a holder signs in by keyboard alone with a wrong password, then sign-in says so; with the right one, the keys page opens', async () => {
    const { login, password } = await newLogin();
    const context = await newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${base}/account/sign-in`);
      await keepSecretsOf(context, page);
      const tabTo = async (id: string) => {
        for (let i = 0; i < 30 && (await page.evaluate(() => document.activeElement?.id)) !== id; i++) await page.keyboard.press('Tab');
        expect(await page.evaluate(() => document.activeElement?.id)).toBe(id);
      };
      await tabTo('login');
      await page.keyboard.type(login);
      await tabTo('password');
      await page.keyboard.type('not the password at all');
      const [wrong] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.keyboard.press('Enter')]);
      expect(wrong.status()).toBe(401);
      await expect.poll(() => page.locator('[role="alert"]').textContent()).toContain('the login or the password is wrong');
      expect(page.url()).toBe(`${base}/account/sign-in`);
      expect(await page.inputValue('#login')).toBe(login);
      await tabTo('password');
      await page.keyboard.type(password);
      await Promise.all([page.waitForURL(`${base}/account/keys`), page.keyboard.press('Enter')]);
      await keepSecretsOf(context, page);
      // The create form by keyboard: Space on "select all" checks all 13 scopes one by one.
      await tabTo('select-all');
      await page.keyboard.press('Space');
      expect(await page.locator('input[name="scopes"]:checked').count()).toBe(SCOPES.length);
    } finally {
      await context.close();
    }
  });

  it('when a key is created, then it is shown once with a copy button and a warning, works on /v1 at once, and is gone on reload, back and forward', async () => {
    const { page } = holderA;
    await page.goto(`${base}/account/keys`);
    await page.fill('#key-name', 'shown once');
    await page.check('input[name="environment"][value="live"]');
    await page.check('#select-all');
    const checked = await page.locator('input[name="scopes"]:checked').evaluateAll((boxes) => boxes.map((b) => (b as HTMLInputElement).value));
    expect(checked.sort()).toEqual([...SCOPES].sort());
    const [answer] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.click('#create-key button[type="submit"]')]);
    expect(answer.status()).toBe(201);
    expect(answer.headers()['cache-control']).toBe('no-store');
    const key = await page.inputValue('#full-key');
    secrets.add(key);
    expect(key).toMatch(/^pk_live_[A-Za-z0-9_-]{43}$/);
    expect(await page.locator('.new-key [role="alert"]').textContent()).toContain('shown this once');
    // The clipboard is written only from the focused page (holder B's page opened later).
    await page.bringToFront();
    await page.click('#copy-key');
    await expect.poll(() => page.locator('#copy-status').textContent()).toBe('Copied to the clipboard.');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    // The key is in no URL: the history entry of the answer is the plain list.
    expect(page.url()).toBe(`${base}/account/keys`);
    expect((await v1(key)).status).toBe(200);

    await page.reload();
    expect(await page.locator('#full-key').count()).toBe(0);
    expect(await page.content()).not.toContain(key);
    expect(await page.locator('tr[data-key-id] code', { hasText: key.slice(0, 12) }).count()).toBe(1);
    await page.goBack();
    expect(await page.content()).not.toContain(key);
    await page.goForward();
    expect(await page.content()).not.toContain(key);
    expect(await page.locator('#full-key').count()).toBe(0);
  });

  it('when a key makes a request, then its Last used shows the time on the next view of the list', async () => {
    const { page } = holderA;
    const { key, id } = await createKey(page, 'last used', 'sandbox', ['instruments:read']);
    await page.goto(`${base}/account/keys`);
    const cell = page.locator(`tr[data-key-id="${id}"] td.last-used`);
    expect(await cell.textContent()).toBe('never');
    // The database clock and ours agree to the second; lastUsedAt is written in batches, once a second.
    const sent = Date.now() - 1000;
    expect((await v1(key)).status).toBe(200);
    const answered = Date.now() + 1000;
    await expect.poll(() => reloadedCount(page, cell.locator('time'))).toBe(1);
    const shown = Date.parse((await cell.locator('time').getAttribute('datetime'))!);
    expect(shown).toBeGreaterThanOrEqual(sent);
    expect(shown).toBeLessThanOrEqual(answered);
    // Shown to the minute, in UTC.
    expect(await cell.textContent()).toBe(`${new Date(shown).toISOString().slice(0, 10)} ${new Date(shown).toISOString().slice(11, 16)} UTC`);
  });

  it('when a key is revoked after its confirmation, then the list marks it revoked and its next /v1 request answers revoked_api_key', async () => {
    const { page } = holderA;
    const { key, id } = await createKey(page, 'to revoke', 'live', ['instruments:read']);
    await page.goto(`${base}/account/keys`);
    await page.click(`tr[data-key-id="${id}"] a[href$="/revoke"]`);
    expect(page.url()).toBe(`${base}/account/keys/${id}/revoke`);
    expect(await page.locator('main').textContent()).toContain('revoked_api_key');
    // Until confirmed, nothing is revoked.
    expect((await v1(key)).status).toBe(200);
    await Promise.all([page.waitForURL(/\/account\/keys\?revoked=/), page.click('button.danger')]);
    const row = page.locator(`tr[data-key-id="${id}"]`);
    expect(await row.getAttribute('class')).toBe('revoked');
    expect(await row.locator('.revoked-badge').textContent()).toBe('Revoked');
    expect(await row.locator('td.status time').count()).toBe(1);
    const res = await v1(key);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('revoked_api_key');
  });

  it('when a key is rolled, then the new key has its scopes and both keys’ Last used stand side by side until the old one is revoked', async () => {
    const { page } = holderA;
    const old = await createKey(page, 'rolling', 'live', ['instruments:read', 'fx:read']);
    expect((await v1(old.key)).status).toBe(200);
    await page.goto(`${base}/account/keys`);
    await page.click(`tr[data-key-id="${old.id}"] form[action$="/roll"] button`);
    const next = await page.inputValue('#full-key');
    secrets.add(next);
    expect(await page.locator('main').textContent()).toContain(`replaces ${old.key.slice(0, 12)}…`);
    expect((await v1(next)).status).toBe(200);
    const nextId = await keyIdOf(page, next);
    await page.goto(`${base}/account/keys`);
    const pair = page.locator(`tr[data-old-id="${old.id}"][data-new-id="${nextId}"]`);
    await expect.poll(() => reloadedCount(page, pair.locator('td.last-used time'))).toBe(2);
    expect(await page.locator(`tr[data-key-id="${nextId}"] td.scopes`).textContent()).toBe('instruments:read, fx:read');
    await pair.locator('a', { hasText: 'Revoke old key' }).click();
    await Promise.all([page.waitForURL(/\/account\/keys\?revoked=/), page.click('button.danger')]);
    expect(await page.locator('tr[data-old-id]').count()).toBe(0);
    expect((await v1(old.key)).body.error.code).toBe('revoked_api_key');
    expect((await v1(next)).status).toBe(200);
  });

  it('when a request has just been made, then the usage chart plots it, with the numbers GET /admin/v1/usage answers', async () => {
    const { page, accountId } = holderB;
    const { key } = await createKey(page, 'charted', 'sandbox', ['instruments:read']);
    for (let i = 0; i < 3; i++) expect((await v1(key)).status).toBe(200);
    const admin = (await svc.admin('GET', `/usage?accountId=${accountId}&days=30`)).body.data;
    const today = admin.usage.sandbox.days.find((d: { day: string }) => d.day === new Date().toISOString().slice(0, 10));
    expect(today.admitted).toBeGreaterThanOrEqual(3);
    await page.goto(`${base}/account/usage`);
    const chart = page.locator('#sandbox-chart');
    await chart.locator('canvas').waitFor();
    expect(JSON.parse((await chart.getAttribute('data-plotted'))!)).toEqual({ days: 30, admitted: today.admitted, refused: today.refused });
    expect(await page.locator(`#sandbox-days tr[data-day="${today.day}"] td`).allTextContents()).toEqual([
      today.day,
      String(today.admitted),
      String(today.refused),
    ]);
    expect(await page.locator('[data-environment="sandbox"] h2').textContent()).toContain('not billed');
    expect(await page.locator('[data-environment="live"] h2').textContent()).toContain('billable');
    expect(await page.locator('#sandbox-minute').getAttribute('max')).toBe('120');
    await page.click('a[href="/account/usage?days=400"]');
    await page.locator('#sandbox-chart canvas').waitFor();
    expect(JSON.parse((await page.locator('#sandbox-chart').getAttribute('data-plotted'))!).days).toBe(400);
  });

  it('when the window is 420 px wide, then no dashboard page scrolls sideways, and the usage chart fills its container as the window resizes', async () => {
    const narrow = { width: 420, height: 800 };
    const context = await newContext({ viewport: narrow });
    try {
      const signInPage = await context.newPage();
      await signInPage.goto(`${base}/account/sign-in`);
      await keepSecretsOf(context, signInPage);
      expect(await sidewaysOverflow(signInPage), 'sign-in').toBe(0);
    } finally {
      await context.close();
    }
    const { page, context: holderContext } = await signedInHolder({ viewport: narrow });
    try {
      // A long unbroken name, every scope, a roll in progress and a revoked key: the widest the pages get.
      const name = 'nightly-pricing-export-for-the-reporting-warehouse';
      const old = await createKey(page, name, 'live', 'all');
      expect(await sidewaysOverflow(page), 'created key').toBe(0);
      const sandbox = await createKey(page, 'sandbox', 'sandbox', ['instruments:read']);
      for (let i = 0; i < 2; i++) expect((await v1(sandbox.key)).status).toBe(200);
      await page.goto(`${base}/account/keys`);
      await page.click(`tr[data-key-id="${old.id}"] form[action$="/roll"] button`);
      secrets.add(await page.inputValue('#full-key'));
      expect(await sidewaysOverflow(page), 'rolled key').toBe(0);
      await page.goto(`${base}/account/keys/${sandbox.id}/revoke`);
      expect(await sidewaysOverflow(page), 'revoke').toBe(0);
      await Promise.all([page.waitForURL(/\/account\/keys\?revoked=/), page.click('button.danger')]);
      expect(await page.locator('tr[data-old-id]').count()).toBe(1);
      expect(await page.locator('tr.revoked').count()).toBe(1);
      expect(await sidewaysOverflow(page), 'keys').toBe(0);
      // The list is still whole: it scrolls inside its own region, which the keyboard can reach.
      const list = page.locator('.table-scroll', { has: page.locator('table.keys') });
      expect(await list.evaluate((r) => r.scrollWidth > r.clientWidth)).toBe(true);
      expect(await list.getAttribute('tabindex')).toBe('0');
      await page.goto(`${base}/account/keys/${old.id}`);
      expect(await page.locator('tr[data-old-id]').count()).toBe(1);
      expect(await sidewaysOverflow(page), 'key').toBe(0);

      await page.goto(`${base}/account/usage`);
      const chart = page.locator('#sandbox-chart');
      await chart.locator('canvas').waitFor();
      expect(await sidewaysOverflow(page), 'usage').toBe(0);
      const atNarrow = await chartWidths(chart);
      expect(atNarrow.drawn).toBe(atNarrow.container);
      await page.setViewportSize({ width: 1000, height: 800 });
      // Redrawn in the frame after the resize: a deadline for a loaded machine, not a timing check.
      await expect.poll(async () => (await chartWidths(chart)).drawn, { timeout: 10_000 }).toBeGreaterThan(atNarrow.container + 400);
      const atWide = await chartWidths(chart);
      expect(atWide.drawn).toBe(atWide.container);
      await page.setViewportSize(narrow);
      await expect.poll(async () => (await chartWidths(chart)).drawn, { timeout: 10_000 }).toBe(atNarrow.container);
      expect(await sidewaysOverflow(page), 'usage after resizing').toBe(0);
    } finally {
      await holderContext.close();
    }
  });

  it('when the revoke and key pages show a button beside a link, then the two stand apart, side by side or one above the other', async () => {
    for (const viewport of [undefined, { width: 420, height: 800 }]) {
      const { page, context } = await signedInHolder(viewport && { viewport });
      try {
        const { id } = await createKey(page, 'spaced', 'live', ['fx:read']);
        await page.goto(`${base}/account/keys/${id}`);
        const roll = page.locator('main form[action$="/roll"] button');
        const revoke = page.locator(`main a[href="/account/keys/${id}/revoke"]`);
        expect(await gapBetween(roll, revoke), `key page ${viewport?.width ?? 'wide'}`).toBeGreaterThanOrEqual(8);
        // Measured once the revoke page has loaded, its stylesheet with it: laid out before that, the two touch.
        await Promise.all([page.waitForURL(`${base}/account/keys/${id}/revoke`), revoke.click()]);
        const confirm = page.locator('main button.danger');
        const cancel = page.locator('main a', { hasText: 'Cancel' });
        expect(await gapBetween(confirm, cancel), `revoke page ${viewport?.width ?? 'wide'}`).toBeGreaterThanOrEqual(8);
      } finally {
        await context.close();
      }
    }
  });

  it('when the keys page opens, then no heading is followed by one that repeats it, and the list is named by its caption', async () => {
    const { page, context } = await signedInHolder();
    try {
      const old = await createKey(page, 'headings', 'live', ['fx:read']);
      await page.goto(`${base}/account/keys`);
      await page.click(`tr[data-key-id="${old.id}"] form[action$="/roll"] button`);
      secrets.add(await page.inputValue('#full-key'));
      await page.goto(`${base}/account/keys`);
      const headings = (await page.locator('main :is(h1, h2, h3)').allTextContents()).map((h) => h.trim().toLowerCase());
      expect(headings[0]).toBe('api keys');
      // Not vacuous: the roll and create sections have their headings.
      expect(headings).toEqual(expect.arrayContaining(['keys being rolled', 'create a key']));
      for (let i = 1; i < headings.length; i++) {
        expect(headings[i - 1].includes(headings[i]) || headings[i].includes(headings[i - 1]), `${headings[i - 1]} → ${headings[i]}`).toBe(false);
      }
      expect(await page.getByRole('table', { name: 'Every key of the account, oldest first' }).count()).toBe(1);
    } finally {
      await context.close();
    }
  });

  it('when the pointer is over a day of the usage chart, then the legend shows that UTC day as a date, and the day axis is labelled with dates', async () => {
    const { page, context } = await signedInHolder();
    try {
      const { key } = await createKey(page, 'hovered', 'sandbox', ['instruments:read']);
      expect((await v1(key)).status).toBe(200);
      await page.goto(`${base}/account/usage`);
      const chart = page.locator('#sandbox-chart');
      await chart.locator('canvas').waitFor();
      const today = (await chart.getAttribute('data-today'))!;
      // The last day's bars are at the right end of the plot.
      const over = chart.locator('.u-over');
      const plot = (await over.boundingBox())!;
      await over.hover({ position: { x: plot.width - 3, y: plot.height / 2 } });
      const day = chart.locator('.u-legend .u-series').first().locator('.u-value');
      await expect.poll(() => day.textContent()).toBe(today);
      const labels = (await chart.getAttribute('data-day-labels'))!.split(' ');
      expect(labels.length).toBeGreaterThan(1);
      for (const label of labels) expect(label).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    } finally {
      await context.close();
    }
  });

  it('when an environment had no requests in the period, then its table says so in a row, and a chart still draws its days', async () => {
    const { page, context } = await signedInHolder();
    try {
      const { key } = await createKey(page, 'sandbox only', 'sandbox', ['instruments:read']);
      expect((await v1(key)).status).toBe(200);
      for (const days of [30, 90]) {
        await page.goto(`${base}/account/usage?days=${days}`);
        await page.locator('#live-chart canvas').waitFor();
        expect(await page.locator('#live-days tbody td').allTextContents()).toEqual([`No live requests in the last ${days} days.`]);
        expect(JSON.parse((await page.locator('#live-chart').getAttribute('data-plotted'))!)).toEqual({ days, admitted: 0, refused: 0 });
        expect(await page.locator('#sandbox-days tbody tr[data-day]').count()).toBe(1);
        expect(await page.locator('#sandbox-days').textContent()).not.toContain('No sandbox requests');
      }
    } finally {
      await context.close();
    }
  });

  it('when another account’s keys exist, then they are not in the list, and their ids are refused by page, by revoke and by roll, even with this session’s CSRF token', async () => {
    const foreign = await createKey(holderB.page, 'belongs to B', 'live', ['instruments:read']);
    const { page, context, csrf } = holderA;
    await page.goto(`${base}/account/keys`);
    expect(await page.content()).not.toContain(foreign.id);
    expect(await page.content()).not.toContain('belongs to B');
    for (const path of [`/account/keys/${foreign.id}`, `/account/keys/${foreign.id}/revoke`]) {
      const res = await page.goto(`${base}${path}`);
      expect(res!.status(), path).toBe(404);
      expect(await page.content(), path).not.toContain('belongs to B');
    }
    for (const action of ['revoke', 'roll']) {
      const res = await context.request.post(`${base}/account/keys/${foreign.id}/${action}`, { form: { csrf }, maxRedirects: 0 });
      expect(res.status(), action).toBe(404);
    }
    expect((await v1(foreign.key)).status).toBe(200);
    expect((await svc.admin('GET', `/keys?accountId=${holderB.accountId}`)).body.data.find((k: { id: string }) => k.id === foreign.id).revokedAt).toBeNull();
  });

  it('when a form is posted without its CSRF token, or by another site’s page, then it is refused and no key is made', async () => {
    const { page, accountId, csrf } = holderA;
    const count = async () => (await svc.admin('GET', `/keys?accountId=${accountId}`)).body.data.length;
    const before = await count();
    await page.goto(`${base}/account/keys`);
    await page.fill('#key-name', 'no token');
    await page.check('input[name="scopes"][value="fx:read"]');
    await page.locator('#create-key input[name="csrf"]').evaluate((input) => input.remove());
    const [refused] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.click('#create-key button[type="submit"]')]);
    expect(refused.status()).toBe(403);
    expect(await page.locator('[role="alert"]').textContent()).toContain('CSRF token');

    // A page on another site that knows the token posts the same form: the browser sends no session cookie and its own Origin.
    await page.route('http://attacker.example/', (route) =>
      route.fulfill({
        contentType: 'text/html',
        body: `<form id="f" method="post" action="${base}/account/keys"><input name="csrf" value="${csrf}"><input name="name" value="planted">
          <input name="environment" value="live"><input name="scopes" value="fx:read"></form><script>document.getElementById('f').submit()</script>`,
      }),
    );
    const [crossSite] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.url() === `${base}/account/keys`),
      page.goto('http://attacker.example/'),
    ]);
    expect(crossSite.status()).toBe(403);
    await page.unroute('http://attacker.example/');
    expect(await count()).toBe(before);
  });

  it('when a session has been idle too long, or is past its maximum age, then the next page is the sign-in page', async () => {
    const { login, password } = await newLogin();
    const context = await newContext();
    try {
      const page = await context.newPage();
      for (const column of ['last_seen_at', 'created_at'] as const) {
        await signIn(page, login, password);
        expect(page.url()).toBe(`${base}/account/keys`);
        await keepSecretsOf(context, page);
        const session = (await context.cookies()).find((c) => c.name === 'mds_session')!.value;
        const age = column === 'last_seen_at' ? '31 minutes' : '13 hours';
        await svc.sql`update dashboard_sessions set ${svc.sql(column)} = now() - ${age}::interval where id_hash = ${sha256(session)}`;
        await page.click('nav a[href="/account/usage"]');
        expect(page.url(), column).toBe(`${base}/account/sign-in`);
        expect(await page.locator('h1').textContent()).toBe('Sign in');
        expect((await context.cookies()).map((c) => c.name)).not.toContain('mds_session');
      }
    } finally {
      await context.close();
    }
  });

  it('when axe-core checks the sign-in, keys, new key, key, revoke and usage pages, then it finds no serious or critical violation', async () => {
    const axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
    const check = async (page: Page, name: string) => {
      // Evaluated through the DevTools protocol, which the page's CSP does not govern (the CSP still applies to the page's own scripts).
      await page.evaluate(axeSource);
      const { violations, passes } = await page.evaluate(async () => {
        type Rule = { id: string; impact: string; nodes: unknown[] };
        const result = await (window as typeof window & { axe: { run: () => Promise<{ violations: Rule[]; passes: Rule[] }> } }).axe.run();
        return { violations: result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length })), passes: result.passes.length };
      });
      // Not vacuous: axe ran its rules on the page.
      expect(passes, name).toBeGreaterThan(10);
      expect(
        violations.filter((v) => v.impact === 'serious' || v.impact === 'critical'),
        name,
      ).toEqual([]);
    };
    const context = await newContext();
    try {
      const signInPage = await context.newPage();
      await signInPage.goto(`${base}/account/sign-in`);
      await check(signInPage, 'sign-in');
    } finally {
      await context.close();
    }
    const { page } = holderA;
    const old = await createKey(page, 'axe', 'live', 'all');
    await check(page, 'new key');
    await page.goto(`${base}/account/keys`);
    await page.click(`tr[data-key-id="${old.id}"] form[action$="/roll"] button`);
    secrets.add(await page.inputValue('#full-key'));
    await page.goto(`${base}/account/keys`);
    expect(await page.locator('tr[data-old-id]').count()).toBeGreaterThan(0);
    await check(page, 'keys');
    await page.goto(`${base}/account/keys/${old.id}`);
    await check(page, 'key');
    await page.goto(`${base}/account/keys/${old.id}/revoke`);
    await check(page, 'revoke');
    await page.goto(`${base}/account/usage`);
    await page.locator('#live-chart canvas').waitFor();
    await check(page, 'usage');
  });

  it('when every test above has run, then no page reported a script error or Content-Security-Policy violation', () => {
    expect(pageProblems).toEqual([]);
  });

  it('when every test above has run, then no log line holds a password, a full key, a session id or a CSRF token', () => {
    // Not vacuous: the log has a line for each dashboard request, and secrets of each kind were gathered.
    expect(logLines.filter((l) => l.includes('"path":"/account/')).length).toBeGreaterThan(50);
    expect(logLines.some((l) => l.includes('"method":"POST"') && l.includes('"path":"/account/sign-in"'))).toBe(true);
    const kinds = [...secrets].map((s) => (s.startsWith('pk_') ? 'key' : s.startsWith('pw-') ? 'password' : 'token'));
    expect(new Set(kinds)).toEqual(new Set(['key', 'password', 'token']));
    const log = logLines.join('');
    expect([...secrets].filter((s) => log.includes(s))).toEqual([]);
  });
});
