import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError } from '../../server/core/errors.ts';
import { integerParam } from '../../server/core/params.ts';
import { parse, refusalDetails } from '../../server/core/validate.ts';
import { BooleanValue, PositiveNumber } from '../../server/ingest/fields.ts';

// Every kind of issue zod gives on our schemas, worded as docs/api.md
// ("Errors") states the rule: what the field must be (its accepted values or
// range, in the field's unit) and what was received, in words. Each
// expectation is written from the schema the case declares.

type Part = 'query' | 'params' | 'body';

/** The `details` of the 400 that parse gives `value`. */
function detailsOf(schema: z.ZodType, value: unknown, part: Part = 'body'): Record<string, string[]> {
  try {
    parse(schema, value, part);
  } catch (e) {
    if (e instanceof AppError) return e.details;
    throw e;
  }
  throw new Error(`the schema accepted ${JSON.stringify(value)}`);
}

const Right = z.enum(['call', 'put']);

describe('the accepted values and the value received, by kind of issue', () => {
  it('when a value is outside an enumeration (invalid_value), then the message lists the values and quotes the one received', () => {
    expect(detailsOf(z.strictObject({ right: Right }), { right: 'calls' }, 'query')).toEqual({ right: ['must be one of: call, put; received "calls"'] });
    expect(detailsOf(z.strictObject({ flag: z.enum(['true', 'false']) }), { flag: 'yes' }, 'query')).toEqual({
      flag: ['must be true or false; received "yes"'],
    });
    expect(detailsOf(z.strictObject({ model: z.literal('bsm') }), { model: 'bs' })).toEqual({ model: ['must be "bsm"; received "bs"'] });
  });

  it('when a query parameter is given twice, then it must be given once, as what it accepts, and the two values are counted', () => {
    expect(detailsOf(z.strictObject({ right: Right }), { right: ['call', 'put'] }, 'query')).toEqual({
      right: ['must be given once, as one of: call, put; received 2 values: the parameter was given more than once'],
    });
    expect(detailsOf(z.strictObject({ query: z.string().min(1).max(100) }), { query: ['AAPL', 'MSFT', 'IBM'] }, 'query')).toEqual({
      query: ['must be given once, as text of 1 to 100 characters; received 3 values: the parameter was given more than once'],
    });
  });

  it('when a value has the wrong type (invalid_type), then the message says what the field takes and what kind of value came', () => {
    const schema = z.strictObject({ name: z.string().min(1).max(10), spot: z.number().positive() });
    expect(detailsOf(schema, { name: 5, spot: 'ten' })).toEqual({
      name: ['must be text of 1 to 10 characters; received the number 5'],
      spot: ['must be a number greater than 0; received "ten"'],
    });
    expect(detailsOf(schema, [])).toEqual({ _: ['must be an object with the fields name, spot; received an empty list'] });
    expect(detailsOf(z.strictObject({ at: z.boolean() }), { at: null })).toEqual({ at: ['must be true or false; received null'] });
  });

  it('when text is too short or too long (too_small, too_big), then the message gives the length range and the length received', () => {
    const schema = z.strictObject({ source: z.string().trim().min(1, 'must not be empty').max(5) });
    expect(detailsOf(schema, { source: '' }, 'query')).toEqual({ source: ['must be 1 to 5 characters; received an empty string'] });
    expect(detailsOf(schema, { source: 'abcdef' }, 'query')).toEqual({ source: ['must be 1 to 5 characters; received "abcdef"'] });
    expect(detailsOf(schema, { source: '   ' }, 'query')).toEqual({ source: ['must be 1 to 5 characters; received only whitespace (3 characters)'] });
    // A length check also sees a list; where the type is wrong, only the type is told.
    expect(detailsOf(z.strictObject({ code: z.string().min(12) }), { code: [] })).toEqual({
      code: ['must be text of at least 12 characters; received an empty list'],
    });
  });

  it('when a list is too short or too long, then the message gives the number of items and those received', () => {
    const schema = z.strictObject({ legs: z.array(z.string()).min(1, 'at least one leg').max(8) });
    expect(detailsOf(schema, { legs: [] })).toEqual({ legs: ['must list 1 to 8 items; received an empty list'] });
    expect(detailsOf(schema, { legs: Array(9).fill('a') })).toEqual({ legs: ['must list 1 to 8 items; received a list of 9 items'] });
  });

  it('when a number is out of range (too_small, too_big), then the message gives the whole range, in the unit its name carries', () => {
    const schema = z.strictObject({
      vol: z.number().positive().max(5, 'a decimal: 5 is 500%'),
      lookbackDays: z.coerce.number().int().min(20).max(504),
      expiryDays: z
        .number()
        .min(1 / 1440)
        .max(3650),
      validHours: z.number().int().min(1).max(720).optional(),
    });
    expect(detailsOf(schema, { vol: 6, lookbackDays: 505, expiryDays: 0.0001, validHours: 0 })).toEqual({
      // The schema's own explanation follows the range.
      vol: ['must be a number greater than 0 and at most 5; received 6', 'a decimal: 5 is 500%'],
      lookbackDays: ['must be a whole number of days between 20 and 504; received 505 days'],
      // 1/1440 of a day is one minute; 0.0001 days is 8.64 seconds.
      expiryDays: ['must be a number of days between 1/1440 (1 minute) and 3650; received 0.0001 days (8.64 seconds)'],
      validHours: ['must be a whole number of hours between 1 and 720; received 0 hours'],
    });
  });

  it('when a bounded query number is not a number, not an integer or empty, then the same range is told with the text received', () => {
    const schema = z.strictObject({ limit: integerParam(1, 500).optional(), maxAge: z.coerce.number().int().min(0).optional() });
    expect(detailsOf(schema, { limit: 'ten' }, 'query')).toEqual({ limit: ['must be an integer between 1 and 500; received "ten"'] });
    expect(detailsOf(schema, { limit: '12.5' }, 'query')).toEqual({ limit: ['must be an integer between 1 and 500; received 12.5'] });
    expect(detailsOf(schema, { limit: '' }, 'query')).toEqual({ limit: ['must be an integer between 1 and 500; received an empty string'] });
    expect(detailsOf(schema, { maxAge: '-1' }, 'query')).toEqual({ maxAge: ['must be an integer of at least 0; received -1'] });
    // The safe-integer bound of an integer is named only when it is the one broken.
    expect(detailsOf(schema, { maxAge: '1e20' }, 'query')).toEqual({ maxAge: [`must be an integer between 0 and ${Number.MAX_SAFE_INTEGER}; received 1e20`] });
  });

  it('when a number is not a multiple it must be (not_multiple_of), then the divisor and the number are told', () => {
    expect(detailsOf(z.strictObject({ lot: z.number().multipleOf(5) }), { lot: 7 })).toEqual({ lot: ['must be a multiple of 5; received 7'] });
  });

  it('when text breaks a format (invalid_format), then the schema’s words for the format, or the format itself, come with the text', () => {
    const schema = z.strictObject({ id: z.string().uuid('must be a UUID'), currency: z.string().regex(/^[A-Z]{3}$/), plain: z.uuid().optional() });
    expect(detailsOf(schema, { id: 'abc', currency: 'usd', plain: 'x' })).toEqual({
      id: ['must be a UUID; received "abc"'],
      currency: ['must be text matching /^[A-Z]{3}$/; received "usd"'],
      plain: ['must be a UUID; received "x"'],
    });
  });

  it('when a format’s own message says after its rule how to find a value, then the rule comes with the text received and the how as a message of its own; a missing field names the rule alone', () => {
    const schema = z.strictObject({ id: z.string().uuid('must be a UUID; look it up with GET /things?query=name') });
    expect(detailsOf(schema, { id: 'MSFT' }, 'query')).toEqual({ id: ['must be a UUID; received "MSFT"', 'look it up with GET /things?query=name'] });
    expect(detailsOf(schema, {}, 'query')).toEqual({ id: ['required (a UUID)'] });
  });

  it('when a refinement fails (custom), then its own message comes with the value received; one without a message still tells the value', () => {
    const schema = z.strictObject({ to: z.string().refine((s) => s >= '2020', 'must be 2020 or later'), odd: z.number().refine((n) => n % 2 === 1) });
    expect(detailsOf(schema, { to: '2019', odd: 2 })).toEqual({ to: ['must be 2020 or later; received "2019"'], odd: ['is not accepted; received 2'] });
    // A message that already says what was received is not told it twice.
    const said = z.strictObject({ a: z.string().refine(() => false, 'received x, which is not y') });
    expect(detailsOf(said, { a: 'x' })).toEqual({ a: ['received x, which is not y'] });
  });

  it('when no alternative of a union matches (invalid_union), then the alternatives are named', () => {
    expect(detailsOf(z.strictObject({ stale: BooleanValue }), { stale: 'yes' })).toEqual({ stale: ['must be true or false; received "yes"'] });
    const either = z.strictObject({ at: z.union([z.string().regex(/^\d{4}$/, 'must be a year yyyy'), z.number().int()]) });
    expect(detailsOf(either, { at: true })).toEqual({ at: ['must be a year yyyy or an integer; received the boolean true'] });
  });

  it('when a record key is refused (invalid_key), then the key is quoted with what keys must be', () => {
    expect(detailsOf(z.strictObject({ codes: z.record(z.string().min(2), z.string()) }), { codes: { a: 'x' } })).toEqual({
      'codes.a': ['each key must be text of at least 2 characters; received the key "a"'],
    });
  });

  it('when a field is unknown (unrecognized_keys), then it is named by itself with the fields accepted', () => {
    expect(detailsOf(z.strictObject({ a: z.string().optional(), b: z.string().optional() }), { c: '1' }, 'query')).toEqual({
      c: ['unknown parameter; accepted: a, b'],
    });
  });

  it('when a field is absent, then it is required, with what it accepts', () => {
    const schema = z.strictObject({ type: Right, vol: z.number().positive().max(5), note: z.string().nullable(), price: PositiveNumber });
    expect(detailsOf(schema, {})).toEqual({
      type: ['required (one of: call, put)'],
      vol: ['required (a number greater than 0 and at most 5)'],
      note: ['required (text or null)'],
      price: ['required (a number greater than 0)'],
    });
  });
});

describe('what is never echoed', () => {
  it('when a credential field is refused, then its length is told, never its text', () => {
    const schema = z.strictObject({ password: z.string().min(12).max(200), token: z.string().uuid('must be a UUID') });
    expect(detailsOf(schema, { password: 'hunter2', token: 'hunter2' })).toEqual({
      password: ['must be 12 to 200 characters; received 7 characters (not shown)'],
      token: ['must be a UUID; received 7 characters (not shown)'],
    });
    expect(detailsOf(schema, { password: 123456789012, token: 'x'.repeat(0) })).toMatchObject({
      password: ['must be text of 12 to 200 characters; received a number (not shown)'],
    });
  });

  it('when a path segment is refused, then its length is told, not its text (a client may paste a password into a path)', () => {
    expect(detailsOf(z.strictObject({ id: z.string().uuid('must be a UUID') }), { id: 'correct horse' }, 'params')).toEqual({
      id: ['must be a UUID; received a path segment of 13 characters (not shown)'],
    });
  });

  it('when a received text is longer than 40 characters, then 40 are shown with its length; a word cut there that could be a secret is dropped whole', () => {
    const schema = z.strictObject({ q: z.enum(['a', 'b']) });
    expect(detailsOf(schema, { q: 'x'.repeat(200) }, 'query')).toEqual({ q: [`must be one of: a, b; received "${'x'.repeat(40)}…" (200 characters)`] });
    // A 43-character word with both cases is how the service's keys and tokens look (logger.ts).
    const secret = 'aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6kM9nP2r';
    expect(detailsOf(schema, { q: `key ${secret}` }, 'query')).toEqual({ q: ['must be one of: a, b; received "key …" (47 characters)'] });
    expect(detailsOf(schema, { q: `key ${secret.toLowerCase()}` }, 'query')).toEqual({
      q: [`must be one of: a, b; received "key ${secret.toLowerCase().slice(0, 36)}…" (47 characters)`],
    });
  });
});

describe('upload rows', () => {
  it('when a row field is refused, then it is keyed under the row and worded as a request field is, numbers from text or JSON alike', () => {
    const row = z.strictObject({ closePrice: PositiveNumber, right: Right });
    expect(refusalDetails(row, { closePrice: -1, right: 'calls' }, 'row', 'rows[3]')).toEqual({
      'rows[3].closePrice': ['must be a number greater than 0; received -1'],
      'rows[3].right': ['must be one of: call, put; received "calls"'],
    });
    // A CSV cell is text: numeric text is told as the number, other text quoted; 1e999 is numeric but not finite.
    expect(refusalDetails(row, { closePrice: '-1', right: 'put' }, 'row', 'rows[0]')).toEqual({
      'rows[0].closePrice': ['must be a number greater than 0; received -1'],
    });
    expect(refusalDetails(row, { closePrice: 'abc', right: 'put' }, 'row', 'rows[0]')).toEqual({
      'rows[0].closePrice': ['must be a number greater than 0; received "abc"'],
    });
    expect(refusalDetails(row, { closePrice: '1e999', right: 'put' }, 'row', 'rows[0]')).toEqual({
      'rows[0].closePrice': ['must be a finite number greater than 0; received 1e999'],
    });
    expect(refusalDetails(row, { closePrice: 1, right: 'put' }, 'row', 'rows[0]')).toBeNull();
  });
});
