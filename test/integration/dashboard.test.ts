import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { gzip } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SCOPES } from '../../server/core/scopes.ts';
import { passwordHashes, passwordHashesRunning } from '../../server/observability/metrics.ts';
import { csrfOn, DashboardClient, fullKeyOn } from '../support/dashboard-client.ts';
import { Service, startService } from './harness.ts';
import { until } from '../support/until.ts';

// Low sign-in limits, so the tests reach them; the attempt table is emptied
// before each test, so each starts with fresh counts.
const PER_LOGIN_ADDRESS = 3;
const PER_LOGIN = 5;
const PER_ADDRESS = 6;
const INVITATIONS_PER_ADDRESS = 3;
const LIMITS = {
  DASHBOARD_SIGN_IN_PER_LOGIN_ADDRESS: String(PER_LOGIN_ADDRESS),
  DASHBOARD_SIGN_IN_PER_LOGIN: String(PER_LOGIN),
  DASHBOARD_SIGN_IN_PER_ADDRESS: String(PER_ADDRESS),
  DASHBOARD_INVITATIONS_PER_ADDRESS: String(INVITATIONS_PER_ADDRESS),
  RATE_LIMIT_SANDBOX_PER_MINUTE: '2',
};
// The attacker's address; the holder's is 127.0.0.1. Both reach the listener on 127.0.0.1 (a connection's source may be any loopback address).
const ELSEWHERE = '127.0.0.2';
const PASSWORD = 'a long enough password';

let svc: Service;
beforeAll(async () => {
  svc = await startService(LIMITS);
});
afterAll(() => svc.stop());
beforeEach(async () => {
  await svc.sql`delete from dashboard_sign_in_attempts`;
});

/** A new account with a dashboard login set through the admin API. */
async function accountWithLogin(): Promise<{ accountId: string; login: string }> {
  const accountId = await svc.createAccount();
  const login = `holder-${randomUUID()}@example.com`;
  const res = await svc.admin('POST', `/accounts/${accountId}/password`, { login, password: PASSWORD });
  expect(res.status).toBe(200);
  return { accountId, login };
}

async function signedIn(): Promise<{ client: DashboardClient; accountId: string; csrf: string }> {
  const { accountId, login } = await accountWithLogin();
  const client = new DashboardClient(svc.runtime.publicUrl);
  const res = await client.signIn(login, PASSWORD);
  expect(res.status).toBe(303);
  return { client, accountId, csrf: await client.csrfToken() };
}

const sha256 = (s: string) => createHash('sha256').update(s).digest();

describe('dashboard: sign-in and sessions', () => {
  it('when the password is right, then a session cookie that is HttpOnly, SameSite=Strict and under /account leads to the keys page', async () => {
    const { login } = await accountWithLogin();
    const client = new DashboardClient(svc.runtime.publicUrl);
    const res = await client.signIn(login.toUpperCase(), PASSWORD);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/account/keys');
    const session = res.setCookies.filter((c) => c.startsWith('mds_session='));
    expect(session).toHaveLength(1);
    const attributes = session[0].split(';').map((a) => a.trim());
    expect(attributes[0]).toMatch(/^mds_session=[A-Za-z0-9_-]{43}$/);
    expect(attributes).toEqual(expect.arrayContaining(['Path=/account', 'HttpOnly', 'SameSite=Strict']));
    // Plain HTTP here: no Secure attribute.
    expect(attributes).not.toContain('Secure');
    // The database holds the id's hash only.
    const id = attributes[0].split('=')[1];
    const rows = await svc.sql`select id_hash from dashboard_sessions where id_hash = ${sha256(id)}`;
    expect(rows).toHaveLength(1);
    const [{ count }] = await svc.sql<{ count: number }[]>`select count(*)::int as count from dashboard_sessions where id_hash = ${Buffer.from(id)}`;
    expect(count).toBe(0);
    expect((await client.get('/account/keys')).status).toBe(200);
  });

  it('when the password is wrong or the login unknown, then 401 invalid_credentials, the same answer for both, and no cookie', async () => {
    const { login } = await accountWithLogin();
    const client = new DashboardClient(svc.runtime.publicUrl);
    const wrong = await client.signIn(login, 'not the password at all', { accept: 'application/json' });
    const unknown = await client.signIn(`nobody-${randomUUID()}@example.com`, PASSWORD, { accept: 'application/json' });
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401);
      expect(res.setCookies).toEqual([]);
      expect(JSON.parse(res.text).error).toMatchObject({ code: 'invalid_credentials', message: 'the login or the password is wrong' });
    }
    const page = await client.signIn(login, 'not the password at all');
    expect(page.status).toBe(401);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain('the login or the password is wrong');
    expect((await client.get('/account/keys')).headers.get('location')).toBe('/account/sign-in');
  });

  it(`when one address has made ${PER_LOGIN_ADDRESS} attempts at a login, then its next attempt there is 429 with Retry-After, even with the right password, on any process, while the holder signs in from another address`, async () => {
    const { login } = await accountWithLogin();
    const other = await startService(LIMITS);
    try {
      const here = new DashboardClient(svc.runtime.publicUrl, ELSEWHERE);
      const there = new DashboardClient(other.runtime.publicUrl, ELSEWHERE);
      expect((await here.signIn(login, 'wrong password 1')).status).toBe(401);
      expect((await there.signIn(login, 'wrong password 2')).status).toBe(401);
      expect((await here.signIn(login, 'wrong password 3')).status).toBe(401);
      const refused = await there.signIn(login, PASSWORD, { accept: 'application/json' });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(15 * 60);
      const body = JSON.parse(refused.text);
      expect(body.error.code).toBe('rate_limited');
      expect(body.error.details).toEqual({ login: [`${PER_LOGIN_ADDRESS} attempts per 15 minutes at this login from here reached`] });
      expect(body.error.docsUrl).toMatch(/\/docs#rate_limited$/);
      expect(refused.setCookies).toEqual([]);
      // The holder, at another address, is not held up by what was tried elsewhere.
      expect((await new DashboardClient(other.runtime.publicUrl).signIn(login, PASSWORD)).status).toBe(303);
    } finally {
      await other.stop();
    }
  });

  it('when the holder signs in, then the count of their own mistakes at that login starts again', async () => {
    const { login } = await accountWithLogin();
    const client = new DashboardClient(svc.runtime.publicUrl);
    for (let round = 0; round < 2; round++) {
      for (let i = 1; i < PER_LOGIN_ADDRESS; i++) expect((await client.signIn(login, `mistyped ${i}`)).status).toBe(401);
      expect((await client.signIn(login, PASSWORD)).status).toBe(303);
    }
  });

  it(`when one address has made ${PER_ADDRESS} attempts on different logins, then its next attempt is 429, and other addresses are not affected`, async () => {
    const client = new DashboardClient(svc.runtime.publicUrl, ELSEWHERE);
    for (let i = 0; i < PER_ADDRESS; i++) expect((await client.signIn(`guess-${i}-${randomUUID()}@example.com`, 'guessed password')).status).toBe(401);
    const refused = await client.signIn(`guess-last-${randomUUID()}@example.com`, 'guessed password', { accept: 'application/json' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(JSON.parse(refused.text).error.details).toEqual({ address: [`${PER_ADDRESS} attempts per 15 minutes from this address reached`] });
    // A browser gets the sign-in page with the reason, same status and header.
    const page = await client.signIn(`guess-page-${randomUUID()}@example.com`, 'guessed password');
    expect(page.status).toBe(429);
    expect(page.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(page.text).toContain('too many sign-in attempts');
    const { login } = await accountWithLogin();
    expect((await new DashboardClient(svc.runtime.publicUrl).signIn(login, PASSWORD)).status).toBe(303);
  });

  it(`when guesses at one login come from many addresses, then past ${PER_LOGIN} each further one from an unrecognised browser waits twice as long, while a browser that signed in before gets in at once`, async () => {
    const { login } = await accountWithLogin();
    const holder = new DashboardClient(svc.runtime.publicUrl);
    expect((await holder.signIn(login, PASSWORD)).status).toBe(303);
    const device = holder.cookies.get('mds_device');
    expect(device).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const guesser = (n: number) => new DashboardClient(svc.runtime.publicUrl, `127.0.1.${n}`);
    // The holder's own first sign-in, from a browser the login did not know yet, was one of them.
    for (let n = 1; n < PER_LOGIN; n++) expect((await guesser(n).signIn(login, `guess ${n}`)).status).toBe(401);
    /** Moves the login's last counted attempt `seconds` into the past. */
    const age = (seconds: number) =>
      svc.sql`update dashboard_sign_in_attempts set last_attempt_at = last_attempt_at - make_interval(secs => ${seconds}) where subject = ${`login:${login}`}`;
    for (const wait of [1, 2, 4]) {
      // The form is opened first, and the last attempt dated now just before the post: the spacing, not the machine's speed, decides.
      const probe = guesser(100 + wait);
      const csrf = csrfOn((await probe.get('/account/sign-in')).text)!;
      await svc.sql`update dashboard_sign_in_attempts set last_attempt_at = now() where subject = ${`login:${login}`}`;
      const spaced = await probe.post('/account/sign-in', { login, password: PASSWORD, csrf }, { accept: 'application/json' });
      expect(spaced.status).toBe(429);
      expect(spaced.headers.get('retry-after')).toBe(String(wait));
      expect(JSON.parse(spaced.text).error.details).toEqual({
        login: [`${PER_LOGIN} attempts from unrecognised browsers reached; each further one waits longer`],
      });
      await age(wait);
      expect((await guesser(200 + wait).signIn(login, `late guess ${wait}`)).status).toBe(401);
    }
    // The holder's browser, recognised by its device cookie, is counted on its own.
    const again = new DashboardClient(svc.runtime.publicUrl, ELSEWHERE);
    again.cookies.set('mds_device', device!);
    expect((await again.signIn(login, PASSWORD)).status).toBe(303);
    // Its cookie is replaced by a new one at each sign-in; the old one is no longer recognised.
    expect(again.cookies.get('mds_device')).not.toBe(device);
    const stale = new DashboardClient(svc.runtime.publicUrl, '127.0.2.1');
    stale.cookies.set('mds_device', device!);
    expect((await stale.signIn(login, PASSWORD)).status).toBe(429);
  });

  it('when a sign-in works, then the browser gets a device cookie that lasts the configured days and is HttpOnly, SameSite=Strict and under /account', async () => {
    const { login } = await accountWithLogin();
    const client = new DashboardClient(svc.runtime.publicUrl);
    const res = await client.signIn(login, PASSWORD);
    const device = res.setCookies.find((c) => c.startsWith('mds_device='))!;
    expect(device.split('; ')).toEqual([`mds_device=${client.cookies.get('mds_device')}`, 'Path=/account', 'HttpOnly', 'SameSite=Strict', 'Max-Age=7776000']);
    const [{ days }] = await svc.sql<{ days: number }[]>`
      select round(extract(epoch from expires_at - now()) / 86400)::int as days from dashboard_devices where login = ${login}
    `;
    expect(days).toBe(90);
  });

  it('when a session has been idle past its limit, or is older than its maximum, then the next page sends it back to sign-in and clears the cookie', async () => {
    for (const age of [sqlAge('last_seen_at', '31 minutes'), sqlAge('created_at', '13 hours')]) {
      const { client } = await signedIn();
      await age(sha256(client.sessionId!));
      const res = await client.get('/account/keys');
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe('/account/sign-in');
      expect(res.setCookies).toEqual([expect.stringMatching(/^mds_session=; .*Max-Age=0/)]);
    }
  });

  it('when the holder signs out, then the session row is gone and its cookie no longer works', async () => {
    const { client, csrf } = await signedIn();
    const id = client.sessionId!;
    const res = await client.post('/account/sign-out', { csrf });
    expect(res.status).toBe(303);
    expect(client.sessionId).toBeUndefined();
    expect(await svc.sql`select 1 from dashboard_sessions where id_hash = ${sha256(id)}`).toHaveLength(0);
    client.cookies.set('mds_session', id);
    expect((await client.get('/account/keys')).headers.get('location')).toBe('/account/sign-in');
  });
});

function sqlAge(column: 'last_seen_at' | 'created_at', by: string) {
  return (idHash: Buffer) => svc.sql`update dashboard_sessions set ${svc.sql(column)} = now() - ${by}::interval where id_hash = ${idHash}`;
}

describe('dashboard: CSRF', () => {
  it('when a state-changing request lacks its session token, carries another session’s, or comes from another origin, then 403 invalid_csrf_token and nothing changes', async () => {
    const { client, accountId, csrf } = await signedIn();
    const other = await signedIn();
    const form = { name: 'csrf probe', environment: 'live', scopes: 'prices:read' };
    const refusals = [
      await client.post('/account/keys', form, { accept: 'application/json' }),
      await client.post('/account/keys', { ...form, csrf: other.csrf }, { accept: 'application/json' }),
      await client.post('/account/keys', { ...form, csrf }, { accept: 'application/json', origin: 'http://evil.example' }),
    ];
    for (const res of refusals) {
      expect(res.status).toBe(403);
      expect(JSON.parse(res.text).error.code).toBe('invalid_csrf_token');
    }
    expect((await client.post('/account/keys', form)).status).toBe(403);
    expect((await svc.admin('GET', `/keys?accountId=${accountId}`)).body.data).toEqual([]);
    // With the token (form field or header), the same request is accepted.
    expect((await client.post('/account/keys', { ...form, csrf })).status).toBe(201);
    expect((await client.post('/account/keys', form, { 'x-csrf-token': csrf })).status).toBe(201);
  });
});

describe('dashboard: forms before sign-in', () => {
  it('when the sign-in form is posted without the token of its form cookie, or with another browser’s, then 403 and no session', async () => {
    const { login } = await accountWithLogin();
    const client = new DashboardClient(svc.runtime.publicUrl);
    const bare = await client.post('/account/sign-in', { login, password: PASSWORD }, { accept: 'application/json' });
    expect(bare.status).toBe(403);
    expect(JSON.parse(bare.text).error.code).toBe('invalid_csrf_token');
    // A token of one browser's form cookie is no good with another's cookie.
    const elsewhere = csrfOn((await new DashboardClient(svc.runtime.publicUrl).get('/account/sign-in')).text)!;
    await client.get('/account/sign-in');
    const foreign = await client.post('/account/sign-in', { login, password: PASSWORD, csrf: elsewhere });
    expect(foreign.status).toBe(403);
    expect(client.sessionId).toBeUndefined();
    expect((await client.signIn(login, PASSWORD)).status).toBe(303);
  });

  it('when a form is posted with Origin null or another origin, then 403; behind an https PUBLIC_BASE_URL its origin is accepted and cookies are Secure', async () => {
    const { login } = await accountWithLogin();
    const client = new DashboardClient(svc.runtime.publicUrl);
    for (const origin of ['null', 'http://evil.example']) {
      const res = await client.signIn(login, PASSWORD, { origin });
      expect(res.status, origin).toBe(403);
      expect(res.text, origin).toContain('can only be posted from the dashboard itself');
    }
    const proxied = await startService({ ...LIMITS, PUBLIC_BASE_URL: 'https://data.example.com' });
    try {
      const behind = new DashboardClient(proxied.runtime.publicUrl);
      const res = await behind.signIn(login, PASSWORD, { origin: 'https://data.example.com' });
      expect(res.status).toBe(303);
      expect(res.setCookies.map((c) => c.split('; '))).toEqual([
        [`mds_session=${behind.sessionId}`, 'Path=/account', 'HttpOnly', 'SameSite=Strict', 'Secure'],
        [`mds_device=${behind.cookies.get('mds_device')}`, 'Path=/account', 'HttpOnly', 'SameSite=Strict', 'Secure', 'Max-Age=7776000'],
      ]);
      expect((await behind.get('/account/sign-in')).setCookies).toEqual([]);
      expect(behind.cookies.size).toBe(3);
    } finally {
      await proxied.stop();
    }
  });
});

describe('dashboard: keys', () => {
  it('when a key is created, then the answer shows it once with no-store, it works on /v1 at once, and no later page holds it', async () => {
    const { client, accountId, csrf } = await signedIn();
    const res = await client.post('/account/keys', { csrf, name: 'ci', environment: 'sandbox', scopes: [...SCOPES] });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const key = fullKeyOn(res.text)!;
    expect(key).toMatch(/^pk_test_/);
    expect((await svc.get('/v1/instruments?query=zz', key)).status).toBe(200);
    const [stored] = (await svc.admin('GET', `/keys?accountId=${accountId}`)).body.data;
    expect(stored).toMatchObject({ name: 'ci', environment: 'sandbox', prefix: key.slice(0, 12), rolledFrom: null });
    expect([...stored.scopes].sort()).toEqual([...SCOPES].sort());
    for (const path of ['/account/keys', `/account/keys/${stored.id}`, '/account/usage']) expect((await client.get(path)).text).not.toContain(key);
  });

  it('when the form names no scope or an unknown environment, then 400 naming each field, and no key', async () => {
    const { client, accountId, csrf } = await signedIn();
    const res = await client.post('/account/keys', { csrf, name: 'bad', environment: 'staging' }, { accept: 'application/json' });
    expect(res.status).toBe(400);
    expect(Object.keys(JSON.parse(res.text).error.details).sort()).toEqual(['environment', 'scopes']);
    expect((await svc.admin('GET', `/keys?accountId=${accountId}`)).body.data).toEqual([]);
  });

  it('when a key is revoked from the dashboard, then its next /v1 request answers revoked_api_key', async () => {
    const { client, accountId, csrf } = await signedIn();
    const key = fullKeyOn((await client.post('/account/keys', { csrf, name: 'to revoke', environment: 'live', scopes: 'instruments:read' })).text)!;
    const [{ id }] = (await svc.admin('GET', `/keys?accountId=${accountId}`)).body.data;
    expect((await client.get(`/account/keys/${id}/revoke`)).text).toContain('revoked_api_key');
    const res = await client.post(`/account/keys/${id}/revoke`, { csrf });
    expect(res.status).toBe(303);
    expect((await svc.get('/v1/instruments?query=zz', key)).body.error.code).toBe('revoked_api_key');
    expect((await client.get(res.headers.get('location')!)).text).toMatch(/Key to revoke \([^)]+\) is revoked/);
  });

  it('when a key is rolled, then the new key has its scopes and environment, names it, and both stay active until the old one is revoked', async () => {
    const { client, accountId, csrf } = await signedIn();
    await client.post('/account/keys', { csrf, name: 'rolling', environment: 'live', scopes: ['fx:read', 'macro:read'] });
    const [old] = (await svc.admin('GET', `/keys?accountId=${accountId}`)).body.data;
    const res = await client.post(`/account/keys/${old.id}/roll`, { csrf });
    expect(res.status).toBe(201);
    const key = fullKeyOn(res.text)!;
    const list = (await svc.admin('GET', `/keys?accountId=${accountId}`)).body.data;
    const next = list.find((k: { id: string }) => k.id !== old.id);
    expect(next).toMatchObject({
      name: 'rolling',
      environment: 'live',
      scopes: ['fx:read', 'macro:read'],
      rolledFrom: old.id,
      revokedAt: null,
      prefix: key.slice(0, 12),
    });
    const page = await client.get('/account/keys');
    expect(page.text).toContain(`data-old-id="${old.id}" data-new-id="${next.id}"`);
    await client.post(`/account/keys/${old.id}/revoke`, { csrf });
    expect((await client.get('/account/keys')).text).not.toContain('data-old-id=');
    // A revoked key cannot be rolled.
    expect((await client.post(`/account/keys/${old.id}/roll`, { csrf }, { accept: 'application/json' })).status).toBe(400);
  });
});

describe('dashboard: another account', () => {
  it('when a holder names another account’s key id, then reading, revoking and rolling it are each not_found, and the key is untouched', async () => {
    const { client, csrf } = await signedIn();
    const victim = await svc.createAccount();
    const foreign = await svc.createKey(victim, ['prices:read'], 'live');
    const before = (await svc.admin('GET', `/keys?accountId=${victim}`)).body.data;
    const json = { accept: 'application/json' };
    const answers = [
      await client.get(`/account/keys/${foreign.id}`, json),
      await client.get(`/account/keys/${foreign.id}/revoke`, json),
      await client.post(`/account/keys/${foreign.id}/revoke`, { csrf }, json),
      await client.post(`/account/keys/${foreign.id}/roll`, { csrf }, json),
    ];
    for (const res of answers) {
      expect(res.status).toBe(404);
      expect(JSON.parse(res.text).error.code).toBe('not_found');
    }
    expect((await svc.admin('GET', `/keys?accountId=${victim}`)).body.data).toEqual(before);
    expect((await client.get('/account/keys')).text).not.toContain(foreign.id);
    // Still active: its next request is refused for scope, not as revoked.
    expect((await svc.get('/v1/instruments?query=zz', foreign.key)).body.error.code).toBe('insufficient_scope');
  });

  it('when a holder’s forms and queries name another account, then only the signed-in account is read or changed', async () => {
    const a = await signedIn();
    const b = await signedIn();
    const bKey = fullKeyOn((await b.client.post('/account/keys', { csrf: b.csrf, name: 'b only', environment: 'live', scopes: 'instruments:read' })).text)!;
    await svc.get('/v1/instruments?query=zz', bKey);
    const [bStored] = (await svc.admin('GET', `/keys?accountId=${b.accountId}`)).body.data;
    // The pages a browser gets (not JSON) refuse too.
    for (const res of [await a.client.get(`/account/keys/${bStored.id}`), await a.client.post(`/account/keys/${bStored.id}/roll`, { csrf: a.csrf })]) {
      expect(res.status).toBe(404);
      expect(res.text).not.toContain('b only');
    }
    const made = await a.client.post('/account/keys', { csrf: a.csrf, name: 'planted', environment: 'live', scopes: 'fx:read', accountId: b.accountId });
    expect(made.status).toBe(201);
    expect((await svc.admin('GET', `/keys?accountId=${a.accountId}`)).body.data.map((k: { name: string }) => k.name)).toEqual(['planted']);
    expect((await svc.admin('GET', `/keys?accountId=${b.accountId}`)).body.data).toEqual([{ ...bStored }]);
    const usage = await a.client.get(`/account/usage?days=30&accountId=${b.accountId}`, { accept: 'application/json' });
    expect(usage.status).toBe(400);
    const page = await a.client.get('/account/usage?days=30');
    expect(page.text).not.toContain('data-day=');
    for (const env of ['live', 'sandbox']) expect(page.text).toContain(`No ${env} requests in the last 30 days.`);
    expect((await b.client.get('/account/usage?days=30')).text).toContain('data-admitted="1"');
    expect((await a.client.get('/account/keys')).text).not.toContain(bStored.id);
  });
});

describe('dashboard: usage', () => {
  it('when keys of both environments have been used, some refused, then each period’s page shows exactly what GET /admin/v1/usage answers, live billable', async () => {
    const { client, accountId, csrf } = await signedIn();
    const live = fullKeyOn((await client.post('/account/keys', { csrf, name: 'live', environment: 'live', scopes: 'instruments:read' })).text)!;
    const sandbox = fullKeyOn((await client.post('/account/keys', { csrf, name: 'sb', environment: 'sandbox', scopes: 'instruments:read' })).text)!;
    for (let i = 0; i < 3; i++) await svc.get('/v1/instruments?query=zz', live);
    // The sandbox allows 2 a minute here: the third is refused (unless a minute boundary falls between them).
    const sandboxStatuses = [];
    for (let i = 0; i < 3; i++) sandboxStatuses.push((await svc.get('/v1/instruments?query=zz', sandbox)).status);
    for (const days of [30, 90, 400]) {
      const page = await client.get(`/account/usage?days=${days}`);
      expect(page.status).toBe(200);
      const admin = (await svc.admin('GET', `/usage?accountId=${accountId}&days=${days}`)).body.data;
      expect(admin.billable).toEqual(['live']);
      for (const env of ['live', 'sandbox'] as const) {
        const section = page.text.split(`data-environment="${env}"`)[1].split('</section>')[0];
        const shown = [...section.matchAll(/data-day="([^"]+)" data-admitted="(\d+)" data-refused="(\d+)"/g)].map((m) => ({
          day: m[1],
          admitted: Number(m[2]),
          refused: Number(m[3]),
        }));
        expect(shown).toEqual(admin.usage[env].days);
        expect(section).not.toContain(`No ${env} requests`);
        expect(section).toContain(env === 'live' ? '>billable<' : '>not billed<');
      }
    }
    const admin = (await svc.admin('GET', `/usage?accountId=${accountId}&days=30`)).body.data;
    expect(admin.usage.live.days[0]).toMatchObject({ admitted: 3, refused: 0 });
    expect(admin.usage.sandbox.days[0].admitted + admin.usage.sandbox.days[0].refused).toBe(3);
    expect(admin.usage.sandbox.days[0].refused).toBe(sandboxStatuses.filter((s) => s === 429).length);
    expect((await client.get('/account/usage?days=7', { accept: 'application/json' })).status).toBe(400);
  });
});

/** `n` browsers, each at an address of its own (one check at a time is allowed per address), that opened the sign-in page, so each holds a form cookie. */
const formClients = (service: Service, n: number) =>
  Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const client = new DashboardClient(service.runtime.publicUrl, `127.0.3.${i + 1}`);
      await client.get('/account/sign-in');
      return client;
    }),
  );

/** password_hash_seconds_count on the service's /metrics: the hashes it has run. */
async function hashesRun(service: Service): Promise<number> {
  const text = await (await fetch(`${service.runtime.adminUrl}/metrics`)).text();
  return [...text.matchAll(/^password_hash_seconds_count\{[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

describe('dashboard: password hashing cannot starve the service', () => {
  it('when an invitation form names no pending invitation, then it is 404 before any hashing, however often one address posts it', async () => {
    const client = new DashboardClient(svc.runtime.publicUrl, ELSEWHERE);
    const csrf = csrfOn((await client.get('/account/sign-in')).text)!;
    const before = await hashesRun(svc);
    // Past the address's invitation limit: a token that names nothing counts against nothing.
    for (let i = 0; i <= INVITATIONS_PER_ADDRESS; i++) {
      const res = await client.post(
        '/account/invitation',
        { csrf, token: `forged-${i}`, password: PASSWORD, confirm: PASSWORD },
        { accept: 'application/json' },
      );
      expect(res.status).toBe(404);
    }
    expect(await hashesRun(svc)).toBe(before);
  });

  it('when more sign-ins arrive than the hashing thread and its short queue hold, then the rest are refused at once with 503 and Retry-After', async () => {
    const busy = await startService({ PASSWORD_HASH_THREADS: '1', DASHBOARD_SIGN_IN_PER_ADDRESS: '1000', DASHBOARD_SIGN_IN_PER_LOGIN: '1000' });
    try {
      const clients = await formClients(busy, 8);
      const before = await hashesRun(busy);
      const finished: number[] = [];
      const replies = await Promise.all(
        clients.map(async (client) => {
          const reply = await client.signIn(`nobody-${randomUUID()}@example.com`, 'a guessed password', { accept: 'application/json' });
          finished.push(reply.status);
          return reply;
        }),
      );
      const refused = replies.filter((r) => r.status === 503);
      // One runs, two may wait (for at most 2 s), and the other five are refused before the first check ends.
      expect(finished.slice(0, 5)).toEqual([503, 503, 503, 503, 503]);
      expect(refused.length).toBeGreaterThanOrEqual(5);
      for (const r of refused) {
        expect(r.headers.get('retry-after')).toBe('1');
        expect(JSON.parse(r.text).error.code).toBe('overloaded');
      }
      const checked = replies.filter((r) => r.status === 401).length;
      expect(checked).toBeGreaterThanOrEqual(1);
      // Each check is one hash, plus the stand-in for unknown logins, made once.
      expect((await hashesRun(busy)) - before).toBe(checked + 1);
    } finally {
      await busy.stop();
    }
  });

  it('when hashes run, then they leave libuv’s thread pool free: compression in the same process finishes before any hash does', async () => {
    // As many hashes as libuv has threads (4 by default): on that pool they would hold every one.
    const busy = await startService({ PASSWORD_HASH_THREADS: '4', DASHBOARD_SIGN_IN_PER_ADDRESS: '1000', DASHBOARD_SIGN_IN_PER_LOGIN: '1000' });
    try {
      const clients = await formClients(busy, 4);
      // The stand-in hash is made before the race, so each sign-in below is one hash.
      await clients[0].signIn(`warm-${randomUUID()}@example.com`, 'a guessed password');
      // The service runs in this process: the histogram's count is the hashes finished so far, read at once.
      const finishedHashes = () => passwordHashes.get().then((m) => m.values.filter((v) => v.metricName?.endsWith('_count')).reduce((n, v) => n + v.value, 0));
      const before = await finishedHashes();
      const signIns = clients.map((client) => client.signIn(`nobody-${randomUUID()}@example.com`, 'a guessed password'));
      await until(async () => (await passwordHashesRunning.get()).values[0]?.value === 4, { timeoutMs: 10_000, what: 'four hashes running', intervalMs: 10 });
      const data = randomBytes(64 * 1024);
      const atGzip = await Promise.all(
        Array.from(
          { length: 4 },
          () => new Promise<Promise<number>>((resolve, reject) => gzip(data, (err) => (err ? reject(err) : resolve(finishedHashes())))),
        ),
      );
      expect(await Promise.all(atGzip)).toEqual([before, before, before, before]);
      expect((await Promise.all(signIns)).map((r) => r.status)).toEqual([401, 401, 401, 401]);
    } finally {
      await busy.stop();
    }
  });
});

describe('dashboard: logins made by the operator', () => {
  it('when an invitation is used, then its password signs in, and the link does not work a second time or after it expires', async () => {
    const accountId = await svc.createAccount();
    const login = `invited-${randomUUID()}@example.com`;
    const invitation = await svc.admin('POST', `/accounts/${accountId}/invitations`, { login });
    expect(invitation.status).toBe(201);
    const url = new URL(invitation.body.data.url);
    expect(url.pathname).toBe('/account/invitation');
    const client = new DashboardClient(svc.runtime.publicUrl);
    const page = await client.get(url.pathname + url.search);
    expect(page.status).toBe(200);
    expect(page.text).toContain(login);
    const token = url.searchParams.get('token')!;
    const csrf = csrfOn(page.text)!;
    const withoutToken = await client.post('/account/invitation', { token, password: PASSWORD, confirm: PASSWORD });
    expect(withoutToken.status).toBe(403);
    const mismatch = await client.post('/account/invitation', { csrf, token, password: PASSWORD, confirm: `${PASSWORD}!` });
    expect(mismatch.status).toBe(400);
    expect(mismatch.text).toContain('does not match the password');
    const set = await client.post('/account/invitation', { csrf, token, password: PASSWORD, confirm: PASSWORD });
    expect(set.status).toBe(303);
    expect(set.headers.get('location')).toBe('/account/sign-in?welcome=1');
    expect((await client.signIn(login, PASSWORD)).status).toBe(303);
    expect((await client.get(url.pathname + url.search)).status).toBe(404);
    const again = await client.post('/account/invitation', { csrf, token, password: 'another long password', confirm: 'another long password' });
    expect(again.status).toBe(404);
    expect((await new DashboardClient(svc.runtime.publicUrl).signIn(login, 'another long password')).status).toBe(401);

    const second = new URL((await svc.admin('POST', `/accounts/${accountId}/invitations`, { login, validHours: 1 })).body.data.url);
    expect((await client.get(second.pathname + second.search)).status).toBe(200);
    await svc.sql`update dashboard_logins set invitation_expires_at = now() - interval '1 second' where account_id = ${accountId}`;
    expect((await client.get(second.pathname + second.search)).status).toBe(404);
    const late = await client.post('/account/invitation', {
      csrf,
      token: second.searchParams.get('token')!,
      password: 'a late long password',
      confirm: 'a late long password',
    });
    expect(late.status).toBe(404);
  });

  it('when the operator sets a password for a login another account holds, or for no account, then it is refused', async () => {
    const { login } = await accountWithLogin();
    const other = await svc.createAccount();
    const taken = await svc.admin('POST', `/accounts/${other}/password`, { login, password: PASSWORD });
    expect(taken.status).toBe(400);
    expect(taken.body.error.details).toEqual({ login: ['already used by another account'] });
    const missing = await svc.admin('POST', `/accounts/${randomUUID()}/password`, { login: `x-${randomUUID()}`, password: PASSWORD });
    expect(missing.status).toBe(404);
    const short = await svc.admin('POST', `/accounts/${other}/password`, { login: `y-${randomUUID()}`, password: 'short' });
    expect(short.body.error.details).toEqual({ password: ['must be 12 to 200 characters; received 5 characters (not shown)'] });
  });

  it('when an invitation names the current login, then its password works until the link is used; when it names another while the holder can sign in, then it is refused and the holder keeps their login, password and session', async () => {
    const { client, accountId } = await signedIn();
    const [{ login }] = await svc.sql<{ login: string }[]>`select login from dashboard_logins where account_id = ${accountId}`;
    expect((await svc.admin('POST', `/accounts/${accountId}/invitations`, { login })).status).toBe(201);
    expect((await client.get('/account/keys')).status).toBe(200);
    expect((await new DashboardClient(svc.runtime.publicUrl).signIn(login, PASSWORD)).status).toBe(303);

    const successor = `successor-${randomUUID()}@example.com`;
    const refused = await svc.admin('POST', `/accounts/${accountId}/invitations`, { login: successor });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('invalid_request');
    expect(refused.body.error.details.login[0]).toContain(`the account has a holder (${login})`);
    expect((await svc.sql`select login from dashboard_logins where account_id = ${accountId}`).map((r) => r.login)).toEqual([login]);
    expect((await client.get('/account/keys')).status).toBe(200);
    expect((await new DashboardClient(svc.runtime.publicUrl).signIn(login, PASSWORD)).status).toBe(303);
    expect((await new DashboardClient(svc.runtime.publicUrl).signIn(successor, PASSWORD)).status).toBe(401);
  });

  it('when nobody has set a password yet, then an invitation for another login replaces the pending one, whose link stops working', async () => {
    const accountId = (await svc.admin('POST', '/accounts', { name: `pending-${randomUUID()}` })).body.data.id as string;
    const first = new URL((await svc.admin('POST', `/accounts/${accountId}/invitations`, { login: `first-${randomUUID()}@example.com` })).body.data.url);
    const second = `second-${randomUUID()}@example.com`;
    const replacing = await svc.admin('POST', `/accounts/${accountId}/invitations`, { login: second });
    expect(replacing.status).toBe(201);
    expect(replacing.body.data.login).toBe(second);
    const client = new DashboardClient(svc.runtime.publicUrl);
    expect((await client.get(`/account/invitation${first.search}`)).status).toBe(404);
  });

  it('when the operator sets a new password, then the account’s open sessions end', async () => {
    const { client, accountId } = await signedIn();
    const login = `renamed-${randomUUID()}@example.com`;
    await svc.admin('POST', `/accounts/${accountId}/password`, { login, password: 'a different long password' });
    expect((await client.get('/account/keys')).headers.get('location')).toBe('/account/sign-in');
  });
});

describe('dashboard: every answer', () => {
  it('when any page, asset or refusal is served, then it carries the security headers, and the pages run no inline script', async () => {
    const { client } = await signedIn();
    const paths = [
      '/account/keys',
      '/account/usage',
      '/account/sign-in',
      '/account/nowhere',
      '/account/keys/not-a-uuid',
      '/account/assets/keys.js',
      '/account/assets/uplot/uPlot.iife.min.js',
      '/account/assets/uplot/uPlot.min.css',
    ];
    for (const path of paths) {
      const res = await client.get(path);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("default-src 'self'");
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).toContain("script-src 'self'");
      expect(csp, path).not.toContain('unsafe-inline');
      expect(res.headers.get('referrer-policy'), path).toBe('same-origin');
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
      if (res.headers.get('content-type')?.startsWith('text/html')) {
        expect(res.headers.get('cache-control'), path).toBe('no-store');
        expect([...res.text.matchAll(/<script(?![^>]*\bsrc=)[^>]*>/g)], path).toEqual([]);
      }
    }
    expect((await client.get('/account/nowhere')).status).toBe(404);
    expect((await client.get('/account/keys/not-a-uuid')).status).toBe(400);
  });
});
