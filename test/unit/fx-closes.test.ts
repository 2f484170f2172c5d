import { describe, expect, it } from 'vitest';
import { dailyCloses, FX_CLOSE_SOURCE, newYorkCutoff, usdChfReadings, type FxReading } from '../../server/demo/fx-closes.ts';

const at = (iso: string) => Date.parse(iso);
const reading = (iso: string, value: number): FxReading => ({ at: at(iso), value });

describe('the New York 17:00 cut-off', () => {
  // US daylight saving time (the 1987–2006 rule): from 02:00 on the first
  // Sunday of April to 02:00 on the last Sunday of October. Since 2007: the
  // second Sunday of March to the first Sunday of November.
  it.each([
    ['1999-04-03', '1999-04-03T22:00:00Z', 'the Saturday before the spring switch (EST, UTC−5)'],
    ['1999-04-04', '1999-04-04T21:00:00Z', 'the spring switch Sunday: 17:00 is already EDT'],
    ['1999-04-05', '1999-04-05T21:00:00Z', 'the Monday after (EDT, UTC−4)'],
    ['1999-10-30', '1999-10-30T21:00:00Z', 'the Saturday before the autumn switch (EDT)'],
    ['1999-10-31', '1999-10-31T22:00:00Z', 'the autumn switch Sunday: 17:00 is already EST'],
    ['1997-01-15', '1997-01-15T22:00:00Z', 'a winter day'],
    ['1998-07-15', '1998-07-15T21:00:00Z', 'a summer day'],
    ['2024-03-09', '2024-03-09T22:00:00Z', 'the day before the 2024 spring switch (second Sunday of March)'],
    ['2024-03-10', '2024-03-10T21:00:00Z', 'the 2024 spring switch Sunday'],
    ['2024-11-03', '2024-11-03T22:00:00Z', 'the 2024 autumn switch Sunday (first Sunday of November)'],
  ])('when the day is %s, then the cut-off is %s (%s)', (date, expected) => {
    expect(new Date(newYorkCutoff(date)).toISOString()).toBe(new Date(expected).toISOString());
  });
});

describe('daily closes of 30-minute readings', () => {
  it('when a reading is exactly at the cut-off it closes that day; the next one opens the following day', () => {
    const { rates, daysWithoutClose } = dailyCloses([
      reading('1997-01-15T21:30:00Z', 1.1),
      reading('1997-01-15T22:00:00Z', 1.2), // 17:00 New York: Wednesday's close
      reading('1997-01-15T22:30:00Z', 1.3), // 17:30 New York: Thursday's window
      reading('1997-01-16T21:00:00Z', 1.4), // Thursday 16:00 New York: in the last hour, Thursday's close
    ]);
    expect(rates.map((r) => [r.rateDate, r.rate, r.asOf])).toEqual([
      ['1997-01-15', 1.2, '1997-01-15T22:00:00.000Z'],
      ['1997-01-16', 1.4, '1997-01-16T22:00:00.000Z'],
    ]);
    expect(daysWithoutClose).toEqual([]);
  });

  it('when a week crosses the spring switch, then Friday closes at 22:00 UTC and Monday at 21:00 UTC, and weekend readings are dropped and counted', () => {
    const { rates, weekendReadings, daysWithoutClose } = dailyCloses([
      reading('1999-04-02T21:30:00Z', 1.0), // Fri 16:30 EST
      reading('1999-04-02T22:00:00Z', 2.0), // Fri 17:00 EST: Friday's close
      reading('1999-04-02T22:30:00Z', 3.0), // Fri 17:30 EST: Saturday's window
      reading('1999-04-04T20:30:00Z', 4.0), // Sun 16:30 EDT: Sunday's window
      reading('1999-04-04T21:30:00Z', 5.0), // Sun 17:30 EDT: Monday's window
      reading('1999-04-05T21:00:00Z', 6.0), // Mon 17:00 EDT: Monday's close
      reading('1999-04-05T21:30:00Z', 7.0), // Mon 17:30 EDT: Tuesday's window, and its only reading
    ]);
    expect(rates.map((r) => [r.rateDate, r.rate, r.asOf])).toEqual([
      ['1999-04-02', 2.0, '1999-04-02T22:00:00.000Z'],
      ['1999-04-05', 6.0, '1999-04-05T21:00:00.000Z'],
    ]);
    expect(weekendReadings).toBe(2);
    // Tuesday's only reading is from 17:30 the evening before: not a close.
    expect(daysWithoutClose).toEqual(['1999-04-06']);
  });

  it('when a weekday window has no reading, then no row is emitted for it (nothing is carried forward)', () => {
    const { rates } = dailyCloses([reading('1997-01-14T21:30:00Z', 1.5), reading('1997-01-16T21:30:00Z', 1.6)]);
    expect(rates.map((r) => r.rateDate)).toEqual(['1997-01-14', '1997-01-16']);
  });

  it('when the last reading of a window is before 16:00 New York, then the day has no rate and is listed', () => {
    const { rates, daysWithoutClose } = dailyCloses([reading('1997-01-15T20:30:00Z', 1.5), reading('1997-01-16T21:00:00Z', 1.6)]);
    expect(daysWithoutClose).toEqual(['1997-01-15']); // 15:30 EST; the 16th's 16:00 EST is in the last hour
    expect(rates.map((r) => [r.rateDate, r.rate])).toEqual([['1997-01-16', 1.6]]);
  });
});

describe('the demo USD/CHF closes from the bundled file', () => {
  const readings = usdChfReadings();
  const closes = dailyCloses(readings);
  const byDate = new Map(closes.rates.map((r) => [r.rateDate, r]));

  // Read by hand from server/demo/data/usdchf_30min_1996_2001.csv: the last
  // reading at or before 17:00 New York on the day.
  it.each([
    ['1997-01-15', 1.3696, '1997-01-15T22:00:00.000Z', 'a winter Wednesday: the 22:00Z reading (21:30Z is 1.37, 22:30Z 1.3706)'],
    ['1998-07-15', 1.5086, '1998-07-15T21:00:00.000Z', 'a summer Wednesday: the 21:00Z reading (21:30Z is 1.508)'],
    ['1999-04-02', 1.481, '1999-04-02T22:00:00.000Z', 'the Friday before the US spring switch: the file ends the week at 21:30Z'],
    ['1999-04-05', 1.4892, '1999-04-05T21:00:00.000Z', 'the Monday after it: the 21:00Z reading (22:00Z is 1.4887)'],
    ['1999-10-29', 1.5205, '1999-10-29T21:00:00.000Z', 'the Friday before the autumn switch: 21:00Z; 21:30Z (1.5204) is Saturday’s'],
    ['1999-11-01', 1.5246, '1999-11-01T22:00:00.000Z', 'the Monday after it: the 22:00Z reading (21:30Z is 1.5255)'],
  ])('when the day is %s, then the close is %s at %s (%s)', (date, rate, asOf) => {
    expect(byDate.get(date)).toEqual({ base: 'USD', quote: 'CHF', rateDate: date, rate, source: FX_CLOSE_SOURCE, asOf });
  });

  it('when the whole file is read, then it gives a row for every weekday from 1996-04-01 to 2001-03-30 but 3 holidays, and 259 weekend readings are dropped', () => {
    expect(readings.length).toBe(62_496);
    expect(closes.rates.length).toBe(1_302);
    expect(closes.rates[0].rateDate).toBe('1996-04-01');
    expect(closes.rates.at(-1)!.rateDate).toBe('2001-03-30');
    // 1996-04-01..2001-03-30 holds 1,305 weekdays: every one has a reading.
    let weekdays = 0;
    for (let t = at('1996-04-01T00:00:00Z'); t <= at('2001-03-30T00:00:00Z'); t += 86_400_000) if (![0, 6].includes(new Date(t).getUTCDay())) weekdays++;
    expect(weekdays).toBe(1_305);
    // Friday 17:30 New York on the 253 weeks the file ends then, and the first
    // reading of the 6 weeks it opens at Sunday 17:00 New York (between the
    // European and the US spring switch, and the file's first reading).
    expect(closes.weekendReadings).toBe(259);
    // Each of these windows holds one reading, 17:30 New York the evening
    // before (1998-12-24T22:30Z, 1.3745 for Christmas 1998): not a close.
    expect(closes.daysWithoutClose).toEqual(['1996-12-25', '1998-12-25', '1999-01-01']);
    expect(byDate.has('1998-12-25')).toBe(false);
  });
});
