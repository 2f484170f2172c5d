import http from 'node:http';
import { until } from './until.ts';

/** What a streaming producer under test has had accepted so far, and whether its write waits. */
export interface Producer {
  accepted: number;
  waiting: boolean;
}

/** GET `url`, its response left unread: a readable nobody reads stays paused, so its socket fills. */
export function pausedGet(url: string, headers: Record<string, string>): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, resolve).on('error', reject);
  });
}

/**
 * Resolves once `producer` waits on a write with no byte accepted for half a
 * second (without backpressure it would write the rest in milliseconds): the
 * paused reader has stopped it.
 */
export async function untilProducerWaits(producer: Producer): Promise<void> {
  let seen = -1;
  let since = performance.now();
  await until(
    () => {
      if (producer.accepted !== seen) [seen, since] = [producer.accepted, performance.now()];
      return producer.waiting && producer.accepted > 0 && performance.now() - since > 500;
    },
    { timeoutMs: 20_000, what: 'the producer waiting for the reader' },
  );
}
