import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoDailyBars, demoInstruments } from '../../server/demo/catalog.ts';
import { SENTIMENT_SOCIAL_SOURCE, SENTIMENT_WIRE_SOURCE, syntheticSentimentScores } from '../../server/demo/synthetic-sentiment.ts';
import { batchesOf } from '../../server/ingest/body.ts';
import { ingestRows } from '../../server/ingest/service.ts';
import { instrumentIngest } from '../../server/instruments/ingest.ts';
import { dailyBarIngest } from '../../server/prices/ingest.ts';
import { sentimentIngest } from '../../server/sentiment/ingest.ts';
import { startService, type Service } from './harness.ts';

// The demo sentiment through the same ingest as the demo load, against the
// real demo closes of its six names, then the leads as derive makes them.

describe('the demo sentiment leads', () => {
  let svc: Service;
  const scores = syntheticSentimentScores();
  const ids = [...new Set(scores.map((s) => s.instrumentId))];

  beforeAll(async () => {
    svc = await startService();
    const instruments = demoInstruments()
      .filter((i) => ids.includes(i.id))
      .map(({ currentSymbol: _current, ...i }) => i);
    await ingestRows(svc.sql, instrumentIngest, batchesOf(instruments));
    const bars = [...demoDailyBars()]
      .filter((b) => ids.includes(b.instrumentId))
      .map((b) => ({ ...b, priceBasis: 'vendor_adjusted', reflectsActionsThrough: '2001-01-02' }));
    await ingestRows(svc.sql, dailyBarIngest, batchesOf(bars));
    const stored = await ingestRows(svc.sql, sentimentIngest, batchesOf(scores));
    expect(stored.rows).toBe(scores.length);
    expect((await ingestRows(svc.sql, sentimentIngest, batchesOf(syntheticSentimentScores()))).unchanged).toBe(scores.length);
    const derived = await svc.admin('POST', '/derive', {});
    expect(derived.status).toBe(200);
  });
  afterAll(() => svc?.stop());

  it('when derived, then the wire leads by 3 sessions and is eligible, the social business score is not, and the commentary peaks at lag 0 and is not', async () => {
    const key = await svc.keyWith(['sentiment:read']);
    const read = async (source: string) => (await svc.get(`/v1/sentiment/source-leads?source=${source}`, key)).body.data;
    const [wire] = await read(SENTIMENT_WIRE_SOURCE);
    const [socialBusiness, commentary] = await read(SENTIMENT_SOCIAL_SOURCE);
    console.info(
      `[demo leads] ${JSON.stringify([wire, socialBusiness, commentary].map((l) => [l.source, l.subjectClass, l.bestLagDays, l.peakCorrelation, l.sampleSize, l.isPromotionEligible]))}`,
    );
    expect(wire).toMatchObject({ subjectClass: 'business', bestLagDays: 3, isPromotionEligible: true, instruments: 6, firstAsOfDate: '1997-01-02' });
    expect(socialBusiness).toMatchObject({ subjectClass: 'business', isPromotionEligible: false, instruments: 6 });
    expect(Math.abs(socialBusiness.peakCorrelation)).toBeLessThan(0.1);
    expect(commentary).toMatchObject({ subjectClass: 'market_commentary', bestLagDays: 0, isPromotionEligible: false });
    // Every score of the window has its session and the 10 after it among the real bars (the file runs to 2001-01-02).
    const wireScores = scores.filter((s) => s.source === SENTIMENT_WIRE_SOURCE).length;
    expect(wire.correlationByLag[0].sampleSize).toBe(wireScores);
  });
});
