import type { CreatedKey } from '../keys/service.ts';
import type { KeyRow } from '../keys/repository.ts';
import { ENVIRONMENTS, SCOPES, type Scope } from '../core/scopes.ts';
import { csrfField, html, instant, notice, page, type Html } from './html.ts';
import type { Session } from '../core/session.ts';

/** The create form's scope checkboxes, grouped by the API areas they open. */
const SCOPE_GROUPS: [string, Scope[]][] = [
  ['Instruments and prices', ['instruments:read', 'prices:read', 'actions:read', 'fx:read']],
  ['Company events', ['earnings:read', 'news:read', 'sentiment:read', 'events:read']],
  ['Options', ['options:read']],
  ['Analytics', ['analytics:read', 'correlations:read', 'technicals:read']],
  ['Macro', ['macro:read']],
];

const grouped = SCOPE_GROUPS.flatMap(([, scopes]) => scopes);
if (grouped.length !== SCOPES.length || SCOPES.some((s) => !grouped.includes(s))) throw new Error('SCOPE_GROUPS must hold each scope exactly once');

const ENVIRONMENT_LABEL = { sandbox: 'Sandbox (pk_test_, not billed)', live: 'Live (pk_live_, billable)' } as const;

const keyLabel = (k: Pick<KeyRow, 'name' | 'prefix'>) => html`<span class="key-name">${k.name}</span> <code>${k.prefix}…</code>`;

function status(k: KeyRow): Html {
  return k.revokedAt ? html`<span class="revoked-badge">Revoked</span> ${instant(k.revokedAt)}` : html`<span class="active-badge">Active</span>`;
}

/**
 * A table too wide for a narrow window (the keys list has eight columns)
 * scrolls inside this region rather than the page. The region is named by
 * `labelledBy` and takes focus, so it can be scrolled by keyboard too.
 */
const scrollingTable = (labelledBy: string, table: Html) =>
  html`<div class="table-scroll" role="region" aria-labelledby="${labelledBy}" tabindex="0">${table}</div>`;

/** Old key → the key rolled from it, for every old key still active. */
function rollsInProgress(keys: KeyRow[]): [KeyRow, KeyRow][] {
  return keys.flatMap((next) => {
    const old = next.rolledFrom ? keys.find((k) => k.id === next.rolledFrom) : undefined;
    return old && !old.revokedAt ? [[old, next] as [KeyRow, KeyRow]] : [];
  });
}

function rollTable(pairs: [KeyRow, KeyRow][]): Html {
  if (!pairs.length) return html``;
  return html`<section aria-labelledby="rolls-title">
    <h2 id="rolls-title">Keys being rolled</h2>
    <p>Deploy the new key, then watch its last use: once traffic has moved, revoke the old key.</p>
    ${scrollingTable(
      'rolls-title',
      html`<table class="rolls">
        <thead>
          <tr>
            <th scope="col">Old key</th>
            <th scope="col">Old key last used</th>
            <th scope="col">New key</th>
            <th scope="col">New key last used</th>
            <th scope="col">Action</th>
          </tr>
        </thead>
        <tbody>
          ${pairs.map(
            ([old, next]) =>
              html`<tr data-old-id="${old.id}" data-new-id="${next.id}">
                <td>${keyLabel(old)}</td>
                <td class="last-used">${instant(old.lastUsedAt)}</td>
                <td>${keyLabel(next)}</td>
                <td class="last-used">${instant(next.lastUsedAt)}</td>
                <td>
                  <a href="/account/keys/${old.id}/revoke">Revoke old key<span class="visually-hidden"> ${old.prefix}</span></a>
                </td>
              </tr>`,
          )}
        </tbody>
      </table>`,
    )}
  </section>`;
}

function keyRows(keys: KeyRow[], csrfToken: string): Html {
  if (!keys.length) return html`<p>No keys yet: create one below.</p>`;
  return scrollingTable(
    'keys-caption',
    html`<table class="keys">
      <caption id="keys-caption">
        Every key of the account, oldest first
      </caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Prefix</th>
          <th scope="col">Environment</th>
          <th scope="col">Scopes</th>
          <th scope="col">Created</th>
          <th scope="col">Last used</th>
          <th scope="col">Status</th>
          <th scope="col">Actions</th>
        </tr>
      </thead>
      <tbody>
        ${keys.map(
          (k) =>
            html`<tr data-key-id="${k.id}" ${k.revokedAt ? html` class="revoked"` : ''}>
              <td><a href="/account/keys/${k.id}">${k.name}</a></td>
              <td><code>${k.prefix}…</code></td>
              <td>${k.environment}</td>
              <td class="scopes">${k.scopes.length === SCOPES.length ? html`all ${SCOPES.length}: ` : ''}${k.scopes.join(', ')}</td>
              <td>${instant(k.createdAt)}</td>
              <td class="last-used">${instant(k.lastUsedAt)}</td>
              <td class="status">${status(k)}</td>
              <td class="actions">
                ${
                  k.revokedAt
                    ? ''
                    : html`<div class="button-row">
                        <form method="post" action="/account/keys/${k.id}/roll">
                          ${csrfField(csrfToken)}<button type="submit">Roll<span class="visually-hidden"> ${k.prefix}</span></button>
                        </form>
                        <a href="/account/keys/${k.id}/revoke">Revoke<span class="visually-hidden"> ${k.prefix}</span></a>
                      </div>`
                }
              </td>
            </tr>`,
        )}
      </tbody>
    </table>`,
  );
}

function createForm(csrfToken: string): Html {
  return html`<section aria-labelledby="create-title">
    <h2 id="create-title">Create a key</h2>
    <form method="post" action="/account/keys" class="stack" id="create-key">
      ${csrfField(csrfToken)}
      <label for="key-name">Name (what the key is for)</label>
      <input id="key-name" name="name" type="text" required maxlength="200" />
      <fieldset>
        <legend>Environment</legend>
        ${ENVIRONMENTS.map((e, i) => html`<label><input type="radio" name="environment" value="${e}" ${i === 0 ? html` checked` : ''} /> ${ENVIRONMENT_LABEL[e]}</label>`)}
      </fieldset>
      <fieldset class="scopes">
        <legend>Scopes (each route needs exactly one; there is no wildcard)</legend>
        <p id="select-all-row" hidden>
          <label><input type="checkbox" id="select-all" /> Select all ${SCOPES.length} scopes</label>
        </p>
        ${SCOPE_GROUPS.map(
          ([group, scopes]) =>
            html`<fieldset class="scope-group">
              <legend>${group}</legend>
              ${scopes.map((s) => html`<label><input type="checkbox" name="scopes" value="${s}" /> <code>${s}</code></label>`)}
            </fieldset>`,
        )}
      </fieldset>
      <button type="submit">Create key</button>
    </form>
  </section>`;
}

export function keysPage(session: Session, keys: KeyRow[], message?: { error?: string; info?: string }): string {
  return page({
    title: 'Keys',
    session,
    current: 'keys',
    scripts: ['/account/assets/keys.js'],
    // The list belongs to the page's own heading; the sections after it have theirs.
    body: html`<h1>API keys</h1>
      ${notice(message?.error)}${notice(message?.info, 'info')} ${keyRows(keys, session.csrfToken)} ${rollTable(rollsInProgress(keys))}
      ${createForm(session.csrfToken)}`,
  });
}

/**
 * The answer to a create or roll POST: the full key, this once. The page is
 * served with Cache-Control: no-store, and keys.js replaces its history entry
 * with /account/keys (a reload asks for the list, it does not post again) and
 * blanks the key when the page is left, so going back cannot show it either.
 */
export function createdKeyPage(session: Session, key: CreatedKey, rolledFrom?: KeyRow): string {
  return page({
    title: 'Your new key',
    session,
    current: 'keys',
    scripts: ['/account/assets/keys.js'],
    body: html`<h1>Your new key</h1>
      <section class="new-key" aria-labelledby="key-label" data-one-time-key>
        <p class="notice warning" role="alert">
          <strong>Copy this key now.</strong> It is shown this once: the service keeps only its hash and the prefix <code>${key.prefix}</code>. If it is lost,
          roll or create another.
        </p>
        <label id="key-label" for="full-key">Full key: ${key.name} (${key.environment})</label>
        <input id="full-key" class="full-key" type="text" readonly value="${key.key}" autocomplete="off" spellcheck="false" />
        <button type="button" id="copy-key" hidden>Copy key</button>
        <span id="copy-status" role="status"></span>
      </section>
      ${
        rolledFrom
          ? html`<p>
              This key replaces <code>${rolledFrom.prefix}…</code>, which keeps working until you revoke it. The Keys page shows both keys' last use side by
              side.
            </p>`
          : ''
      }
      <p>Scopes: ${key.scopes.join(', ')}</p>
      <p><a href="/account/keys">I have copied it: back to the keys</a></p>`,
  });
}

/** One key: its fields and, while it is being rolled, its pair's last use beside its own. */
export function keyPage(session: Session, key: KeyRow, keys: KeyRow[]): string {
  const pair = rollsInProgress(keys).filter(([old, next]) => old.id === key.id || next.id === key.id);
  return page({
    title: key.name,
    session,
    current: 'keys',
    body: html`<h1>Key ${keyLabel(key)}</h1>
      <dl class="fields">
        <dt>Environment</dt>
        <dd>${key.environment}</dd>
        <dt>Scopes</dt>
        <dd>${key.scopes.join(', ')}</dd>
        <dt>Created</dt>
        <dd>${instant(key.createdAt)}</dd>
        <dt>Last used</dt>
        <dd class="last-used">${instant(key.lastUsedAt)}</dd>
        <dt>Status</dt>
        <dd>${status(key)}</dd>
      </dl>
      ${rollTable(pair)}
      ${
        key.revokedAt
          ? ''
          : html`<div class="button-row">
              <form method="post" action="/account/keys/${key.id}/roll">${csrfField(session.csrfToken)}<button type="submit">Roll this key</button></form>
              <a href="/account/keys/${key.id}/revoke">Revoke this key</a>
            </div>`
      }
      <p><a href="/account/keys">All keys</a></p>`,
  });
}

export function revokeConfirmPage(session: Session, key: KeyRow): string {
  return page({
    title: `Revoke ${key.name}`,
    session,
    current: 'keys',
    body: html`<h1>Revoke key ${keyLabel(key)}?</h1>
      <p>From its next request on, the API refuses this key with <code>revoked_api_key</code>. This cannot be undone.</p>
      <p>Last used: ${instant(key.lastUsedAt)}</p>
      <div class="button-row">
        <form method="post" action="/account/keys/${key.id}/revoke">
          ${csrfField(session.csrfToken)}
          <button type="submit" class="danger">Revoke key</button>
        </form>
        <a href="/account/keys">Cancel</a>
      </div>`,
  });
}
