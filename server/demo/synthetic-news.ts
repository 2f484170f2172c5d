import { dayNumber, dayToDate } from '../core/day-numbers.ts';
import { demoDailyBars, demoInstrumentId } from './catalog.ts';
import { SYNTHETIC_SOURCE } from './synthetic-intraday.ts';
import { newYorkTimeToUtc } from '../core/new-york-time.ts';
import type { InstrumentId } from '../core/ids.ts';
import { entryOf } from '../core/map-entry.ts';

/**
 * Synthetic news for the demo. Our sources hold no real news, so five demo
 * equities with real daily bars get generated items, placed on their real
 * trading days so that event reactions are derived from real prices. Every
 * item has `source: 'synthetic-demo'`, a URL under
 * https://example.invalid/synthetic-demo/ (a domain that cannot resolve), and
 * a headline that says it is synthetic; none reports anything that happened.
 * The same price files always give the same items.
 *
 * Every STEP-th bar day of an instrument (from its FIRST_BAR-th) starts a cycle of three items:
 * - a company-confirmed results release on that day at 16:05 New York time,
 *   after the close, so it reacts in the next session;
 * - a third-party analyst note OFFSET bars later at 09:15, before the open,
 *   so it reacts in that session;
 * - a third-party media report on the Saturday after the bar 2 × OFFSET
 *   later, at 11:00, so it reacts in the next session after the weekend;
 * and every fourth cycle a company-confirmed guidance update OFFSET / 2 bars
 * in, at 12:30, during the session.
 * One more item is about GOOG (class C), which has no bar in the demo at all:
 * it yields no reaction.
 */

export interface SyntheticNewsItem {
  instrumentId: InstrumentId;
  eventClass: string;
  headline: string;
  source: typeof SYNTHETIC_SOURCE;
  url: string;
  publishedAt: string;
  isCompanyConfirmed: boolean;
}

/** The demo equities given news, by their key in instruments.json, with the name the headlines use. */
export const SYNTHETIC_NEWS_INSTRUMENTS = [
  { key: 'GOOGL', name: 'Google' },
  { key: 'MSFT', name: 'Microsoft' },
  { key: 'dow:IBM', name: 'IBM' },
  { key: 'dow:KO', name: 'Coca-Cola' },
  { key: 'dow:GE', name: 'General Electric' },
] as const;

const FIRST_BAR = 20;
const STEP = 120;
const OFFSET = 40;

/** The item about an instrument without bars, and its day. */
export const NO_BARS_KEY = 'GOOG-C';
export const NO_BARS_DAY = '2015-01-29';

const URL_BASE = 'https://example.invalid/synthetic-demo';

function item(key: string, name: string, n: number, kind: { eventClass: string; text: string; confirmed: boolean }, day: string, newYorkTime: string) {
  return {
    instrumentId: demoInstrumentId(key),
    eventClass: kind.eventClass,
    headline: `[Synthetic demo] ${name}: ${kind.text} (generated placeholder, not real news)`,
    source: SYNTHETIC_SOURCE,
    url: `${URL_BASE}/${encodeURIComponent(key)}/${n}-${kind.eventClass}`,
    publishedAt: new Date(newYorkTimeToUtc(day, newYorkTime)).toISOString(),
    isCompanyConfirmed: kind.confirmed,
  } satisfies SyntheticNewsItem;
}

const RESULTS = { eventClass: 'earnings_release', text: 'quarterly results released after the close', confirmed: true };
const ANALYST = { eventClass: 'analyst_rating', text: 'an analyst changes its rating before the open', confirmed: false };
const MEDIA = { eventClass: 'media_report', text: 'a weekend press report, not confirmed by the company', confirmed: false };
const GUIDANCE = { eventClass: 'guidance', text: 'the company updates its guidance during the session', confirmed: true };

/** The Saturday on or after a day (day 0, 1970-01-01, was a Thursday: weekday 4 counting from Sunday). */
function saturdayOnOrAfter(day: string): string {
  const n = dayNumber(day);
  const weekday = (((n + 4) % 7) + 7) % 7;
  return dayToDate(n + ((6 - weekday + 7) % 7));
}

export function syntheticNews(): SyntheticNewsItem[] {
  const keys = new Map<string, string>(SYNTHETIC_NEWS_INSTRUMENTS.map((i) => [demoInstrumentId(i.key), i.key]));
  const days = new Map<string, string[]>(SYNTHETIC_NEWS_INSTRUMENTS.map((i) => [i.key, []]));
  for (const bar of demoDailyBars()) {
    const key = keys.get(bar.instrumentId);
    if (key) entryOf(days, key).push(bar.barDate);
  }
  const items: SyntheticNewsItem[] = [];
  for (const { key, name } of SYNTHETIC_NEWS_INSTRUMENTS) {
    const barDays = entryOf(days, key).sort();
    for (let start = FIRST_BAR, cycle = 0; start + 2 * OFFSET < barDays.length; start += STEP, cycle++) {
      items.push(item(key, name, cycle, RESULTS, barDays[start], '16:05'));
      items.push(item(key, name, cycle, ANALYST, barDays[start + OFFSET], '09:15'));
      items.push(item(key, name, cycle, MEDIA, saturdayOnOrAfter(barDays[start + 2 * OFFSET]), '11:00'));
      if (cycle % 4 === 0) items.push(item(key, name, cycle, GUIDANCE, barDays[start + OFFSET / 2], '12:30'));
    }
  }
  items.push(item(NO_BARS_KEY, 'Google class C', 0, RESULTS, NO_BARS_DAY, '16:05'));
  return items;
}
