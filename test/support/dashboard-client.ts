import http from 'node:http';
/** One request with node:http (which can choose the local address), redirects not followed. */
function send(url: URL, options: { method: string; localAddress?: string; headers: Record<string, string>; body?: string }) {
  return new Promise<{ status: number; headers: Headers; text: string; setCookies: string[] }>((resolve, reject) => {
    const req = http.request(url, { method: options.method, headers: options.headers, localAddress: options.localAddress }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, v);
        }
        resolve({ status: res.statusCode!, headers, text: Buffer.concat(chunks).toString('utf8'), setCookies: headers.getSetCookie() });
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/**
 * A cookie-keeping HTTP client for the /account pages, as a browser without
 * scripts would use them: forms posted urlencoded, redirects not followed
 * (each test reads them), cookies kept from Set-Cookie and sent back.
 */
export class DashboardClient {
  /** Cookie name → value, as a browser would keep them for /account. */
  readonly cookies = new Map<string, string>();

  readonly baseUrl: string;
  readonly localAddress?: string;

  /** `localAddress`: the loopback address requests come from (127.0.0.2, say), so the service sees another client. */
  constructor(baseUrl: string, localAddress?: string) {
    this.baseUrl = baseUrl;
    this.localAddress = localAddress;
  }

  /** The session id in the session cookie, when signed in. */
  get sessionId(): string | undefined {
    return this.cookies.get('mds_session');
  }

  async request(method: 'GET' | 'POST', path: string, form?: Record<string, string | string[]>, headers: Record<string, string> = {}) {
    const body = form
      ? new URLSearchParams(Object.entries(form).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]]))).toString()
      : undefined;
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const res = await send(new URL(path, this.baseUrl), {
      method,
      localAddress: this.localAddress,
      headers: { ...(cookie ? { cookie } : {}), ...(body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}), ...headers },
      body,
    });
    const setCookies = res.headers.getSetCookie();
    for (const set of setCookies) {
      const [pair] = set.split(';');
      const at = pair.indexOf('=');
      if (/Max-Age=0/i.test(set)) this.cookies.delete(pair.slice(0, at));
      else this.cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    return res;
  }

  get(path: string, headers?: Record<string, string>) {
    return this.request('GET', path, undefined, headers);
  }

  post(path: string, form: Record<string, string | string[]>, headers?: Record<string, string>) {
    return this.request('POST', path, form, headers);
  }

  /** Opens the sign-in page (which sets the form cookie) and posts its form; the answer is 303 to /account/keys when it worked. */
  async signIn(login: string, password: string, headers?: Record<string, string>) {
    const csrf = csrfOn((await this.get('/account/sign-in')).text);
    return this.post('/account/sign-in', { login, password, csrf: csrf! }, headers);
  }

  /** The CSRF token of the signed-in session, read from a page's form. */
  async csrfToken(): Promise<string> {
    const page = await this.get('/account/keys');
    const token = csrfOn(page.text);
    if (!token) throw new Error(`no CSRF token on /account/keys (status ${page.status})`);
    return token;
  }
}

/** The CSRF token in a page's forms. */
export const csrfOn = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? null;

/** The full key on a page answering a create or roll. */
export const fullKeyOn = (html: string) => /value="(pk_(?:live|test)_[A-Za-z0-9_-]{43})"/.exec(html)?.[1] ?? null;
