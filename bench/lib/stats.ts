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
    max: round(Math.max(...latencies), 3),
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
