import { readFileSync } from 'node:fs';
import { sampleCorrelation } from 'simple-statistics';
import { describe, expect, it } from 'vitest';
import { demoInstrumentId } from '../../server/demo/catalog.ts';
import {
  SENTIMENT_FROM,
  SENTIMENT_INSTRUMENT_KEYS,
  SENTIMENT_SOCIAL_SOURCE,
  SENTIMENT_TO,
  SENTIMENT_WIRE_SOURCE,
  syntheticSentimentScores,
} from '../../server/demo/synthetic-sentiment.ts';
import { SentimentRowSchema } from '../../server/sentiment/schema.ts';

const rows = syntheticSentimentScores();

/** The real closes of one Dow column, read from the file by hand (its first row repeats the second and is skipped). */
function dowCloses(column: string): Map<string, number> {
  const [header, , ...lines] = readFileSync(new URL('../../server/demo/data/dowjones30_adjclose_1990_2001.csv', import.meta.url), 'utf8')
    .trim()
    .split('\n');
  const c = header.split(',').indexOf(column);
  return new Map(lines.map((l) => l.split(',')).map((cells) => [cells[0], Number(cells[c])]));
}

describe('the synthetic demo sentiment', () => {
  it('when generated twice, then the rows are the same', () => {
    expect(syntheticSentimentScores()).toEqual(rows);
  });

  it('when ingested, then every row is valid, within its scale, unique by key, labelled synthetic and on a session of the window', () => {
    const sessions = dowCloses('IBM');
    const keys = new Set<string>();
    for (const row of rows) {
      expect(SentimentRowSchema.safeParse(row).success).toBe(true);
      expect(row.score).toBeGreaterThanOrEqual(row.scale[0]);
      expect(row.score).toBeLessThanOrEqual(row.scale[1]);
      expect(row.source).toMatch(/^synthetic-demo-/);
      expect(row.scale).toEqual(row.source === SENTIMENT_WIRE_SOURCE ? [-1, 1] : [0, 100]);
      expect(sessions.has(row.asOfDate)).toBe(true);
      expect(row.asOfDate >= SENTIMENT_FROM && row.asOfDate <= SENTIMENT_TO).toBe(true);
      keys.add(`${row.instrumentId} ${row.source} ${row.subjectClass} ${row.asOfDate}`);
    }
    expect(keys.size).toBe(rows.length);
    expect(new Set(rows.map((r) => r.instrumentId))).toEqual(new Set(SENTIMENT_INSTRUMENT_KEYS.map((k) => demoInstrumentId(k))));
  });

  it('when IBM’s wire scores are set against its real returns, then they follow the return 3 sessions later and not the others', () => {
    const closes = dowCloses('IBM');
    const dates = [...closes.keys()];
    const ret = (s: number) => closes.get(dates[s])! / closes.get(dates[s - 1])! - 1;
    const ibm = demoInstrumentId('dow:IBM');
    const correlationAt = (source: string, subjectClass: string, lag: number) => {
      const scored = rows.filter((r) => r.instrumentId === ibm && r.source === source && r.subjectClass === subjectClass);
      return sampleCorrelation(
        scored.map((r) => r.score),
        scored.map((r) => ret(dates.indexOf(r.asOfDate) + lag)),
      );
    };
    expect(correlationAt(SENTIMENT_WIRE_SOURCE, 'business', 3)).toBeGreaterThan(0.4);
    // Lag 4 and on would run past the file's last session for the window's last scores.
    for (const lag of [0, 1, 2]) expect(Math.abs(correlationAt(SENTIMENT_WIRE_SOURCE, 'business', lag))).toBeLessThan(0.1);
    for (const lag of [0, 1, 2, 3]) expect(Math.abs(correlationAt(SENTIMENT_SOCIAL_SOURCE, 'business', lag))).toBeLessThan(0.1);
    expect(correlationAt(SENTIMENT_SOCIAL_SOURCE, 'market_commentary', 0)).toBeGreaterThan(0.4);
  });
});
