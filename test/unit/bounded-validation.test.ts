import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { AppError } from '../../server/core/errors.ts';
import { oversizedJson } from '../../server/core/json-shape.ts';
import { oversizedParts, type Oversize } from '../../server/core/size-bounds.ts';
import { parse, refuseOversizedJson, refusalDetails, unstorableText } from '../../server/core/validate.ts';
import { errorBody } from '../../server/http/errors.ts';

// Bounded work for any request shape (issue 38, point 1): a value over its
// size bound is refused before zod walks it, an error names at most 20
// fields and counts the rest, and no error body passes 8 KB whatever the
// input. Each expectation is worked out from the schema and the value the
// case builds; "zod never sees it" is counted, not timed: each schema is
// entered through a step that counts its calls.

type Part = 'query' | 'params' | 'body';

/** The AppError parse throws for `value`. */
function refusal(schema: z.ZodType, value: unknown, part: Part = 'body'): AppError {
  try {
    parse(schema, value, part);
  } catch (e) {
    if (e instanceof AppError) return e;
    throw e;
  }
  throw new Error('the schema accepted the value');
}

/** `schema` entered through a preprocess step that counts how often zod ran it. */
function counted<S extends z.ZodType>(schema: S) {
  const calls = { n: 0 };
  return {
    calls,
    schema: z.preprocess((v) => {
      calls.n++;
      return v;
    }, schema),
  };
}

const OptionPrice = z.strictObject({
  spot: z.number().positive(),
  strike: z.number().positive(),
  expiryDays: z.number().min(1 / 1440),
  rate: z.number().min(-0.2).max(1),
  vol: z.number().positive().max(5),
  type: z.enum(['call', 'put']),
  dividendYield: z.number().min(-0.2).max(1).default(0),
});
const FIELDS = 'spot, strike, expiryDays, rate, vol, type, dividendYield';

const wideObject = (n: number, name = (i: number) => `k${i}`) => Object.fromEntries(Array.from({ length: n }, (_, i) => [name(i), i]));

describe('a value over its size bound is refused before zod walks it', () => {
  it('when a strict object holds 80,000 unknown fields, then one message on the object tells how many it had, the 7 it accepts and three unknown ones, and zod never runs', () => {
    const { schema, calls } = counted(OptionPrice);
    const err = refusal(schema, wideObject(80_000));
    expect(err.message).toBe('invalid body');
    expect(err.details).toEqual({ _: [`has 80000 fields; accepts at most 7: ${FIELDS}; unknown fields include "k0", "k1", "k2"`] });
    expect(calls.n).toBe(0);
  });

  it('when the wide object is a list item, then it is named by its path; the unknown names shown are those it holds, cut at 40 characters', () => {
    const schema = z.strictObject({ legs: z.array(z.strictObject({ action: z.enum(['buy', 'sell']), strike: z.number() })).max(8) });
    const leg = { action: 'buy', strike: 100, ...wideObject(30, (i) => `${i}-${'z'.repeat(50)}`) };
    const cut = (i: number) => `"${`${i}-${'z'.repeat(50)}`.slice(0, 40)}…" (${String(i).length + 51} characters)`;
    expect(refusal(schema, { legs: [{ action: 'sell', strike: 1 }, leg] }).details).toEqual({
      'legs.1': [`has 32 fields; accepts at most 2: action, strike; unknown fields include ${cut(0)}, ${cut(1)}, ${cut(2)}`],
    });
  });

  it('when a strict object has at most 20 fields more than it declares, then zod names each unknown field as before; one more and the object is refused whole', () => {
    // 27 unknown fields and none of the 7 declared, 6 of them required: 33 fields with a problem, 20 named.
    const err = refusal(OptionPrice, wideObject(27));
    expect(err.message).toBe('invalid body: 20 of 33 problems shown');
    expect(Object.keys(err.details)).toHaveLength(21);
    expect(err.details.spot).toEqual(['required (a number greater than 0)']);
    expect(err.details.k0).toEqual([`unknown field; accepted: ${FIELDS}`]);
    expect(err.details.k13).toEqual([`unknown field; accepted: ${FIELDS}`]);
    expect(err.details.k14).toBeUndefined();
    expect(err.details._).toEqual(['13 more problems not shown']);
    expect(refusal(OptionPrice, wideObject(28)).details).toEqual({
      _: [`has 28 fields; accepts at most 7: ${FIELDS}; unknown fields include "k0", "k1", "k2"`],
    });
  });

  it('when 1,000 unknown query parameters arrive (all that Node reads of 5,000), then the parameters are counted as at least 1,000', () => {
    const query = z.strictObject({ query: z.string().max(100).optional(), limit: z.string().optional() });
    const { schema, calls } = counted(query);
    expect(
      refusal(
        schema,
        wideObject(1_000, (i) => `p${i}`),
        'query',
      ).details,
    ).toEqual({
      _: ['has at least 1000 parameters; accepts at most 2: query, limit; unknown parameters include "p0", "p1", "p2"'],
    });
    expect(calls.n).toBe(0);
  });

  it('when a list is longer than its bound, then its bound and its length are told, as for a list one item too long, and zod never runs', () => {
    let items = 0;
    const legs = z
      .array(z.number().refine(() => ++items > 0))
      .min(1, 'at least one leg')
      .max(8, 'at most 8 legs');
    const { schema, calls } = counted(z.strictObject({ legs, spot: z.number() }));
    expect(refusal(schema, { legs: Array(100_000).fill(1), spot: 100 }).details).toEqual({
      legs: ['must list 1 to 8 items; received a list of 100000 items'],
    });
    expect(refusal(schema, { legs: Array(9).fill(1), spot: 100 }).details).toEqual({ legs: ['must list 1 to 8 items; received a list of 9 items'] });
    expect(calls.n).toBe(0);
    expect(items).toBe(0);
  });

  it('when text is longer than its bound, then its bound and its length are told with 40 of its characters, and neither zod nor its refinement runs', () => {
    let refined = 0;
    const name = z
      .string()
      .trim()
      .min(1)
      .max(200)
      .refine(() => ++refined > 0);
    const { schema, calls } = counted(z.strictObject({ name }));
    expect(refusal(schema, { name: 'x'.repeat(900_000) }).details).toEqual({
      name: [`must be 1 to 200 characters; received "${'x'.repeat(40)}…" (900000 characters)`],
    });
    expect(calls.n).toBe(0);
    expect(refined).toBe(0);
  });

  it('when text fits its bound as zod measures it (after trimming, in code points), then the pre-pass lets it through', () => {
    const schema = z.strictObject({ name: z.string().trim().min(1).max(200) });
    expect(parse(schema, { name: `   ${'x'.repeat(200)}   ` }, 'body')).toEqual({ name: 'x'.repeat(200) });
    // 150 emoji: 300 UTF-16 units, 150 code points.
    expect(parse(schema, { name: '😀'.repeat(150) }, 'body')).toEqual({ name: '😀'.repeat(150) });
    expect(refusal(schema, { name: '😀'.repeat(201) }).details.name).toEqual([`must be 1 to 200 characters; received "${'😀'.repeat(20)}…" (402 characters)`]);
  });

  it('when an upload row is that wide, then its refusal is keyed under the row, as any row field is', () => {
    expect(refusalDetails(OptionPrice, wideObject(80_000), 'row', 'rows[3]')).toEqual({
      'rows[3]': [`has 80000 fields; accepts at most 7: ${FIELDS}; unknown fields include "k0", "k1", "k2"`],
    });
  });
});

describe('a JSON body over its size is refused from its bytes, before JSON.parse builds it', () => {
  /** The AppError refuseOversizedJson throws for `text`, or null. */
  function jsonRefusal(schema: z.ZodType, text: string): AppError | null {
    try {
      refuseOversizedJson(schema, Buffer.from(text));
      return null;
    } catch (e) {
      if (e instanceof AppError) return e;
      throw e;
    }
  }

  it('when option-price is sent 80,000 unknown fields, then the bytes give the message parse gives, and JSON.parse never runs', () => {
    const text = JSON.stringify(wideObject(80_000));
    const expected = refusal(OptionPrice, JSON.parse(text));
    const jsonParse = vi.spyOn(JSON, 'parse');
    try {
      const err = jsonRefusal(OptionPrice, text);
      expect(jsonParse).not.toHaveBeenCalled();
      expect(err).toMatchObject({ code: 'invalid_request', message: expected.message, details: expected.details });
    } finally {
      jsonParse.mockRestore();
    }
  });

  it('when the text is cut off inside the 80,000 fields, then they are counted as far as they go and refused for their number', () => {
    const text = JSON.stringify(wideObject(80_000)).slice(0, -20);
    expect(jsonRefusal(OptionPrice, text)?.details._).toEqual([expect.stringMatching(/^has 7999\d fields; accepts at most 7: /)]);
  });

  it('when a field name holds escapes and the text is spread over lines, then names and counts are read as JSON.parse reads them', () => {
    const value = {
      legs: [
        { action: 'buy', strike: 1 },
        { action: 'sell', ...wideObject(25, (i) => `k"\\${i}\u00e9`) },
      ],
    };
    const schema = z.strictObject({ legs: z.array(z.strictObject({ action: z.enum(['buy', 'sell']), strike: z.number().optional() })).max(8) });
    expect(jsonRefusal(schema, JSON.stringify(value, null, 2))?.details).toEqual(refusal(schema, value).details);
  });

  it('when any body is generated over a schema of strict objects, records, bounded lists and free values, then the bytes and the parsed value give the same findings', () => {
    const Leg = z.strictObject({ action: z.string(), strike: z.number().optional() });
    const schema = z.strictObject({
      spot: z.number().optional(),
      legs: z.array(Leg).max(3).optional(),
      codes: z.record(z.string(), z.strictObject({ code: z.string() })).optional(),
      loose: z.object({ inner: z.array(z.number()).max(2).optional() }).optional(),
      free: z.unknown().optional(),
    });
    // Field counts around 2 + 20 (Leg's fields and the spare), list lengths around 3.
    const extra = (n: number) => fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 1 }), { minKeys: 0, maxKeys: n });
    const leg = fc.tuple(extra(26), fc.constantFrom('buy', 'sell')).map(([more, action]) => ({ ...more, action }));
    const body = fc.record(
      {
        spot: fc.double({ noNaN: true, noDefaultInfinity: true }),
        legs: fc.array(leg, { maxLength: 5 }),
        codes: fc.dictionary(
          fc.string({ maxLength: 3 }),
          fc.tuple(extra(24), fc.string()).map(([more, code]) => ({ ...more, code })),
          { maxKeys: 3 },
        ),
        loose: fc.record({ inner: fc.array(fc.integer(), { maxLength: 4 }), other: fc.jsonValue({ maxDepth: 2 }) }),
        free: fc.jsonValue({ maxDepth: 3 }),
      },
      { requiredKeys: [] },
    );
    let refused = 0;
    // A length issue is compared by what it says, not by the list it was raised on (the bytes give a list of holes).
    const words = (found: Oversize[]) =>
      JSON.stringify(
        found.map((o) => (o.kind === 'length' ? { ...o, issue: { code: o.issue.code, maximum: (o.issue as { maximum?: unknown }).maximum } } : o)),
      );
    fc.assert(
      fc.property(fc.tuple(body, extra(30)), ([value, more]) => {
        const sent = { ...more, ...value };
        const text = JSON.stringify(sent);
        const parsed = JSON.parse(text) as unknown;
        const fromValue = [...oversizedParts(schema, parsed, 20)];
        const fromBytes = oversizedJson(schema, Buffer.from(text), 20);
        expect(words(fromBytes)).toBe(words(fromValue));
        if (fromValue.length) {
          refused++;
          expect(jsonRefusal(schema, text)?.details).toEqual(refusal(schema, parsed).details);
        }
      }),
      { seed: 38, numRuns: 2_000 },
    );
    // Not vacuous: a real share of the bodies were over a size.
    expect(refused).toBeGreaterThan(200);
  });
});

describe('at most 20 fields are named', () => {
  it('when 50,000 values of a record are refused, then the first 20 are named, and the message and "_" count the rest', () => {
    const schema = z.strictObject({ codes: z.record(z.string(), z.number()) });
    const codes = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`c${i}`, 'x']));
    const err = refusal(schema, { codes });
    expect(err.message).toBe('invalid body: 20 of 50000 problems shown');
    expect(Object.keys(err.details)).toEqual([...Array.from({ length: 20 }, (_, i) => `codes.c${i}`), '_']);
    expect(err.details['codes.c0']).toEqual(['must be a number; received "x"']);
    expect(err.details._).toEqual(['49980 more problems not shown']);
  });

  it('when unknown fields have names of 100,000 characters, then each is keyed by its first 40 characters and its length', () => {
    const name = (i: number) => `${i}${'a'.repeat(100_000)}`;
    const err = refusal(OptionPrice, { ...wideObject(9, name), spot: 1, strike: 1, expiryDays: 1, rate: 0, vol: 0.2, type: 'call' });
    expect(Object.keys(err.details)).toEqual(Array.from({ length: 9 }, (_, i) => `${name(i).slice(0, 40)}… (100001 characters)`));
    expect(Buffer.byteLength(JSON.stringify(err.details))).toBeLessThan(2_000);
  });

  it('when the cut at 40 characters falls before a word and the text ends in punctuation, then the text is quoted cut, not a fault', () => {
    const schema = z.strictObject({ right: z.enum(['call', 'put']) });
    const text = `${'x'.repeat(39)} abc!`;
    expect(refusal(schema, { right: text }, 'query').details).toEqual({
      right: [`must be one of: call, put; received "${text.slice(0, 40)}…" (44 characters)`],
    });
  });

  it('when a key holds NUL in 80,000 fields of one object, then the object is told it once', () => {
    const body = Object.fromEntries(Array.from({ length: 80_000 }, (_, i) => [`k${i}\u0000`, 1]));
    expect(unstorableText(body)).toEqual({ _: ['a key contains NUL (U+0000)'] });
  });
});

describe('the error body', () => {
  const BASE = 'https://mds.example';
  const bytes = (err: AppError) => Buffer.byteLength(JSON.stringify(errorBody(err, BASE)));

  it('when details hold 1,000 fields of 1,000-character names, each with five messages of 2,000 characters, then the body is at most 8 KB and says how much it left out', () => {
    const details = Object.fromEntries(Array.from({ length: 1_000 }, (_, i) => [`${i}${'f'.repeat(999)}`, Array(5).fill(`${i} ${'m'.repeat(1_999)}`)]));
    const err = new AppError('invalid_request', `invalid body ${'w'.repeat(20_000)}`, details);
    expect(bytes(err)).toBeLessThanOrEqual(8 * 1024);
    const body = errorBody(err, BASE);
    expect(body.error.details._).toEqual([expect.stringMatching(/^\d+ more messages not shown; an error answer is at most 8192 bytes$/)]);
    const shown = Object.entries(body.error.details).filter(([k]) => k !== '_');
    const left = Number(/^(\d+)/.exec(body.error.details._[0])![1]);
    expect(shown.reduce((n, [, m]) => n + m.length, 0) + left).toBe(5_000);
  });

  it('when an error is ordinary, then its body is as it was: every field and message whole', () => {
    const details = { rate: ['must be a number between -0.2 and 1; received 2'], legs: ['must list 1 to 8 items; received a list of 9 items'] };
    expect(errorBody(new AppError('invalid_request', 'invalid body', details), BASE)).toEqual({
      error: { code: 'invalid_request', message: 'invalid body', docsUrl: `${BASE}/docs#invalid_request`, details },
    });
  });
});
