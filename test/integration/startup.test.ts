import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT, runNode } from './child-process.ts';
import { databaseUrl } from './harness.ts';

function occupy(host: string): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => resolve({ server, port: (server.address() as { port: number }).port }));
  });
}

describe('npm start: a port already in use', () => {
  // The public listener binds HOST, the admin listener ADMIN_HOST (both 127.0.0.1 by default).
  it.each([
    { variable: 'PORT', host: '127.0.0.1' },
    { variable: 'ADMIN_PORT', host: '127.0.0.1' },
  ])(
    'when $variable is taken by another process, then the service prints one line naming the port and $variable and exits non-zero',
    async ({ variable, host }) => {
      const { server, port } = await occupy(host);
      const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mds-busy-port-'));
      try {
        const run = await runNode(['server/main.ts'], {
          cwd: PROJECT_ROOT,
          env: {
            PORT: '0',
            ADMIN_PORT: '0',
            [variable]: String(port),
            DATABASE_URL: databaseUrl(),
            DATA_DIR: dataDir,
            ADMIN_TOKEN: 'busy-port-test-admin-token',
            DEMO_DATA: 'off',
          },
        });
        expect(run.code).not.toBe(0);
        expect(run.code).not.toBeNull();
        expect(run.stdout).toBe('');
        const lines = run.stderr.trimEnd().split('\n');
        expect(lines).toHaveLength(1);
        expect(lines[0]).toBe(
          `market-data-service could not start: port ${port} (${variable}) is already in use on ${host}: stop the process using it or set ${variable} to a free port`,
        );
      } finally {
        server.close();
        await rm(dataDir, { recursive: true, force: true });
      }
    },
  );
});
