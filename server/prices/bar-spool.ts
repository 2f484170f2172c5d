import { mkdtemp, open, rm, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Bytes held on disk until they can be sent: a streamed Arrow answer's
 * record batches, which must follow its schema message, and the schema
 * carries the meta, known only once every series is read (bar-files.ts).
 * Memory stays at one chunk however long the answer; disk holds the batches
 * (about 60 bytes a daily bar: 500 instruments × 30 years is 230 MB).
 *
 * The file is made in a new directory of the OS temporary directory (TMPDIR)
 * that only this account can open (mode 0700, the file 0600), and both are
 * unlinked at once: the open handle is the only way to the bytes, and they
 * are gone when it closes, or when the process dies.
 */
export class Spool {
  private written = 0;

  private readonly file: FileHandle;

  private constructor(file: FileHandle) {
    this.file = file;
  }

  static async open(): Promise<Spool> {
    const dir = await mkdtemp(join(tmpdir(), 'mds-spool-'));
    try {
      const path = join(dir, 'bytes');
      const file = await open(path, 'wx+', 0o600);
      await rm(path);
      return new Spool(file);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async write(chunk: Buffer): Promise<void> {
    let done = 0;
    while (done < chunk.length) {
      const { bytesWritten } = await this.file.write(chunk, done, chunk.length - done, this.written + done);
      done += bytesWritten;
    }
    this.written += chunk.length;
  }

  /** The bytes written, in chunks of at most `size`, each handed to `send` and awaited before the next is read. */
  async replay(send: (chunk: Buffer) => Promise<void>, size = 256 * 1024): Promise<void> {
    for (let position = 0; position < this.written;) {
      const chunk = Buffer.allocUnsafe(Math.min(size, this.written - position));
      const { bytesRead } = await this.file.read(chunk, 0, chunk.length, position);
      if (!bytesRead) throw new Error(`spool ended at ${position} of ${this.written} bytes`);
      position += bytesRead;
      await send(chunk.subarray(0, bytesRead));
    }
  }

  close(): Promise<void> {
    return this.file.close();
  }
}
