import type { Response } from 'express';

export interface Meta {
  asOf: string;
  source: string;
  stale: boolean;
  [extra: string]: unknown;
}

/** The one success envelope: `{ data, meta }` with asOf, source and stale always present. */
export function sendData(res: Response, data: unknown, meta: Meta, status = 200): void {
  res.status(status).json({ data, meta });
}
