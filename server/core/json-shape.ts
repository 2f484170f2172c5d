import { z } from 'zod';
import { schemaEntered } from './schema-words.ts';
import { listLength, tooLong, UNKNOWN_NAMED, type Oversize } from './size-bounds.ts';

// The sizes size-bounds.ts checks, found in a JSON body's bytes before
// JSON.parse builds it. Building is the cost: over an object of 80,000
// fields (850 KiB) JSON.parse takes 22 ms and listing its keys 7 ms more,
// where this scan counts them in 3 ms (the least of 30 runs, on 2 cores). It
// walks only where the schema checks something (an object, record or list),
// and finds what oversizedParts finds in the parsed body, with two
// differences: a field sent twice in one object is counted twice (JSON.parse
// keeps its last value), and text is not measured here (JSON.parse copies a
// long string cheaply, and parse measures it as zod does).

type Schema = z.core.$ZodType;
type Path = PropertyKey[];

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_LIST = 0x5b;
const CLOSE_LIST = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

interface Frame {
  /** An object's schema (object or record), or a list's: only containers whose contents are checked have a frame. */
  schema: z.core.$ZodObject | z.core.$ZodRecord | z.core.$ZodArray;
  isList: boolean;
  path: Path;
  /** Fields or items sent so far. */
  count: number;
  /** An object: the next string is a key. */
  expectKey: boolean;
  /** An object: the current field's name, and the schema of its value (undefined: not checked). */
  key: string;
  next: Schema | undefined;
  /** A strict object: the first few fields sent that it does not declare. */
  unknown: string[];
  /** A list: the most items it may hold. */
  bound: number;
  /** Past its size: its members are counted to its end, not walked, and what was found inside it is dropped. */
  over: boolean;
  /** How many findings there were when it opened. */
  mark: number;
}

/** The index of the quote that closes the string opening at `start`, or -1. */
function stringEnd(bytes: Uint8Array, start: number): number {
  let end = bytes.indexOf(QUOTE, start + 1);
  while (end > 0) {
    let slashes = 0;
    while (bytes[end - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return end;
    end = bytes.indexOf(QUOTE, end + 1);
  }
  return -1;
}

/** The string whose quotes are at `start` and `end`. */
function decodeString(bytes: Buffer, start: number, end: number): string {
  return bytes.subarray(start + 1, end).includes(BACKSLASH)
    ? (JSON.parse(bytes.toString('utf8', start, end + 1)) as string)
    : bytes.toString('utf8', start + 1, end);
}

/**
 * From `i`, inside a container, to the byte that closes it: the index of
 * that byte (-1 when the text ends first) and the commas at the container's
 * own level (each starts one more member), skipping strings and nested
 * containers.
 */
function toClose(bytes: Uint8Array, i: number): { close: number; commas: number } {
  let depth = 0;
  let commas = 0;
  while (i < bytes.length) {
    const c = bytes[i];
    if (c === QUOTE) {
      const end = stringEnd(bytes, i);
      if (end < 0) break;
      i = end + 1;
      continue;
    }
    if (c === OPEN_OBJECT || c === OPEN_LIST) depth++;
    else if (c === CLOSE_OBJECT || c === CLOSE_LIST) {
      if (depth === 0) return { close: i, commas };
      depth--;
    } else if (c === COMMA && depth === 0) commas++;
    i++;
  }
  return { close: -1, commas };
}

/**
 * What in the JSON text `bytes` is over its size in `schema`, as
 * oversizedParts finds it in the parsed value (see there), without parsing
 * it: a strict object of more than `spareFields` fields beyond those it
 * declares, and a list longer than its bound, each counted to its end. A
 * container whose contents nothing checks is stepped over. The scan reads
 * JSON loosely: text that ends early (or a stray closing bracket) ends it,
 * with what was found so far and any container over its size counted as far
 * as it went, so that cut-off text of 80,000 fields is refused for its size
 * rather than built by JSON.parse up to the cut; other malformed text is left
 * to JSON.parse to tell.
 */
export function oversizedJson(schema: Schema, bytes: Buffer, spareFields: number): Oversize[] {
  const found: Oversize[] = [];
  const stack: Frame[] = [];

  /** Counts the rest of `frame`, just found over its size, from `i`: the index of its closing byte, or -1. */
  const countRest = (frame: Frame, i: number): number => {
    found.length = frame.mark;
    const rest = toClose(bytes, i);
    frame.count += rest.commas;
    return rest.close;
  };

  /** Closes `frame`: a container over its size is found, with its count. */
  const close = (frame: Frame) => {
    if (!frame.over) return;
    const s = frame.schema;
    if (s instanceof z.core.$ZodArray) {
      // A list of `count` holes: zod's own check words its length.
      const issue = tooLong(s, new Array<unknown>(frame.count));
      if (issue) found.push({ kind: 'length', path: frame.path, issue });
    } else if (s instanceof z.core.$ZodObject) {
      found.push({ kind: 'fields', path: frame.path, count: frame.count, accepted: Object.keys(s._zod.def.shape), unknown: frame.unknown });
    }
  };

  /** What was found, the containers still open closed where the text ended. */
  const finish = () => {
    for (let frame = stack.pop(); frame; frame = stack.pop()) close(frame);
    return found;
  };

  /** Takes the key at `start`..`end` of `frame`: the schema of its value; a strict object past its spare fields is over its size. */
  const onKey = (frame: Frame, start: number, end: number) => {
    frame.count++;
    frame.expectKey = false;
    frame.next = undefined;
    const s = frame.schema;
    if (s instanceof z.core.$ZodRecord) {
      frame.key = decodeString(bytes, start, end);
      frame.next = s._zod.def.valueType;
      return;
    }
    const { shape, catchall } = (s as z.core.$ZodObject)._zod.def;
    const strict = catchall instanceof z.core.$ZodNever;
    if (strict && frame.count - Object.keys(shape).length > spareFields) {
      frame.over = true;
      return;
    }
    const key = decodeString(bytes, start, end);
    if (Object.hasOwn(shape, key)) {
      frame.key = key;
      frame.next = shape[key];
    } else if (strict && frame.unknown.length < UNKNOWN_NAMED && !frame.unknown.includes(key)) {
      frame.unknown.push(key);
    }
  };

  let i = 0;
  while (i < bytes.length) {
    const c = bytes[i];
    const top = stack.at(-1);
    if (isSpace(c) || c === COLON) {
      i++;
    } else if (c === COMMA) {
      if (top && !top.isList) top.expectKey = true;
      i++;
    } else if (c === CLOSE_OBJECT || c === CLOSE_LIST) {
      if (!top) return finish();
      stack.pop();
      close(top);
      i++;
    } else if (c === QUOTE && top && !top.isList && top.expectKey) {
      const end = stringEnd(bytes, i);
      if (end < 0) return finish();
      onKey(top, i, end);
      i = top.over ? countRest(top, i) : end + 1;
      if (i < 0) return finish();
    } else {
      // A value starts here: counted in its list, checked where its schema checks anything.
      let s: Schema | undefined = schema;
      let step: PropertyKey | undefined;
      if (top?.isList) {
        top.count++;
        if (top.count > top.bound) {
          top.over = true;
          i = countRest(top, i);
          if (i < 0) return finish();
          continue;
        }
        s = (top.schema as z.core.$ZodArray)._zod.def.element;
        step = top.count - 1;
      } else if (top) {
        s = top.next;
        step = top.key;
      }
      if (c === OPEN_OBJECT || c === OPEN_LIST) {
        const isList = c === OPEN_LIST;
        const entered = s && schemaEntered(s);
        if (isList ? entered instanceof z.core.$ZodArray : entered instanceof z.core.$ZodObject || entered instanceof z.core.$ZodRecord) {
          stack.push({
            schema: entered as Frame['schema'],
            isList,
            path: top && step !== undefined ? [...top.path, step] : [],
            count: 0,
            expectKey: !isList,
            key: '',
            next: undefined,
            unknown: [],
            bound: entered instanceof z.core.$ZodArray ? listLength(entered) : Infinity,
            over: false,
            mark: found.length,
          });
          i++;
        } else {
          // Nothing in it is checked: to its end.
          const { close: end } = toClose(bytes, i + 1);
          if (end < 0) return finish();
          i = end + 1;
        }
      } else if (c === QUOTE) {
        const end = stringEnd(bytes, i);
        if (end < 0) return finish();
        i = end + 1;
      } else {
        // A number, true, false or null: to the next delimiter.
        i++;
        while (i < bytes.length && !isSpace(bytes[i]) && bytes[i] !== COMMA && bytes[i] !== CLOSE_OBJECT && bytes[i] !== CLOSE_LIST) i++;
      }
    }
  }
  return finish();
}
