// Phase C: PostgreSQL stopped for 20 s and started again under 2 requests/s.
import http from 'node:http';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../server/db/embedded.ts';
import { benchUuid, equity } from '../lib/data.ts';
import { log, onCleanup, sleep } from '../lib/harness.ts';
import type { ServiceStatus } from '../lib/http.ts';
import { startService, type OutputOptions } from '../lib/service.ts';
import { latencySummary, round } from '../lib/stats.ts';
import { timedGet } from './clients.ts';
import { levelOf } from './common.ts';

export const OUTAGE_MS = 20_000;
export const OUTAGE_ANSWER_MS = 1_000;
export const RECOVERY_MS = 5_000;

export async function databaseOutage() {
  const failures: string[] = [];
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mds-bench-outage-'));
  // As root the cluster runs as the postgres user, which must reach the directory.
  await chmod(dir, 0o755);
  let readyAt = 0;
  const onLog = (text: string) => {
    if (text.includes('database system is ready to accept connections')) readyAt = performance.now();
  };
  const start = () => startEmbeddedPostgres(path.join(dir, 'pg'), { persistent: true, onLog, onNotice: log });
  let db: EmbeddedDatabase | null = await start();
  const dropCluster = onCleanup('outage postgres', async () => {
    await db?.stop();
    await rm(dir, { recursive: true, force: true });
  });
  let down: string | null = null;
  let back: string | null = null;
  const output: OutputOptions = {
    onLine: (line) => {
      if (line.includes('database unreachable: refusing')) down = line;
      if (line.includes('database reachable again')) back = line;
    },
    echo: (line) => levelOf(line) >= 40,
  };
  const service = await startService(db.url, { env: { LOG_LEVEL: 'info' }, output });
  try {
    const status: ServiceStatus = await service.admin.status();
    const id = benchUuid('resilience-outage');
    await service.admin.ok('POST', '/instruments', [equity('Outage Equity', 'OUTG', id)]);
    const key = await service.admin.apiKey(['instruments:read']);

    // Open loop at 2 requests/s over one keep-alive agent, like a polling client.
    const agent = new http.Agent({ keepAlive: true });
    const samples: { sentAt: number; status: number; ms: number; error?: string }[] = [];
    const pending: Promise<void>[] = [];
    let running = true;
    const loopStart = performance.now();
    const loop = (async () => {
      for (let i = 0; running; i++) {
        const wait = loopStart + i * 500 - performance.now();
        if (wait > 0) await sleep(wait);
        if (!running) break;
        const sentAt = performance.now();
        pending.push(
          timedGet(`${service.publicUrl}/v1/instruments/${id}`, { authorization: `Bearer ${key}` }, agent, 10_000).then((a) => {
            samples.push({ sentAt, status: a.status, ms: a.ms, ...(a.error ? { error: a.error } : {}) });
          }),
        );
      }
    })();

    await sleep(10_000);
    const stopCalled = performance.now();
    log('resilience: C: stopping PostgreSQL');
    await db.stop();
    db = null;
    const stopped = performance.now();
    await sleep(OUTAGE_MS);
    log('resilience: C: starting PostgreSQL again');
    const restartCalled = performance.now();
    readyAt = 0;
    db = await start();
    const restarted = performance.now();
    // Should the ready line have been split across two reads of its output, the restart's return stands in for it.
    if (!readyAt) readyAt = restarted;
    // Until the first 200 after the restart and 5 s more, at most 30 s.
    const until = performance.now() + 30_000;
    for (;;) {
      const firstOk = samples.find((s) => s.sentAt >= readyAt && s.status === 200);
      if (performance.now() > until || (firstOk && performance.now() > firstOk.sentAt + firstOk.ms + 5_000)) break;
      await sleep(100);
    }
    running = false;
    await loop;
    await Promise.all(pending);
    agent.destroy();

    samples.sort((a, b) => a.sentAt - b.sentAt);
    const figures = (rows: typeof samples) => {
      const statuses: Record<string, number> = {};
      for (const s of rows) statuses[s.status || 'none'] = (statuses[s.status || 'none'] ?? 0) + 1;
      return { requests: rows.length, statuses, latencyMs: rows.length ? latencySummary(rows.map((s) => s.ms)) : null };
    };
    // A request still unanswered when the stop began counts as made while stopping.
    const before = samples.filter((s) => s.sentAt + s.ms < stopCalled);
    const stopping = samples.filter((s) => s.sentAt + s.ms >= stopCalled && s.sentAt < stopped);
    const outage = samples.filter((s) => s.sentAt >= stopped && s.sentAt < readyAt);
    const afterReady = samples.filter((s) => s.sentAt >= readyAt);
    const firstOk = afterReady.find((s) => s.status === 200);
    const recoveryMs = firstOk ? firstOk.sentAt + firstOk.ms - readyAt : null;

    if (before.some((s) => s.status !== 200))
      failures.push(`before the outage ${before.filter((s) => s.status !== 200).length} requests were not answered 200`);
    const notFast503 = outage.filter((s) => s.status !== 503 || s.ms > OUTAGE_ANSWER_MS);
    if (!outage.length) failures.push('no request was made during the outage');
    if (notFast503.length)
      failures.push(
        `${notFast503.length} of ${outage.length} requests made while PostgreSQL was down were not answered 503 within ${OUTAGE_ANSWER_MS} ms (e.g. status ${notFast503[0].status} after ${round(notFast503[0].ms)} ms)`,
      );
    const slowWhileStopping = stopping.filter((s) => ![200, 503].includes(s.status) || s.ms > OUTAGE_ANSWER_MS);
    if (slowWhileStopping.length)
      failures.push(`${slowWhileStopping.length} requests in flight while PostgreSQL stopped were not answered 200 or 503 within ${OUTAGE_ANSWER_MS} ms`);
    if (recoveryMs === null) failures.push('no 200 after PostgreSQL came back');
    else if (recoveryMs > RECOVERY_MS)
      failures.push(`the first 200 came ${round(recoveryMs)} ms after PostgreSQL accepted connections again (required within ${RECOVERY_MS} ms)`);
    const afterRecovery = firstOk ? afterReady.filter((s) => s.sentAt > firstOk.sentAt) : [];
    if (afterRecovery.some((s) => s.status !== 200))
      failures.push(`after the first 200, ${afterRecovery.filter((s) => s.status !== 200).length} requests were not answered 200`);
    const logged = (line: string | null) => {
      if (!line) return null;
      const { msg, downMs, reason } = JSON.parse(line) as { msg: string; downMs?: number; reason?: string };
      return { msg, ...(downMs !== undefined ? { downMs } : {}), ...(reason !== undefined ? { reason } : {}) };
    };
    return {
      postgres: {
        kind: 'embedded (startEmbeddedPostgres from server/db/embedded.ts, persistent cluster, the same directory (so the same socket) on restart; as root it runs as the postgres user)',
        serverVersion: status.database.serverVersion,
        stopSec: round((stopped - stopCalled) / 1000, 2),
        downSec: round((restartCalled - stopped) / 1000, 2),
        restartToAcceptingSec: round((readyAt - restartCalled) / 1000, 2),
        restartCallSec: round((restarted - restartCalled) / 1000, 2),
      },
      requestRatePerSec: 2,
      beforeOutage: figures(before),
      whileStopping: figures(stopping),
      duringOutage: figures(outage),
      afterAcceptingAgain: figures(afterReady),
      firstOkAfterAcceptingMs: recoveryMs === null ? null : round(recoveryMs),
      serviceLog: { down: logged(down), back: logged(back) },
      failures,
    };
  } finally {
    await service.stop();
    await dropCluster();
  }
}
