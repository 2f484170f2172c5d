// Phase D: SIGTERM to `npm start` (npm, not node): how long until everything is gone.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { benchUuid, dailyBarsCsv, equity, weekdays } from '../lib/data.ts';
import { log, onCleanup, ROOT, sleep } from '../lib/harness.ts';
import { Admin } from '../lib/http.ts';
import { freePort, LOOPBACK, serviceEnv } from '../lib/service.ts';
import { round } from '../lib/stats.ts';
import { downloadFigures, throttledRead, timedGet } from './clients.ts';
import { AS_OF, levelOf, SERIES, SLOW_BYTES_PER_SEC } from './common.ts';

export const SHUTDOWN_GRACE_MS = 10_000;

interface Proc {
  pid: number;
  ppid: number;
  state: string;
  start: string;
  cmdline: string;
}

/** A command line with this checkout's folder and the temporary folder named, not spelled out: results compare across machines. */
function machineNeutral(cmdline: string): string {
  return cmdline.replaceAll(ROOT, '<project>').replaceAll(os.tmpdir(), '<tmp>');
}

function readProc(pid: number): Proc | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after "(comm)": state, ppid, ..., starttime is the 20th of them.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0+$/, '').replace(/\0/g, ' ');
    return { pid, state: rest[0], ppid: Number(rest[1]), start: rest[19], cmdline };
  } catch {
    return null;
  }
}

function allProcs(): Proc[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((d) => readProc(Number(d)))
    .filter((p): p is Proc => p !== null);
}

function descendants(root: number): Proc[] {
  const procs = allProcs();
  const out: Proc[] = [];
  const queue = [root];
  while (queue.length) {
    const parent = queue.shift()!;
    for (const p of procs) {
      if (p.ppid === parent) {
        out.push(p);
        queue.push(p.pid);
      }
    }
  }
  return out;
}

/** Processes started for this DATA_DIR: its path in their command line or DATA_DIR in their environment. */
function holdingDataDir(dataDir: string): Proc[] {
  return allProcs().filter((p) => {
    if (p.cmdline.includes(dataDir)) return true;
    try {
      return readFileSync(`/proc/${p.pid}/environ`, 'utf8').split('\0').includes(`DATA_DIR=${dataDir}`);
    } catch {
      return false;
    }
  });
}

/**
 * Starts `npm start` with the embedded database in `dataDir`, waits for
 * /readyz, optionally opens a slow download, sends SIGTERM to npm's pid and
 * reports how long npm took to exit and what was left 1 s later.
 */
async function npmStartAndTerm(dataDir: string, withDownload: boolean) {
  const failures: string[] = [];
  const [port, adminPort] = [await freePort(), await freePort()];
  const adminToken = `bench-admin-${benchUuid(`${dataDir}-${port}`)}`;
  const publicUrl = `http://${LOOPBACK}:${port}`;
  const env: NodeJS.ProcessEnv = { ...serviceEnv({ port, adminPort, adminToken, dataDir, logLevel: 'info' }), npm_config_update_notifier: 'false' };
  const lines: string[] = [];
  const npm = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (npm.pid === undefined) throw new Error('could not start npm');
  const npmPid = npm.pid;
  for (const stream of [npm.stdout!, npm.stderr!]) {
    stream.setEncoding('utf8');
    let partial = '';
    stream.on('data', (chunk: string) => {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop()!;
      for (const line of parts) {
        if (!line.trim()) continue;
        lines.push(line);
        if (levelOf(line) >= 40 && !line.startsWith('>') && !line.startsWith('npm warn')) process.stderr.write(`  [npm start] ${line}\n`);
      }
    });
  }
  let exitAt = 0;
  let exitCode: number | null = null;
  let exitSignal: string | null = null;
  const exited = new Promise<void>((resolve) =>
    npm.once('exit', (code, signal) => {
      exitAt = performance.now();
      exitCode = code;
      exitSignal = signal;
      resolve();
    }),
  );
  // Whatever is left of this start is ended by pid: npm's tree as last seen, and anything holding the DATA_DIR.
  let tree: Proc[] = [];
  const kill = onCleanup(`npm start (${npmPid})`, async () => {
    for (const p of [{ pid: npmPid } as Proc, ...tree, ...holdingDataDir(dataDir)]) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await Promise.race([exited, sleep(5_000)]);
  });
  try {
    const started = performance.now();
    for (;;) {
      if (exitAt) throw new Error(`npm start exited before it was ready (code ${exitCode}, signal ${exitSignal}): ${lines.slice(-3).join(' | ')}`);
      if (performance.now() - started > 180_000) throw new Error('npm start was not ready within 180 s');
      const ready = await timedGet(`${publicUrl}/readyz`, {}, false, 2_000);
      if (ready.status === 200) break;
      await sleep(100);
    }
    const readySec = round((performance.now() - started) / 1000, 2);

    let download: ReturnType<typeof throttledRead> | null = null;
    let downloadIds: string[] = [];
    let barsEach = 0;
    if (withDownload) {
      const admin = new Admin(`http://${LOOPBACK}:${adminPort}`, adminToken);
      // 10 instruments × 30 years is about 18 MB: at 250 KiB/s over a minute,
      // so still running when the grace period ends.
      downloadIds = Array.from({ length: 10 }, (_, i) => benchUuid(`resilience-shutdown-${i}`)).sort();
      const dates = weekdays(SERIES.from, SERIES.to);
      barsEach = dates.length;
      await admin.ok(
        'POST',
        '/instruments',
        downloadIds.map((id, i) => equity(`Shutdown Equity ${i}`, `SD${i}`, id)),
      );
      const loaded = await admin.postStream('/bars/daily', 'text/csv', dailyBarsCsv(downloadIds, dates, AS_OF));
      if (loaded.status !== 200) throw new Error(`daily bar load answered ${loaded.status}: ${loaded.text.slice(0, 300)}`);
      const key = await admin.apiKey(['prices:read']);
      download = throttledRead(
        `${publicUrl}/v1/prices/bulk?instrumentIds=${downloadIds.join(',')}&from=${SERIES.from}&to=${SERIES.to}`,
        { authorization: `Bearer ${key}` },
        SLOW_BYTES_PER_SEC,
        60_000,
      );
      await sleep(2_000);
    }

    tree = descendants(npmPid);
    const service = tree.find((p) => p.cmdline.includes('server/main.ts'));
    const postmaster = tree.find((p) => p.cmdline.includes(`${dataDir}/pg`));
    const downloadBytesAtSignal = download?.bytes() ?? null;
    const signalledWall = Date.now();
    const signalled = performance.now();
    process.kill(npmPid, 'SIGTERM');
    // When the service's own process is gone, polled every 20 ms beside npm's exit.
    let serviceGoneSec: number | null = null;
    const watchService = (async () => {
      while (service && performance.now() - signalled < 30_000) {
        const now = readProc(service.pid);
        if (!now || now.start !== service.start || now.state === 'Z') {
          serviceGoneSec = round((performance.now() - signalled) / 1000, 2);
          return;
        }
        await sleep(20);
      }
    })();
    await Promise.race([exited, sleep(30_000)]);
    await watchService;
    const exitSec = exitAt ? round((exitAt - signalled) / 1000, 2) : null;
    const downloadBytesAtExit = download?.bytes() ?? null;
    await sleep(1_000);
    const stillThere = new Map<number, Proc>();
    for (const p of tree) {
      const now = readProc(p.pid);
      if (now && now.start === p.start && now.state !== 'Z') stillThere.set(p.pid, now);
    }
    for (const p of holdingDataDir(dataDir)) if (p.state !== 'Z') stillThere.set(p.pid, p);
    const left = [...stillThere.values()].map((p) => ({ pid: p.pid, state: p.state, cmdline: machineNeutral(p.cmdline).slice(0, 160) }));

    if (exitSec === null) failures.push('npm had not exited 30 s after SIGTERM');
    else if (exitSec > SHUTDOWN_GRACE_MS / 1000 + 1) failures.push(`npm exited ${exitSec} s after SIGTERM (required within ${SHUTDOWN_GRACE_MS / 1000 + 1} s)`);
    if (left.length)
      failures.push(`${left.length} processes of the service were left 1 s after npm exited: ${left.map((p) => p.cmdline.slice(0, 60)).join('; ')}`);

    let inFlight: Record<string, unknown> | null = null;
    if (download) {
      const r = await download.done;
      inFlight = {
        ...downloadFigures(r, downloadIds, barsEach),
        bytesAtSignal: downloadBytesAtSignal,
        bytesAtNpmExit: downloadBytesAtExit,
        // The socket buffers on both sides (several MB on loopback) still
        // hold what the service wrote before it closed the connection, so
        // the reader sees the cut only once it has read through them.
        endedAfterSignalSec: round((r.endedAt - signalled) / 1000, 2),
      };
    }
    // Seconds from the signal to a line of the service's log, by the line's own time.
    const loggedAt = (msg: string) => {
      const line = lines.find((l) => l.includes(msg));
      if (!line) return null;
      return round((Date.parse((JSON.parse(line) as { time: string }).time) - signalledWall) / 1000, 2);
    };
    return {
      withDownload,
      readySec,
      processesBeforeSignal: tree.map((p) => machineNeutral(p.cmdline).slice(0, 100)),
      servicePid: service?.pid ?? null,
      postmasterPid: postmaster?.pid ?? null,
      exitSec,
      exitCode,
      exitSignal,
      left,
      serviceGoneSec,
      serviceLoggedSec: {
        shuttingDown: loggedAt('"msg":"shutting down"'),
        graceExceeded: loggedAt('outlived the grace period'),
        shutdownComplete: loggedAt('"msg":"shutdown complete"'),
      },
      ...(inFlight ? { download: inFlight } : {}),
      failures,
    };
  } finally {
    await kill();
  }
}

export async function shutdownThroughNpm() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mds-bench-npm-'));
  const removeDir = onCleanup('npm start data dir', () => rm(dir, { recursive: true, force: true }));
  try {
    // Reachable by the postgres user, so the embedded cluster stays in DATA_DIR/pg.
    await chmod(dir, 0o755);
    const dataDir = path.join(dir, 'data');
    await mkdir(dataDir, { mode: 0o755 });
    await chmod(dataDir, 0o755);
    log('resilience: D: npm start, idle');
    const idle = await npmStartAndTerm(dataDir, false);
    log(`resilience: D: idle: npm exited ${idle.exitSec} s after SIGTERM, ${idle.left.length} processes left`);
    log('resilience: D: npm start, a slow download open at the signal');
    const busy = await npmStartAndTerm(dataDir, true);
    log(`resilience: D: with a download: npm exited ${busy.exitSec} s after SIGTERM, ${busy.left.length} processes left`);
    return {
      database: "embedded (no DATABASE_URL), DATA_DIR under a fresh temporary folder (mode 0755); the second start reuses the first start's cluster",
      graceMs: SHUTDOWN_GRACE_MS,
      clusterInDataDir: existsSync(path.join(dataDir, 'pg', 'PG_VERSION')),
      idle,
      withDownload: busy,
      failures: [...idle.failures.map((f) => `idle: ${f}`), ...busy.failures.map((f) => `with a download: ${f}`)],
    };
  } finally {
    await removeDir();
  }
}
