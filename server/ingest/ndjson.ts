import { MAX_RECORD_CHARS } from './csv.ts';
import { AppError } from '../core/errors.ts';

/**
 * Streaming NDJSON: one JSON value per LF-terminated line (a CR before the LF
 * is JSON whitespace), yielded in batches, one per input chunk. Blank lines
 * are skipped and do not count as rows; a line that is not JSON is a 400
 * naming its row. A line longer than MAX_RECORD_CHARS is refused as soon as
 * it passes the limit, without reading the rest of the body, and so is a run
 * of blank lines whose characters (whitespace and LFs) pass it together: a
 * run makes no row, so no row's check would otherwise end it.
 *
 * A line that runs on into later chunks is kept as the list of its pieces and
 * joined once, when its LF arrives, so each character is searched for the LF
 * once however the body is cut.
 */
export async function* ndjsonBatches(body: AsyncIterable<Buffer | string>): AsyncGenerator<unknown[]> {
  const decoder = new TextDecoder('utf-8');
  let index = 0; // the row the next non-blank line is
  let lineNumber = 1; // the physical line the next complete line is
  const lineParts: string[] = []; // the start of a line that continues in a later chunk
  let partsChars = 0;
  let blankChars = 0; // the characters of the blank lines since the last row, LFs included
  let blankFrom = 1; // the line the current run of blank lines started on

  // `ending` is the length of the line's LF: 1, or 0 for a last line without one.
  const parseLine = (line: string, ending: number, out: unknown[]) => {
    if (line.trim() === '') {
      if (blankChars === 0) blankFrom = lineNumber;
      blankChars += line.length + ending;
      if (blankChars > MAX_RECORD_CHARS) throw blankRunTooLong(blankFrom, lineNumber);
    } else {
      try {
        out.push(JSON.parse(line));
      } catch {
        throw new AppError('invalid_request', `row ${index} is not valid JSON`, { [`rows[${index}]`]: ['malformed JSON line'] });
      }
      index++;
      blankChars = 0;
    }
    lineNumber++;
  };

  // Takes the lines `text` completes; the text after its last LF is kept in lineParts.
  const consume = (text: string, out: unknown[]) => {
    const lastNl = text.lastIndexOf('\n');
    if (lastNl !== -1) {
      const lines = text.slice(0, lastNl).split('\n');
      if (lineParts.length) {
        lineParts.push(lines[0]);
        lines[0] = lineParts.join('');
        lineParts.length = 0;
        partsChars = 0;
      }
      for (const line of lines) {
        if (line.length > MAX_RECORD_CHARS && line.length - (line.charCodeAt(line.length - 1) === 13 ? 1 : 0) > MAX_RECORD_CHARS) throw lineTooLong(index);
        parseLine(line, 1, out);
      }
    }
    if (lastNl + 1 < text.length) {
      lineParts.push(text.slice(lastNl + 1));
      partsChars += text.length - lastNl - 1;
      // A CR ending the text may be the start of the line's ending, so it is not counted yet.
      if (partsChars - (text.charCodeAt(text.length - 1) === 13 ? 1 : 0) > MAX_RECORD_CHARS) throw lineTooLong(index);
    }
  };

  for await (const chunk of body) {
    const batch: unknown[] = [];
    consume(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }), batch);
    if (batch.length) yield batch;
  }
  const batch: unknown[] = [];
  consume(decoder.decode(), batch);
  if (lineParts.length) parseLine(lineParts.join(''), 0, batch);
  if (batch.length) yield batch;
}

function blankRunTooLong(from: number, to: number) {
  const message = `lines ${from} to ${to} are blank: a run of blank lines may hold at most ${MAX_RECORD_CHARS} characters, as a line may`;
  return new AppError('invalid_request', message, { body: [message] });
}

function lineTooLong(index: number) {
  const message = `longer than ${MAX_RECORD_CHARS} characters`;
  return new AppError('invalid_request', `row ${index} is ${message}`, { [`rows[${index}]`]: [`line ${message}`] });
}
