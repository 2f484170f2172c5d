import { daysBefore, freshness, SOURCE_SILENCE_DAYS, sourceSilence, utcDay, type Freshness, type SilenceStaleReason } from '../core/freshness.ts';

/**
 * The days in which a sentiment source must have scored the instrument for a
 * read at `readAt`: the SOURCE_SILENCE_DAYS before the read's UTC day, to
 * that day, both included. A score dated after the read's day was not yet
 * published at it and does not count. Scores are fresh by the silence rule
 * (core/freshness.ts, sourceSilence): without rows, the read's scope is the
 * instrument's scores its source and subject class narrow to.
 */
export function scoringWindow(readAt: number): { since: string; until: string } {
  return { since: daysBefore(readAt, SOURCE_SILENCE_DAYS), until: utcDay(readAt) };
}

/**
 * The leads are fresh while each returned lead's newest score
 * (lastAsOfDate) is within SOURCE_SILENCE_DAYS before the read's UTC day, or
 * later: a lead measured on a feed that stopped describes the past. No lead:
 * no source has scores of the read's source and subject class, `no_source`.
 */
export function leadsFreshness(lastAsOfDates: string[], readAt: number): Freshness<SilenceStaleReason> {
  const { since } = scoringWindow(readAt);
  return freshness(sourceSilence(lastAsOfDates.map((d) => d >= since)));
}
