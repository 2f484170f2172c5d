import type { Request, Response } from 'express';
import type { Format } from '../core/params.ts';

/** The format a request asks for. The answer varies with Accept, so it says so. */
export function negotiateFormat(req: Request, res: Response, asked: Format | undefined): Format {
  res.vary('Accept');
  if (asked) return asked;
  // The first type the client accepts, JSON when it accepts both equally or neither.
  return req.accepts(['application/json', 'text/csv']) === 'text/csv' ? 'csv' : 'json';
}
