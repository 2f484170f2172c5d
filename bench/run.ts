// npm run bench [-- <scenario> ...]
//
// Runs the selected scenarios (all by default) one after another, each in a
// fresh database mds_bench_<ts>_<scenario> on one server: BENCH_DATABASE_URL's
// (loopback only) or a throwaway embedded PostgreSQL. As each scenario ends,
// its result goes to bench/results/<scenario>.json (see bench/report.ts; a
// failed scenario leaves that file as it was) and the run so far, failures
// with their errors, to bench/results/latest.json, so a run cut short keeps
// every result it measured. BENCH_RESULTS_DIR writes them elsewhere (npm run
// bench:check does). Prints the combined JSON summary on stdout at the end
// (progress goes to stderr). Exits non-zero when a scenario failed.
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
  exports: async () => (await import('./exports.ts')).run,
  'idle-sockets': async () => (await import('./idle-sockets.ts')).run,
};

// A hard stop for the whole run, whatever happens: children and databases are
// cleaned up and the process exits.
const MAX_RUN_SECONDS = Number(process.env.BENCH_MAX_SECONDS ?? 1800);

const RESULTS_DIR = path.resolve(ROOT, process.env.BENCH_RESULTS_DIR || path.join('bench', 'results'));

// What the run has measured so far: written as each scenario ends, and as far
// as it got when the run is interrupted.
const run = {
  startedAt: new Date(),
  database: null as string | null,
  results: {} as Record<string, (ScenarioResult & { code: CodeVersion; elapsedSec: number }) | { scenario: string; error: string }>,
  /** The scenario under way, recorded as failed if the run stops during it. */
  current: null as string | null,
};
/** The run's start as yyyymmddhhmmss (UTC), in its file and database names. */
const STAMP = run.startedAt.toISOString().replace(/\D/g, '').slice(0, 14);

function summary(aborted?: string) {
  return {
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
}

/**
 * Writes the run so far to latest.json and, when `scenario` was measured, its
 * result to <scenario>.json in the shape of the whole summary: what npm run
 * bench:report reads, and what is committed.
 */
async function writeResults(scenario: string | null, aborted?: string) {
  const now = summary(aborted);
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(path.join(RESULTS_DIR, 'latest.json'), `${JSON.stringify(now, null, 2)}\n`);
  const written = ['latest.json'];
  const result = scenario === null ? undefined : run.results[scenario];
  if (scenario !== null && result && 'code' in result) {
    const file = `${scenario}.json`;
    await writeFile(path.join(RESULTS_DIR, file), `${JSON.stringify({ ...now, scenarios: { [scenario]: result } }, null, 2)}\n`);
    written.push(file);
  }
  log(`wrote ${path.relative(ROOT, RESULTS_DIR)}/${written.join(', ')}${aborted ? ' (partial)' : ''}`);
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
    run.current = name;
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
    run.current = null;
    log(`== ${name} done in ${((Date.now() - started) / 1000).toFixed(1)}s`);
    // An abort under way has written (or is writing) the run as it stood.
    if (aborting) break;
    await writeResults(name);
  }
  if (aborting) return 1;
  await cleanupAll();

  process.stdout.write(`${JSON.stringify(summary(), null, 2)}\n`);
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

// An interrupted, overlong or crashed run records the scenario it was in as
// failed with the reason, writes latest.json (before the cleanup, which may
// itself hang on what made the run stop), stops its children, drops its
// databases and stops the embedded cluster, then exits; main() stops
// starting scenarios.
let aborting: Promise<never> | null = null;
function abort(reason: string, code: number): Promise<never> {
  return (aborting ??= (async () => {
    log(`${reason}; cleaning up`);
    if (run.current !== null) run.results[run.current] = { scenario: run.current, error: `the run stopped during this scenario: ${reason}` };
    if (Object.keys(run.results).length) await writeResults(null, reason).catch((err) => log(`could not write the results: ${(err as Error).message}`));
    await cleanupAll();
    process.exit(code);
  })());
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void abort(`received ${signal}`, 130));
process.on('uncaughtException', (err) => void abort(`uncaught exception: ${err.stack ?? err}`, 1));
process.on('unhandledRejection', (err) => void abort(`unhandled rejection: ${(err as Error)?.stack ?? err}`, 1));
setTimeout(() => void abort(`the run exceeded BENCH_MAX_SECONDS=${MAX_RUN_SECONDS}`, 124), MAX_RUN_SECONDS * 1000).unref();

main().then(
  (code) => (aborting ? aborting : process.exit(code)),
  (err) => void abort(`failed: ${(err as Error).stack ?? err}`, 1),
);
