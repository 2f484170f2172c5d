import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError } from '../../server/core/errors.ts';
import { hasNestedValue, MAX_DEPTH, mayHoldUnstorableText, parse, unstorableText } from '../../server/core/validate.ts';

// What PostgreSQL cannot store, without a database: a string survives a UTF-8
// round trip exactly when it has no unpaired surrogate, and text never holds NUL.
const storable = (s: string) => !s.includes('\0') && Buffer.from(s, 'utf8').toString('utf8') === s;

const nested = (depth: number): unknown => JSON.parse(`${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`);

describe('unstorable text: refused at the input boundary, by field', () => {
  it('when any string is checked, then it is refused exactly when PostgreSQL could not store it, and the quick test never misses one', () => {
    const units = fc.constantFrom('\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '\ud83d\ude00', 'a', 'é', '€', '\\');
    let refused = 0;
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.string({ unit: units, maxLength: 6 })), (s) => {
        const problems = unstorableText(s);
        expect(problems === null, JSON.stringify(s)).toBe(storable(s));
        if (problems) {
          refused++;
          expect(mayHoldUnstorableText(s)).toBe(true);
        }
      }),
      { seed: 11, numRuns: 5_000 },
    );
    // Not vacuous: a real share of the strings were unstorable.
    expect(refused).toBeGreaterThan(1_000);
  });

  it('when NUL or an unpaired surrogate sits anywhere in a value, then each is named by its dotted path, keys included', () => {
    const value = {
      query: 'a\u0000b',
      legs: [{ type: 'call' }, { type: 'x\ud800' }],
      brokerCodes: { 'ib\u0000kr': 'fine', ok: '\udc00' },
      emoji: '\ud83d\ude00',
    };
    expect(unstorableText(value)).toEqual({
      query: ['must not contain NUL (U+0000)'],
      'legs.1.type': ['must not contain an unpaired UTF-16 surrogate'],
      brokerCodes: ['a key contains NUL (U+0000)'],
      'brokerCodes.ok': ['must not contain an unpaired UTF-16 surrogate'],
    });
    expect(unstorableText('\u0000')).toEqual({ _: ['must not contain NUL (U+0000)'] });
    expect(unstorableText({ a: ['x', 1, null, true, { b: 'y' }] })).toBeNull();
  });

  it('when a field is named __proto__, then it is reported like any other field', () => {
    expect(unstorableText(JSON.parse('{"__proto__":"\\u0000"}'))).toEqual({ ['__proto__']: ['must not contain NUL (U+0000)'] });
  });

  it('when values nest deeper than MAX_DEPTH, then the container that crosses it is named; MAX_DEPTH itself is accepted, and 100,000 levels do not overflow the scan', () => {
    expect(unstorableText(nested(MAX_DEPTH))).toBeNull();
    expect(unstorableText(nested(MAX_DEPTH + 1))).toEqual({
      [Array(MAX_DEPTH).fill('a').join('.')]: [`must not be nested more than ${MAX_DEPTH} levels deep`],
    });
    expect(Object.keys(unstorableText(nested(100_000))!)).toHaveLength(1);
  });

  it('when a hostile body holds thousands of bad fields, then at most ten are reported', () => {
    const body = Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`f${i}`, '\u0000']));
    expect(Object.keys(unstorableText(body)!)).toHaveLength(10);
  });

  it('when parse meets unstorable text, then it refuses with invalid_request naming the field before the schema runs', () => {
    let ran = false;
    const schema = z.object({ name: z.string() }).refine(() => (ran = true));
    const err = (() => {
      try {
        parse(schema, { name: 'key\u0000' }, 'body');
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'invalid_request', status: 400, message: 'invalid body', details: { name: ['must not contain NUL (U+0000)'] } });
    expect(ran).toBe(false);
    expect(parse(schema, { name: 'key' }, 'body')).toEqual({ name: 'key' });
  });

  it('when a row holds an object or array, then hasNestedValue says so; a flat row of text, numbers and nulls has none', () => {
    expect(hasNestedValue({ a: 'x', b: 1, c: null, d: true })).toBe(false);
    expect(hasNestedValue({ a: 'x', params: {} })).toBe(true);
    expect(hasNestedValue({ symbols: [] })).toBe(true);
  });
});
