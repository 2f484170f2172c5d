// npm run bench [-- <scenario> ...]
//
// Runs the selected scenarios (all by default) one after another, each in a
// fresh database mds_bench_<ts>_<scenario> on one server: BENCH_DATABASE_URL's
// (loopback only) or a throwaway embedded PostgreSQL. Prints the combined
// JSON summary on stdout (progress goes to stderr) and writes it to
// bench/results/latest.json, and each measured scenario's result to
// bench/results/<scenario>.json (see bench/report.ts).
// Exits non-zero when a scenario failed.
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openDbServer } from './lib/database.ts';
import { cleanupAll, log, ROOT } from './lib/harness.ts';
import type { ScenarioContext, ScenarioResult } from './lib/results.ts';
import { round } from './lib/stats.ts';

type Scenario = (ctx: ScenarioContext) => Promise<ScenarioResult>;

const SCENARIOS: Record<string, () => Promise<Scenario>> = {
  'platform-overhead': async () => (await import('./platform-overhead.ts')).run,
  'bulk-read': async () => (await import('./bulk-read.ts')).run,
  ingest: async () => (await import('./ingest.ts')).run,
  intraday: async () => (await import('./intraday.ts')).run,
  analytics: async () => (await import('./analytics.ts')).run,
  resilience: async () => (await import('./resilience.ts')).run,
  'password-hashing': async () => (await import('./password-hashing.ts')).run,
  'wide-bodies': async () => (await import('./wide-bodies.ts')).run,
  processes: async () => (await import('./processes.ts')).run,
  growth: async () => (await import('./growth.ts')).run,
};

// A hard stop for the whole run, whatever happens: children and databases are
// cleaned up and the process exits.
const MAX_RUN_SECONDS = Number(process.env.BENCH_MAX_SECONDS ?? 1800);

// What the run has measured so far: written at the end, or as far as it got
// when the run is interrupted.
const run = {
  startedAt: new Date(),
  database: null as string | null,
  results: {} as Record<string, (ScenarioResult & { code: CodeVersion; elapsedSec: number }) | { scenario: string; error: string }>,
};
/** The run's start as yyyymmddhhmmss (UTC), in its file and database names. */
const STAMP = run.startedAt.toISOString().replace(/\D/g, '').slice(0, 14);

async function writeSummary(aborted?: string) {
  const summary = {
    startedAt: run.startedAt.toISOString(),
    elapsedSec: round((Date.now() - run.startedAt.getTime()) / 1000, 1),
    ...(aborted ? { aborted } : {}),
    machine: {
      node: process.version,
      platform: `${os.platform()} ${os.release()}`,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      memGiB: round(os.totalmem() / 1024 ** 3, 1),
    },
    database: run.database,
    scenarios: run.results,
  };
  const json = JSON.stringify(summary, null, 2);
  const dir = path.join(ROOT, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'latest.json'), `${json}\n`);
  // One file per measured scenario, bench/results/<scenario>.json, in the shape
  // of the whole summary: what npm run bench:report reads, and what is committed.
  const written = ['latest.json'];
  for (const [name, result] of Object.entries(run.results)) {
    if (!('code' in result)) continue;
    const file = `${name}.json`;
    await writeFile(path.join(dir, file), `${JSON.stringify({ ...summary, scenarios: { [name]: result } }, null, 2)}\n`);
    written.push(file);
  }
  process.stdout.write(`${json}\n`);
  log(`wrote bench/results/${written.join(', ')}${aborted ? ' (partial)' : ''}`);
}

async function main(): Promise<number> {
  const args = process.argv.slice(2).filter((a) => a !== '--');
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`usage: npm run bench [-- <scenario> ...]\nscenarios: ${Object.keys(SCENARIOS).join(', ')}\n`);
    return 0;
  }
  const unknown = args.filter((a) => !(a in SCENARIOS));
  if (unknown.length) {
    process.stderr.write(`unknown scenario(s): ${unknown.join(', ')}; choose from ${Object.keys(SCENARIOS).join(', ')}\n`);
    return 2;
  }
  const selected = args.length ? Object.keys(SCENARIOS).filter((s) => args.includes(s)) : Object.keys(SCENARIOS);

  const runId = `mds_bench_${STAMP}`;
  const db = await openDbServer();
  run.database = db.kind;
  log(`database: ${db.kind}${db.kind === 'external' ? ` (${new URL(db.url).host})` : ''}; scenarios: ${selected.join(', ')}`);

  const results = run.results;
  let failed = false;
  for (const name of selected) {
    if (aborting) break;
    const started = Date.now();
    log(`== ${name}`);
    // Each scenario starts its own service process, so it measures the code as it is now.
    const code = codeVersion();
    try {
      const result = await (await SCENARIOS[name]())({ db, runId });
      results[name] = { ...result, code, elapsedSec: round((Date.now() - started) / 1000, 1) };
    } catch (err) {
      failed = true;
      log(`${name} failed: ${(err as Error).stack ?? err}`);
      results[name] = { scenario: name, error: (err as Error).message };
    }
    log(`== ${name} done in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  }
  if (aborting) return 1;
  await cleanupAll();

  await writeSummary();
  return failed ? 1 : 0;
}

interface CodeVersion {
  commit: string | null;
  uncommitted: string[];
}

/** The commit measured, and the service files that differed from it. */
function codeVersion(): CodeVersion {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const dirty = git('status', '--porcelain', '--', 'server', 'sql', 'workers', 'package.json').split('\n').filter(Boolean);
    return { commit: git('rev-parse', '--short', 'HEAD').trim(), uncommitted: dirty.map((l) => l.slice(3)) };
  } catch {
    return { commit: null, uncommitted: [] };
  }
}

// An interrupted or overlong run stops its children, drops its databases and
// stops the embedded cluster, then exits; main() stops starting scenarios.
let aborting: Promise<never> | null = null;
function abort(reason: string, code: number): Promise<never> {
  return (aborting ??= (async () => {
    log(`${reason}; cleaning up`);
    await cleanupAll();
    if (Object.keys(run.results).length) await writeSummary(reason).catch(() => {});
    process.exit(code);
  })());
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void abort(`received ${signal}`, 130));
setTimeout(() => void abort(`the run exceeded BENCH_MAX_SECONDS=${MAX_RUN_SECONDS}`, 124), MAX_RUN_SECONDS * 1000).unref();

main().then(
  (code) => (aborting ? aborting : process.exit(code)),
  (err) => void abort(`failed: ${(err as Error).stack ?? err}`, 1),
);
