// The posting clients of the wide-bodies scenario, in a process of their own
// so that sending their bodies never delays the reader in the bench process.
// Started by bench/wide-bodies.ts with WIDE_POSTERS (JSON, PostersConfig):
// each client posts its body again as soon as it is answered (or, paced, at
// its next turn if that is later), over one kept-alive connection, until
// SIGTERM. Prints "posting" once every client has had an answer, and at the
// end its counts as one JSON line.
import http from 'node:http';
import { latencySummary } from './lib/stats.ts';

export interface PostersConfig {
  url: string;
  key: string;
  clients: number;
  /** wideObject: `{"k0":0,…}` of `fields` fields; longText: a body of the same size holding one text field, the option's type. */
  body: 'wideObject' | 'longText';
  fields: number;
  /** Posts a second of all the clients together, evenly spread; unpaced (as fast as answered) without it. */
  perSecond?: number;
}

export interface PostersResult {
  seconds: number;
  byStatus: Record<string, number>;
  latencyMs: ReturnType<typeof latencySummary>;
  largestAnswerBytes: number;
  bodyBytes: number;
}

/** `{"k0":0,"k1":0,…}`: `fields` fields. */
const wideObject = (fields: number) => Buffer.from(`{${Array.from({ length: fields }, (_, i) => `"k${i}":0`).join(',')}}`);

/** A body of `bytes` bytes whose one field is text: the option's type, which must be call or put. */
const longText = (bytes: number) => Buffer.from(JSON.stringify({ type: 't'.repeat(bytes - '{"type":""}'.length) }));

async function main() {
  const config = JSON.parse(process.env.WIDE_POSTERS ?? '{}') as PostersConfig;
  const wide = wideObject(config.fields);
  const body = config.body === 'wideObject' ? wide : longText(wide.length);
  const url = new URL(config.url);
  const byStatus: Record<string, number> = {};
  const latencies: number[] = [];
  let largestAnswerBytes = 0;
  let going = true;
  process.once('SIGTERM', () => (going = false));

  const post = (agent: http.Agent) =>
    new Promise<void>((resolve, reject) => {
      const started = performance.now();
      const req = http.request(
        {
          agent,
          hostname: url.hostname,
          port: url.port,
          method: 'POST',
          path: url.pathname,
          headers: { authorization: `Bearer ${config.key}`, 'content-type': 'application/json', 'content-length': body.length },
        },
        (res) => {
          let bytes = 0;
          res.on('data', (c: Buffer) => (bytes += c.length));
          res.on('error', reject);
          res.on('end', () => {
            byStatus[res.statusCode ?? 0] = (byStatus[res.statusCode ?? 0] ?? 0) + 1;
            latencies.push(performance.now() - started);
            largestAnswerBytes = Math.max(largestAnswerBytes, bytes);
            resolve();
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  const started = performance.now();
  let answered = 0;
  // Paced, client c posts at c/perSecond, then every clients/perSecond seconds.
  const turnMs = config.perSecond ? (1000 * config.clients) / config.perSecond : 0;
  await Promise.all(
    Array.from({ length: config.clients }, async (_, c) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      let first = true;
      for (let n = 0; going; n++) {
        const wait = started + (c / config.clients + n) * turnMs - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        await post(agent);
        if (first && ++answered === config.clients) process.stdout.write('posting\n');
        first = false;
      }
      agent.destroy();
    }),
  );
  const result: PostersResult = {
    seconds: (performance.now() - started) / 1000,
    byStatus,
    latencyMs: latencySummary(latencies),
    largestAnswerBytes,
    bodyBytes: body.length,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

await main();
