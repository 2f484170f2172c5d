import { escapeHtml } from '../http/reference-html.ts';

/** Marks a string as HTML already escaped or built from escaped parts. */
export class Html {
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }
  toString() {
    return this.text;
  }
}

type Value = Html | string | number | null | undefined | false | readonly Value[];

function render(value: Value): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value as string | number));
}

/** A tagged template whose interpolations are escaped unless they are Html (or arrays of it). */
export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  return new Html(strings.reduce((out, s, i) => out + s + (i < values.length ? render(values[i]) : ''), ''));
}

/** An instant as people read it, in UTC, inside a machine-readable <time>. */
export function instant(iso: string | null, none = 'never'): Html {
  if (iso === null) return html`<span class="none">${none}</span>`;
  return html`<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC</time>`;
}

export interface PageOptions {
  title: string;
  /** The signed-in account: the navigation and the sign-out form; absent on the sign-in pages. */
  session?: { accountName: string; csrfToken: string };
  /** Which navigation entry is this page. */
  current?: 'keys' | 'usage';
  /** Same-origin style sheets besides dashboard.css. */
  styles?: string[];
  /** Same-origin scripts (under /account/assets/) the page runs. */
  scripts?: string[];
  body: Html;
}

/** The whole page: every dashboard page has this frame, a skip link, and its scripts as same-origin files (the policy allows no inline script). */
export function page(options: PageOptions): string {
  const nav = options.session
    ? html`<header class="top">
        <nav aria-label="Dashboard">
          <a href="/account/keys" ${options.current === 'keys' ? html` aria-current="page"` : ''}>Keys</a>
          <a href="/account/usage" ${options.current === 'usage' ? html` aria-current="page"` : ''}>Usage</a>
        </nav>
        <p class="who">Signed in to <strong>${options.session.accountName}</strong></p>
        <form method="post" action="/account/sign-out">
          ${csrfField(options.session.csrfToken)}
          <button type="submit">Sign out</button>
        </form>
      </header>`
    : html`<header class="top"><p class="who">Market data · account dashboard</p></header>`;
  const scripts = (options.scripts ?? []).map((src) => html`<script src="${src}"></script> `);
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${options.title} · Market data account</title>
        ${(options.styles ?? []).map((href) => html`<link rel="stylesheet" href="${href}" /> `)}
        <link rel="stylesheet" href="/account/assets/dashboard.css" />
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        ${nav}
        <main id="main" tabindex="-1">${options.body}</main>
        ${scripts}
      </body>
    </html> `.text;
}

/** The hidden field that carries the session's CSRF token in every state-changing form. */
export const csrfField = (token: string) => html`<input type="hidden" name="csrf" value="${token}" />`;

/** A message for the person at the page: an error, or a notice. */
export function notice(text: string | undefined, kind: 'error' | 'info' = 'error'): Html {
  if (!text) return html``;
  return html`<p class="notice ${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${text}</p>`;
}
