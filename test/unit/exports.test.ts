import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { rangeOf, sendFileBytes, type StoredBytes } from '../../server/http/file-body.ts';
import { gunzipSync, zstdDecompressSync } from 'node:zlib';
import { Encoder } from '../../server/exports/file-store.ts';
import { planFiles } from '../../server/exports/job.ts';
import { ExportLinks } from '../../server/exports/links.ts';
import { ExportRequestSchema } from '../../server/exports/schema.ts';

describe('export file ranges', () => {
  it.each([
    ['bytes=0-9', [0, 10]],
    ['bytes=10-', [10, 100]],
    ['bytes=-7', [93, 100]],
    ['bytes=-500', [0, 100]],
    ['bytes=90-500', [90, 100]],
    ['bytes=99-99', [99, 100]],
  ] as const)('when Range is %s of 100 bytes, then the range is %j (end exclusive)', (header, range) => {
    expect(rangeOf(header, 100)).toEqual(range);
  });

  it.each(['bytes=100-', 'bytes=100-200', 'bytes=-0'])('when Range is %s of 100 bytes, then it cannot be satisfied', (header) => {
    expect(rangeOf(header, 100)).toBe('unsatisfiable');
  });

  it.each([undefined, '', 'items=0-9', 'bytes=0-9,20-29', 'bytes=9-3', 'bytes=-', 'bytes=a-b'])('when Range is %j, then the whole file is sent', (header) => {
    expect(rangeOf(header, 100)).toBeNull();
  });
});

describe('a stored file sent to its reader', () => {
  it('when the socket pushes back on piece after piece of a 40 MiB file, then the reader gets every byte and the response is left no listener', async () => {
    const piece = randomBytes(1 << 20);
    const pieces = 40;
    const whole = createHash('sha256');
    for (let i = 0; i < pieces; i++) whole.update(piece);
    let waits = 0;
    let left: Record<string, number> | undefined;
    const app = express();
    app.get('/file', async (req, res) => {
      const events = ['close', 'error', 'drain', 'finish'];
      const before = events.map((e) => res.listenerCount(e));
      const bytes: StoredBytes = {
        size: piece.length * pieces,
        etag: '"file"',
        contentType: 'application/octet-stream',
        async read(_start, _end, write) {
          for (let i = 0; i < pieces; i++) await write(piece);
        },
      };
      await sendFileBytes(req, res, bytes, 'file.bin', { blocked: (waiting) => void (waiting && waits++) });
      left = Object.fromEntries(events.map((e, i) => [e, res.listenerCount(e) - before[i]]));
    });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const received = createHash('sha256');
      let length = 0;
      await new Promise<void>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path: '/file' }, (res) => {
            res.on('data', (chunk: Buffer) => {
              received.update(chunk);
              length += chunk.length;
            });
            res.on('end', resolve);
            res.on('error', reject);
          })
          .on('error', reject);
      });
      expect(length).toBe(piece.length * pieces);
      expect(received.digest('hex')).toBe(whole.digest('hex'));
      // The writes did wait (else the test would prove nothing), and each wait took its listeners with it.
      expect(waits).toBeGreaterThanOrEqual(10);
      expect(left).toEqual({ close: 0, error: 0, drain: 0, finish: 0 });
    } finally {
      server.close();
    }
  });
});

describe('export files of a request', () => {
  it('when daily bars span three calendar years, then there is one file per year, the first and last clipped to the window', () => {
    expect(planFiles({ dataset: 'daily-prices', from: '2019-06-15', to: '2021-02-01', format: 'csv', compression: 'zstd' })).toEqual([
      { name: '2019.csv.zst', from: '2019-06-15', to: '2019-12-31' },
      { name: '2020.csv.zst', from: '2020-01-01', to: '2020-12-31' },
      { name: '2021.csv.zst', from: '2021-01-01', to: '2021-02-01' },
    ]);
  });

  it('when intraday bars cross a year end and a leap February, then there is one file per month, each ending on its last day', () => {
    expect(planFiles({ dataset: 'intraday-bars', from: '2023-12-10', to: '2024-02-10', format: 'parquet', compression: 'none' })).toEqual([
      { name: '2023-12.parquet', from: '2023-12-10', to: '2023-12-31' },
      { name: '2024-01.parquet', from: '2024-01-01', to: '2024-01-31' },
      { name: '2024-02.parquet', from: '2024-02-01', to: '2024-02-10' },
    ]);
  });

  it('when the request validates, then the span limit of intraday exports is the one of its interval', () => {
    const base = { dataset: 'intraday-bars', from: '2020-01-01', format: 'arrow' };
    expect(ExportRequestSchema.safeParse({ ...base, interval: '1min', to: '2021-01-01' }).success).toBe(true);
    expect(ExportRequestSchema.safeParse({ ...base, interval: '1min', to: '2021-01-02' }).success).toBe(false);
    expect(ExportRequestSchema.safeParse({ ...base, interval: '5min', to: '2025-01-04' }).success).toBe(true);
  });
});

describe('compressed export files', () => {
  const row = (i: number) => `0f8fad5b-d9cb-469f-a165-70867728950e,SYM,2020-01-${String((i % 28) + 1).padStart(2, '0')},${(i * 1.37).toFixed(4)},${i * 1000}\n`;
  const pieces = [0, 30, 60].map((first) => Buffer.from(Array.from({ length: 30 }, (_, i) => row(first + i)).join('')));
  const encode = async (compression: 'zstd' | 'gzip', pause: boolean) => {
    const out: Buffer[] = [];
    const encoder = new Encoder(compression, async (bytes) => {
      out.push(bytes);
    });
    for (const piece of pieces) {
      await encoder.write(piece);
      if (pause) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await encoder.end();
    return Buffer.concat(out);
  };

  it.each(['zstd', 'gzip'] as const)(
    'when %s pieces are written back to back or with pauses between them, then the bytes are the same, and decompress to the pieces',
    async (compression) => {
      const [fast, slow] = [await encode(compression, false), await encode(compression, true)];
      expect(fast.equals(slow)).toBe(true);
      expect((compression === 'zstd' ? zstdDecompressSync(fast) : gunzipSync(fast)).equals(Buffer.concat(pieces))).toBe(true);
    },
  );
});

describe('export file links', () => {
  const key = randomBytes(32);
  const links = new ExportLinks(async () => key);
  const id = '0b6f0f0e-7b3c-4c1e-9d59-2b0c8f6f1a11';
  const future = new Date(Date.now() + 3_600_000);

  it('when a link is made, then it verifies for its job and file only, and not once expired', async () => {
    const query = new URLSearchParams(await links.query(id, '2012.parquet', future));
    const [expires, signature] = [query.get('expires') ?? '', query.get('signature') ?? ''];
    expect(await links.check(id, '2012.parquet', expires, signature)).toBe('valid');
    expect(await links.check(id, '2013.parquet', expires, signature)).toBe('forged');
    expect(await links.check(id.replace('0b6f', '1b6f'), '2012.parquet', expires, signature)).toBe('forged');
    expect(await links.check(id, '2012.parquet', String(Number(expires) + 1), signature)).toBe('forged');
    expect(await links.check(id, '2012.parquet', expires, signature, future.getTime() + 1000)).toBe('expired');
  });

  it("when a link is signed under another deployment's key, then it does not verify", async () => {
    const other = new ExportLinks(async () => randomBytes(32));
    const query = new URLSearchParams(await other.query(id, '2012.parquet', future));
    expect(await links.check(id, '2012.parquet', query.get('expires') ?? '', query.get('signature') ?? '')).toBe('forged');
  });
});
