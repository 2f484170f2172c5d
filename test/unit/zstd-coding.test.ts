import express from 'express';
import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compressResponses } from '../../server/http/compression.ts';
import { jsonFraming, streamFramed } from '../../server/http/envelope.ts';
import { listen } from '../support/listen.ts';
import { pausedGet, untilProducerWaits, type Producer } from '../support/paused-reader.ts';

// The zstd coding's wrapper on a real listener: a streamed answer whose
// reader stops reading must stop its producer (the compressor's backpressure
// reaches the writer), and everything written must arrive once the reader
// goes on. The chunks are random bytes in hex, which zstd cannot shrink below
// half, so 64 MiB of them are far more than the socket buffers hold.

const CHUNK_BYTES = 256 * 1024;
const CHUNKS = 256;

let server: Awaited<ReturnType<typeof listen>>;
let base: string;
/** What the producer of the current stream has had accepted so far, and whether it waits. */
const producer: Producer & { chunks: Buffer[] } = { accepted: 0, waiting: false, chunks: [] };

beforeAll(async () => {
  const app = express();
  app.use(compressResponses());
  app.get('/stream', async (_req, res) => {
    producer.accepted = 0;
    producer.chunks = [];
    await streamFramed(res, jsonFraming('array'), async (write) => {
      for (let i = 0; i < CHUNKS; i++) {
        const chunk = Buffer.from(`${i ? ',' : ''}"${randomBytes(CHUNK_BYTES / 2).toString('hex')}"`);
        producer.chunks.push(chunk);
        producer.waiting = true;
        await write(chunk);
        producer.waiting = false;
        producer.accepted += chunk.length;
      }
      return { asOf: '2020-01-01T00:00:00.000Z', source: 'test', stale: false };
    }).catch(() => {});
  });
  server = await listen(app);
  base = server.base;
});
afterAll(() => server.close());

describe('zstd on a streamed answer', () => {
  it('when the reader pauses, then the producer waits with most of the body unwritten; when it reads on, then the whole body arrives intact', async () => {
    const res = await pausedGet(`${base}/stream`, { 'accept-encoding': 'zstd' });
    expect(res.headers['content-encoding']).toBe('zstd');
    // The producer blocks, with most of the body not yet written.
    const total = CHUNKS * CHUNK_BYTES;
    await untilProducerWaits(producer);
    expect(producer.accepted).toBeLessThan(total / 2);
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    const decoded = zlib.zstdDecompressSync(Buffer.concat(chunks)).toString();
    const expected = `{"data":[${Buffer.concat(producer.chunks).toString()}],"meta":{"asOf":"2020-01-01T00:00:00.000Z","source":"test","stale":false}}`;
    expect(decoded.length).toBe(expected.length);
    expect(decoded === expected).toBe(true);
  }, 60_000);
});
