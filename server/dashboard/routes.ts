import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type ErrorRequestHandler, type Request, type RequestHandler, type Response, type Router } from 'express';
import { z } from 'zod';
import type { AppDeps } from '../area.ts';
import { publicBaseUrl } from '../config.ts';
import * as keys from '../keys/service.ts';
import { ENVIRONMENTS, SCOPES } from '../keys/scopes.ts';
import { createdKeyPage, keyPage, keysPage, revokeConfirmPage } from './keys-pages.ts';
import { cookieOf, DEVICE_COOKIE, FORM_COOKIE, SESSION_COOKIE, setCookie } from './cookies.ts';
import * as dashboard from './service.ts';
import { errorPage, invitationPage, signInPage } from './sign-in-pages.ts';
import { USAGE_PERIODS, usagePage } from './usage-page.ts';
import { AppError, notFound } from '../core/errors.ts';
import { IdParamsSchema } from '../core/ids.ts';
import { parse } from '../core/validate.ts';

/**
 * Sent with every dashboard answer. Scripts, styles and everything else load
 * from this origin only, with no inline script or style; no page may frame
 * the dashboard; forms post only here. No Referer leaves for another origin
 * (the invitation page has its token in its URL); `same-origin` rather than
 * `no-referrer`, because under `no-referrer` a browser sends `Origin: null`
 * with a form post, and the origin check below could not tell it from a
 * post made by another site.
 */
const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'Referrer-Policy': 'same-origin',
  'X-Content-Type-Options': 'nosniff',
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

const SignInFormSchema = z.object({ login: dashboard.LoginSchema, password: z.string().min(1, 'required').max(200), csrf: z.string() });
const InvitationFormSchema = z.object({ token: z.string().min(1).max(100), password: dashboard.PasswordSchema, confirm: z.string(), csrf: z.string() });
const KeyFormSchema = z.object({
  name: z.string().trim().min(1, 'required').max(200),
  environment: z.enum(ENVIRONMENTS),
  // One checked box arrives as a string, several as an array.
  scopes: z
    .union([z.string(), z.array(z.string())])
    .transform((s) => (Array.isArray(s) ? s : [s]))
    .pipe(z.array(z.enum(SCOPES, { error: 'not a scope' })).min(1, 'choose at least one scope')),
});
const UsageQuerySchema = z.strictObject({
  days: z.coerce
    .number()
    .refine((d) => (USAGE_PERIODS as readonly number[]).includes(d), `one of ${USAGE_PERIODS.join(', ')}`)
    .default(USAGE_PERIODS[0]),
});

/** The details of an invalid form, as one sentence for the page. */
const formProblem = (err: AppError) => [err.message, ...Object.entries(err.details).map(([field, problems]) => `${field}: ${problems.join(', ')}`)].join('; ');

/** A refusal shown on the page it concerns (status and headers kept), or left to the error handler when the client asked for JSON. */
function refuseOnPage(req: Request, res: Response, err: unknown, render: (message: string) => string): void {
  if (!(err instanceof AppError) || wantsJson(req)) throw err;
  res.locals.errorCode = err.code;
  res
    .status(err.status)
    .set(err.headers)
    .type('html')
    .send(render(formProblem(err)));
}

/** Refuses a state-changing request whose token (form field `csrf`, or header X-CSRF-Token) is not `expected`. */
function requireCsrfToken(req: Request, expected: string | null): void {
  if (expected && dashboard.csrfTokenMatches(expected, req.body?.csrf ?? req.get('x-csrf-token'))) return;
  throw new AppError('invalid_csrf_token', 'the form is missing its CSRF token, or it belongs to another session; reload the page', {
    csrf: ['missing or not this session’s token'],
  });
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
  router.use('/assets/uplot', express.static(uplot, options));
  router.use('/assets', express.static(own, options), (req) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new AppError('method_not_allowed', `${req.method} is not allowed on a dashboard asset; allowed: GET, HEAD`, {}, { Allow: 'GET, HEAD' });
    }
    throw notFound('dashboard asset');
  });
  return router;
}

/**
 * The account dashboard, mounted at /account on the public listener: sign-in,
 * keys and usage for account holders. Each action calls the service the
 * admin API and the CLI call (keys/service.ts), passing the signed-in
 * account, so another account's key is not found by any request.
 */
export function dashboardRouter(deps: AppDeps): Router {
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

  // The sign-in and invitation forms, posted before there is a session, carry the form cookie's token.
  router.post(['/sign-in', '/invitation'], (req, _res, next) => {
    const secret = cookieOf(req, FORM_COOKIE);
    requireCsrfToken(req, secret && dashboard.csrfTokenOf(secret));
    next();
  });

  router.get('/sign-in', (req, res) => {
    const info = req.query.welcome === '1' ? 'Your password is set: sign in with it.' : undefined;
    res.type('html').send(signInPage({ csrfToken: dashboard.csrfTokenOf(formSecret(req, res)), info }));
  });

  router.post('/sign-in', async (req, res) => {
    let login: string | undefined;
    try {
      const form = parse(SignInFormSchema, req.body, 'body');
      login = form.login;
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
      res.redirect(303, '/account/keys');
    } catch (err) {
      refuseOnPage(req, res, err, (error) => signInPage({ csrfToken: dashboard.csrfTokenOf(formSecret(req, res)), login, error }));
    }
  });

  router.get('/invitation', async (req, res) => {
    const { token } = parse(z.object({ token: z.string().min(1).max(100) }), req.query);
    const login = await dashboard.invitationFor(db, token);
    res.type('html').send(invitationPage({ csrfToken: dashboard.csrfTokenOf(formSecret(req, res)), token, login }));
  });

  router.post('/invitation', async (req, res) => {
    const token = typeof req.body?.token === 'string' ? req.body.token : '';
    try {
      const form = parse(InvitationFormSchema, req.body, 'body');
      if (form.password !== form.confirm) throw new AppError('invalid_request', 'the two passwords differ', { confirm: ['does not match the password'] });
      await dashboard.acceptInvitation(db, passwords, { token: form.token, password: form.password, address: req.ip ?? 'unknown' }, limits);
      res.redirect(303, '/account/sign-in?welcome=1');
    } catch (err) {
      // A refusal the holder can act on is shown on the invitation's page, while the invitation still stands.
      if (!(err instanceof AppError) || !['invalid_request', 'rate_limited', 'overloaded'].includes(err.code)) throw err;
      const login = await dashboard.invitationFor(db, token).catch(() => Promise.reject(err));
      refuseOnPage(req, res, err, (error) => invitationPage({ csrfToken: dashboard.csrfTokenOf(formSecret(req, res)), token, login, error }));
    }
  });

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

  const sessionOf = (res: Response): dashboard.Session => res.locals.session;
  const keyIdOf = (req: Request) => parse(IdParamsSchema, req.params, 'params').id;

  router.get('/', (_req, res) => {
    res.redirect(303, '/account/keys');
  });

  router.get('/keys', async (req, res) => {
    const session = sessionOf(res);
    const list = await keys.listKeys(db, session.accountId);
    const revoked = typeof req.query.revoked === 'string' ? list.find((k) => k.id === req.query.revoked) : undefined;
    res.type('html').send(keysPage(session, list, revoked ? { info: `Key ${revoked.name} (${revoked.prefix}…) is revoked.` } : undefined));
  });

  router.post('/keys', async (req, res) => {
    const session = sessionOf(res);
    try {
      const form = parse(KeyFormSchema, req.body, 'body');
      const created = await keys.createKey(db, { accountId: session.accountId, ...form });
      res.status(201).type('html').send(createdKeyPage(session, created));
    } catch (err) {
      const list = await keys.listKeys(db, session.accountId);
      refuseOnPage(req, res, err, (error) => keysPage(session, list, { error }));
    }
  });

  router.get('/keys/:id', async (req, res) => {
    const session = sessionOf(res);
    const key = await keys.getKey(db, keyIdOf(req), session.accountId);
    res.type('html').send(keyPage(session, key, await keys.listKeys(db, session.accountId)));
  });

  router.get('/keys/:id/revoke', async (req, res) => {
    const session = sessionOf(res);
    res.type('html').send(revokeConfirmPage(session, await keys.getKey(db, keyIdOf(req), session.accountId)));
  });

  router.post('/keys/:id/revoke', async (req, res) => {
    const revoked = await keys.revokeKey(db, keyIdOf(req), sessionOf(res).accountId);
    res.redirect(303, `/account/keys?revoked=${revoked.id}`);
  });

  router.post('/keys/:id/roll', async (req, res) => {
    const session = sessionOf(res);
    const id = keyIdOf(req);
    const created = await keys.rollKey(db, id, session.accountId);
    res
      .status(201)
      .type('html')
      .send(createdKeyPage(session, created, await keys.getKey(db, id, session.accountId)));
  });

  router.get('/usage', async (req, res) => {
    const session = sessionOf(res);
    const { days } = parse(UsageQuerySchema, req.query);
    const usage = await keys.readUsage(db, session.accountId, days);
    const perMinute = { sandbox: config.RATE_LIMIT_SANDBOX_PER_MINUTE, live: config.RATE_LIMIT_LIVE_PER_MINUTE };
    res.type('html').send(usagePage(session, { usage, days, perMinute, now: Date.now() }));
  });

  router.post('/sign-out', async (req, res) => {
    await dashboard.signOut(db, cookieOf(req, SESSION_COOKIE) as string);
    setCookie(res, SESSION_COOKIE, null, secure(req));
    res.redirect(303, '/account/sign-in');
  });

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
