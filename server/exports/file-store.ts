import { createHash } from 'node:crypto';
import { finished } from 'node:stream/promises';
import { constants as zlib, createGzip, createZstdCompress, type Gzip, type ZstdCompress } from 'node:zlib';
import type { Units } from '../db/database.ts';
import type { ISql } from '../db/sql.ts';
import { exportBytesWritten } from '../observability/metrics.ts';
import { holdsJob } from './lease-repository.ts';
import { deleteChunksOf, insertChunk, insertFile, selectChunks } from './files-repository.ts';
import type { Compression } from './schema.ts';

/** Bytes a stored chunk holds: a Range read fetches whole chunks, so one costs at most this beyond what it asks. */
export const CHUNK_BYTES = 1024 * 1024;

/** Thrown into a job's work when its holder no longer holds it (cancelled, deleted, or taken by another process). */
export class LeaseLost extends Error {
  constructor() {
    super('the export job is no longer held by this process');
  }
}

// Compression of CSV files at fixed settings, so equal rows give equal bytes:
// zstd level 3 (its default) and gzip level 6 (zlib's default), whose header
// carries no time or name (Node writes mtime 0).
function compressor(compression: Exclude<Compression, 'none'>): Gzip | ZstdCompress {
  return compression === 'gzip' ? createGzip({ level: 6 }) : createZstdCompress({ params: { [zlib.ZSTD_c_compressionLevel]: 3 } });
}

/**
 * One file of a job written into export_chunks as it is produced: the bytes
 * gathered into chunks of CHUNK_BYTES, each inserted in a transaction that
 * first checks that this process still holds the job (holdsJob locks the
 * job's row, so a new holder cannot take it meanwhile). Memory stays at one
 * chunk. The SHA-256 is taken as the bytes pass when the head (what the
 * writer returns at its end, stored as chunk 0 and served first) is empty,
 * else over the stored chunks in file order once the file is complete.
 */
export class StoredFile {
  private readonly parts: Buffer[] = [];
  private size = 0;
  private seq = 1;
  private bodyBytes = 0;
  private readonly hash = createHash('sha256');

  private readonly db: Units;
  private readonly job: { id: string; token: string; format: string };
  readonly name: string;

  constructor(db: Units, job: { id: string; token: string; format: string }, name: string) {
    this.db = db;
    this.job = job;
    this.name = name;
  }

  /** Appends bytes to the file's body. */
  async write(bytes: Buffer): Promise<void> {
    for (let offset = 0; offset < bytes.length;) {
      const take = Math.min(CHUNK_BYTES - this.size, bytes.length - offset);
      this.parts.push(bytes.subarray(offset, offset + take));
      this.size += take;
      offset += take;
      if (this.size === CHUNK_BYTES) await this.flush();
    }
  }

  private async flush(): Promise<void> {
    if (!this.size) return;
    const data = this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts, this.size);
    this.parts.length = 0;
    this.size = 0;
    this.hash.update(data);
    const chunk = { jobId: this.job.id, name: this.name, seq: this.seq++, bodyOffset: this.bodyBytes, data };
    this.bodyBytes += data.length;
    await this.held((tx) => insertChunk(tx, chunk));
    exportBytesWritten.inc({ format: this.job.format }, data.length);
  }

  /** Runs `work` in a transaction that holds the job's row, or throws LeaseLost. */
  private held(work: (tx: ISql) => Promise<void>): Promise<void> {
    return this.db.run((sql) =>
      sql.begin(async (tx) => {
        if (!(await holdsJob(tx, this.job.id, this.job.token))) throw new LeaseLost();
        await work(tx);
      }),
    );
  }

  /** Stores what remains and the head, and records the file as finished, in one transaction; returns its bytes and hash. */
  async finish(head: Buffer, rows: number, ordinal: number): Promise<{ bytes: number; sha256: Buffer }> {
    await this.flush();
    const bytes = head.length + this.bodyBytes;
    let sha256: Buffer;
    if (head.length) {
      await this.held((tx) => insertChunk(tx, { jobId: this.job.id, name: this.name, seq: 0, bodyOffset: 0, data: head }));
      exportBytesWritten.inc({ format: this.job.format }, head.length);
      sha256 = await this.hashStored(head.length, bytes);
    } else {
      sha256 = this.hash.digest();
    }
    await this.held((tx) => insertFile(tx, this.job.id, { name: this.name, ordinal, rows, bytes, headBytes: head.length, sha256 }));
    return { bytes, sha256 };
  }

  /** The SHA-256 of the stored file, read back a few chunks at a time. */
  private async hashStored(headBytes: number, bytes: number): Promise<Buffer> {
    const hash = createHash('sha256');
    const file = { jobId: this.job.id, name: this.name, headBytes };
    for (let at = 0; at < bytes;) {
      const chunks = await this.db.run((sql) => selectChunks(sql, file, at, bytes, 4));
      if (!chunks.length) throw new Error(`export file ${this.name} is missing bytes from ${at}`);
      for (const c of chunks) hash.update(c.data);
      const last = chunks[chunks.length - 1];
      at = last.offset + last.data.length;
    }
    return hash.digest();
  }

  /** Deletes what was stored of a file that ended with no rows. */
  async discard(): Promise<void> {
    this.parts.length = 0;
    this.size = 0;
    await this.held((tx) => deleteChunksOf(tx, this.job.id, this.name));
  }
}

/**
 * The bytes a writer produces, compressed (CSV with zstd or gzip) or not, on
 * their way to `out`. A compressed file's head is its own frame (a gzip
 * member, a zstd frame): both formats read concatenated frames as one stream.
 *
 * Each write waits until the compressor has taken its bytes, so the frame
 * always ends with an empty final step. Node's zlib streams compress a chunk
 * still queued when end() is called with the end directive instead, and zstd
 * then writes other bytes for the same input (9 bytes apart on a 3.5 KB
 * file): a file's bytes, and its sha256, would depend on how busy the thread
 * pool was.
 */
export class Encoder {
  private readonly z: Gzip | ZstdCompress | null;
  private readonly pending: Buffer[] = [];
  private readonly out: (bytes: Buffer) => Promise<void>;
  private readonly compression: Compression;

  constructor(compression: Compression, out: (bytes: Buffer) => Promise<void>) {
    this.compression = compression;
    this.out = out;
    this.z = compression === 'none' ? null : compressor(compression);
    this.z?.on('data', (b: Buffer) => this.pending.push(b));
  }

  async write(bytes: Buffer): Promise<void> {
    const z = this.z;
    if (!z) return this.out(bytes);
    await new Promise<void>((resolve, reject) => z.write(bytes, (err) => (err ? reject(err) : resolve())));
    await this.drain();
  }

  private async drain(): Promise<void> {
    while (this.pending.length) {
      // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- the loop's condition says there is one
      await this.out(this.pending.shift()!);
    }
  }

  async end(): Promise<void> {
    if (!this.z) return;
    this.z.end();
    await finished(this.z);
    await this.drain();
  }

  /** The head's bytes as stored: compressed on their own when the file is. */
  async head(bytes: Buffer): Promise<Buffer> {
    if (this.compression === 'none' || !bytes.length) return bytes;
    const z = compressor(this.compression);
    const parts: Buffer[] = [];
    z.on('data', (b: Buffer) => parts.push(b));
    z.end(bytes);
    await finished(z);
    return Buffer.concat(parts);
  }
}
