import pino from 'pino';

export type { Logger } from 'pino';

/**
 * Structured JSON logs, one line per request. Written asynchronously: lines
 * queued while a write is pending go out together, so the request path never
 * waits on stdout (pino flushes what is left on exit).
 * Redaction is a second line of defence: nothing logs headers in the first place.
 */
export function createLogger(level: string) {
  return pino(
    {
      level,
      base: { service: 'market-data-service' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: ['authorization', 'headers.authorization', 'req.headers.authorization', 'key', 'token', 'adminToken', '*.key', '*.token'],
        censor: '[redacted]',
      },
    },
    pino.destination({ dest: 1, sync: false }),
  );
}
