// What the phases of the resilience scenario share: the data set, the slow
// reader's pace, and how a phase is run and recorded.
import os from 'node:os';
import { log } from '../lib/harness.ts';
import { round } from '../lib/stats.ts';

// 30 instruments with a bar for every weekday of 30 years (7,828 each,
// 234,840 in all). With full OHLCV bars one bulk response of all of them is
// 53 MB (about 237 bytes a bar), far more than the socket buffers can hold for
// a reader that never reads.
export const INSTRUMENTS = 30;
export const SERIES = { from: '1991-01-01', to: '2020-12-31' };
export const AS_OF = '2021-01-01T00:00:00.000Z';
// 53 MB at 250 KiB/s is about 212 s: far longer than the statement timeout,
// so a download that needed one statement for its whole length could not finish.
export const SLOW_BYTES_PER_SEC = 250 * 1024;

export type Phase = Record<string, unknown> & { pass: boolean; failures: string[] };

export const loadAvg = () => os.loadavg().map((n) => round(n, 2)) as [number, number, number];

/** Runs a phase; one that throws is recorded with its error, so the other phases still run. */
export async function phase(name: string, fn: () => Promise<Record<string, unknown> & { failures: string[] }>): Promise<Phase> {
  const loadBefore = loadAvg();
  const started = performance.now();
  log(`resilience: phase ${name}`);
  try {
    const result = await fn();
    return {
      pass: result.failures.length === 0,
      ...result,
      phaseSec: round((performance.now() - started) / 1000, 1),
      loadAvg: { before: loadBefore, after: loadAvg() },
    };
  } catch (err) {
    log(`resilience: phase ${name} could not be measured: ${(err as Error).stack ?? err}`);
    return {
      pass: false,
      failures: [`could not be measured: ${(err as Error).message}`],
      error: (err as Error).message,
      phaseSec: round((performance.now() - started) / 1000, 1),
      loadAvg: { before: loadBefore, after: loadAvg() },
    };
  }
}

/** pino's numeric level of a log line; 100 for anything that is not one (always worth showing). */
export function levelOf(line: string): number {
  try {
    const level = (JSON.parse(line) as { level?: unknown }).level;
    return typeof level === 'number' ? level : 100;
  } catch {
    return 100;
  }
}
