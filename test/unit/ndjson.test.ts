import { describe, expect, it } from 'vitest';
import { MAX_RECORD_CHARS } from '../../server/ingest/csv.ts';
import { ndjsonBatches } from '../../server/ingest/ndjson.ts';
import { examinedWithin, inChunks } from '../fixtures/parser-work.ts';

const CHUNK = 64 * 1024;

async function parseAll(chunks: Iterable<Buffer | string> | AsyncIterable<Buffer | string>) {
  const out = [];
  for await (const batch of ndjsonBatches(
    (async function* () {
      yield* chunks;
    })(),
  ))
    out.push(...batch);
  return out;
}

describe('NDJSON ingest parser', () => {
  it('when lines are blank or whitespace, end in CRLF, or the last has no LF, then each other line is one row', async () => {
    expect(await parseAll(['{"a":1}\r\n\n  \r\n[2]\n"three"\n\n4'])).toEqual([{ a: 1 }, [2], 'three', 4]);
  });

  it('when a line is not JSON, then 400 names its row, counting only non-blank lines', async () => {
    await expect(parseAll(['1\n\n2\n\n{"a":\n3\n'])).rejects.toMatchObject({
      code: 'invalid_request',
      message: 'row 2 is not valid JSON',
      details: { 'rows[2]': ['malformed JSON line'] },
    });
  });

  it('when the body is cut at any byte, even inside a UTF-8 character or between CR and LF, then the rows are the same', async () => {
    const text = '{"name":"€uro","note":"line\\nbreak"}\r\n\n["😀",""]\n  \n"ü"\r\n7';
    const expected = [{ name: '€uro', note: 'line\nbreak' }, ['😀', ''], 'ü', 7];
    const bytes = Buffer.from(text);
    for (let cut = 0; cut <= bytes.length; cut++) {
      expect(await parseAll([bytes.subarray(0, cut), bytes.subarray(cut)])).toEqual(expected);
    }
    expect(await parseAll(inChunks(text, 1))).toEqual(expected);
  });

  it('when a line just under the limit arrives in 1 KiB chunks, then each character is examined a bounded number of times, not again on every chunk', async () => {
    const note = 'x'.repeat(MAX_RECORD_CHARS - 20);
    const text = `1\n{"note":"${note}"}\n2\n`;
    const rows = await examinedWithin(4 * text.length, () => parseAll(inChunks(text, 1024)));
    expect(rows).toEqual([1, { note }, 2]);
  });
});

describe('NDJSON line length limit', () => {
  // A line of JSON `length` characters long: {"x":"…"}
  const jsonLine = (length: number) => `{"x":"${'y'.repeat(length - 8)}"}`;

  for (const [ending, eol] of [
    ['LF', '\n'],
    ['CRLF', '\r\n'],
  ]) {
    it(`when a line ending in ${ending} is exactly MAX_RECORD_CHARS long, then it is accepted; when one character longer, then 400 names its row`, async () => {
      const body = (length: number) => `0${eol}${eol}${jsonLine(length)}${eol}2${eol}`;
      for (const size of [CHUNK, 1000, Infinity]) {
        expect(await parseAll(inChunks(body(MAX_RECORD_CHARS), size))).toEqual([0, { x: 'y'.repeat(MAX_RECORD_CHARS - 8) }, 2]);
        await expect(parseAll(inChunks(body(MAX_RECORD_CHARS + 1), size))).rejects.toMatchObject({
          code: 'invalid_request',
          message: `row 1 is longer than ${MAX_RECORD_CHARS} characters`,
          details: { 'rows[1]': [`line longer than ${MAX_RECORD_CHARS} characters`] },
        });
      }
    });
  }

  it('when one line of 40 MB arrives in 64 KiB chunks, then 400 names its row after reading no more than the limit', async () => {
    const chunksForLimit = Math.ceil(MAX_RECORD_CHARS / CHUNK) + 1;
    const fill = Buffer.alloc(CHUNK, 'x');
    let pulled = 0;
    // Past twice the chunks the limit needs it throws, so a parser that reads on fails at once on that error instead of grinding through 40 MB.
    async function* body() {
      for (let sent = 0; sent < 40e6; sent += CHUNK) {
        if (++pulled > 2 * chunksForLimit) throw new Error(`the parser pulled ${pulled} chunks of a body it should have refused`);
        yield pulled === 1 ? Buffer.concat([Buffer.from('{"a":1}\n{"note":"'), fill]).subarray(0, CHUNK) : fill;
      }
    }
    await expect(parseAll(body())).rejects.toMatchObject({
      code: 'invalid_request',
      details: { 'rows[1]': [`line longer than ${MAX_RECORD_CHARS} characters`] },
    });
    expect(pulled).toBeLessThanOrEqual(chunksForLimit);
  });
});

describe('NDJSON runs of blank lines', () => {
  // A run counts every character of its lines, whitespace and LFs, toward MAX_RECORD_CHARS, as one line's would.
  for (const [kind, blank] of [
    ['empty', '\n'],
    ['CRLF', '\r\n'],
    ['whitespace', ' \t \r\n'],
  ]) {
    it(`when ${kind} blank lines hold at most MAX_RECORD_CHARS characters between rows, then they are read; past it, then 400 names the run's lines`, async () => {
      const lines = Math.floor(MAX_RECORD_CHARS / blank.length);
      // Row 0 is line 1, so the run starts on line 2.
      const body = (n: number) => `0\n${blank.repeat(n)}1\n${blank.repeat(lines)}2\n`;
      for (const size of [CHUNK, 1000, 7, Infinity]) {
        expect(await parseAll(inChunks(body(lines), size)), `${size}`).toEqual([0, 1, 2]);
        await expect(parseAll(inChunks(body(lines + 1), size)), `${size}`).rejects.toMatchObject({
          code: 'invalid_request',
          details: { body: [`lines 2 to ${2 + lines} are blank: a run of blank lines may hold at most ${MAX_RECORD_CHARS} characters, as a line may`] },
        });
      }
    });
  }
});
