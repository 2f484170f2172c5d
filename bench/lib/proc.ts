// What a process costs, from /proc: RSS and peak RSS, CPU per thread and run-queue wait.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { round } from './stats.ts';

export interface ProcStatus {
  rssKb: number;
  hwmKb: number;
}

/** VmRSS and VmHWM (peak RSS) of a process, from /proc/<pid>/status. */
export function procStatus(pid: number): ProcStatus {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => {
    const m = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm').exec(text);
    if (!m) throw new Error(`no ${name} in /proc/${pid}/status`);
    return Number(m[1]);
  };
  return { rssKb: field('VmRSS'), hwmKb: field('VmHWM') };
}

/** Resets the peak-RSS counter (VmHWM) of a process we own; false when the kernel refuses. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** Samples a process's VmRSS every `everyMs` until stopped; returns the largest sample. */
export function sampleRss(pid: number, everyMs = 50) {
  let maxKb = 0;
  let samples = 0;
  const tick = () => {
    try {
      maxKb = Math.max(maxKb, procStatus(pid).rssKb);
      samples++;
    } catch {
      // the process is gone; the caller notices elsewhere
    }
  };
  tick();
  const timer = setInterval(tick, everyMs);
  return {
    stop() {
      clearInterval(timer);
      tick();
      return { maxRssKb: maxKb, samples };
    },
  };
}

interface ThreadTimes {
  nice: number;
  /** User + system CPU, seconds. */
  cpuSec: number;
  /** Time spent runnable but waiting for a CPU (schedstat), seconds. */
  waitSec: number;
}

/** User + system CPU (clock ticks of 1/100 s) and nice value from a /proc stat file (a process's or a thread's). */
function statTimes(file: string): { cpuSec: number; nice: number } {
  const stat = readFileSync(file, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the command: utime and stime are fields 14 and 15, nice 19 (1-based over the whole line).
  return { cpuSec: (Number(f[11]) + Number(f[12])) / 100, nice: Number(f[16]) };
}

/** Per-thread CPU and run-queue wait of a process, from /proc/<pid>/task/<tid>/{stat,schedstat}. */
function threadTimes(pid: number): Map<number, ThreadTimes> {
  const out = new Map<number, ThreadTimes>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out; // the process is gone
  }
  for (const tid of tids) {
    try {
      const sched = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
      out.set(Number(tid), { ...statTimes(`/proc/${pid}/task/${tid}/stat`), waitSec: Number(sched[1]) / 1e9 });
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}

/** Pids of the local PostgreSQL server's processes (its backends included). */
function postgresPids(): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return readFileSync(`/proc/${d}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    })
    .map(Number);
}

/**
 * Where the CPU went over a window, in % of one core: the service's request
 * thread (with the share of the window it spent runnable but waiting for a
 * CPU), its worker threads (those at `workerNice`), its other threads (V8's
 * garbage-collection and compiler helpers), and the local PostgreSQL.
 */
export function cpuAccount(servicePid: number, workerNice: number) {
  const snap = () => ({ at: performance.now(), service: threadTimes(servicePid), postgres: postgresPids().map((p) => threadTimes(p)) });
  const before = snap();
  return () => {
    const after = snap();
    const sec = (after.at - before.at) / 1000;
    const pct = (n: number) => round((100 * n) / sec, 1);
    const delta = (a: Map<number, ThreadTimes>, b: Map<number, ThreadTimes>, pick: (tid: number, t: ThreadTimes) => boolean, field: 'cpuSec' | 'waitSec') =>
      [...a].filter(([tid, t]) => pick(tid, t)).reduce((n, [tid, t]) => n + t[field] - (b.get(tid)?.[field] ?? 0), 0);
    const isWorker = (tid: number, t: ThreadTimes) => tid !== servicePid && workerNice > 0 && t.nice === workerNice;
    const pgBefore = new Map(before.postgres.flatMap((m) => [...m]));
    const pgAfter = new Map(after.postgres.flatMap((m) => [...m]));
    return {
      windowSec: round(sec, 2),
      requestThread: {
        cpuPct: pct(delta(after.service, before.service, (tid) => tid === servicePid, 'cpuSec')),
        runQueueWaitPct: pct(delta(after.service, before.service, (tid) => tid === servicePid, 'waitSec')),
      },
      workerThreadsCpuPct: pct(delta(after.service, before.service, isWorker, 'cpuSec')),
      otherServiceThreadsCpuPct: pct(delta(after.service, before.service, (tid, t) => tid !== servicePid && !isWorker(tid, t), 'cpuSec')),
      postgresCpuPct: pct(delta(pgAfter, pgBefore, () => true, 'cpuSec')),
    };
  };
}

/** User + system CPU seconds a process has used so far, all its threads. */
export function cpuSeconds(pid: number): number {
  return statTimes(`/proc/${pid}/stat`).cpuSec;
}
