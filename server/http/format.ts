import type { Request, Response } from 'express';
import { closedEnum } from './params.ts';

// The price reads answer in JSON (the envelope) or CSV: `format` in the query
// when given, else the Accept header, else JSON.

export const FORMATS = ['json', 'csv'] as const;
export type Format = (typeof FORMATS)[number];

export const FormatSchema = closedEnum(FORMATS)
  .optional()
  .describe('json (the default) or csv: RFC 4180, a header row, one row per bar, meta in a trailing `#meta` row; without it, `Accept: text/csv` asks for CSV');

/** The format a request asks for. The answer varies with Accept, so it says so. */
export function negotiateFormat(req: Request, res: Response, asked: Format | undefined): Format {
  res.vary('Accept');
  if (asked) return asked;
  // The first type the client accepts, JSON when it accepts both equally or neither.
  return req.accepts(['application/json', 'text/csv']) === 'text/csv' ? 'csv' : 'json';
}
