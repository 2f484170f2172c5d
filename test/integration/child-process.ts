import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));

export interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

// The service's own variables are left out of what a child inherits, so each
// test sets exactly the ones it means.
const SERVICE_VARIABLES = [
  'DATABASE_URL',
  'DATABASE_REPLICA_URLS',
  'DATA_DIR',
  'HOST',
  'PORT',
  'ADMIN_PORT',
  'ADMIN_HOST',
  'ADMIN_TOKEN',
  'LOG_LEVEL',
  'DEMO_DATA',
];

/** This process's environment less the service's variables. */
export const inheritedEnv = () => Object.fromEntries(Object.entries(process.env).filter(([name]) => !SERVICE_VARIABLES.includes(name)));

/** Runs `node <args>` from `cwd` with this environment, less the service's variables, plus `env`, and `input` on its standard input; resolves when it has exited. */
export function runNode(args: string[], options: { cwd: string; env: Record<string, string>; input?: string }): Promise<Exit> {
  const child = spawn(process.execPath, args, { cwd: options.cwd, env: { ...inheritedEnv(), ...options.env }, stdio: 'pipe' });
  // Without `input`, standard input is at its end at once. A child that exits
  // without reading it makes the write fail with EPIPE, which is no failure here.
  child.stdin.on('error', () => {});
  child.stdin.end(options.input ?? '');
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
