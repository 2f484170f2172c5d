import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';

// A file's signed link: /v1/exports/{id}/files/{name}?expires=<unix s>&signature=<tag>,
// the tag being HMAC-SHA-256 over "export-file\n{id}\n{name}\n{expires}" under
// the deployment's link key (sql/027), base64url, cut to 128 bits: each guess
// at a forgery costs a request and succeeds with probability 2^-128. The key
// is in PostgreSQL, so a link made by any process or host verifies on all of
// them. The request log writes paths without their query (http/observe.ts),
// so a signature never reaches it.

const TAG_BYTES = 16;
const KEY_BYTES = 32;

export type LinkCheck = 'valid' | 'forged' | 'expired';

export class ExportLinks {
  #key: Promise<KeyObject> | null = null;

  readonly #load: () => Promise<Buffer>;

  /** `load` reads the deployment's link key from the primary (once, on first use; again after a failed read). */
  constructor(load: () => Promise<Buffer>) {
    this.#load = load;
  }

  #keyObject(): Promise<KeyObject> {
    this.#key ??= this.#load().then(
      (secret) => {
        if (secret.length !== KEY_BYTES) throw new Error(`an export link key is ${KEY_BYTES} bytes, not ${secret.length}`);
        return createSecretKey(secret);
      },
      (err: unknown) => {
        this.#key = null;
        throw err;
      },
    );
    return this.#key;
  }

  async #tag(id: string, name: string, expires: number): Promise<Buffer> {
    return createHmac('sha256', await this.#keyObject())
      .update(`export-file\n${id}\n${name}\n${expires}`)
      .digest()
      .subarray(0, TAG_BYTES);
  }

  /** The query of a link to the file that works until `expiresAt` (whole seconds, rounded up). */
  async query(id: string, name: string, expiresAt: Date): Promise<string> {
    const expires = Math.ceil(expiresAt.getTime() / 1000);
    return `expires=${expires}&signature=${(await this.#tag(id, name, expires)).toString('base64url')}`;
  }

  /** Whether a link's expiry and signature are this deployment's for the file, and unexpired at `now`. */
  async check(id: string, name: string, expires: string, signature: string, now = Date.now()): Promise<LinkCheck> {
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== TAG_BYTES || given.toString('base64url') !== signature) return 'forged';
    // Constant time, so that a refusal's timing says nothing of how much of a forged tag was right.
    if (!timingSafeEqual(given, await this.#tag(id, name, Number(expires)))) return 'forged';
    return Number(expires) * 1000 > now ? 'valid' : 'expired';
  }
}
