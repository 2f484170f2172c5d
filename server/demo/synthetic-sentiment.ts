import { demoDailyBars, demoInstrumentId } from './catalog.ts';
import { mulberry32, normal } from './synthetic-intraday.ts';
import type { InstrumentId } from '../core/ids.ts';
import { entryOf } from '../core/map-entry.ts';

/**
 * Synthetic sentiment scores for the demo, built against the real demo
 * prices so that the source leads derived from them at load show a true
 * positive and true negatives. No score is an observation: both sources are
 * named `synthetic-demo-…`, and the same data files always give the same rows.
 *
 * Six Dow Jones names, the sessions 1997-01-02 .. 2000-12-29 with a bar 3
 * sessions later (the file ends 2001-01-02, so the last is 2000-12-27), on their real closes from
 * the DowJones30 file. That file is adjusted by its vendor for every action
 * up to 2001-01-02 and no later action of these names is stored, so its
 * close-to-close returns are the adjusted returns the leads read.
 * - synthetic-demo-wire, scale [-1, 1], business: on 60% of sessions, the
 *   score of session t is tanh(0.75·(z + 1.25·ε)), z the real simple return of
 *   session t+3 over the name's standard deviation of returns, ε standard
 *   normal noise: it leads the price by 3 sessions by construction.
 * - synthetic-demo-social, scale [0, 100], business: on half the sessions,
 *   50 + 15·ε clipped to the scale, drawn without looking at any price: no lead.
 * - synthetic-demo-social, market_commentary: on half the sessions,
 *   50 + 25·tanh(0.8·(z₀ + 0.8·ε)), z₀ from the return of session t itself:
 *   it follows the price, so it peaks at lag 0, and is never eligible.
 * A quarter of the scores are headline-only, at random.
 */

export const SENTIMENT_WIRE_SOURCE = 'synthetic-demo-wire';
export const SENTIMENT_SOCIAL_SOURCE = 'synthetic-demo-social';
export const SENTIMENT_INSTRUMENT_KEYS = ['dow:IBM', 'dow:KO', 'dow:GE', 'dow:JNJ', 'dow:XOM', 'dow:WMT'] as const;
export const SENTIMENT_FROM = '1997-01-02';
export const SENTIMENT_TO = '2000-12-29';
/** Sessions by which the wire's score leads the return it is built from. */
export const WIRE_LEAD_SESSIONS = 3;
const SEED = 20_000_103;
const DOW_SOURCE = 'r-cran-fbasics/DowJones30 (adjusted close only)';

export interface SyntheticSentimentScore {
  instrumentId: InstrumentId;
  source: typeof SENTIMENT_WIRE_SOURCE | typeof SENTIMENT_SOCIAL_SOURCE;
  subjectClass: 'business' | 'market_commentary';
  asOfDate: string;
  score: number;
  scale: [number, number];
  isHeadlineOnly: boolean;
}

const round = (x: number, decimals: number) => Math.round(x * 10 ** decimals) / 10 ** decimals;
const clip = (x: number, min: number, max: number) => Math.min(max, Math.max(min, x));

export function syntheticSentimentScores(): SyntheticSentimentScore[] {
  const ids = SENTIMENT_INSTRUMENT_KEYS.map((key) => demoInstrumentId(key));
  const sessions = new Map(ids.map((id) => [id, [] as { date: string; close: number }[]]));
  for (const bar of demoDailyBars()) {
    if (bar.source === DOW_SOURCE) sessions.get(bar.instrumentId)?.push({ date: bar.barDate, close: bar.closePrice });
  }
  const rows: SyntheticSentimentScore[] = [];
  ids.forEach((instrumentId, n) => {
    const bars = entryOf(sessions, instrumentId).sort((a, b) => (a.date < b.date ? -1 : 1));
    const ret = (s: number) => bars[s].close / bars[s - 1].close - 1;
    const window = [...bars.keys()].filter(
      (s) => s >= 1 && s + WIRE_LEAD_SESSIONS < bars.length && bars[s].date >= SENTIMENT_FROM && bars[s].date <= SENTIMENT_TO,
    );
    const returns = window.map(ret);
    const mean = returns.reduce((a, b) => a + b, 0) / returns.length;
    const sd = Math.sqrt(returns.reduce((a, r) => a + (r - mean) ** 2, 0) / (returns.length - 1));
    // One stream per instrument and series, so each series is the same whatever the others draw.
    const stream = (series: number) => mulberry32((SEED ^ Math.imul(n * 3 + series + 1, 0x9e3779b1)) >>> 0);
    const [wire, social, commentary] = [stream(0), stream(1), stream(2)];
    for (const s of window) {
      const base = { instrumentId, asOfDate: bars[s].date };
      if (wire() < 0.6) {
        const score = round(Math.tanh(0.75 * (ret(s + WIRE_LEAD_SESSIONS) / sd + 1.25 * normal(wire))), 4);
        rows.push({ ...base, source: SENTIMENT_WIRE_SOURCE, subjectClass: 'business', score, scale: [-1, 1], isHeadlineOnly: wire() < 0.25 });
      }
      if (social() < 0.5) {
        const score = round(clip(50 + 15 * normal(social), 0, 100), 1);
        rows.push({ ...base, source: SENTIMENT_SOCIAL_SOURCE, subjectClass: 'business', score, scale: [0, 100], isHeadlineOnly: social() < 0.25 });
      }
      if (commentary() < 0.5) {
        const score = round(50 + 25 * Math.tanh(0.8 * (ret(s) / sd + 0.8 * normal(commentary))), 1);
        rows.push({ ...base, source: SENTIMENT_SOCIAL_SOURCE, subjectClass: 'market_commentary', score, scale: [0, 100], isHeadlineOnly: commentary() < 0.25 });
      }
    }
  });
  return rows;
}
