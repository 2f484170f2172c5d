import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bindingOf, CursorSchema, decodeCursor, encodeCursor, isCursorId, isCursorInstant } from '../../server/core/cursor.ts';
import { AppError } from '../../server/core/errors.ts';

// The cursor codec (server/core/cursor.ts): what it makes it reads back; what
// it did not make, or made for another list or binding, is a 400 naming
// `cursor`, never another error.

const binding = bindingOf(['6f9b8164-b21a-5207-ba7d-b9c261a7bec4', '2024-01-01', null, 'guidance']);
const key = (k: string[]) => (k.length === 2 && isCursorInstant(k[0]) && isCursorId(k[1]) ? k : null);

function refusal(cursor: string, list: 'news' | 'events' = 'news', b = binding): AppError | null {
  try {
    decodeCursor(cursor, list, b, key);
    return null;
  } catch (e) {
    if (!(e instanceof AppError)) throw e;
    return e;
  }
}

describe('list cursors', () => {
  it('when a cursor is made, then it reads back to the same key, only for its list and binding', () => {
    const k = ['2024-03-04T14:00:00.123456', '6f9b8164-b21a-5207-ba7d-b9c261a7bec4'];
    const cursor = encodeCursor('news', binding, k);
    expect(CursorSchema.safeParse(cursor).success).toBe(true);
    expect(decodeCursor(cursor, 'news', binding, key)).toEqual(k);
    expect(refusal(cursor, 'events')?.details).toEqual({ cursor: ['was made for another list (news), not this one'] });
    expect(Object.keys(refusal(cursor, 'news', bindingOf(['other']))!.details)).toEqual(['cursor']);
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
      expect(Object.keys(refusal(encodeCursor('news', binding, bad))!.details), bad.join()).toEqual(['cursor']);
    }
  });

  it('when any text or any JSON payload is given as a cursor, then it is read or refused naming cursor, never another error', () => {
    const asCursor = (s: string) => Buffer.from(s, 'utf8').toString('base64url');
    const payload = fc.record(
      {
        v: fc.oneof(fc.constant(1), fc.anything()),
        r: fc.oneof(fc.constantFrom('news', 'events'), fc.string()),
        q: fc.oneof(fc.constant(binding), fc.string()),
        k: fc.anything(),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary' }),
          payload.map((p) => asCursor(JSON.stringify(p) ?? 'null')),
          fc.string({ unit: 'binary' }).map(asCursor),
        ),
        (cursor) => {
          const e = refusal(cursor);
          if (e) expect(Object.keys(e.details)).toEqual(['cursor']);
        },
      ),
      { seed: 20_261_127, numRuns: 2000 },
    );
  });
});
