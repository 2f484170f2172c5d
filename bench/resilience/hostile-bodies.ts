// Phase E: 40 MB upload bodies whose first record never ends.
import http from 'node:http';
import { nextBar, prng, weekdays } from '../lib/data.ts';
import { sleep } from '../lib/harness.ts';
import type { Service } from '../lib/service.ts';
import { latencySummary, MB, round } from '../lib/stats.ts';
import { timedGet } from './clients.ts';
import { AS_OF } from './common.ts';

export const HOSTILE_BYTES = 40 * MB;
export const HOSTILE_CHUNK = 64 * 1024;
export const HOSTILE_ANSWER_MS = 1_000;

/** `total` bytes in `size`-byte chunks: `head`, then rows from `row` for as long as it takes. */
function* fixedChunks(head: string, row: (i: number) => string, total: number, size: number): Generator<Buffer> {
  let text = head;
  let sent = 0;
  for (let i = 0; sent < total;) {
    while (text.length < size) text += row(i++);
    const n = Math.min(size, total - sent);
    yield Buffer.from(text.slice(0, n), 'latin1');
    text = text.slice(n);
    sent += n;
  }
}

/** Ordinary daily bars for one instrument, one a call, as CSV rows or NDJSON objects. */
function barRows(id: string, format: 'csv' | 'ndjson') {
  const rand = prng(7);
  const dates = weekdays('1991-01-01', '2020-12-31');
  let close = 50;
  return (i: number) => {
    const b = nextBar(rand, close);
    close = b.close;
    const date = dates[i % dates.length];
    return format === 'csv'
      ? `${id},${date},${b.open},${b.high},${b.low},${b.close},${b.volume},USD,USD per share,bench,${AS_OF}\n`
      : `{"instrumentId":"${id}","barDate":"${date}","openPrice":${b.open},"highPrice":${b.high},"lowPrice":${b.low},"closePrice":${b.close},"volume":${b.volume},"quoteCurrency":"USD","quoteUnit":"USD per share","source":"bench","asOf":"${AS_OF}"}`;
  };
}

/**
 * Streams `chunks` as a chunked POST as fast as the server takes them, and
 * stops sending at the server's answer: the time to that answer and the bytes
 * sent by then.
 */
function hostileUpload(url: string, headers: Record<string, string>, chunks: Generator<Buffer>, timeoutMs = 30_000) {
  type Outcome = {
    status: number;
    answeredMs: number | null;
    bytesSentAtAnswer: number | null;
    bytesSent: number;
    wholeBodySent: boolean;
    body: string;
    error?: string;
  };
  return new Promise<Outcome>((resolve) => {
    const started = performance.now();
    let sent = 0;
    let answeredMs: number | null = null;
    let sentAtAnswer: number | null = null;
    let whole = false;
    let settled = false;
    let wake: () => void = () => {};
    const stop = new Promise<void>((r) => (wake = r));
    const finish = (o: Omit<Outcome, 'answeredMs' | 'bytesSentAtAnswer' | 'bytesSent' | 'wholeBodySent'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      wake();
      req.destroy();
      agent.destroy();
      resolve({ ...o, answeredMs, bytesSentAtAnswer: sentAtAnswer, bytesSent: sent, wholeBodySent: whole });
    };
    // Keep-alive, as fetch and curl send it. With `Connection: close` (node:http
    // without an agent) the service closes the socket right after its answer,
    // and node:http, still writing, reports EPIPE and drops the answer it had
    // received; curl reads the 400 either way.
    const agent = new http.Agent({ keepAlive: true });
    const req = http.request(url, { method: 'POST', headers, agent }, (res) => {
      answeredMs = performance.now() - started;
      sentAtAnswer = sent;
      wake();
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => finish({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }));
      res.on('error', (err) => finish({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8'), error: err.message }));
    });
    req.on('error', (err) => {
      // An error after the answer's head is the server closing the connection on the rest of our body.
      if (answeredMs === null) finish({ status: 0, body: '', error: err.message });
    });
    req.on('close', () => wake());
    const timer = setTimeout(() => finish({ status: 0, body: '', error: `no answer within ${timeoutMs / 1000} s` }), timeoutMs);
    void (async () => {
      for (const chunk of chunks) {
        if (answeredMs !== null || settled || req.destroyed) return;
        sent += chunk.length;
        if (!req.write(chunk)) await Promise.race([new Promise((r) => req.once('drain', r)), stop]);
      }
      whole = true;
      if (!settled && !req.destroyed) req.end();
    })();
  });
}

/** /healthz every `everyMs` on schedule (open loop) until stop(): each latency with its send time. */
function healthzProbe(url: string, everyMs: number) {
  const agent = new http.Agent({ keepAlive: true });
  const samples: { sentAt: number; ms: number; status: number }[] = [];
  const pending: Promise<void>[] = [];
  let running = true;
  const started = performance.now();
  const loop = (async () => {
    for (let i = 0; running; i++) {
      const wait = started + i * everyMs - performance.now();
      if (wait > 0) await sleep(wait);
      if (!running) break;
      const sentAt = performance.now();
      pending.push(timedGet(`${url}/healthz`, {}, agent, 10_000).then((a) => void samples.push({ sentAt, ms: a.ms, status: a.status })));
    }
  })();
  return async () => {
    running = false;
    await loop;
    await Promise.all(pending);
    agent.destroy();
    return samples;
  };
}

export async function hostileBodies(service: Service, instrumentId: string) {
  const failures: string[] = [];
  const url = `${service.admin.url}/admin/v1/bars/daily`;
  const one = async (label: string, contentType: string, chunks: Generator<Buffer>) => {
    const stopProbe = healthzProbe(service.publicUrl, 20);
    await sleep(1_000);
    const uploadStart = performance.now();
    const r = await hostileUpload(url, { ...service.admin.auth, 'content-type': contentType }, chunks);
    const samples = await stopProbe();
    const idle = samples.filter((s) => s.sentAt < uploadStart);
    const meanwhile = samples.filter((s) => s.sentAt >= uploadStart);
    let error: { code?: string; message?: string };
    try {
      error = (JSON.parse(r.body) as { error: { code: string; message: string } }).error;
    } catch {
      error = { message: r.body.slice(0, 200) };
    }
    if (r.status !== 400) failures.push(`${label}: answered ${r.status || 'nothing'}${r.error ? ` (${r.error})` : ''}, expected 400`);
    else if (r.answeredMs === null || r.answeredMs > HOSTILE_ANSWER_MS)
      failures.push(`${label}: the 400 came after ${round(r.answeredMs ?? NaN)} ms (required under ${HOSTILE_ANSWER_MS} ms)`);
    if (meanwhile.some((s) => s.status !== 200))
      failures.push(`${label}: ${meanwhile.filter((s) => s.status !== 200).length} /healthz probes were not answered 200`);
    return {
      contentType,
      status: r.status,
      answeredMs: r.answeredMs === null ? null : round(r.answeredMs),
      mbSentAtAnswer: r.bytesSentAtAnswer === null ? null : round(r.bytesSentAtAnswer / MB, 2),
      mbSent: round(r.bytesSent / MB, 2),
      wholeBodySent: r.wholeBodySent,
      ...(r.error ? { connectionError: r.error } : {}),
      error: { code: error.code ?? null, message: error.message?.slice(0, 200) ?? null },
      healthz: {
        everyMs: 20,
        idle: { probes: idle.length, latencyMs: idle.length ? latencySummary(idle.map((s) => s.ms)) : null },
        meanwhile: { probes: meanwhile.length, latencyMs: meanwhile.length ? latencySummary(meanwhile.map((s) => s.ms)) : null },
      },
    };
  };
  const csvHead = `instrumentId,barDate,openPrice,highPrice,lowPrice,closePrice,volume,quoteCurrency,quoteUnit,source,asOf\n${instrumentId},1991-01-01,10,11,9,10.5,1000,USD,USD per share,"bench,${AS_OF}\n`;
  const csv = await one('CSV with a quote that never closes', 'text/csv', fixedChunks(csvHead, barRows(instrumentId, 'csv'), HOSTILE_BYTES, HOSTILE_CHUNK));
  const ndjson = await one('one 40 MB NDJSON line', 'application/x-ndjson', fixedChunks('', barRows(instrumentId, 'ndjson'), HOSTILE_BYTES, HOSTILE_CHUNK));
  return {
    bodies: {
      csv: { body: `${HOSTILE_BYTES / MB} MB: header, a first row whose source field opens a quote, then ordinary bar rows (no quote)`, ...csv },
      ndjson: { body: `${HOSTILE_BYTES / MB} MB: ordinary bar objects with no newline between them`, ...ndjson },
    },
    note: `bodies sent in ${HOSTILE_CHUNK / 1024} KiB chunks as fast as the server took them; answeredMs is from the request's start to the answer's head; /healthz probed every 20 ms on the public listener from 1 s before the upload until its answer ended`,
    failures,
  };
}
