import { amountWords, plural, type NumberUnit } from './params.ts';

/** The part of a request a value came from: a row is one record of an upload. */
export type Part = 'query' | 'params' | 'body' | 'row';

// The most of a received text a message shows, enough to recognise it. A
// longer text is cut there, and a word the cut falls in is dropped whole
// when it could be a secret: the service's keys, admin tokens and session
// secrets are words of 43 characters with upper- and lower-case letters, or
// longer once percent-encoded (logger.ts). So a secret is never shown in
// part; one shown whole is redacted in the error body (http/errors.ts).
export const MAX_SHOWN_CHARS = 40;
const SECRET_LENGTH = 43;

// Fields whose value is a credential: its length is told, never its text.
const SECRET_FIELD = /password|passphrase|secret|token|csrf|apikey|authorization|^confirm$|^key$/i;

const WORD_CHAR = /[A-Za-z0-9_%-]/;

/** Where a value was received, for the words that tell it. */
export interface Receiving {
  part: Part;
  /** The field's name: the last name in its path. */
  field?: string;
  /** The field takes a number: a number is told as itself (not "the number 5"), and so is numeric text outside a JSON body. */
  numeric: boolean;
  unit?: NumberUnit;
}

/**
 * The first `max` characters of `text`, less a word the cut falls in that
 * could be a secret (see MAX_SHOWN_CHARS), and less half of a surrogate pair.
 */
function cutAt(text: string, max: number): string {
  let cut = text.slice(0, max);
  if (WORD_CHAR.test(text[max])) {
    const start = cut.search(/[A-Za-z0-9_%-]+$/);
    if (start >= 0) {
      // The whole word, past the cut too; it starts at `start`, where the search found a word character.
      const word = /^[A-Za-z0-9_%-]+/.exec(text.slice(start))?.[0] ?? '';
      if (word.length >= SECRET_LENGTH && (word.includes('%') || (/[A-Z]/.test(word) && /[a-z]/.test(word)))) cut = cut.slice(0, start);
    }
  }
  // Half of a surrogate pair is not shown.
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return cut;
}

/** `text` quoted as JSON quotes it, cut to MAX_SHOWN_CHARS (see there) with "…" and its length. */
export function quoted(text: string): string {
  if (text.length <= MAX_SHOWN_CHARS) return JSON.stringify(text);
  return `${JSON.stringify(cutAt(text, MAX_SHOWN_CHARS)).slice(0, -1)}…" (${text.length} characters)`;
}

/**
 * `text` whole when it has at most `max` characters, else cut there as
 * `quoted` cuts (no secret in part), with "…" and its length. For what an
 * answer shows unquoted: a field's name as a client sent it (MAX_SHOWN_CHARS),
 * a message or a `details` key at the error body's limits (http/errors.ts).
 */
export function clipped(text: string, max = MAX_SHOWN_CHARS): string {
  return text.length <= max ? text : `${cutAt(text, max)}… (${text.length} characters)`;
}

const NUMERIC_TEXT = /^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/;

/**
 * What was received, in words: `"calls"`, `an empty string`, `501`,
 * `0.0001 days (8.64 seconds)`, `the number 5` (where text is expected), `a
 * list of 2 items`, `an empty object`. A credential's text is never shown,
 * nor a path segment's (a client may have pasted a password into the path):
 * only their length.
 */
export function receivedWords(value: unknown, at: Receiving): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  const secret = at.field !== undefined && SECRET_FIELD.test(at.field);
  if (typeof value === 'string') {
    if (value === '') return 'an empty string';
    if (at.part === 'params') return `a path segment of ${plural(value.length, 'character')} (not shown)`;
    if (secret) return `${plural(value.length, 'character')} (not shown)`;
    if (value.trim() === '') return `only whitespace (${plural(value.length, 'character')})`;
    if (at.numeric && at.part !== 'body' && NUMERIC_TEXT.test(value) && value.length <= MAX_SHOWN_CHARS)
      return amountWords(value.trim(), Number(value), at.unit);
    return quoted(value);
  }
  if (secret && typeof value !== 'object') return `a ${typeof value} (not shown)`;
  if (typeof value === 'number') return at.numeric ? amountWords(String(value), value, at.unit) : `the number ${value}`;
  if (typeof value === 'boolean') return `the boolean ${value}`;
  if (Array.isArray(value)) return value.length === 0 ? 'an empty list' : `a list of ${plural(value.length, 'item')}`;
  if (typeof value === 'object') return Object.keys(value).length === 0 ? 'an empty object' : 'an object';
  return `a ${typeof value}`;
}
