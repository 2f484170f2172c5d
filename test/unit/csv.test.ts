import { describe, expect, it } from 'vitest';
import { examinedWithin, inChunks } from '../fixtures/parser-work.ts';
import { MAX_RECORD_CHARS, parseCsvBatches } from '../../server/ingest/csv.ts';

async function parse(...chunks: string[]) {
  const out = [];
  for await (const batch of parseCsvBatches(
    (async function* () {
      yield* chunks.map((c) => Buffer.from(c));
    })(),
  ))
    out.push(...batch);
  return out;
}

describe('CSV ingest parser', () => {
  it('when fields are quoted, then commas, doubled quotes and newlines inside them are kept', async () => {
    expect(await parse('a,b,c\n"x, ""y""",plain,"multi\nline"\n')).toEqual([{ a: 'x, "y"', b: 'plain', c: 'multi\nline' }]);
  });

  it('when a cell is empty and unquoted, then it is null (absent), while a quoted empty cell is an empty string', async () => {
    expect(await parse('a,b,c\n,"",3\n')).toEqual([{ a: null, b: '', c: '3' }]);
  });

  it('when records, quotes and escapes straddle chunk boundaries, then the result is the same as one chunk', async () => {
    const text = '\ufeffid,name\r\n1,"Say ""hi"", then, go"\r\n2,two\r\n';
    const whole = await parse(text);
    expect(whole).toEqual([
      { id: '1', name: 'Say "hi", then, go' },
      { id: '2', name: 'two' },
    ]);
    for (let cut = 1; cut < text.length; cut++) expect(await parse(text.slice(0, cut), text.slice(cut))).toEqual(whole);
  });

  it('when plain and quoted records alternate and the input is cut anywhere, even inside a UTF-8 character, then the result is the same', async () => {
    const text = 'a,b,c\r\n1,,"x\r\ny"\r\n2,€uro,3\r\n"q""",r,"s"\n4,5,6';
    const expected = [
      { a: '1', b: null, c: 'x\r\ny' },
      { a: '2', b: '€uro', c: '3' },
      { a: 'q"', b: 'r', c: 's' },
      { a: '4', b: '5', c: '6' },
    ];
    const bytes = Buffer.from(text);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const out = [];
      for await (const batch of parseCsvBatches(
        (async function* () {
          yield bytes.subarray(0, cut);
          yield bytes.subarray(cut);
        })(),
      ))
        out.push(...batch);
      expect(out).toEqual(expected);
    }
  });

  it('when a bad record follows a quoted field spanning lines, then the error names its physical line', async () => {
    await expect(parse('a,b\n"1\n2",x\n3\n')).rejects.toMatchObject({ details: { body: ['line 4: expected 2 fields, found 1'] } });
  });

  it('when the body ends inside a UTF-8 character, then 400 says it is not UTF-8', async () => {
    const batches = parseCsvBatches(
      (async function* () {
        yield Buffer.from('a\n');
        yield Buffer.from([0xe2, 0x82]);
      })(),
    );
    await expect(
      (async () => {
        for await (const _ of batches);
      })(),
    ).rejects.toMatchObject({ code: 'invalid_request', details: { body: ['line 2: the body is not valid UTF-8'] } });
  });

  it('when blank lines or a missing final newline occur, then records are still read', async () => {
    expect(await parse('a,b\n\n1,2\n\n3,4')).toEqual([
      { a: '1', b: '2' },
      { a: '3', b: '4' },
    ]);
  });

  it('when a row has the wrong number of fields, a quote is unclosed, or text follows a closing quote, then 400 names the line', async () => {
    await expect(parse('a,b\n1,2,3\n')).rejects.toMatchObject({ code: 'invalid_request', details: { body: ['line 2: expected 2 fields, found 3'] } });
    await expect(parse('a,b\n1,"open\n')).rejects.toMatchObject({ code: 'invalid_request', details: { body: [expect.stringMatching(/^line \d+: /)] } });
    for (const body of ['a,b\n"x"y,2\n', 'a,b\nx"y",2\n']) {
      await expect(parse(body), JSON.stringify(body)).rejects.toMatchObject({
        code: 'invalid_request',
        details: { body: [expect.stringMatching(/^line 2: /)] },
      });
    }
  });
});

const CHUNK = 64 * 1024;

async function parseAll(chunks: Iterable<Buffer> | AsyncIterable<Buffer>) {
  const out = [];
  for await (const batch of parseCsvBatches(
    (async function* () {
      yield* chunks;
    })(),
  ))
    out.push(...batch);
  return out;
}

describe('CSV ingest parser, whatever the chunking', () => {
  it('when the input arrives one byte per chunk, then quotes, escapes, CRs and UTF-8 characters left open at every chunk end give the same result', async () => {
    const text = '\ufeffid,name,note\r\n1,"Say ""hi""","a\r\nb"\r\n2,,""\r\n"3","€, ""q""",x\r\n4,"""",\r\n5,y,z';
    const whole = await parseAll([Buffer.from(text)]);
    expect(whole).toEqual([
      { id: '1', name: 'Say "hi"', note: 'a\r\nb' },
      { id: '2', name: null, note: '' },
      { id: '3', name: '€, "q"', note: 'x' },
      { id: '4', name: '"', note: null },
      { id: '5', name: 'y', note: 'z' },
    ]);
    expect(await parseAll(inChunks(text, 1))).toEqual(whole);
  });

  it('when a quoted record just under the limit arrives in 1 KiB chunks, then each character is examined a bounded number of times, not again on every chunk', async () => {
    const field = ('x'.repeat(99) + '\n').repeat(10_000);
    const text = `a,b\n1,"${field}"\n2,3\n`;
    const records = await examinedWithin(4 * text.length, () => parseAll(inChunks(text, 1024)));
    expect(records).toEqual([
      { a: '1', b: field },
      { a: '2', b: '3' },
    ]);
  });
});

describe('CSV record length limit', () => {
  // The b field as written, for a record `length` characters long, and as parsed.
  const cases = [
    { kind: 'an unquoted', written: (length: number) => 'x'.repeat(length - 2), parsed: (length: number) => 'x'.repeat(length - 2), hint: '' },
    {
      kind: 'a quoted',
      written: (length: number) => `"${'x'.repeat(length - 4)}"`,
      parsed: (length: number) => 'x'.repeat(length - 4),
      hint: ' (it passed the limit inside a quoted field: is a quote not closed?)',
    },
  ];
  for (const { kind, written, parsed, hint } of cases) {
    for (const [ending, eol] of [
      ['LF', '\n'],
      ['CRLF', '\r\n'],
    ]) {
      it(`when ${kind} record ending in ${ending} is exactly MAX_RECORD_CHARS long, then it is accepted; when one character longer, then 400 names its line`, async () => {
        const body = (length: number) => `a,b${eol}0,0${eol}1,${written(length)}${eol}2,2${eol}`;
        for (const size of [CHUNK, 1000, Infinity]) {
          expect(await parseAll(inChunks(body(MAX_RECORD_CHARS), size))).toEqual([
            { a: '0', b: '0' },
            { a: '1', b: parsed(MAX_RECORD_CHARS) },
            { a: '2', b: '2' },
          ]);
          await expect(parseAll(inChunks(body(MAX_RECORD_CHARS + 1), size))).rejects.toMatchObject({
            code: 'invalid_request',
            details: { body: [`line 3: the record is longer than ${MAX_RECORD_CHARS} characters${hint}`] },
          });
        }
      });
    }
  }

  /**
   * 40 MB in 64 KiB chunks after `head`, counting the chunks the parser
   * pulls. Past twice the chunks the limit needs it throws, so a parser that
   * reads on fails at once on that error instead of grinding through 40 MB.
   */
  function fortyMegabytes(head: string, filler: string) {
    const chunksForLimit = Math.ceil(MAX_RECORD_CHARS / CHUNK) + 1;
    const fill = Buffer.from(filler.repeat(Math.ceil(CHUNK / filler.length))).subarray(0, CHUNK);
    const source = {
      pulled: 0,
      chunksForLimit,
      async *[Symbol.asyncIterator]() {
        for (let sent = 0; sent < 40e6; sent += CHUNK) {
          if (++source.pulled > 2 * chunksForLimit) throw new Error(`the parser pulled ${source.pulled} chunks of a body it should have refused`);
          yield source.pulled === 1 ? Buffer.concat([Buffer.from(head), fill]).subarray(0, CHUNK) : fill;
        }
      },
    };
    return source;
  }
  const barRow = '0b7c0001-1f2e-4d3c-8b9a-000000000001,2011-01-03,101.5,103.2,99.8,102.4,1250000,USD,USD per share,vendor,2021-01-01T00:00:00.000Z\n';

  it('when a quote is left open and 40 MB of rows follow, then 400 names the line it opened on after reading no more than the limit', async () => {
    const body = fortyMegabytes('instrumentId,barDate,openPrice,highPrice,lowPrice,closePrice,volume,quoteCurrency,quoteUnit,source,asOf\n"', barRow);
    await expect(parseAll(body)).rejects.toMatchObject({
      code: 'invalid_request',
      details: { body: [expect.stringMatching(/^line 2: the record is longer than 1048576 characters \(it passed the limit inside a quoted field/)] },
    });
    expect(body.pulled).toBeLessThanOrEqual(body.chunksForLimit);
  });

  it('when 40 MB hold no line feed (CR-only line endings), then 400 names line 1 after reading no more than the limit', async () => {
    const body = fortyMegabytes('', barRow.replace('\n', '\r'));
    await expect(parseAll(body)).rejects.toMatchObject({
      code: 'invalid_request',
      details: { body: [`line 1: the record is longer than ${MAX_RECORD_CHARS} characters`] },
    });
    expect(body.pulled).toBeLessThanOrEqual(body.chunksForLimit);
  });
});

describe('CSV runs of blank lines', () => {
  // A run counts its line endings toward MAX_RECORD_CHARS, as one record's characters would.
  for (const [ending, eol] of [
    ['LF', '\n'],
    ['CRLF', '\r\n'],
  ]) {
    it(`when blank lines ending in ${ending} hold exactly MAX_RECORD_CHARS characters, then they are read; one line more, then 400 names the run's lines`, async () => {
      const lines = MAX_RECORD_CHARS / eol.length;
      // The header is line 1 and a record line 2, so the run starts on line 3.
      const body = (blank: number) => `a,b${eol}1,2${eol}${eol.repeat(blank)}3,4${eol}${eol.repeat(lines)}5,6${eol}`;
      // Chunks of 7 bytes cut some CRLFs in two.
      for (const size of [CHUNK, 1000, 7, Infinity]) {
        expect(await parseAll(inChunks(body(lines), size)), `${size}`).toEqual([
          { a: '1', b: '2' },
          { a: '3', b: '4' },
          { a: '5', b: '6' },
        ]);
        await expect(parseAll(inChunks(body(lines + 1), size)), `${size}`).rejects.toMatchObject({
          code: 'invalid_request',
          message: `CSV line ${3 + lines}: lines 3 to ${3 + lines} are blank: a run of blank lines may hold at most ${MAX_RECORD_CHARS} characters, as a record may`,
          details: { body: [`lines 3 to ${3 + lines} are blank: a run of blank lines may hold at most ${MAX_RECORD_CHARS} characters, as a record may`] },
        });
      }
    });
  }

  it('when a body is nothing but 40 MB of line feeds, then 400 names its first lines after reading no more than the limit', async () => {
    let pulled = 0;
    const chunksForLimit = Math.ceil(MAX_RECORD_CHARS / CHUNK) + 1;
    async function* body() {
      for (let sent = 0; sent < 40e6; sent += CHUNK) {
        if (++pulled > 2 * chunksForLimit) throw new Error(`the parser pulled ${pulled} chunks of a body it should have refused`);
        yield Buffer.alloc(CHUNK, '\n');
      }
    }
    await expect(parseAll(body())).rejects.toMatchObject({ details: { body: [expect.stringMatching(`^lines 1 to ${MAX_RECORD_CHARS + 1} are blank`)] } });
    expect(pulled).toBeLessThanOrEqual(chunksForLimit);
  });
});
