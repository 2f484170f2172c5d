import { describe, expect, it } from 'vitest';
import { derivedActionId } from '../../server/actions/schema.ts';
import { demoEconomicEvents, type DemoEconomicEvent } from '../../server/demo/economic-events.ts';
import { EconomicEventRowSchema, derivedEventId } from '../../server/economic-events/schema.ts';
import { newYorkTimeToUtc } from '../../server/core/new-york-time.ts';
import { InstrumentIdSchema } from '../../server/core/ids.ts';

// Expected values are worked out by hand from server/demo/data/fred_monthly_demo.csv
// and a calendar; each test shows its arithmetic.

const rows = demoEconomicEvents();
const FEDFUNDS = 'Effective Federal Funds Rate (monthly average)';

function row(name: string, referencePeriod: string): DemoEconomicEvent {
  const found = rows.filter((r) => r.name === name && r.referencePeriod === referencePeriod);
  expect(found, `${name} ${referencePeriod}`).toHaveLength(1);
  return found[0];
}

describe('demo economic calendar: what it holds', () => {
  it('when built, then 2018-01..2022-09 (57 months) of each of the five series plus one scheduled release each: 290 rows, all US and synthetic-demo, no forecasts', () => {
    expect(rows).toHaveLength(290);
    const names = ['Unemployment Rate', 'Nonfarm Payrolls', 'CPI m/m', 'Core CPI m/m', FEDFUNDS];
    for (const name of names) {
      const periods = rows.filter((r) => r.name === name).map((r) => r.referencePeriod);
      expect(periods, name).toHaveLength(58);
      expect(
        periods.filter((p) => p >= '2018-01' && p <= '2022-09'),
        name,
      ).toHaveLength(57);
      expect(
        periods.filter((p) => p === '2026-12'),
        name,
      ).toHaveLength(1);
    }
    expect(new Set(rows.map((r) => r.name))).toEqual(new Set(names));
    expect(rows.every((r) => r.country === 'US' && r.source === 'synthetic-demo' && r.forecast === null)).toBe(true);
  });

  it('when built twice, then the rows are identical, each passes the admin row schema, and their derived ids are distinct', () => {
    expect(demoEconomicEvents()).toEqual(rows);
    const ids = rows.map((r) => EconomicEventRowSchema.parse(r).id);
    expect(new Set(ids).size).toBe(290);
  });

  it('when a release is not the first of its series, then previous is the actual of the month before', () => {
    let checked = 0;
    for (const r of rows.filter((x) => x.referencePeriod > '2018-01' && x.referencePeriod <= '2022-09')) {
      const [y, m] = r.referencePeriod.split('-').map(Number);
      const before = m === 1 ? `${y - 1}-12` : `${y}-${String(m - 1).padStart(2, '0')}`;
      expect(r.previous, `${r.name} ${r.referencePeriod}`).toBe(row(r.name, before).actual);
      checked++;
    }
    expect(checked).toBe(5 * 56);
  });
});

describe('demo economic calendar: figures as calendars print them', () => {
  it('when payrolls fell in April 2020, then actual is the change of the level in thousands: 130513 - 151006 = -20493K; previous 151006 - 152504 = -1498K', () => {
    expect(row('Nonfarm Payrolls', '2020-04')).toMatchObject({ actual: '-20493K', previous: '-1498K', eventClass: 'employment', importance: 'high' });
  });

  it('when CPI rose from 281.933 to 284.182 (February 2022), then 2.249 / 281.933 = 0.798 % prints 0.8%; January 281.933 / 280.126 - 1 = 0.645 % prints 0.6%', () => {
    expect(row('CPI m/m', '2022-02')).toMatchObject({ actual: '0.8%', previous: '0.6%', eventClass: 'inflation', importance: 'high' });
  });

  it('when a change lies near a rounding edge, then it rounds to the nearer tenth: CPI 2019-04 0.890 / 254.273 = 0.35002 % is 0.4%, core 2020-02 0.665 / 266.418 = 0.24961 % is 0.2%', () => {
    expect(row('CPI m/m', '2019-04').actual).toBe('0.4%');
    expect(row('Core CPI m/m', '2020-02').actual).toBe('0.2%');
  });

  it('when the unemployment rate is a whole number (4 in 2022-01), then it keeps one decimal: 4.0%; 2022-02 is 3.8%', () => {
    expect(row('Unemployment Rate', '2022-02')).toMatchObject({ actual: '3.8%', previous: '4.0%' });
  });

  it('when the funds rate has fewer than two decimals (1.3 in 2017-12), then it is printed with two: 1.30%; 2022-09 is 2.56%', () => {
    expect(row(FEDFUNDS, '2018-01')).toMatchObject({ actual: '1.41%', previous: '1.30%', eventClass: 'central_bank', importance: 'low' });
    expect(row(FEDFUNDS, '2022-09')).toMatchObject({ actual: '2.56%', previous: '2.33%' });
  });
});

describe('demo economic calendar: synthetic release times', () => {
  it('when April 2020 payrolls are released, then on the first Friday of May 2020 (Friday 1 May) at 08:30 EDT = 12:30Z', () => {
    expect(row('Nonfarm Payrolls', '2020-04').scheduledAt).toBe('2020-05-01T12:30:00.000Z');
  });

  it('when releases fall either side of the 13 March 2022 switch to daylight time, then 08:30 New York is 13:30Z before it and 12:30Z after', () => {
    // 1 March 2022 was a Tuesday, so the first Friday is 4 March (EST, UTC-5).
    expect(row('Unemployment Rate', '2022-02').scheduledAt).toBe('2022-03-04T13:30:00.000Z');
    // 13 March 2022 was a Sunday: the next weekday is Monday 14 March (EDT, UTC-4).
    expect(row('CPI m/m', '2022-02').scheduledAt).toBe('2022-03-14T12:30:00.000Z');
  });

  it('when releases fall either side of the 7 November 2021 return to standard time, then 12:30Z before it and 13:30Z after', () => {
    // 1 November 2021 was a Monday: first Friday 5 November (EDT).
    expect(row('Nonfarm Payrolls', '2021-10').scheduledAt).toBe('2021-11-05T12:30:00.000Z');
    // 13 November 2021 was a Saturday: Monday 15 November (EST); core CPI 281.705 / 280.017 - 1 = 0.603 %.
    expect(row('Core CPI m/m', '2021-10')).toMatchObject({ scheduledAt: '2021-11-15T13:30:00.000Z', actual: '0.6%' });
  });

  it('when the first of the month is a Saturday (October 2022), then the funds rate comes on Monday the 3rd at 16:15 EDT = 20:15Z', () => {
    expect(row(FEDFUNDS, '2022-09').scheduledAt).toBe('2022-10-03T20:15:00.000Z');
  });

  it('when New York wall-clock times are converted on the days of both switches, then the offsets are those of the day', () => {
    expect(new Date(newYorkTimeToUtc('2022-03-12', '08:30')).toISOString()).toBe('2022-03-12T13:30:00.000Z');
    expect(new Date(newYorkTimeToUtc('2022-03-13', '08:30')).toISOString()).toBe('2022-03-13T12:30:00.000Z');
    expect(new Date(newYorkTimeToUtc('2021-11-06', '16:15')).toISOString()).toBe('2021-11-06T20:15:00.000Z');
    expect(new Date(newYorkTimeToUtc('2021-11-07', '16:15')).toISOString()).toBe('2021-11-07T21:15:00.000Z');
  });

  it('when the December 2026 figures are scheduled, then five rows in January 2027 with actual, forecast and previous null', () => {
    const scheduled = rows.filter((r) => r.referencePeriod === '2026-12');
    expect(scheduled.every((r) => r.actual === null && r.forecast === null && r.previous === null)).toBe(true);
    // 1 January 2027 is a Friday (and a weekday); 13 January 2027 a Wednesday; all in EST.
    expect(Object.fromEntries(scheduled.map((r) => [r.name, r.scheduledAt]))).toEqual({
      'Unemployment Rate': '2027-01-01T13:30:00.000Z',
      'Nonfarm Payrolls': '2027-01-01T13:30:00.000Z',
      'CPI m/m': '2027-01-13T13:30:00.000Z',
      'Core CPI m/m': '2027-01-13T13:30:00.000Z',
      [FEDFUNDS]: '2027-01-01T21:15:00.000Z',
    });
  });
});

// Expected ids computed outside this code base: Python's hashlib.sha1 over the
// text, first 16 bytes, version nibble 5, variant bits 10.
describe('name-based ids', () => {
  it('when a release has no id, then it is derived from economic-event:["US","Nonfarm Payrolls","2020-04"]', () => {
    expect(derivedEventId('US', 'Nonfarm Payrolls', '2020-04')).toBe('6ff16291-cfb7-544d-bc76-933c42d206eb');
    expect(EconomicEventRowSchema.parse(row('Nonfarm Payrolls', '2020-04')).id).toBe('6ff16291-cfb7-544d-bc76-933c42d206eb');
  });

  it('when a corporate action has no id, then it keeps the id it always had: MSFT split 2003-02-18', () => {
    // Sent in upper case, the id is lower-cased where it enters (InstrumentIdSchema), before the derivation.
    expect(derivedActionId(InstrumentIdSchema.parse('205540C9-ACCB-5E87-A5FE-EB333BF4F589'), 'split', '2003-02-18')).toBe(
      '90e68d18-4e2e-5248-8e54-288a80e0129b',
    );
  });
});
