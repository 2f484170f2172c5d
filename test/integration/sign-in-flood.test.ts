import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { csrfOn, DashboardClient } from '../support/dashboard-client.ts';
import { Service, startService } from './harness.ts';
import { until } from '../support/until.ts';

// One hashing thread (the default), so its slot and its queue of two are easy
// to fill; low limits, so a test reaches them. A check waits for the slot up
// to a minute, not the default 2 s: a test holds the slot across several round
// trips, and what it checks is who waits and who is refused, not the deadline.
// The attempt table is emptied before each test, so each starts with fresh counts.
const PER_ADDRESS = 3;
const INVITATIONS_PER_ADDRESS = 2;
const LIMITS = {
  PASSWORD_HASH_THREADS: '1',
  DASHBOARD_SIGN_IN_PER_ADDRESS: String(PER_ADDRESS),
  DASHBOARD_INVITATIONS_PER_ADDRESS: String(INVITATIONS_PER_ADDRESS),
  PASSWORD_HASH_WAIT_MS: '60000',
};
const PASSWORD = 'a long enough password';
const JSON_ACCEPT = { accept: 'application/json' };

let svc: Service;
beforeAll(async () => {
  svc = await startService(LIMITS);
});
afterAll(() => svc.stop());
beforeEach(async () => {
  await svc.sql`delete from dashboard_sign_in_attempts`;
});

/** A new account with a dashboard login set through the admin API. */
async function accountWithLogin(service: Service): Promise<string> {
  const accountId = await service.createAccount();
  const login = `holder-${randomUUID()}@example.com`;
  expect((await service.admin('POST', `/accounts/${accountId}/password`, { login, password: PASSWORD })).status).toBe(200);
  return login;
}

/** password_hash_seconds_count on the service's /metrics: the hashes it has run. */
async function hashesRun(service: Service): Promise<number> {
  const text = await (await fetch(`${service.runtime.adminUrl}/metrics`)).text();
  return [...text.matchAll(/^password_hash_seconds_count\{[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

const passwordsOf = (service: Service) => service.runtime.deps!.passwords;

/**
 * Takes the service's one hashing slot and keeps it until the returned
 * function is called: a hash that does not end, without a clock. What waits
 * behind it waits in the service's own queue.
 */
async function holdHashingSlot(service: Service): Promise<() => Promise<void>> {
  let release!: () => void;
  let taken!: () => void;
  const holding = new Promise<void>((resolve) => (taken = resolve));
  const done = passwordsOf(service).withSlot(() => {
    taken();
    return new Promise<void>((resolve) => (release = resolve));
  }, 0);
  await holding;
  return async () => {
    release();
    await done;
  };
}

/** A browser at `address` that opened the sign-in page, and its form's token. */
async function browserAt(service: Service, address: string): Promise<{ client: DashboardClient; csrf: string }> {
  const client = new DashboardClient(service.runtime.publicUrl, address);
  const csrf = csrfOn((await client.get('/account/sign-in')).text)!;
  return { client, csrf };
}

const guess = (browser: { client: DashboardClient; csrf: string }, login = `nobody-${randomUUID()}@example.com`) =>
  browser.client.post('/account/sign-in', { login, password: 'a guessed password', csrf: browser.csrf }, JSON_ACCEPT);

describe('sign-in under a flood: cheap checks come before the hashing slot', () => {
  it('when twelve invitation forms with bogus or expired tokens arrive at once from one address, then all twelve are 404, none hashes, and none counts against the address', async () => {
    const accountId = await svc.createAccount();
    const invitation = await svc.admin('POST', `/accounts/${accountId}/invitations`, { login: `late-${randomUUID()}@example.com`, validHours: 1 });
    const expired = new URL(invitation.body.data.url).searchParams.get('token')!;
    await svc.sql`update dashboard_logins set invitation_expires_at = now() - interval '1 second' where account_id = ${accountId}`;
    const { client, csrf } = await browserAt(svc, '127.0.10.1');
    const before = await hashesRun(svc);
    const tokens = Array.from({ length: 12 }, (_, i) => (i % 3 === 0 ? expired : `bogus-${i}-${randomUUID()}`));
    const replies = await Promise.all(
      tokens.map((token) => client.post('/account/invitation', { csrf, token, password: PASSWORD, confirm: PASSWORD }, JSON_ACCEPT)),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(12).fill(404));
    for (const r of replies) expect(JSON.parse(r.text).error.code).toBe('not_found');
    expect(await hashesRun(svc)).toBe(before);

    // Nothing was counted: the address accepts a real invitation as often as its limit allows.
    for (let i = 0; i < INVITATIONS_PER_ADDRESS; i++) {
      const invited = await svc.createAccount();
      const url = new URL((await svc.admin('POST', `/accounts/${invited}/invitations`, { login: `invited-${randomUUID()}@example.com` })).body.data.url);
      const token = url.searchParams.get('token')!;
      expect((await client.post('/account/invitation', { csrf, token, password: PASSWORD, confirm: PASSWORD }, JSON_ACCEPT)).status).toBe(303);
    }
  });

  it(`when an address has accepted ${INVITATIONS_PER_ADDRESS} invitations in the window, then its next form naming a pending invitation is 429 with Retry-After, and the invitation still stands`, async () => {
    const { client, csrf } = await browserAt(svc, '127.0.10.2');
    const tokens = [];
    for (let i = 0; i <= INVITATIONS_PER_ADDRESS; i++) {
      const invited = await svc.createAccount();
      const url = new URL((await svc.admin('POST', `/accounts/${invited}/invitations`, { login: `invited-${randomUUID()}@example.com` })).body.data.url);
      tokens.push(url.searchParams.get('token')!);
    }
    const last = tokens.pop()!;
    for (const token of tokens) expect((await client.post('/account/invitation', { csrf, token, password: PASSWORD, confirm: PASSWORD })).status).toBe(303);
    const refused = await client.post('/account/invitation', { csrf, token: last, password: PASSWORD, confirm: PASSWORD }, JSON_ACCEPT);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(JSON.parse(refused.text).error.details).toEqual({ address: [`${INVITATIONS_PER_ADDRESS} attempts per 15 minutes reached`] });
    expect((await client.get(`/account/invitation?token=${last}`)).status).toBe(200);
  });

  it(`when an address has made its ${PER_ADDRESS} attempts, then its next is 429 at once while the hashing slot is held, without waiting for the slot or running a hash`, async () => {
    const attacker = await browserAt(svc, '127.0.10.3');
    for (let i = 0; i < PER_ADDRESS; i++) expect((await guess(attacker)).status).toBe(401);
    const release = await holdHashingSlot(svc);
    try {
      const before = await hashesRun(svc);
      const refused = await guess(attacker);
      expect(refused.status).toBe(429);
      expect(JSON.parse(refused.text).error.details).toEqual({ address: [`${PER_ADDRESS} attempts per 15 minutes from this address reached`] });
      expect(passwordsOf(svc).waiting).toBe(0);
      expect(await hashesRun(svc)).toBe(before);
    } finally {
      await release();
    }
  });

  it('when an address already has an attempt waiting for the hashing slot, then its second is refused at once with 429 and Retry-After: 1, while a browser the login recognises, at the same address, still queues', async () => {
    const login = await accountWithLogin(svc);
    const recognised = new DashboardClient(svc.runtime.publicUrl, '127.0.10.4');
    expect((await recognised.signIn(login, PASSWORD)).status).toBe(303);
    // The forms are opened before the slot is taken, so that only the checks themselves wait behind it.
    const [firstBrowser, secondBrowser] = [await browserAt(svc, '127.0.10.4'), await browserAt(svc, '127.0.10.4')];
    const recognisedCsrf = csrfOn((await recognised.get('/account/sign-in')).text)!;
    const release = await holdHashingSlot(svc);
    try {
      const first = guess(firstBrowser);
      await until(() => passwordsOf(svc).waiting === 1, { timeoutMs: 10_000, what: 'the first attempt waiting for the slot', intervalMs: 5 });
      const second = await guess(secondBrowser);
      expect(second.status).toBe(429);
      expect(second.headers.get('retry-after')).toBe('1');
      const body = JSON.parse(second.text);
      expect(body.error.code).toBe('rate_limited');
      expect(body.error.details).toEqual({ address: ['at most 1 password check at a time from one address; another from this address is being checked'] });
      expect(passwordsOf(svc).waiting).toBe(1);
      const again = recognised.post('/account/sign-in', { login, password: PASSWORD, csrf: recognisedCsrf });
      await until(() => passwordsOf(svc).waiting === 2, { timeoutMs: 10_000, what: 'the recognised browser waiting for the slot too', intervalMs: 5 });
      await release();
      expect((await first).status).toBe(401);
      expect((await again).status).toBe(303);
    } finally {
      await release();
    }
  });
});

describe('sign-in under a flood: who gets the hashing slot', () => {
  it('when 8 addresses post the sign-in form as fast as they are answered, each under its limits, then a holder at a new address and a browser the login recognises both sign in', async () => {
    // The hashing thread at the request thread's priority (WORKER_NICE 0): the flood saturates the CPU, and what is
    // tested here is the order of the queue, not how a niced thread fares on a machine shared with other test files.
    const flooded = await startService({ PASSWORD_HASH_THREADS: '1', WORKER_NICE: '0', DASHBOARD_SIGN_IN_PER_ADDRESS: '1000000' });
    const outcomes = new Map<number, number>();
    let going = true;
    const floods: Promise<void>[] = [];
    try {
      const login = await accountWithLogin(flooded);
      const recognised = new DashboardClient(flooded.runtime.publicUrl, '127.0.11.1');
      expect((await recognised.signIn(login, PASSWORD)).status).toBe(303);

      const answered = Array<number>(8).fill(0);
      for (let i = 0; i < 8; i++) {
        floods.push(
          (async () => {
            const flooder = await browserAt(flooded, `127.0.12.${i + 1}`);
            while (going) {
              const { status } = await guess(flooder);
              outcomes.set(status, (outcomes.get(status) ?? 0) + 1);
              answered[i]++;
            }
          })(),
        );
      }
      // Before the holder comes, every flooding address has had an attempt counted (so the next ranks after a new
      // address), and the flood has found the slot and its queue full.
      await until(() => answered.every((n) => n >= 1) && (outcomes.get(503) ?? 0) >= 8, {
        timeoutMs: 60_000,
        what: 'every flooder answered, and 8 refused for a full queue',
        intervalMs: 5,
      });

      /** Signs in, again after each refusal's Retry-After, until it works or 20 s pass; the statuses, in order. */
      const signInDespite = async (client: DashboardClient) => {
        const statuses: number[] = [];
        const deadline = performance.now() + 20_000;
        while (performance.now() < deadline) {
          const res = await client.signIn(login, PASSWORD);
          statuses.push(res.status);
          if (res.status !== 429 && res.status !== 503) break;
          await new Promise((resolve) => setTimeout(resolve, 1_000 * Number(res.headers.get('retry-after') ?? 1)));
        }
        return statuses;
      };
      const holder = await signInDespite(new DashboardClient(flooded.runtime.publicUrl, '127.0.13.1'));
      const device = await signInDespite(recognised);
      expect({ holder: holder.at(-1), device: device.at(-1) }).toEqual({ holder: 303, device: 303 });
      going = false;
      await Promise.all(floods);
      // Not vacuous: the flood had guesses checked, and had others refused because the slot and its queue were taken.
      expect(outcomes.get(401)).toBeGreaterThan(0);
      expect(outcomes.get(503)).toBeGreaterThan(0);
      expect([...outcomes.keys()].filter((s) => ![401, 503].includes(s))).toEqual([]);
    } finally {
      going = false;
      await Promise.allSettled(floods);
      await flooded.stop();
    }
  }, 120_000);
});
