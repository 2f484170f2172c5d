import { AppError } from '../core/errors.ts';

export type CsvRecord = Record<string, string | null>;

/**
 * The longest record accepted, in characters (UTF-16 code units), not
 * counting its line ending: one CSV record here, one line in ndjson.ts.
 *
 * A daily bar row is ~140 characters and an instrument row with a long
 * symbol history a few thousand, so 1 MiB is hundreds of times what a real
 * record needs. It bounds what a malformed body costs before it is refused:
 * an unclosed quote would otherwise take the whole rest of the body into one
 * field. Reading 1 MiB into an unclosed quoted field and refusing it takes
 * ~5 ms of parsing, however large the body.
 */
export const MAX_RECORD_CHARS = 1024 * 1024;

/**
 * Streaming RFC 4180 CSV: a header row, then one record per line. Fields may
 * be quoted ("a, b", "say ""hi""", embedded newlines); LF or CRLF ends a
 * record and a UTF-8 BOM is accepted. An empty unquoted field is an absent
 * value (null), never zero or an empty string. Records are yielded in
 * batches, one per input chunk, as objects keyed by header. A record longer
 * than MAX_RECORD_CHARS is refused as soon as it passes the limit, and so is
 * a run of blank lines, counted by their line endings: it makes no record, so
 * no record's limit or row check would end it, and a gigabyte of LF (a
 * megabyte as gzip) would cost 197 s of parsing on 2 cores.
 *
 * Hand-written because it sits on the ingest hot path: csv-parse with a cast
 * callback measured ~200 µs per 11-field row here. A line without a quote
 * that ends inside its chunk (almost every line of a price file) is cut with
 * String.split; a record that contains a quote or runs on into the next chunk
 * goes through RecordScanner, which keeps its place between chunks, so every
 * character is examined a bounded number of times however the body is cut.
 */
export async function* parseCsvBatches(chunks: AsyncIterable<Buffer | string>): AsyncGenerator<CsvRecord[]> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const scanner = new RecordScanner();
  let header: string[] | null = null;
  let line = 1; // the physical line the next record starts on
  let first = true;
  let blankChars = 0; // the line endings of the blank lines since the last record
  let blankFrom = 1; // the line the current run of blank lines started on

  // Counts the blank line `line`, whose line ending is `chars` characters long.
  const blank = (chars: number) => {
    if (blankChars === 0) blankFrom = line;
    blankChars += chars;
    if (blankChars > MAX_RECORD_CHARS) throw blankRunTooLong(blankFrom, line);
  };

  const decode = (chunk?: Buffer | string) => {
    try {
      return typeof chunk === 'string' ? chunk : chunk ? decoder.decode(chunk, { stream: true }) : decoder.decode();
    } catch {
      throw csvError(line, 'the body is not valid UTF-8');
    }
  };

  // A record's fields become the header or a record in `out`; `lastLine` is the physical line it ends on.
  const take = (fields: (string | null)[], lastLine: number, out: CsvRecord[]) => {
    blankChars = 0;
    if (!header) {
      header = fields.map((h, i) => {
        if (!h) throw csvError(lastLine, `header column ${i + 1} is empty`);
        return h.trim();
      });
      return;
    }
    if (fields.length !== header.length) throw csvError(lastLine, `expected ${header.length} fields, found ${fields.length}`);
    const record: CsvRecord = {};
    for (let i = 0; i < header.length; i++) record[header[i]] = fields[i];
    out.push(record);
  };

  const takeScanned = (out: CsvRecord[]) => {
    const { fields } = scanner;
    if (fields.length === 1 && fields[0] === null) blank(scanner.endingChars);
    else take(fields, line + scanner.lines, out);
    line += scanner.lines + 1;
  };

  // Takes the records of `text`, first ending the one the previous text left open; a record the text ends inside is left open.
  const consume = (text: string, out: CsvRecord[]) => {
    let pos = 0;
    if (scanner.open) {
      pos = scanner.scan(text, 0, line);
      if (pos === -1) return;
      takeScanned(out);
    }
    let nextQuote = text.indexOf('"', pos);
    while (pos < text.length) {
      const nl = text.indexOf('\n', pos);
      if (nl !== -1 && (nextQuote === -1 || nextQuote > nl)) {
        const end = nl > pos && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
        if (end === pos) {
          blank(nl + 1 - pos);
          pos = nl + 1;
          line++;
          continue;
        }
        if (end - pos > MAX_RECORD_CHARS) throw recordTooLong(line, false);
        const fields: (string | null)[] = text.slice(pos, end).split(',');
        for (let i = 0; i < fields.length; i++) if (fields[i] === '') fields[i] = null;
        take(fields, line, out);
        pos = nl + 1;
        line++;
        continue;
      }
      pos = scanner.scan(text, pos, line);
      if (pos === -1) return;
      takeScanned(out);
      if (nextQuote !== -1 && nextQuote < pos) nextQuote = text.indexOf('"', pos);
    }
  };

  for await (const chunk of chunks) {
    let text = decode(chunk);
    if (first && text.length > 0) {
      first = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const batch: CsvRecord[] = [];
    consume(text, batch);
    if (batch.length) yield batch;
  }
  const batch: CsvRecord[] = [];
  consume(decode(), batch);
  if (scanner.open) {
    scanner.finish(line);
    takeScanned(batch);
  }
  if (batch.length) yield batch;
}

/**
 * The character-level state machine for one record, resumable: `scan` reads
 * as far as the text goes and keeps its state (the fields so far, the pieces
 * of the current field, whether it is inside quotes, a quote or CR waiting
 * for the next character) until the next chunk continues the record. Field
 * text is kept as slices and joined once, when the field ends.
 */
class RecordScanner {
  /** A record has been started and not ended. */
  open = false;
  /** The ended record's fields, valid until the next record is started. */
  fields: (string | null)[] = [];
  /** Line feeds inside quoted fields of the record so far. */
  lines = 0;
  /** The ended record's line ending: 1 (LF), 2 (CRLF), or 0 at the end of the body. */
  endingChars = 0;
  private readonly fieldParts: string[] = [];
  private quoted = false; // the current field was quoted
  private inQuotes = false;
  private quoteEndedText = false; // inside quotes, the text ended on a quote: an escape or the closing quote, the next character decides
  private crEndedText = false; // outside quotes, the text ended on a CR, which ends the record if an LF follows
  private chars = 0; // characters of the record in earlier texts, not counting a CR held back by crEndedText

  /**
   * Reads the record from `start` (continuing the open one, if any) and
   * returns the index just past its line ending, or -1 when the text ends
   * inside it. `line` is the physical line the record starts on.
   */
  scan(text: string, start: number, line: number): number {
    if (!this.open) {
      this.open = true;
      this.fields = [];
      this.lines = 0;
      this.chars = 0;
    }
    const parts = this.fieldParts;
    let i = start;
    if (i < text.length && this.quoteEndedText) {
      this.quoteEndedText = false;
      if (text.charCodeAt(i) === 34) {
        parts.push('"');
        i++;
      } else {
        this.inQuotes = false;
      }
    } else if (i < text.length && this.crEndedText) {
      this.crEndedText = false;
      if (text.charCodeAt(i) === 10) {
        this.endField(text, i, i);
        return this.endRecord(i + 1, 2);
      }
      if (this.quoted) throw csvError(line + this.lines, 'text after a closing quote');
      parts.push('\r');
      this.chars++;
    }
    // The record may not reach index `limit`; nothing past it needs reading.
    const limit = start + MAX_RECORD_CHARS - this.chars;
    const scanEnd = Math.min(text.length, limit + 1);
    let runStart = i; // start of the text not yet added to the field
    while (i < scanEnd) {
      if (this.inQuotes) {
        const quote = text.indexOf('"', i);
        const runEnd = quote === -1 ? text.length : quote;
        if ((quote === -1 ? text.length : quote + 1) > limit) throw recordTooLong(line, true);
        for (let nl = text.indexOf('\n', i); nl !== -1 && nl < runEnd; nl = text.indexOf('\n', nl + 1)) this.lines++;
        if (quote === -1) {
          i = text.length;
          break;
        }
        if (quote > runStart) parts.push(text.slice(runStart, quote));
        if (quote + 1 === text.length) {
          this.quoteEndedText = true;
          i = runStart = text.length;
          break;
        }
        if (text.charCodeAt(quote + 1) === 34) {
          parts.push('"');
          i = quote + 2;
        } else {
          this.inQuotes = false;
          i = quote + 1;
        }
        runStart = i;
        continue;
      }
      const c = text.charCodeAt(i);
      if (c === 44) {
        this.endField(text, runStart, i);
        runStart = ++i;
      } else if (c === 10) {
        this.endField(text, runStart, i);
        return this.endRecord(i + 1, 1);
      } else if (c === 13) {
        if (i + 1 === text.length) {
          if (i > runStart) parts.push(text.slice(runStart, i));
          this.crEndedText = true;
          i = runStart = text.length;
          break;
        }
        if (text.charCodeAt(i + 1) === 10) {
          this.endField(text, runStart, i);
          return this.endRecord(i + 2, 2);
        }
        if (this.quoted) throw csvError(line + this.lines, 'text after a closing quote');
        i++;
      } else if (c === 34) {
        if (parts.length > 0 || i > runStart) throw csvError(line + this.lines, 'a quote may only open a field');
        this.inQuotes = true;
        this.quoted = true;
        runStart = ++i;
      } else if (this.quoted) {
        throw csvError(line + this.lines, 'text after a closing quote');
      } else {
        i++;
      }
    }
    if (i < text.length) throw recordTooLong(line, false); // stopped at scanEnd with the record still going
    if (runStart < text.length) parts.push(text.slice(runStart));
    this.chars += text.length - start - (this.crEndedText ? 1 : 0);
    if (this.chars > MAX_RECORD_CHARS) throw recordTooLong(line, this.inQuotes || this.quoteEndedText);
    return -1;
  }

  /** Ends the open record at the end of the body. */
  finish(line: number) {
    if (this.quoteEndedText) this.inQuotes = false; // it was the closing quote
    if (this.inQuotes) throw csvError(line + this.lines, 'a quoted field is not closed');
    this.quoteEndedText = false;
    this.crEndedText = false; // a CR ending the body is dropped, as before an LF
    this.endField('', 0, 0);
    this.open = false;
    this.endingChars = 0;
  }

  private endField(text: string, runStart: number, runEnd: number) {
    const parts = this.fieldParts;
    if (runEnd > runStart) parts.push(text.slice(runStart, runEnd));
    this.fields.push(parts.length === 0 ? (this.quoted ? '' : null) : parts.length === 1 ? parts[0] : parts.join(''));
    parts.length = 0;
    this.quoted = false;
  }

  private endRecord(next: number, endingChars: number): number {
    this.open = false;
    this.endingChars = endingChars;
    return next;
  }
}

function recordTooLong(line: number, inQuotes: boolean) {
  const hint = inQuotes ? ' (it passed the limit inside a quoted field: is a quote not closed?)' : '';
  return csvError(line, `the record is longer than ${MAX_RECORD_CHARS} characters${hint}`);
}

function blankRunTooLong(from: number, to: number) {
  const message = `lines ${from} to ${to} are blank: a run of blank lines may hold at most ${MAX_RECORD_CHARS} characters, as a record may`;
  return new AppError('invalid_request', `CSV line ${to}: ${message}`, { body: [message] });
}

function csvError(line: number, message: string) {
  return new AppError('invalid_request', `CSV line ${line}: ${message}`, { body: [`line ${line}: ${message}`] });
}
