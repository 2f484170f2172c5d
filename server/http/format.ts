import type { Request, Response } from 'express';
import { FORMATS, type Format } from '../core/params.ts';

/** Each answer format's media type, in FORMATS' order. */
export const FORMAT_TYPES: Record<Format, string> = {
  json: 'application/json',
  csv: 'text/csv',
  arrow: 'application/vnd.apache.arrow.stream',
  parquet: 'application/vnd.apache.parquet',
};

/** The format a request asks for. The answer varies with Accept, so it says so. */
export function negotiateFormat(req: Request, res: Response, asked: Format | undefined): Format {
  res.vary('Accept');
  if (asked) return asked;
  // The first type the client accepts, JSON when it accepts several equally or none.
  const type = req.accepts(FORMATS.map((f) => FORMAT_TYPES[f]));
  return FORMATS.find((f) => FORMAT_TYPES[f] === type) ?? 'json';
}
