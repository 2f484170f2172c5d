const NEEDS_COPY_ESCAPE = /[\\\t\n\r]/;

/** One COPY text field. Text never holds NUL here: ingestRows refuses such a row before encoding it. */
export function copyField(v: string | number | boolean | null): string {
  if (v === null) return '\\N';
  if (typeof v !== 'string') return String(v);
  if (!NEEDS_COPY_ESCAPE.test(v)) return v;
  return v.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
}

/**
 * One COPY line without its newline. Built by join, so it is one flat string:
 * concatenation would leave a rope of ~30 pieces per row alive until the
 * batch is sent, which the garbage collector then promotes and scans.
 */
export function copyLine(values: (string | number | boolean | null)[]): string {
  const fields = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) fields[i] = copyField(values[i]);
  return fields.join('\t');
}
