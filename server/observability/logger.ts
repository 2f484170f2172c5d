import pino from 'pino';

export type { Logger } from 'pino';

// Our API keys (pk_live_ or pk_test_), generated admin tokens (adm_) and the
// dashboard's session, form and invitation secrets each carry 32 random bytes
// as 43 base64url characters. A run of 43 or more base64url characters with
// both upper- and lower-case letters is taken for one: a random 43-character
// secret lacks either case with probability 2 × (38/64)^43, under 4e-10, while
// SQL identifiers, file names and hex digests in error messages have one case only.
const SECRET_RUN = /[A-Za-z0-9_-]{43,}/g;
const KEY_PREFIX = /^(?:pk_(?:test|live)_|adm_)/;
// Anything that may decode to such a run: a key pasted into a URL path is
// logged as the path was sent, with any or all of its characters percent-encoded.
const ENCODED_CANDIDATE = /[A-Za-z0-9_%-]{43,}/g;
const PERCENT_BYTE = /%([0-9A-Fa-f]{2})/g;
// A key or token prefix with whatever follows it, however short (a key cut
// off when pasted), with `_` possibly percent-encoded. The prefix is kept.
const KEY_SHAPED = /\b(pk(?:_|%5[Ff])(?:test|live)(?:_|%5[Ff])|adm(?:_|%5[Ff]))[A-Za-z0-9_%-]+/g;
// Percent-encoding applied this many times over is still decoded.
const MAX_DECODINGS = 3;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const isSecretRun = (run: string) => /[A-Z]/.test(run) && /[a-z]/.test(run);

const redactedRun = (run: string) => `${KEY_PREFIX.exec(run)?.[0] ?? ''}[redacted]`;

function percentDecoded(text: string): string {
  let decoded = text;
  for (let i = 0; i < MAX_DECODINGS; i++) {
    const next = decoded.replace(PERCENT_BYTE, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (next === decoded) break;
    decoded = next;
  }
  return decoded;
}

/**
 * `text` with every key, admin token or dashboard secret in it replaced by
 * `[redacted]` (a key keeps its `pk_live_`, `pk_test_` or `adm_` prefix),
 * however it was percent-encoded. Text holding a secret only once decoded is
 * replaced whole, so the result holds only characters that were in `text`.
 */
export function redactSecrets(text: string): string {
  return text.replace(KEY_SHAPED, '$1[redacted]').replace(ENCODED_CANDIDATE, (candidate) => {
    if (!candidate.includes('%')) return candidate.replace(SECRET_RUN, (run) => (isSecretRun(run) ? redactedRun(run) : run));
    const decoded = percentDecoded(candidate);
    const run = decoded.match(SECRET_RUN)?.find(isSecretRun);
    return run === undefined ? candidate : redactedRun(decoded);
  });
}

/** Whether `text` holds what redactSecrets replaces. */
export const holdsSecret = (text: string) => redactSecrets(text) !== text;

/**
 * Structured JSON logs, one line per request. Written asynchronously: lines
 * queued while a write is pending go out together, so the request path never
 * waits on stdout (pino flushes what is left on exit).
 *
 * Nothing logs headers or query strings in the first place. As a last line of
 * defence every serialised line is scrubbed before it is written: secrets as
 * redactSecrets finds them (a key sent in a URL path, say) and the configured
 * secrets (`secrets`: the admin token, the upstream API key) are replaced
 * wherever they occur, messages and stack traces included. The scrub is two
 * regular expressions over a ~300-byte line, and a decoding of the rare text
 * of 43 characters or more.
 */
export function createLogger(
  level: string,
  secrets: (string | undefined)[] = [],
  destination: pino.DestinationStream = pino.destination({ dest: 1, sync: false }),
) {
  const exact = secrets.filter((s): s is string => Boolean(s)).map(escapeRegExp);
  const secretPattern = exact.length ? new RegExp(exact.join('|'), 'g') : null;
  const scrub = (line: string) => {
    const keysOut = redactSecrets(line);
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
