import { describe, expect, it } from 'vitest';
import { demoDailyBars, demoInstrumentId, demoInstruments } from '../../server/demo/catalog.ts';
import { syntheticEarnings } from '../../server/demo/synthetic-earnings.ts';
import { EarningsReportRowSchema } from '../../server/earnings/schema.ts';

// Expected values are worked out from the catalog (instruments.json and the
// price files' first and last dates) and a calendar; each test shows how.

const rows = syntheticEarnings();
const DAY_MS = 86_400_000;
const dayMs = (d: string) => Date.parse(`${d}T00:00:00Z`);

/** Each instrument's first and last bar date, from the price files. */
function barRanges() {
  const ranges = new Map<string, { first: string; last: string }>();
  for (const b of demoDailyBars()) {
    const r = ranges.get(b.instrumentId) ?? { first: b.barDate, last: b.barDate };
    if (b.barDate < r.first) r.first = b.barDate;
    if (b.barDate > r.last) r.last = b.barDate;
    ranges.set(b.instrumentId, r);
  }
  return ranges;
}

const ofInstrument = (key: string) => rows.filter((r) => r.instrumentId === demoInstrumentId(key));

describe('demo earnings: which instruments, how many rows', () => {
  it('when built, then exactly the 31 demo equities with daily bars (the 30 Dow members, MSFT among them, and GOOGL) report, and no index, ETF, crypto, FX or bar-less equity', () => {
    const reporting = new Set(rows.map((r) => r.instrumentId));
    const withBars = demoInstruments().filter((i) => i.assetClass === 'equity' && ['GOOG-C', 'GM-2010', 'AA-2016'].every((k) => demoInstrumentId(k) !== i.id));
    expect(reporting).toEqual(new Set(withBars.map((i) => i.id)));
    expect(reporting.size).toBe(31);
    for (const key of ['index:SPX', 'SPY', 'crypto:BTC-USD', 'fx:EURUSD', 'GOOG-C', 'GM-2010', 'AA-2016']) expect(ofInstrument(key), key).toEqual([]);
  });

  it('when built twice, then the rows are identical, all synthetic-demo, each passes the admin row schema, and no two share a key', () => {
    expect(syntheticEarnings()).toEqual(rows);
    expect(rows.every((r) => r.source === 'synthetic-demo')).toBe(true);
    const ids = rows.map((r) => EarningsReportRowSchema.parse(r).id);
    expect(new Set(ids).size).toBe(rows.length);
    expect(new Set(rows.map((r) => `${r.instrumentId}|${r.fiscalYear}|${r.fiscalPeriod}`)).size).toBe(rows.length);
  });

  it('when IBM is read (bars 1991-01-02..2001-01-02, December year-end), then Q4 1990 through Q3 2000 are reported (40 quarters) and Q4 2000 is the one scheduled row', () => {
    const ibm = ofInstrument('dow:IBM');
    expect(ibm).toHaveLength(41);
    expect(ibm.map((r) => `${r.fiscalYear}${r.fiscalPeriod}`).slice(0, 2)).toEqual(['1990Q4', '1991Q1']);
    expect(ibm.filter((r) => r.status === 'scheduled').map((r) => `${r.fiscalYear}${r.fiscalPeriod}`)).toEqual(['2000Q4']);
  });

  it('when MSFT is read (fiscal year ends in June, bars to 2001-09-27), then its scheduled row is Q1 of fiscal 2002 (July-September 2001), dated in October or early November 2001', () => {
    const scheduled = ofInstrument('MSFT').filter((r) => r.status === 'scheduled');
    expect(scheduled).toHaveLength(1);
    expect(scheduled[0]).toMatchObject({ fiscalYear: 2002, fiscalPeriod: 'Q1' });
    // 2001-09-30 + 21 = 2001-10-21, + 35 (+2 off a weekend) = 2001-11-06.
    expect(scheduled[0].reportDate >= '2001-10-21' && scheduled[0].reportDate <= '2001-11-06').toBe(true);
  });
});

describe('demo earnings: dates, sessions and status within their rules', () => {
  it('when any report is read, then it falls on a weekday, 21 to 37 days after its fiscal quarter ends', () => {
    // Year-end months from each company's filings: MSFT and PG June, DIS September, HWP October, WMT and HD January.
    const endMonth = new Map(
      [
        ['MSFT', 6],
        ['dow:PG', 6],
        ['dow:DIS', 9],
        ['dow:HWP', 10],
        ['dow:WMT', 1],
        ['dow:HD', 1],
      ].map(([k, m]) => [demoInstrumentId(k as string), m as number]),
    );
    for (const r of rows) {
      const weekday = new Date(dayMs(r.reportDate)).getUTCDay();
      expect(weekday === 0 || weekday === 6, `${r.reportDate} is a weekend day`).toBe(false);
      const e = endMonth.get(r.instrumentId) ?? 12;
      const q = Number(r.fiscalPeriod.slice(1));
      // The quarter's last month, counted from January of year 0; its last day is day 0 of the month after.
      const month = r.fiscalYear * 12 + (e - 1) - 3 * (4 - q);
      const quarterEnd = Date.UTC(Math.floor(month / 12), (month % 12) + 1, 0);
      const lag = (dayMs(r.reportDate) - quarterEnd) / DAY_MS;
      expect(lag >= 21 && lag <= 37, `${r.fiscalYear}${r.fiscalPeriod} ${r.reportDate}: ${lag} days`).toBe(true);
    }
  });

  it("when a row is reported, then its date is within the instrument's bars; when scheduled, after its last bar, and each instrument has exactly one, its latest", () => {
    const ranges = barRanges();
    for (const id of new Set(rows.map((r) => r.instrumentId))) {
      const reports = rows.filter((r) => r.instrumentId === id);
      const { first, last } = ranges.get(id)!;
      const scheduled = reports.filter((r) => r.status === 'scheduled');
      expect(scheduled).toHaveLength(1);
      expect(scheduled[0].reportDate > last).toBe(true);
      expect(reports.at(-1)).toBe(scheduled[0]);
      for (const r of reports.filter((x) => x.status === 'reported')) expect(r.reportDate >= first && r.reportDate <= last, r.reportDate).toBe(true);
    }
    expect(rows.filter((r) => r.status === 'scheduled')).toHaveLength(31);
  });

  it('when the sessions are counted, then all four occur, dmh only on reported rows and unknown only on scheduled ones', () => {
    const sessions = (status: string) => new Set(rows.filter((r) => r.status === status).map((r) => r.session));
    expect(sessions('reported')).toEqual(new Set(['bmo', 'amc', 'dmh']));
    expect(sessions('scheduled')).toEqual(new Set(['bmo', 'amc', 'unknown']));
  });
});
