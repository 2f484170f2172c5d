// Percentiles, summaries and the rounding of reported figures.

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  // Linear interpolation between closest ranks.
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

export const median = (values: number[]) => percentile(values, 50);

/** Rounds for display, keeping `digits` decimals. */
export const round = (n: number, digits = 2) => (Number.isFinite(n) ? Math.round(n * 10 ** digits) / 10 ** digits : n);

/** p50, p90, p99, mean and max of request latencies (ms). */
export function latencySummary(latencies: number[]) {
  return {
    p50: round(percentile(latencies, 50), 3),
    p90: round(percentile(latencies, 90), 3),
    p99: round(percentile(latencies, 99), 3),
    mean: round(latencies.reduce((a, b) => a + b, 0) / latencies.length, 3),
    // Not Math.max(...latencies): spreading 150,000 arguments (15 s of a load at 10,000 req/s) overflows the stack.
    max: round(
      latencies.reduce((a, b) => Math.max(a, b), -Infinity),
      3,
    ),
  };
}

export function summarise(samplesMs: number[]) {
  return {
    runs: samplesMs.length,
    medianMs: round(median(samplesMs)),
    minMs: round(Math.min(...samplesMs)),
    maxMs: round(Math.max(...samplesMs)),
    samplesMs: samplesMs.map((s) => round(s)),
  };
}

/** Times `fn` `warmups` times unrecorded, then `runs` times. */
export async function timeRuns<T>(runs: number, warmups: number, fn: () => Promise<T>, check?: (value: T) => void): Promise<number[]> {
  for (let i = 0; i < warmups; i++) {
    const value = await fn();
    check?.(value);
  }
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const value = await fn();
    samples.push(performance.now() - started);
    check?.(value);
  }
  return samples;
}

export const MB = 1024 * 1024;

export const ratio = (a: number, b: number, digits = 3) => round(a / b, digits);

/** A step timed in rounds: its median and every round's, in seconds to the hundredth. */
export const roundsSeconds = (seconds: readonly number[]) => ({ seconds: round(median([...seconds]), 2), secondsByRound: seconds.map((x) => round(x, 2)) });

/**
 * A ratio measured in interleaved rounds: each round timed ours and the
 * baseline back to back, so a change in the machine's load falls on both
 * sides of that round's ratio alike. The headline is the median of the
 * rounds' ratios; the spread is their range and interquartile range.
 */
export interface RatioSpread {
  median: number;
  min: number;
  max: number;
  /** The interquartile range: the 25th and 75th percentiles of the rounds' ratios. */
  p25: number;
  p75: number;
  rounds: number;
  byRound: number[];
}

/** The spread of `ours[i] / baseline[i]` over the rounds i; the two lists must be the same length and positive. */
export function ratioSpread(ours: readonly number[], baseline: readonly number[], digits = 3): RatioSpread {
  if (ours.length !== baseline.length) throw new Error(`ratioSpread: ${ours.length} rounds of ours against ${baseline.length} of the baseline`);
  if (ours.length === 0) throw new Error('ratioSpread: no rounds');
  const byRound = ours.map((x, i) => {
    if (!(x > 0 && baseline[i] > 0)) throw new Error(`ratioSpread: round ${i + 1} measured ${x} against ${baseline[i]}; both must be positive`);
    return x / baseline[i];
  });
  return {
    median: round(median(byRound), digits),
    min: round(Math.min(...byRound), digits),
    max: round(Math.max(...byRound), digits),
    p25: round(percentile(byRound, 25), digits),
    p75: round(percentile(byRound, 75), digits),
    rounds: byRound.length,
    byRound: byRound.map((r) => round(r, digits)),
  };
}

/**
 * The order of `sides` in round `i` (from 0): rotated by one each round, so
 * over any `sides.length` rounds each side runs once in each position (for
 * two sides, the order alternates).
 */
export function roundOrder<T>(sides: readonly T[], i: number): T[] {
  const k = i % sides.length;
  return [...sides.slice(k), ...sides.slice(0, k)];
}
