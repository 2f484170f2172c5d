// What every bench run shares: the project root, the progress log, the cleanup
// registry and the BENCH_* settings. Everything the bench starts registers its
// cleanup here, so an interrupted run leaves nothing behind.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));

const t0 = Date.now();
/** Progress goes to stderr; stdout carries only the JSON summary. */
export function log(msg: string): void {
  process.stderr.write(`[bench +${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}\n`);
}

const cleanups: { name: string; fn: () => Promise<void> }[] = [];

/** Registers a cleanup; returns a function that runs it once and unregisters it. */
export function onCleanup(name: string, fn: () => Promise<void>): () => Promise<void> {
  const entry = { name, fn };
  cleanups.push(entry);
  let done: Promise<void> | null = null;
  return () =>
    (done ??= (async () => {
      const i = cleanups.indexOf(entry);
      if (i >= 0) cleanups.splice(i, 1);
      await fn();
    })());
}

/** Runs every registered cleanup, newest first (children before databases before the cluster). */
export async function cleanupAll(): Promise<void> {
  while (cleanups.length) {
    const entry = cleanups.pop()!;
    try {
      await entry.fn();
    } catch (err) {
      log(`cleanup ${entry.name} failed: ${(err as Error).message}`);
    }
  }
}

/** A BENCH_* setting: a positive number, or `fallback` when unset. */
export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number (got ${raw})`);
  return n;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
