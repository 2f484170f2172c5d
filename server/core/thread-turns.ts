/**
 * How long long-running work on the request thread (an export's series, a
 * Parquet row group's columns) may hold it before it lets other work run:
 * the event-loop monitor's 10 ms resolution, halved.
 */
const HOLD_MS = 5;

/** Turns of the event loop for work that holds the request thread: one each time it has held it HOLD_MS. */
export class ThreadTurns {
  private since = performance.now();

  /** Waits a turn of the event loop when the work has held the thread HOLD_MS since its last turn. */
  async take(): Promise<void> {
    if (performance.now() - this.since < HOLD_MS) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.since = performance.now();
  }
}
