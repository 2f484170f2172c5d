import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

// psql, the baseline of the scenarios that compare the service with
// PostgreSQL's own client moving the same rows (ingest, exports).

// Debian and Ubuntu install each server version's client under this folder, not on PATH.
const DEBIAN_POSTGRESQL = '/usr/lib/postgresql';

/** BENCH_PSQL, else psql on PATH, else the newest Debian-packaged client. */
export function findPsql(): string {
  const onPath = (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter(Boolean)
    .map((dir) => path.join(dir, 'psql'));
  const versions = existsSync(DEBIAN_POSTGRESQL) ? readdirSync(DEBIAN_POSTGRESQL).sort((a, b) => Number(b) - Number(a)) : [];
  const candidates = [process.env.BENCH_PSQL, ...onPath, ...versions.map((v) => path.join(DEBIAN_POSTGRESQL, v, 'bin', 'psql'))];
  const found = candidates.find((p) => p && existsSync(p));
  if (!found) throw new Error(`psql not found (tried BENCH_PSQL, PATH and ${DEBIAN_POSTGRESQL}/*/bin); the baselines need it`);
  return found;
}

export function runPsql(psql: string, url: string, command: string): Promise<{ ms: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(psql, [url, '-v', 'ON_ERROR_STOP=1', '-X', '-q', '-c', command], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('exit', (code) => {
      const ms = performance.now() - started;
      if (code === 0) resolve({ ms, stdout });
      else reject(new Error(`psql exited ${code}: ${stderr.slice(0, 500)}`));
    });
  });
}
