import { csrfField, html, notice, page } from './html.ts';

/** The sign-in form; `csrfToken` is the form cookie's (the page that shows the form also sets that cookie). */
export function signInPage(options: { csrfToken: string; login?: string; error?: string; info?: string }): string {
  return page({
    title: 'Sign in',
    body: html`<h1>Sign in</h1>
      ${notice(options.error)}${notice(options.info, 'info')}
      <form method="post" action="/account/sign-in" class="stack">
        ${csrfField(options.csrfToken)}
        <label for="login">Login</label>
        <input id="login" name="login" type="text" autocomplete="username" required maxlength="200" value="${options.login ?? ''}" />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="200" />
        <button type="submit">Sign in</button>
      </form>
      <p class="hint">No login yet? The service's operator creates one for your account, or sends you an invitation link.</p>`,
  });
}

/** The invitation link's page: choose the password. The token rides in a hidden field, never in a URL the form posts to. */
export function invitationPage(options: { csrfToken: string; token: string; login: string; error?: string }): string {
  return page({
    title: 'Choose your password',
    body: html`<h1>Choose your password</h1>
      <p>You are invited to the account dashboard as <strong>${options.login}</strong>. This link works once.</p>
      ${notice(options.error)}
      <form method="post" action="/account/invitation" class="stack">
        ${csrfField(options.csrfToken)}
        <input type="hidden" name="token" value="${options.token}" />
        <input type="text" name="login" autocomplete="username" value="${options.login}" hidden />
        <label for="password">New password (at least 12 characters)</label>
        <input id="password" name="password" type="password" autocomplete="new-password" required minlength="12" maxlength="200" />
        <label for="confirm">The same password again</label>
        <input id="confirm" name="confirm" type="password" autocomplete="new-password" required minlength="12" maxlength="200" />
        <button type="submit">Set password</button>
      </form>`,
  });
}

export function errorPage(options: { status: number; message: string; signedIn: boolean }): string {
  return page({
    title: `Error ${options.status}`,
    body: html`<h1>${options.status === 404 ? 'Not found' : 'Something went wrong'}</h1>
      ${notice(options.message)}
      <p><a href="${options.signedIn ? '/account/keys' : '/account/sign-in'}">${options.signedIn ? 'Back to your keys' : 'Sign in'}</a></p>`,
  });
}
