import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type ErrorRequestHandler, type Request, type RequestHandler, type Response, type Router } from 'express';
import { publicBaseUrl, type Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import type { Session } from '../core/session.ts';
import { definePage, type PageDefinition } from '../http/route.ts';
import { RouteTable } from '../http/router.ts';
import { servedAs } from '../http/observe.ts';
import * as keys from '../keys/service.ts';
import { createdKeyPage, keyPage, keysPage, revokeConfirmPage } from './keys-pages.ts';
import { cookieOf, DEVICE_COOKIE, FORM_COOKIE, SESSION_COOKIE, setCookie } from './cookies.ts';
import { InvitationFormSchema, InvitationQuerySchema, KeyFormSchema, SignInFormSchema, UsageQuerySchema } from './schema.ts';
import * as dashboard from './service.ts';
import type { PasswordHasher } from './password.ts';
import { errorPage, invitationPage, signInPage } from './sign-in-pages.ts';
import { usagePage } from './usage-page.ts';
import { AppError, notFound } from '../core/errors.ts';
import { IdParamsSchema } from '../core/ids.ts';

/**
 * Sent with every dashboard answer. Scripts, styles and everything else load
 * from this origin only, with no inline script or style; no page may frame
 * the dashboard; forms post only here. `nosniff` and `Referrer-Policy:
 * same-origin` come with every answer of the listener (http/answer-headers.ts):
 * no Referer leaves for another origin, which matters here since the
 * invitation page has its token in its URL.
 */
const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
};

const securityHeaders: RequestHandler = (_req, res, next) => {
  res.set(SECURITY_HEADERS);
  next();
};

/** Pages show account data, and one shows a full key: none is stored by the browser or any cache (nor kept in the back-forward cache). */
const noStore: RequestHandler = (_req, res, next) => {
  res.set('Cache-Control', 'no-store');
  next();
};

const wantsJson = (req: Request) => req.accepts(['html', 'json']) === 'json';

/** The details of an invalid form, as one sentence for the page. */
const formProblem = (err: AppError) => [err.message, ...Object.entries(err.details).map(([field, problems]) => `${field}: ${problems.join(', ')}`)].join('; ');

/** A refusal shown on the page it concerns, or left to the error handler (the envelope) when the client asked for JSON. */
function shownOn(req: Request, err: AppError, render: (message: string) => string): string {
  if (wantsJson(req)) throw err;
  return render(formProblem(err));
}

/** Refuses a state-changing request whose token (form field `csrf`, or header X-CSRF-Token) is not `expected`. */
function requireCsrfToken(req: Request, expected: string | null): void {
  if (expected && dashboard.csrfTokenMatches(expected, req.body?.csrf ?? req.get('x-csrf-token'))) return;
  throw new AppError('invalid_csrf_token', 'the form is missing its CSRF token, or it belongs to another session; reload the page', {
    csrf: ['missing or not this session’s token'],
  });
}

/** The session the session check put in front of every signed-in page. */
function sessionOf(res: Response): Session {
  const { session } = res.locals;
  if (!session) throw new Error('a signed-in page was reached without the session check in front of it');
  return session;
}

/**
 * The pages' scripts and styles, and uPlot's. A path that names no file (a
 * missing one, a folder, a `..` or NUL in any encoding, which serve-static
 * refuses before touching the disk) is the dashboard's 404, and a method
 * other than GET or HEAD its 405: both refusals like any other, never a fault.
 */
function assets(): Router {
  const router = express.Router();
  const own = path.join(path.dirname(fileURLToPath(import.meta.url)), 'assets');
  const uplot = path.join(path.dirname(createRequire(import.meta.url).resolve('uplot/package.json')), 'dist');
  const options = { index: false, redirect: false } as const;
  router.use('/assets/uplot', servedAs('/account/assets/uplot/*'), express.static(uplot, options));
  router.use('/assets', servedAs('/account/assets/*'), express.static(own, options), (req) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new AppError('method_not_allowed', `${req.method} is not allowed on a dashboard asset; allowed: GET, HEAD`, {}, { Allow: 'GET, HEAD' });
    }
    throw notFound('dashboard asset');
  });
  return router;
}

// Before sign-in. Each form carries the CSRF token of the browser's form cookie.
const signInPageRoute = definePage({ method: 'get', path: '/sign-in', response: { status: 200, html: true } });
const signInRoute = definePage({ method: 'post', path: '/sign-in', body: SignInFormSchema, response: { status: 303, redirect: true } });
const invitationPageRoute = definePage({ method: 'get', path: '/invitation', query: InvitationQuerySchema, response: { status: 200, html: true } });
const acceptInvitationRoute = definePage({ method: 'post', path: '/invitation', body: InvitationFormSchema, response: { status: 303, redirect: true } });
const SIGN_IN_PAGES: readonly PageDefinition[] = [signInPageRoute, signInRoute, invitationPageRoute, acceptInvitationRoute];

// Signed in. Each form carries the CSRF token of the session.
const homeRoute = definePage({ method: 'get', path: '/', response: { status: 303, redirect: true } });
const keysPageRoute = definePage({ method: 'get', path: '/keys', response: { status: 200, html: true } });
const createKeyRoute = definePage({ method: 'post', path: '/keys', body: KeyFormSchema, response: { status: 201, html: true } });
const keyPageRoute = definePage({ method: 'get', path: '/keys/:id', params: IdParamsSchema, response: { status: 200, html: true } });
const revokeConfirmRoute = definePage({ method: 'get', path: '/keys/:id/revoke', params: IdParamsSchema, response: { status: 200, html: true } });
const revokeKeyRoute = definePage({ method: 'post', path: '/keys/:id/revoke', params: IdParamsSchema, response: { status: 303, redirect: true } });
const rollKeyRoute = definePage({ method: 'post', path: '/keys/:id/roll', params: IdParamsSchema, response: { status: 201, html: true } });
const usagePageRoute = definePage({ method: 'get', path: '/usage', query: UsageQuerySchema, response: { status: 200, html: true } });
const signOutRoute = definePage({ method: 'post', path: '/sign-out', response: { status: 303, redirect: true } });
const ACCOUNT_PAGES: readonly PageDefinition[] = [
  homeRoute,
  keysPageRoute,
  createKeyRoute,
  keyPageRoute,
  revokeConfirmRoute,
  revokeKeyRoute,
  rollKeyRoute,
  usagePageRoute,
  signOutRoute,
];

/**
 * The dashboard's pages, in a route table mounted at /account. A method a
 * page does not serve goes on like a path no page serves: to the session
 * check, then the 404 page.
 */
const pages = (before: (page: PageDefinition) => RequestHandler[]) => new RouteTable<PageDefinition>({ prefix: '/account', before, otherMethods: 'pass' });

/** What the dashboard needs: the primary (sessions, keys, usage), the configuration (its limits, the public base URL) and the password hasher. */
export interface DashboardDeps {
  db: Database;
  config: Config;
  passwords: PasswordHasher;
}

/**
 * The account dashboard, mounted at /account on the public listener: sign-in,
 * keys and usage for account holders. Each action calls the service the
 * admin API and the CLI call (keys/service.ts), passing the signed-in
 * account, so another account's key is not found by any request.
 */
export function dashboardRouter(deps: DashboardDeps): Router {
  const { db, config, passwords } = deps;
  const expiry = { idleMinutes: config.DASHBOARD_SESSION_IDLE_MINUTES, maxHours: config.DASHBOARD_SESSION_MAX_HOURS };
  const limits: dashboard.SignInLimits = {
    windowMinutes: config.DASHBOARD_SIGN_IN_WINDOW_MINUTES,
    perLoginAddress: config.DASHBOARD_SIGN_IN_PER_LOGIN_ADDRESS,
    perLogin: config.DASHBOARD_SIGN_IN_PER_LOGIN,
    perAddress: config.DASHBOARD_SIGN_IN_PER_ADDRESS,
    invitationsPerAddress: config.DASHBOARD_INVITATIONS_PER_ADDRESS,
    deviceDays: config.DASHBOARD_DEVICE_DAYS,
  };
  const router = express.Router({ strict: true });
  router.use(securityHeaders);
  router.use(assets());
  router.use(noStore);
  // Every post's body, the forms' and any other: the session check reads the CSRF token from it on a path no page serves too.
  router.use(express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 50 }));

  const secure = (req: Request) => req.secure || publicBaseUrl(config).startsWith('https:');
  // The request's own origin, and the public address clients are given (a
  // proxy in front may end TLS, so the browser's origin is https while this
  // server sees http).
  const ownOrigins = (req: Request) => new Set([`${req.protocol}://${req.get('host')}`, new URL(publicBaseUrl(config)).origin]);

  // A state-changing request that another origin's page sent is refused
  // whatever it carries; every one also needs the CSRF token of its cookie.
  router.post('/{*any}', (req, _res, next) => {
    const origin = req.get('origin');
    if (origin !== undefined && !ownOrigins(req).has(origin)) {
      throw new AppError('invalid_csrf_token', 'a dashboard form can only be posted from the dashboard itself', { origin: [`${origin} is not this origin`] });
    }
    next();
  });

  /** The secret of the form cookie, set now when the browser has none. */
  function formSecret(req: Request, res: Response): string {
    const existing = cookieOf(req, FORM_COOKIE);
    if (existing) return existing;
    const secret = dashboard.newSecret();
    setCookie(res, FORM_COOKIE, secret, secure(req));
    return secret;
  }
  const formToken = (req: Request, res: Response) => dashboard.csrfTokenOf(formSecret(req, res));

  // The sign-in and invitation forms, posted before there is a session, carry the form cookie's token.
  const requireFormToken: RequestHandler = (req, _res, next) => {
    const secret = cookieOf(req, FORM_COOKIE);
    requireCsrfToken(req, secret && dashboard.csrfTokenOf(secret));
    next();
  };
  const signIn = pages((page) => (page.method === 'post' ? [requireFormToken] : []));

  signIn.handle(signInPageRoute, (_input, res, req) => {
    const info = req.query.welcome === '1' ? 'Your password is set: sign in with it.' : undefined;
    return signInPage({ csrfToken: formToken(req, res), info });
  });

  signIn.handle(
    signInRoute,
    async ({ body: form }, res, req) => {
      const earlier = cookieOf(req, SESSION_COOKIE);
      if (earlier) await dashboard.signOut(db, earlier);
      const { sessionId, deviceToken } = await dashboard.signIn(
        db,
        passwords,
        { ...form, address: req.ip ?? 'unknown', deviceToken: cookieOf(req, DEVICE_COOKIE) },
        limits,
        expiry,
      );
      setCookie(res, SESSION_COOKIE, sessionId, secure(req));
      setCookie(res, DEVICE_COOKIE, deviceToken, secure(req), limits.deviceDays * 86_400);
      return { location: '/account/keys' };
    },
    (err, input, req, res) => shownOn(req, err, (error) => signInPage({ csrfToken: formToken(req, res), login: input?.body.login, error })),
  );

  signIn.handle(invitationPageRoute, async ({ query }, res, req) => {
    const login = await dashboard.invitationFor(db, query.token);
    return invitationPage({ csrfToken: formToken(req, res), token: query.token, login });
  });

  signIn.handle(
    acceptInvitationRoute,
    async ({ body: form }, _res, req) => {
      if (form.password !== form.confirm) throw new AppError('invalid_request', 'the two passwords differ', { confirm: ['does not match the password'] });
      await dashboard.acceptInvitation(db, passwords, { token: form.token, password: form.password, address: req.ip ?? 'unknown' }, limits);
      return { location: '/account/sign-in?welcome=1' };
    },
    // A refusal the holder can act on is shown on the invitation's page, while the invitation still stands.
    async (err, _input, req, res) => {
      if (!['invalid_request', 'rate_limited', 'overloaded'].includes(err.code)) throw err;
      const token = typeof req.body?.token === 'string' ? req.body.token : '';
      const login = await dashboard.invitationFor(db, token).catch(() => Promise.reject(err));
      return shownOn(req, err, (error) => invitationPage({ csrfToken: formToken(req, res), token, login, error }));
    },
  );

  signIn.build(SIGN_IN_PAGES, router);

  // Everything below needs a session; a state-changing request also needs the session's CSRF token.
  router.use(async (req, res, next) => {
    const sessionId = cookieOf(req, SESSION_COOKIE);
    const session = sessionId ? await dashboard.resumeSession(db, sessionId, expiry) : null;
    if (!session) {
      if (req.headers.cookie?.includes(`${SESSION_COOKIE}=`)) setCookie(res, SESSION_COOKIE, null, secure(req));
      res.redirect(303, '/account/sign-in');
      return;
    }
    if (req.method === 'POST') requireCsrfToken(req, session.csrfToken);
    res.locals.session = session;
    next();
  });

  const account = pages(() => []);

  account.handle(homeRoute, () => ({ location: '/account/keys' }));

  account.handle(keysPageRoute, async (_input, res, req) => {
    const session = sessionOf(res);
    const list = await keys.listKeys(db, session.accountId);
    // `revoked` names the key a revoke redirected from, for a notice; the page parses no other parameter and ignores any.
    const revoked = typeof req.query.revoked === 'string' ? list.find((k) => k.id === req.query.revoked) : undefined;
    return keysPage(session, list, revoked ? { info: `Key ${revoked.name} (${revoked.prefix}…) is revoked.` } : undefined);
  });

  account.handle(
    createKeyRoute,
    async ({ body: form }, res) => {
      const session = sessionOf(res);
      return createdKeyPage(session, await keys.createKey(db, { accountId: session.accountId, ...form }));
    },
    async (err, _input, req, res) => {
      const session = sessionOf(res);
      const list = await keys.listKeys(db, session.accountId);
      return shownOn(req, err, (error) => keysPage(session, list, { error }));
    },
  );

  account.handle(keyPageRoute, async ({ params }, res) => {
    const session = sessionOf(res);
    const key = await keys.getKey(db, params.id, session.accountId);
    return keyPage(session, key, await keys.listKeys(db, session.accountId));
  });

  account.handle(revokeConfirmRoute, async ({ params }, res) => {
    const session = sessionOf(res);
    return revokeConfirmPage(session, await keys.getKey(db, params.id, session.accountId));
  });

  account.handle(revokeKeyRoute, async ({ params }, res) => {
    const revoked = await keys.revokeKey(db, params.id, sessionOf(res).accountId);
    return { location: `/account/keys?revoked=${revoked.id}` };
  });

  account.handle(rollKeyRoute, async ({ params }, res) => {
    const session = sessionOf(res);
    const created = await keys.rollKey(db, params.id, session.accountId);
    return createdKeyPage(session, created, await keys.getKey(db, params.id, session.accountId));
  });

  account.handle(usagePageRoute, async ({ query }, res) => {
    const session = sessionOf(res);
    const usage = await keys.readUsage(db, session.accountId, query.days);
    const perMinute = { sandbox: config.RATE_LIMIT_SANDBOX_PER_MINUTE, live: config.RATE_LIMIT_LIVE_PER_MINUTE };
    return usagePage(session, { usage, days: query.days, perMinute, now: Date.now() });
  });

  account.handle(signOutRoute, async (_input, res, req) => {
    await dashboard.signOut(db, cookieOf(req, SESSION_COOKIE) as string);
    setCookie(res, SESSION_COOKIE, null, secure(req));
    return { location: '/account/sign-in' };
  });

  account.build(ACCOUNT_PAGES, router);
  router.use(() => {
    // The path is not quoted: a holder may have pasted a password into it.
    throw notFound('dashboard page');
  });
  router.use(dashboardErrors);
  return router;
}

/**
 * A refusal as a page for a browser, with its status and headers. A client
 * asking for JSON, and any fault that is not a refusal, go on to the app's
 * error middleware: the error envelope, and the log line for a fault.
 */
const dashboardErrors: ErrorRequestHandler = (err, req, res, next) => {
  if (!(err instanceof AppError) || wantsJson(req) || res.headersSent) {
    next(err);
    return;
  }
  res.locals.errorCode = err.code;
  res
    .status(err.status)
    .set(err.headers)
    .type('html')
    .send(errorPage({ status: err.status, message: formProblem(err), signedIn: Boolean(res.locals.session) }));
};
