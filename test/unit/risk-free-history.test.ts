import { describe, expect, it } from 'vitest';
import { demoMacroSeries } from '../../server/demo/macro-series.ts';
import { demoRiskFreeRates } from '../../server/demo/risk-free-rates.ts';
import { dailyKnownFrom, monthlyKnownFrom, newerObservationDue } from '../../server/macro/risk-free-history.ts';
import { HARDCODED_RISK_FREE } from '../../server/macro/service.ts';
import { expiryInstant, isActiveAt, isQuoteStale, rowStaleReason } from '../../server/options/freshness.ts';

// The known-from rules and the options freshness rules, against instants
// worked out by hand from the calendar (New York is UTC−4 under daylight
// saving time, UTC−5 otherwise; US DST 2001 ran from 2001-04-01 to 2001-10-28).

describe('the risk-free rate history', () => {
  it('when a monthly average is dated, then it is known from 00:00 UTC on the first of the next month, December into January', () => {
    expect(monthlyKnownFrom('2001-03-01').toISOString()).toBe('2001-04-01T00:00:00.000Z');
    expect(monthlyKnownFrom('2000-12-01').toISOString()).toBe('2001-01-01T00:00:00.000Z');
    expect(monthlyKnownFrom('2022-09-01').toISOString()).toBe('2022-10-01T00:00:00.000Z');
  });

  it('when a daily observation is dated, then it is known from the end of its UTC day', () => {
    expect(dailyKnownFrom('2025-01-03').toISOString()).toBe('2025-01-04T00:00:00.000Z');
    expect(dailyKnownFrom('2024-02-29').toISOString()).toBe('2024-03-01T00:00:00.000Z');
  });

  it('when the newest observation is the previous month (monthly) or at most 4 days known (daily), then no newer one is due', () => {
    const april = monthlyKnownFrom('2001-04-01');
    expect(newerObservationDue('TB3MS', april, new Date('2001-05-31T23:59:59.999Z'))).toBe(false);
    expect(newerObservationDue('TB3MS', april, new Date('2001-06-01T00:00:00.000Z'))).toBe(true);
    const friday = dailyKnownFrom('2025-01-03');
    expect(newerObservationDue('DGS3MO', friday, new Date('2025-01-08T00:00:00.000Z'))).toBe(false);
    expect(newerObservationDue('DGS3MO', friday, new Date('2025-01-08T00:00:00.001Z'))).toBe(true);
  });

  it('when the bundled TB3MS file is read, then it holds 1,065 months 1934-01..2022-09 with the values of the gretl snapshot', () => {
    const rows = demoRiskFreeRates();
    expect(rows).toHaveLength(1065);
    const at = (date: string) => rows.find((r) => r.date === date)!;
    expect(rows[0]).toMatchObject({ seriesId: 'TB3MS', date: '1934-01-01', value: 0.72 });
    expect(at('2001-03-01').value).toBe(4.42);
    expect(at('2001-04-01')).toMatchObject({ value: 3.87, knownFrom: new Date('2001-05-01T00:00:00.000Z') });
    // The file's last line, TB3MS,2022-09-01,3.13, is the hard-coded fallback.
    expect(rows.at(-1)).toMatchObject({ date: '2022-09-01', value: 3.13 });
    expect(HARDCODED_RISK_FREE).toMatchObject({ observationDate: '2022-09-01', percent: 3.13 });
    // The snapshot the other bundled FRED series come from (macro-series.json's "source").
    expect(new Set(rows.map((r) => r.source))).toEqual(new Set(['gretl-data-2022c/fedstl (FRED)']));
    expect(demoMacroSeries().source).toBe('gretl-data-2022c/fedstl (FRED)');
  });
});

describe('options freshness', () => {
  it('when a quote is at Friday 16:00 New York, then it stays fresh until Monday 16:00 New York', () => {
    const friday = new Date('2001-05-04T20:00:00Z');
    expect(isQuoteStale(friday, new Date('2001-05-07T19:59:59.999Z'))).toBe(false);
    expect(isQuoteStale(friday, new Date('2001-05-07T20:00:00Z'))).toBe(true);
  });

  it("when a quote is in the morning before the open, then that day's session is a whole session after it", () => {
    // 2001-01-08 is a Monday under EST: 09:30 New York is 14:30 UTC, 16:00 is 21:00 UTC.
    const early = new Date('2001-01-08T14:00:00Z');
    expect(isQuoteStale(early, new Date('2001-01-08T20:59:59Z'))).toBe(false);
    expect(isQuoteStale(early, new Date('2001-01-08T21:00:00Z'))).toBe(true);
    // After the open, the same day's session is not whole after it: the next is.
    const midSession = new Date('2001-01-08T15:00:00Z');
    expect(isQuoteStale(midSession, new Date('2001-01-08T21:00:00Z'))).toBe(false);
    expect(isQuoteStale(midSession, new Date('2001-01-09T21:00:00Z'))).toBe(true);
  });

  it('when a contract reaches 16:00 New York on its expiry day, then it is inactive and its row is contract_expired', () => {
    const contract = { isActive: true, expiry: '2001-01-19' };
    // 2001-01-19 under EST: 16:00 New York is 21:00 UTC.
    expect(isActiveAt(contract, new Date('2001-01-19T20:59:59.999Z'))).toBe(true);
    expect(isActiveAt(contract, new Date('2001-01-19T21:00:00Z'))).toBe(false);
    expect(isActiveAt({ ...contract, isActive: false }, new Date('2001-01-02T00:00:00Z'))).toBe(false);
    expect(rowStaleReason(contract, { observedAt: new Date('2001-01-19T20:00:00Z') }, new Date('2001-01-19T21:00:00Z'))).toBe('contract_expired');
    expect(rowStaleReason(contract, null, new Date('2001-01-19T20:00:00Z'))).toBe('no_quote');
    expect(rowStaleReason(contract, { observedAt: new Date('2001-01-19T20:00:00Z') }, new Date('2001-01-19T20:30:00Z'))).toBeNull();
  });

  it('when a date lies at the edges a contract accepts (year 1, before 1883, year 9999), then every rule still answers', () => {
    // Before New York kept standard time the rules read 16:00 at UTC−5.
    expect(new Date(expiryInstant('0001-01-05')).toISOString()).toBe('0001-01-05T21:00:00.000Z');
    expect(new Date(expiryInstant('1850-06-14')).toISOString()).toBe('1850-06-14T21:00:00.000Z');
    expect(new Date(expiryInstant('9999-12-31')).toISOString()).toBe('9999-12-31T21:00:00.000Z');
    // 9999-12-31 is a Friday: after its open no session opens before year 10000, so the quote never turns stale.
    expect(isQuoteStale(new Date('9999-12-31T15:00:00Z'), new Date('9999-12-31T23:59:59.999Z'))).toBe(false);
    expect(isQuoteStale(new Date('0001-01-01T00:00:00Z'), new Date('0001-01-02T21:00:00Z'))).toBe(true);
  });
});
