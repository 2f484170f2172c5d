import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstrument } from './fixtures.ts';
import { startService, type Service } from './harness.ts';

// A bounded parameter refused for its value names the range, as the spec's
// limits table gives it (../shared/spec/market-data-service.md, "Limits";
// docs/api.md, "Errors"), and the value received: "must be an integer
// between a and b; received v", whatever was wrong with v, a day count in
// days. The ranges below are the spec's, written out by hand.

let svc: Service;
let key: string;
let instrumentId: string;

beforeAll(async () => {
  svc = await startService();
  key = await svc.keyWith(['news:read', 'events:read', 'technicals:read', 'correlations:read', 'options:read', 'instruments:read']);
  ({ id: instrumentId } = await createInstrument(svc));
});
afterAll(() => svc.stop());

/** [path with query, field, message], each from the spec's limits. */
const SPEC_RANGES: [string, string, string][] = [
  // limit, news and events: > 0, at most 500.
  ['/v1/instruments/$/news?limit=501', 'limit', 'must be an integer between 1 and 500; received 501'],
  ['/v1/instruments/$/news?limit=0', 'limit', 'must be an integer between 1 and 500; received 0'],
  ['/v1/instruments/$/news?limit=12.5', 'limit', 'must be an integer between 1 and 500; received 12.5'],
  ['/v1/instruments/$/events?limit=501', 'limit', 'must be an integer between 1 and 500; received 501'],
  // minReactions, event-reaction coverage: 1 to 1000.
  ['/v1/instruments/event-reaction-coverage?minReactions=0', 'minReactions', 'must be an integer between 1 and 1000; received 0'],
  ['/v1/instruments/event-reaction-coverage?minReactions=1001', 'minReactions', 'must be an integer between 1 and 1000; received 1001'],
  ['/v1/instruments/event-reaction-coverage?minReactions=two', 'minReactions', 'must be an integer between 1 and 1000; received "two"'],
  // minWindowDays: 1 to 36500.
  ['/v1/instruments/event-reaction-coverage?minWindowDays=36501', 'minWindowDays', 'must be a whole number of days between 1 and 36500; received 36501 days'],
  ['/v1/instruments/event-reaction-coverage?minWindowDays=0', 'minWindowDays', 'must be a whole number of days between 1 and 36500; received 0 days'],
  // limit, coverage: 1 to 5000.
  ['/v1/instruments/event-reaction-coverage?limit=5001', 'limit', 'must be an integer between 1 and 5000; received 5001'],
  ['/v1/instruments/event-reaction-coverage?limit=0.5', 'limit', 'must be an integer between 1 and 5000; received 0.5'],
  // technicals lookback: 1 to 1000 calendar days.
  ['/v1/instruments/$/technicals?lookbackDays=1001', 'lookbackDays', 'must be a whole number of days between 1 and 1000; received 1001 days'],
  ['/v1/instruments/$/technicals?lookbackDays=0', 'lookbackDays', 'must be a whole number of days between 1 and 1000; received 0 days'],
  // correlation lookback: 20 to 504 calendar days.
  ['/v1/correlations?instrumentIds=$,$2&lookbackDays=19', 'lookbackDays', 'must be a whole number of days between 20 and 504; received 19 days'],
  ['/v1/correlations?instrumentIds=$,$2&lookbackDays=505', 'lookbackDays', 'must be a whole number of days between 20 and 504; received 505 days'],
  // max age, bulk implied volatility: 1 to 30 days.
  ['/v1/instruments/implied-volatility?instrumentIds=$&maxAgeDays=31', 'maxAgeDays', 'must be a whole number of days between 1 and 30; received 31 days'],
  ['/v1/instruments/implied-volatility?instrumentIds=$&maxAgeDays=0', 'maxAgeDays', 'must be a whole number of days between 1 and 30; received 0 days'],
];

describe('range messages', () => {
  it('when a bounded parameter of the spec is out of range or not an integer, then 400 invalid_request whose details name the field and its range', async () => {
    const { id: second } = await createInstrument(svc);
    for (const [template, field, message] of SPEC_RANGES) {
      const path = template.replace('$2', second).replace(/\$/g, instrumentId);
      const res = await svc.get(path, key);
      expect(res.status, path).toBe(400);
      expect(res.body.error.code, path).toBe('invalid_request');
      expect(res.body.error.details[field], path).toEqual([message]);
    }
  });

  it('when an analytics body number is outside its bounds, then the message names the whole range', async () => {
    const analytics = await svc.keyWith(['analytics:read']);
    const res = await svc.post('/v1/analytics/option-price', analytics, { spot: 100, strike: 100, expiryDays: 30, rate: 2, vol: 0.2, type: 'call' });
    expect(res.status).toBe(400);
    // rate: at least -0.2 and at most 1 (server/analytics/schema.ts; docs in the reference).
    expect(res.body.error.details.rate).toEqual(['must be a number between -0.2 and 1; received 2']);
  });
});
