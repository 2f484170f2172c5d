import pino from 'pino';

export type { Logger } from 'pino';

/** Structured JSON logs. Redaction is a second line of defence: nothing logs headers in the first place. */
export function createLogger(level: string) {
  return pino({
    level,
    base: { service: 'market-data-service' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['authorization', 'headers.authorization', 'req.headers.authorization', 'key', 'token', 'adminToken', '*.key', '*.token'],
      censor: '[redacted]',
    },
  });
}
