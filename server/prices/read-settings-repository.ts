import type { ISql } from '../db/sql.ts';

/**
 * No parallel workers for the statements of a split asOf read, for the rest
 * of `tx`'s transaction: its two halves already run at once on two
 * connections. With 10 years of 1-minute bars (523 chunks, most compressed;
 * TimescaleDB 2.28.3, 2 cores) PostgreSQL kept a parallel plan with two
 * workers for each half, and a year's 1-hour asOf read took 549.8 ms against
 * 437.4 ms with 1 year of history, where it planned no workers; with workers
 * off, 449.5 ms against 440.4 ms (medians of 15, the growth scenario's reads
 * on 2 coins).
 */
export const withoutGatherWorkers = (tx: ISql) => tx`select set_config('max_parallel_workers_per_gather', '0', true)`;
