import { describe, expect, it } from 'vitest';
import { parseCsvBatches } from '../../server/admin/csv.ts';

async function parse(...chunks: string[]) {
  const out = [];
  for await (const batch of parseCsvBatches((async function* () { yield* chunks.map((c) => Buffer.from(c)); })())) out.push(...batch);
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
    expect(whole).toEqual([{ id: '1', name: 'Say "hi", then, go' }, { id: '2', name: 'two' }]);
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
      for await (const batch of parseCsvBatches((async function* () { yield bytes.subarray(0, cut); yield bytes.subarray(cut); })())) out.push(...batch);
      expect(out).toEqual(expected);
    }
  });

  it('when a bad record follows a quoted field spanning lines, then the error names its physical line', async () => {
    await expect(parse('a,b\n"1\n2",x\n3\n')).rejects.toMatchObject({ details: { body: ['line 4: expected 2 fields, found 1'] } });
  });

  it('when the body ends inside a UTF-8 character, then 400 says it is not UTF-8', async () => {
    const batches = parseCsvBatches((async function* () { yield Buffer.from('a\n'); yield Buffer.from([0xe2, 0x82]); })());
    await expect((async () => { for await (const _ of batches); })()).rejects.toMatchObject({ code: 'invalid_request', details: { body: ['line 2: the body is not valid UTF-8'] } });
  });

  it('when blank lines or a missing final newline occur, then records are still read', async () => {
    expect(await parse('a,b\n\n1,2\n\n3,4')).toEqual([{ a: '1', b: '2' }, { a: '3', b: '4' }]);
  });

  it('when a row has the wrong number of fields, a quote is unclosed, or text follows a closing quote, then 400 names the line', async () => {
    await expect(parse('a,b\n1,2,3\n')).rejects.toMatchObject({ code: 'invalid_request', details: { body: ['line 2: expected 2 fields, found 3'] } });
    await expect(parse('a,b\n1,"open\n')).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(parse('a,b\n"x"y,2\n')).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(parse('a,b\nx"y",2\n')).rejects.toMatchObject({ code: 'invalid_request' });
  });
});
