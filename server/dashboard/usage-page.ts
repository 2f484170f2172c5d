import type { readUsage } from '../keys/service.ts';
import { ENVIRONMENTS, type Environment } from '../core/scopes.ts';
import { html, page } from './html.ts';
import type { Session } from '../core/session.ts';

/** The periods the usage page offers, in days (400 is the admin API's maximum). */
export const USAGE_PERIODS = [30, 90, 400] as const;

type Usage = Awaited<ReturnType<typeof readUsage>>;

export interface UsagePageInput {
  usage: Usage;
  days: number;
  /** Each environment's per-minute limit (RATE_LIMIT_*_PER_MINUTE). */
  perMinute: Record<Environment, number>;
  /** Now, ms since the epoch: which minute is the current one. */
  now: number;
}

/**
 * Requests admitted in the current minute: the counter's latest minute when
 * that is this minute, else none yet. (The counter keeps the minute of the
 * day's last admitted request; its start is on the database clock.)
 */
function thisMinute(latest: Usage['usage'][Environment]['latestMinute'], now: number): number {
  const minuteStart = new Date(Math.floor(now / 60_000) * 60_000).toISOString();
  return latest && latest.minuteStart === minuteStart ? latest.admitted : 0;
}

/**
 * Per environment: the current minute against its limit, then a chart
 * (usage.js draws it with uPlot from the table below it) and the table of
 * the days that had requests, with the numbers GET /admin/v1/usage answers
 * (or one row saying there were none).
 */
export function usagePage(session: Session, input: UsagePageInput): string {
  const billable = new Set<string>(input.usage.billable);
  const sections = [...ENVIRONMENTS].reverse().map((env) => {
    const { days, latestMinute } = input.usage.usage[env];
    const minute = thisMinute(latestMinute, input.now);
    const admitted = days.reduce((n, d) => n + d.admitted, 0);
    const refused = days.reduce((n, d) => n + d.refused, 0);
    const title = env === 'live' ? 'Live' : 'Sandbox';
    return html`<section class="environment" aria-labelledby="${env}-title" data-environment="${env}">
      <h2 id="${env}-title">${title} <span class="${billable.has(env) ? 'billable' : 'not-billed'}">${billable.has(env) ? 'billable' : 'not billed'}</span></h2>
      <p>
        <label for="${env}-minute">This minute: ${minute} of ${input.perMinute[env]} requests</label>
        <meter id="${env}-minute" min="0" max="${input.perMinute[env]}" value="${minute}">${minute} of ${input.perMinute[env]}</meter>
      </p>
      <p class="totals">
        Last ${input.days} days: <strong data-total="admitted">${admitted}</strong> admitted, <strong data-total="refused">${refused}</strong> refused (429).
      </p>
      <div
        class="chart"
        id="${env}-chart"
        data-chart-for="${env}-days"
        data-days="${input.days}"
        data-today="${new Date(input.now).toISOString().slice(0, 10)}"
        role="img"
        aria-label="${title} requests admitted and refused per day, last ${input.days} days; the table below holds the same numbers"
      ></div>
      <table id="${env}-days" class="usage-days">
        <caption>
          ${title}: requests per UTC day (days without requests are left out)
        </caption>
        <thead>
          <tr>
            <th scope="col">Day</th>
            <th scope="col">Admitted</th>
            <th scope="col">Refused (429)</th>
          </tr>
        </thead>
        <tbody>
          ${
            days.length
              ? days.map(
                  (d) =>
                    html`<tr data-day="${d.day}" data-admitted="${d.admitted}" data-refused="${d.refused}">
                      <td>${d.day}</td>
                      <td>${d.admitted}</td>
                      <td>${d.refused}</td>
                    </tr>`,
                )
              : html`<tr class="no-requests">
                  <td colspan="3">No ${env} requests in the last ${input.days} days.</td>
                </tr>`
          }
        </tbody>
      </table>
    </section>`;
  });
  return page({
    title: 'Usage',
    session,
    current: 'usage',
    styles: ['/account/assets/uplot/uPlot.min.css'],
    scripts: ['/account/assets/uplot/uPlot.iife.min.js', '/account/assets/usage.js'],
    body: html`<h1>Usage</h1>
      <p>
        Requests to <code>/v1</code> by the account's keys, per environment and UTC day. Live requests are billable; sandbox requests are counted against their
        own limits and not billed.
      </p>
      <nav aria-label="Period" class="periods">
        ${USAGE_PERIODS.map((d) => html`<a href="/account/usage?days=${d}" ${d === input.days ? html` aria-current="page"` : ''}>Last ${d} days</a> `)}
      </nav>
      ${sections}`,
  });
}
