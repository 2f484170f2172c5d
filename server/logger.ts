import pino from 'pino';

export type { Logger } from 'pino';

// Anything shaped like one of our API keys or generated admin tokens, with
// `_` possibly percent-encoded (a key pasted into a URL path is logged as the
// path was sent). The environment part is kept; everything after it goes.
const KEY_SHAPED = /\b(pk(?:_|%5[Ff])(?:test|live)(?:_|%5[Ff])|adm(?:_|%5[Ff]))[A-Za-z0-9_%-]+/g;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Structured JSON logs, one line per request. Written asynchronously: lines
 * queued while a write is pending go out together, so the request path never
 * waits on stdout (pino flushes what is left on exit).
 *
 * Nothing logs headers or query strings in the first place. As a last line of
 * defence every serialised line is scrubbed before it is written: key-shaped
 * text (a key sent in a URL path, say) and the configured secrets (`secrets`:
 * the admin token, the upstream API key) are replaced wherever they occur,
 * messages and stack traces included. The scrub is one regular expression
 * over a ~300-byte line.
 */
export function createLogger(
  level: string,
  secrets: (string | undefined)[] = [],
  destination: pino.DestinationStream = pino.destination({ dest: 1, sync: false }),
) {
  const exact = secrets.filter((s): s is string => Boolean(s)).map(escapeRegExp);
  const secretPattern = exact.length ? new RegExp(exact.join('|'), 'g') : null;
  const scrub = (line: string) => {
    const keysOut = line.replace(KEY_SHAPED, '$1[redacted]');
    return secretPattern ? keysOut.replace(secretPattern, '[redacted]') : keysOut;
  };
  return pino(
    {
      level,
      base: { service: 'market-data-service' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: ['authorization', 'headers.authorization', 'req.headers.authorization', 'key', 'token', 'adminToken', '*.key', '*.token'],
        censor: '[redacted]',
      },
      hooks: { streamWrite: scrub },
    },
    destination,
  );
}
