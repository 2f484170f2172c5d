// The HTTP clients of the resilience phases: timed GETs, downloads held
// paused, read at a pace or drained, and the figures of a finished download.
import http from 'node:http';
import { MB, round } from '../lib/stats.ts';

export interface Answer {
  status: number;
  text: string;
  ms: number;
  /** Set when no whole answer arrived (a connection error or the timeout). */
  error?: string;
  headers?: http.IncomingHttpHeaders;
}

/** One GET, timed from the request to the last byte of the answer. */
export function timedGet(url: string, headers: Record<string, string>, agent: http.Agent | false, timeoutMs = 10_000): Promise<Answer> {
  return new Promise((resolve) => {
    const started = performance.now();
    let settled = false;
    const finish = (a: Omit<Answer, 'ms'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...a, ms: performance.now() - started });
    };
    const req = http.get(url, { headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => finish({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
      res.on('error', (err) => finish({ status: res.statusCode ?? 0, text: '', error: err.message }));
    });
    req.on('error', (err) => finish({ status: 0, text: '', error: err.message }));
    const timer = setTimeout(() => {
      finish({ status: 0, text: '', error: `no answer within ${timeoutMs} ms` });
      req.destroy();
    }, timeoutMs);
  });
}

/** A download whose response is paused at once: after the socket buffers fill, it reads nothing. */
export interface PausedDownload {
  status: number;
  headers: http.IncomingHttpHeaders;
  req: http.ClientRequest;
  res: http.IncomingMessage;
  /** Why the connection ended while paused, when it did. */
  cut: string | null;
}

export function openPaused(url: string, headers: Record<string, string>): Promise<PausedDownload> {
  return new Promise((resolve, reject) => {
    // A connection of its own for each client, as separate clients have.
    const req = http.get(url, { headers, agent: false }, (res) => {
      res.pause();
      const download: PausedDownload = { status: res.statusCode ?? 0, headers: res.headers, req, res, cut: null };
      res.on('aborted', () => (download.cut ??= 'aborted by the server'));
      res.on('error', (err) => (download.cut ??= err.message));
      resolve(download);
    });
    req.on('error', reject);
  });
}

export interface ReadOutcome {
  status: number;
  bytes: number;
  ms: number;
  /** The response ended normally ('end'), rather than being cut. */
  ended: boolean;
  cut?: string;
  text: string;
  /** performance.now() when it ended or was cut. */
  endedAt: number;
}

/** A response body read into a ReadOutcome, settled once: at its end, when it is cut, or after `timeoutMs` (then `onTimeout` cuts it). */
export class BodyReader {
  readonly done: Promise<ReadOutcome>;
  bytes = 0;
  status = 0;
  private readonly started = performance.now();
  private readonly chunks: Buffer[] = [];
  private settle!: (outcome: ReadOutcome) => void;
  private settled = false;
  private readonly timer: NodeJS.Timeout;

  constructor(timeoutMs: number, onTimeout: () => void) {
    this.done = new Promise((resolve) => (this.settle = resolve));
    this.timer = setTimeout(() => {
      this.finish(false, `not finished after ${timeoutMs / 1000} s`);
      onTimeout();
    }, timeoutMs);
  }

  /** Collects `res` to its end; `onChunk` runs after each chunk (to pace the reading). */
  follow(res: http.IncomingMessage, onChunk?: () => void): void {
    this.status = res.statusCode ?? 0;
    res.on('data', (c: Buffer) => {
      this.chunks.push(c);
      this.bytes += c.length;
      onChunk?.();
    });
    res.on('end', () => this.finish(true));
    res.on('aborted', () => this.finish(false, 'aborted by the server'));
    res.on('error', (err) => this.finish(false, err.message));
  }

  finish(ended: boolean, cut?: string): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    const endedAt = performance.now();
    const text = ended ? Buffer.concat(this.chunks).toString('utf8') : '';
    this.settle({ status: this.status, bytes: this.bytes, ms: endedAt - this.started, ended, cut, text, endedAt });
  }
}

/** Reads what is left of a paused download as fast as it comes. */
export function drain(d: PausedDownload, timeoutMs = 120_000): Promise<ReadOutcome> {
  const reader = new BodyReader(timeoutMs, () => d.req.destroy());
  reader.status = d.status;
  if (d.cut) {
    reader.finish(false, d.cut);
  } else {
    reader.follow(d.res);
    d.res.resume();
  }
  return reader.done;
}

/**
 * A GET read at `bytesPerSec` on average: each chunk is taken, then the
 * reader pauses for as long as it is ahead of that pace, so the server's
 * writes wait on a full socket between chunks, as with a slow client.
 */
export function throttledRead(url: string, headers: Record<string, string>, bytesPerSec: number, timeoutMs = 240_000) {
  const reader = new BodyReader(timeoutMs, () => req.destroy());
  const started = performance.now();
  const req = http.get(url, { headers, agent: false }, (res) =>
    reader.follow(res, () => {
      const ahead = (reader.bytes / bytesPerSec) * 1000 - (performance.now() - started);
      if (ahead > 5) {
        res.pause();
        setTimeout(() => res.resume(), ahead);
      }
    }),
  );
  req.on('error', (err) => reader.finish(false, err.message));
  return { done: reader.done, bytes: () => reader.bytes };
}

/** Whether a bulk body is whole: valid JSON, every instrument, every bar. */
export function judgeBulk(text: string, ids: string[], barsEach: number) {
  try {
    const body = JSON.parse(text) as { data: Record<string, unknown[]>; meta?: { found?: number } };
    const counts = ids.map((id) => body.data[id]?.length ?? -1);
    const bars = counts.filter((n) => n > 0).reduce((a, b) => a + b, 0);
    return {
      validJson: true,
      instruments: Object.keys(body.data).length,
      bars,
      expectedBars: ids.length * barsEach,
      everySeriesWhole: counts.every((n) => n === barsEach),
      metaFound: body.meta?.found ?? null,
    };
  } catch (err) {
    return {
      validJson: false,
      parseError: (err as Error).message.slice(0, 200),
      instruments: 0,
      bars: 0,
      expectedBars: ids.length * barsEach,
      everySeriesWhole: false,
      metaFound: null,
    };
  }
}

/** The figures of a finished download. */
export function downloadFigures(r: ReadOutcome, ids: string[], barsEach: number) {
  const judged = r.ended ? judgeBulk(r.text, ids, barsEach) : null;
  return {
    status: r.status,
    bytes: r.bytes,
    mb: round(r.bytes / MB, 2),
    seconds: round(r.ms / 1000, 2),
    ended: r.ended,
    ...(r.cut ? { cut: r.cut } : {}),
    validJson: judged?.validJson ?? false,
    bars: judged?.bars ?? 0,
    expectedBars: ids.length * barsEach,
    everySeriesWhole: judged?.everySeriesWhole ?? false,
    complete: r.status === 200 && r.ended && judged !== null && judged.validJson && judged.everySeriesWhole && judged.instruments === ids.length,
  };
}
