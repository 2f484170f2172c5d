import express from 'express';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compressResponses } from '../../server/http/compression.ts';
import { jsonFraming, streamFramed } from '../../server/http/envelope.ts';
import { listen } from '../support/listen.ts';
import { pausedGet, untilProducerWaits, type Producer } from '../support/paused-reader.ts';

// A streamed answer written in parts (the bulk read's chunks: a series' text
// and the bytes around it) on a real listener, read by a client that keeps
// up. Node's response, corked, holds a chunked body's parts itself and says
// "wait for drain" once they pass its high-water mark, yet the socket, given
// them at uncork with room in the kernel's buffer, never needs draining and
// never says "drain": a writer that waited for it waited until the idle
// timeout cut the download (a bulk read stalled so after 4 MB in about one
// read in ten). Every part must arrive, in order, and the producer must end;
// and a reader that stops reading must still stop the producer.

const PART_BYTES = 40 * 1024;
const CHUNKS = 200;
// The paused reader's stream is longer (64 MB): the loopback's socket buffers
// and the client's take up to about 11 MB before the producer must wait.
const PAUSED_CHUNKS = 800;

let server: Awaited<ReturnType<typeof listen>>;
let base: string;
/** What the producer of the current stream has had accepted so far, and whether it waits. */
const producer: Producer = { accepted: 0, waiting: false };

beforeAll(async () => {
  const app = express();
  app.use(compressResponses());
  app.get('/stream', async (req, res) => {
    const chunks = Number(req.query.chunks);
    await streamFramed(res, jsonFraming('array'), async (write) => {
      producer.accepted = 0;
      for (let i = 0; i < chunks; i++) {
        // Two parts a chunk, together above the response's 64 KiB high-water mark.
        producer.waiting = true;
        await write([
          Buffer.from(`${i ? ',' : ''}"${String(i).padStart(8, '0')}`),
          Buffer.alloc(PART_BYTES, 'a'),
          Buffer.alloc(PART_BYTES, 'b'),
          Buffer.from('"'),
        ]);
        producer.waiting = false;
        producer.accepted += 2 * PART_BYTES;
      }
      return { asOf: '2020-01-01T00:00:00.000Z', source: 'test', stale: false };
    }).catch(() => {});
  });
  server = await listen(app);
  base = server.base;
});
afterAll(() => server.close());

/** The body of GET /stream, read as fast as it comes. */
const body = (headers: Record<string, string>) =>
  new Promise<Buffer>((resolve, reject) => {
    http
      .get(`${base}/stream?chunks=${CHUNKS}`, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve(Buffer.concat(chunks)));
        res.on('error', reject);
      })
      .on('error', reject);
  });

describe('a streamed answer written in parts', () => {
  it('when the reader keeps up, then every chunk arrives in order and the answer ends, however often it is read', async () => {
    for (let read = 0; read < 10; read++) {
      const parsed = JSON.parse((await body({ 'accept-encoding': 'identity' })).toString()) as { data: string[] };
      expect(parsed.data).toHaveLength(CHUNKS);
      parsed.data.forEach((item, i) => {
        expect(item.slice(0, 8)).toBe(String(i).padStart(8, '0'));
        expect(item.length).toBe(8 + 2 * PART_BYTES);
      });
    }
  });

  it('when the reader pauses, then the producer waits with most of the body unwritten; when it reads on, then the whole body arrives', async () => {
    const res = await pausedGet(`${base}/stream?chunks=${PAUSED_CHUNKS}`, { 'accept-encoding': 'identity' });
    await untilProducerWaits(producer);
    expect(producer.accepted).toBeLessThan((PAUSED_CHUNKS * 2 * PART_BYTES) / 2);
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    expect((JSON.parse(Buffer.concat(chunks).toString()) as { data: string[] }).data).toHaveLength(PAUSED_CHUNKS);
  });
});
