import { describe, expect, it } from 'vitest';
import { sourceSilence } from '../../server/core/freshness.ts';
import { newsSilenceWindow } from '../../server/news/freshness.ts';
import { scoringWindow } from '../../server/sentiment/freshness.ts';
import { reportDateWindow } from '../../server/earnings/freshness.ts';
import { releaseWindow } from '../../server/economic-events/freshness.ts';

// The silence rule of news, sentiment, earnings and the economic calendar
// (docs/api.md, "Silent sources"), and each area's window, on a read at
// Saturday 2026-11-28 18:00 UTC with its bounds counted back by hand.

const readAt = Date.parse('2026-11-28T18:00:00.000Z');

describe('the silence rule', () => {
  it('when rows are returned, then each of their sources must publish; one silent source makes the answer source_silent', () => {
    expect(sourceSilence([true, true])).toBeNull();
    expect(sourceSilence([true, false])).toBe('source_silent');
    // The scope is not consulted when there are rows.
    expect(sourceSilence([true], { covered: false, publishing: false })).toBeNull();
  });

  it('when no row is returned, then one source of the scope publishing is enough; none, source_silent; nothing ever stored, no_source', () => {
    expect(sourceSilence([], { covered: true, publishing: true })).toBeNull();
    expect(sourceSilence([], { covered: true, publishing: false })).toBe('source_silent');
    expect(sourceSilence([], { covered: false, publishing: false })).toBe('no_source');
    expect(sourceSilence([])).toBe('no_source');
  });
});

describe('the windows before the read', () => {
  it('when news is read, then the 7 days before the instant, to the instant', () => {
    expect(newsSilenceWindow(readAt)).toEqual({ since: new Date('2026-11-21T18:00:00.000Z'), until: new Date(readAt) });
  });

  it('when sentiment is read, then the UTC days from 7 before the read day to that day', () => {
    expect(scoringWindow(readAt)).toEqual({ since: '2026-11-21', until: '2026-11-28' });
  });

  it('when earnings are read, then the UTC days from 142 before the read day to that day', () => {
    // 28 days back to 2026-10-31, 31 to 09-30, 30 to 08-31, 31 to 07-31, 22 more: 142.
    expect(reportDateWindow(readAt)).toEqual({ since: '2026-07-09', until: '2026-11-28' });
  });

  it('when the economic calendar is read, then the 106 days before the instant, to the instant', () => {
    // 28 days back to 2026-10-31, 31 to 09-30, 30 to 08-31, 17 more: 106.
    expect(releaseWindow(readAt)).toEqual({ since: new Date('2026-08-14T18:00:00.000Z'), until: new Date(readAt) });
  });
});
