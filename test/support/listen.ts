import type { Express } from 'express';
import type { AddressInfo } from 'node:net';

/** `app` listening on a free loopback port: its base URL, and a close that resolves once the server has closed. */
export async function listen(app: Express): Promise<{ base: string; close(): Promise<void> }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
