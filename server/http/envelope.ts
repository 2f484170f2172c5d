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

/**
 * The same envelope for data already serialised (price bars are written field
 * by field so equal inputs always give equal bytes).
 */
export function sendSerialisedData(res: Response, dataJson: string, meta: Meta): void {
  res.status(200).type('application/json').send(`{"data":${dataJson},"meta":${JSON.stringify(meta)}}`);
}

/**
 * The envelope streamed: `produce` writes the data value in chunks (awaiting
 * the socket's drain) and returns the meta, which can only be known at the end.
 */
export async function streamData(res: Response, produce: (write: (chunk: string) => Promise<void>) => Promise<Meta>): Promise<void> {
  const write = (chunk: string) =>
    new Promise<void>((resolve, reject) => {
      if (res.destroyed) return reject(new Error('client went away'));
      if (res.write(chunk)) return resolve();
      const onClose = () => reject(new Error('client went away'));
      res.once('close', onClose);
      res.once('drain', () => {
        res.off('close', onClose);
        resolve();
      });
    });
  res.status(200).type('application/json');
  await write('{"data":');
  const meta = await produce(write);
  res.end(`,"meta":${JSON.stringify(meta)}}`);
}
