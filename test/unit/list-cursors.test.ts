import { createHmac, randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bindingOf, CursorSchema, isCursorId, isCursorInstant, ListCursors } from '../../server/core/cursor.ts';
import { AppError } from '../../server/core/errors.ts';

// The cursor codec (server/core/cursor.ts): what it makes it reads back; what
// it did not make, or made for another list or binding, is a 400 naming
// `cursor`, never another error.

// A fixed key, so that every run makes the same cursors.
const secret = Buffer.from('5d0b6c3f8a1e47f29c0d3b6e8f1a2c4d5e6f708192a3b4c5d6e7f8091a2b3c4d', 'hex');
const cursors = new ListCursors(secret);
const binding = bindingOf(['6f9b8164-b21a-5207-ba7d-b9c261a7bec4', '2024-01-01', null, 'guidance']);
const key = (k: string[]) => (k.length === 2 && isCursorInstant(k[0]) && isCursorId(k[1]) ? k : null);
const position = ['2024-03-04T14:00:00.123456', '6f9b8164-b21a-5207-ba7d-b9c261a7bec4'];

/** What the codec's comment states of a cursor: base64url of the first 16 bytes of HMAC-SHA-256(key, JSON), then the JSON. */
function signed(json: string, under: Buffer = secret): string {
  const payload = Buffer.from(json, 'utf8');
  const tag = createHmac('sha256', under).update(payload).digest().subarray(0, 16);
  return Buffer.concat([tag, payload]).toString('base64url');
}

const NOT_MADE_HERE = 'is not a cursor this service made; pass meta.nextCursor exactly as it was given';

function refusal(cursor: string, list: 'news' | 'events' = 'news', b = binding, codec = cursors): AppError | null {
  try {
    codec.read(cursor, list, b, key);
    return null;
  } catch (e) {
    if (!(e instanceof AppError)) throw e;
    return e;
  }
}

describe('list cursors', () => {
  it('when a cursor is made, then it reads back to the same key, only for its list and binding', () => {
    const cursor = cursors.make('news', binding, position);
    expect(CursorSchema.safeParse(cursor).success).toBe(true);
    expect(cursors.read(cursor, 'news', binding, key)).toEqual(position);
    expect(refusal(cursor, 'events')?.details).toEqual({ cursor: ['was made for another list (news), not this one'] });
    expect(Object.keys(refusal(cursor, 'news', bindingOf(['other']))!.details)).toEqual(['cursor']);
  });

  it('when a cursor is made as the comment states (tag, then JSON), then it reads back: the format is the documented one', () => {
    const json = JSON.stringify({ v: 2, r: 'news', q: binding, k: position });
    expect(cursors.make('news', binding, position)).toBe(signed(json));
    expect(cursors.read(signed(json), 'news', binding, key)).toEqual(position);
  });

  it('when another process of the deployment reads a cursor, then it is accepted: the key, not the process, decides', () => {
    const otherProcess = new ListCursors(Buffer.from(secret));
    expect(otherProcess.read(cursors.make('news', binding, position), 'news', binding, key)).toEqual(position);
  });

  it('when a cursor is decoded, re-positioned and encoded again, then it is refused as not made by the service', () => {
    const cursor = cursors.make('news', binding, position);
    const bytes = Buffer.from(cursor, 'base64url');
    // The documented layout: a 16-byte tag, then the JSON.
    const json = bytes.subarray(16).toString('utf8');
    const moved = json.replace('2024-03-04T14:00:00.123456', '2020-01-01T00:00:00.000000');
    expect(moved).not.toBe(json);
    for (const forged of [
      // The old tag on the new position.
      Buffer.concat([bytes.subarray(0, 16), Buffer.from(moved)]).toString('base64url'),
      // No tag at all: the JSON alone.
      Buffer.from(moved).toString('base64url'),
      Buffer.from(json).toString('base64url'),
    ]) {
      expect(refusal(forged)?.details, forged).toEqual({ cursor: [NOT_MADE_HERE] });
    }
  });

  it('when any bit of the tag or the JSON is flipped, or the cursor is cut, then it is refused as not made by the service', () => {
    const bytes = Buffer.from(cursors.make('news', binding, position), 'base64url');
    for (let i = 0; i < bytes.length; i++) {
      for (const bit of [0x01, 0x80]) {
        const flipped = Buffer.from(bytes);
        flipped[i] ^= bit;
        expect(refusal(flipped.toString('base64url'))?.details, `byte ${i}`).toEqual({ cursor: [NOT_MADE_HERE] });
      }
    }
    for (const length of [0, 1, 15, 16, 17, bytes.length - 1]) {
      expect(refusal(bytes.subarray(0, length).toString('base64url'))?.details, `${length} bytes`).toEqual({ cursor: [NOT_MADE_HERE] });
    }
  });

  it('when a cursor was made under another key (another deployment), then it is refused as not made by the service', () => {
    const elsewhere = new ListCursors(randomBytes(32));
    expect(refusal(elsewhere.make('news', binding, position))?.details).toEqual({ cursor: [NOT_MADE_HERE] });
    expect(refusal(signed(JSON.stringify({ v: 2, r: 'news', q: binding, k: position }), randomBytes(32)))?.details).toEqual({ cursor: [NOT_MADE_HERE] });
  });

  it('when the codec is printed or serialised, then the key is not in the text', () => {
    const texts = [JSON.stringify(cursors), inspect(cursors, { showHidden: true, depth: 10 }), String(cursors)];
    for (const text of texts) {
      for (const form of [secret.toString('hex'), secret.toString('base64'), secret.toString('base64url')]) expect(text).not.toContain(form);
    }
  });

  it('when a signing key is not 32 bytes, then the codec is not made', () => {
    for (const n of [0, 16, 31, 33, 64]) expect(() => new ListCursors(randomBytes(n)), `${n} bytes`).toThrow(/32 bytes/);
  });

  it('when undefined and null filters are bound, then they bind alike, and every other difference changes the binding', () => {
    expect(bindingOf(['a', undefined])).toBe(bindingOf(['a', null]));
    expect(bindingOf(['a', 'b'])).not.toBe(bindingOf(['ab']));
    expect(bindingOf(['a', null])).not.toBe(bindingOf(['a', 'null']));
  });

  it('when a key value is not a real instant or id, then the cursor is refused', () => {
    for (const bad of [
      ['2024-02-30T14:00:00.000000', '6f9b8164-b21a-5207-ba7d-b9c261a7bec4'],
      ['2024-03-04T24:00:00.000000', '6f9b8164-b21a-5207-ba7d-b9c261a7bec4'],
      ['2024-03-04T14:00:00.000', '6f9b8164-b21a-5207-ba7d-b9c261a7bec4'],
      ['2024-03-04T14:00:00.000000', '6F9B8164-B21A-5207-BA7D-B9C261A7BEC4'],
      ['2024-03-04T14:00:00.000000'],
    ]) {
      expect(Object.keys(refusal(cursors.make('news', binding, bad))!.details), bad.join()).toEqual(['cursor']);
    }
  });

  it('when any text or any JSON payload, signed or not, is given as a cursor, then it is read or refused naming cursor, never another error', () => {
    const asCursor = (s: string) => Buffer.from(s, 'utf8').toString('base64url');
    const payload = fc.record(
      {
        v: fc.oneof(fc.constant(2), fc.anything()),
        r: fc.oneof(fc.constantFrom('news', 'events'), fc.string()),
        q: fc.oneof(fc.constant(binding), fc.string()),
        k: fc.oneof(fc.constant(position), fc.anything()),
      },
      { requiredKeys: [] },
    );
    const json = payload.map((p) => JSON.stringify(p) ?? 'null');
    let read = 0;
    let refused = 0;
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary' }),
          json.map(asCursor),
          json.map((j) => signed(j)),
          fc.string({ unit: 'binary' }).map((s) => signed(s)),
        ),
        (cursor) => {
          const e = refusal(cursor);
          if (e) expect(Object.keys(e.details)).toEqual(['cursor']);
          if (e) refused++;
          else read++;
        },
      ),
      { seed: 20_261_127, numRuns: 2000 },
    );
    // Not vacuous: some signed payloads are well formed and read, and most inputs are refused.
    expect(read).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(read);
  });
});
