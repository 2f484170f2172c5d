import os from 'node:os';
import { Piscina, transferableSymbol, valueSymbol } from 'piscina';
import type { ClosedFormName, ClosedForms, TaskName, Tasks } from './contract.ts';
import { CLOSED_FORMS } from './closed-forms.ts';
import {
  readSlotsWaiting,
  readSlotWait,
  workerQueueDepth,
  workerRejected,
  workerRun,
  workerTasksInFlight,
  workerWait,
} from '../server/observability/metrics.ts';
import { AppError } from '../server/core/errors.ts';
import { PermitRefused, Semaphore } from '../server/core/semaphore.ts';

interface WorkerPoolOptions {
  threads?: number;
  /** Tasks allowed to wait beyond one per thread before new ones are shed. */
  maxQueue: number;
  taskTimeoutMs: number;
  /** Added to each worker thread's nice value (Linux: per thread), so the request thread and the database win the CPU from heavy analytics. */
  niceIncrement?: number;
}

// The threads load the task modules by this URL; the request thread never
// does. It loads only the closed forms (workers/closed-forms.ts: the pricing
// modules, no library), which it computes itself.
const TASKS_MODULE = new URL('./tasks.ts', import.meta.url).href;

/**
 * Computes a closed form on the calling thread (workers/closed-forms.ts):
 * a few microseconds, less than a hop to a thread and back.
 */
export function closedForm<K extends ClosedFormName>(name: K, input: ClosedForms[K]['input']): ClosedForms[K]['result'] {
  return CLOSED_FORMS[name](input);
}

const MOVED = Symbol('moved');

/** A task input whose typed arrays go to the thread by transfer (see move). */
export interface Moved<T> {
  readonly [MOVED]: T;
  readonly buffers: ArrayBuffer[];
}

/**
 * Hands `input` to its task's thread: the typed arrays in it that own their
 * whole buffer are transferred (piscina's move()), not copied, and are
 * detached here. The caller must not read them afterwards.
 */
export function move<T>(input: T): Moved<T> {
  return { [MOVED]: input, buffers: ownedBuffers(input) };
}

const isMoved = <T>(input: T | Moved<T>): input is Moved<T> => typeof input === 'object' && input !== null && MOVED in input;

/** A task's message with the buffers piscina is to transfer, in piscina's Transferable protocol. */
class TaskTransfer {
  readonly #message: object;
  readonly #buffers: ArrayBuffer[];
  constructor(message: object, buffers: ArrayBuffer[]) {
    this.#message = message;
    this.#buffers = buffers;
  }
  get [transferableSymbol](): object {
    return this.#buffers;
  }
  get [valueSymbol](): object {
    return this.#message;
  }
}

/**
 * The one piscina pool. Heavy analytics run on its threads (workers/entry.cjs
 * loads the pure task modules of workers/) so the event loop keeps answering
 * cheap requests. The pool itself is request-side admission control, so it
 * lives in server/ with the errors and metrics it reports through.
 *
 * Admission is capped: past threads + maxQueue tasks in flight a request is
 * shed with 503 overloaded and Retry-After, because a queue that grows
 * without bound turns overload into timeouts for everyone.
 * Each task carries an AbortSignal timeout, so a pathological input cannot
 * hold a thread for ever.
 *
 * Requests that read bars before computing (technicals, correlations, beta)
 * also take a read slot for their whole course, from the first query to the
 * result: `threads` of them (the number of cores when tasks run inline) at a
 * time, the rest waiting in line, at most maxQueue, then shed the same way.
 * A bar read keeps a database backend busy for several milliseconds of CPU;
 * more concurrent reads than threads could ever compute only crowd the
 * database and the request thread, which every cheap request also needs.
 */
export class WorkerPool {
  readonly threads: number;
  /**
   * null when threads is 0: tasks then run on the main thread (for benchmarks
   * and diagnosis only), which loads workers/tasks.ts at the first task.
   * With threads, only the pool's threads load it.
   */
  private readonly piscina: Piscina | null;
  /** Tasks admitted, running or queued for a thread: threads + maxQueue of them, none waiting for admission. */
  private readonly admitted: Semaphore;
  /** Bar-reading requests served at once (see the class comment). */
  readonly readSlots: number;
  /** The read slots: readSlots permits, maxQueue requests waiting in arrival order, each for as long as the ones ahead take. */
  private readonly reads: Semaphore;

  private readonly options: WorkerPoolOptions;

  constructor(options: WorkerPoolOptions) {
    this.options = options;
    this.threads = options.threads ?? os.availableParallelism();
    const capacity = this.threads + options.maxQueue;
    this.admitted = new Semaphore(capacity, 0, (inUse) => workerTasksInFlight.set(inUse));
    this.readSlots = this.threads || os.availableParallelism();
    this.reads = new Semaphore(this.readSlots, options.maxQueue, (_inUse, waiting) => readSlotsWaiting.set(waiting));
    this.piscina =
      this.threads === 0
        ? null
        : new Piscina({
            filename: new URL('./entry.cjs', import.meta.url).href,
            minThreads: this.threads,
            maxThreads: this.threads,
            // Our own admission cap decides; piscina's queue never refuses first.
            maxQueue: capacity,
            idleTimeout: 60_000,
            niceIncrement: options.niceIncrement ?? 0,
          });
    workerQueueDepth.set(0);
  }

  get queueDepth(): number {
    return this.piscina?.queueSize ?? 0;
  }

  /** Runs `fn`, a request that reads bars and then runs `task`, in a read slot (see the class comment). */
  async withReadSlot<T>(task: TaskName, fn: () => Promise<T>): Promise<T> {
    if (this.reads.tryAcquire()) {
      readSlotWait.observe({ task }, 0);
    } else {
      const queuedAt = performance.now();
      try {
        await this.reads.acquire(Infinity);
      } catch (err) {
        // Waits have no deadline, so the one refusal is a full line ('queue_full').
        if (err instanceof PermitRefused) throw overloaded();
        throw err;
      }
      readSlotWait.observe({ task }, (performance.now() - queuedAt) / 1000);
    }
    try {
      return await fn();
    } finally {
      // The slot passes straight to the next in line, or is freed.
      this.reads.release();
    }
  }

  /** Runs `task` on a thread; an input passed through move() hands its typed arrays over instead of copying them. */
  async run<K extends TaskName>(task: K, input: Tasks[K]['input'] | Moved<Tasks[K]['input']>): Promise<Tasks[K]['result']> {
    if (!this.admitted.tryAcquire()) throw overloaded();
    const queuedAt = performance.now();
    try {
      const message = { task, input: isMoved(input) ? input[MOVED] : input, queuedAt: performance.timeOrigin + queuedAt };
      const { result, waitMs, runMs } = (
        this.piscina
          ? await this.piscina.run(isMoved(input) ? Piscina.move(new TaskTransfer(message, input.buffers)) : message, {
              name: 'dispatch',
              signal: AbortSignal.timeout(this.options.taskTimeoutMs),
            })
          : ((await import(TASKS_MODULE)) as typeof import('./tasks.ts')).dispatch(message)
      ) as { result: Tasks[K]['result']; waitMs: number; runMs: number };
      workerWait.observe({ task }, waitMs / 1000);
      workerRun.observe({ task, outcome: 'ok' }, runMs / 1000);
      return result;
    } catch (err) {
      if ((err as Error)?.name === 'AbortError') {
        workerRun.observe({ task, outcome: 'timeout' }, this.options.taskTimeoutMs / 1000);
        throw new AppError('overloaded', `the ${task} computation exceeded ${this.options.taskTimeoutMs} ms`, {}, { 'Retry-After': '1' });
      }
      workerRun.observe({ task, outcome: 'error' }, (performance.now() - queuedAt) / 1000);
      throw err;
    } finally {
      this.admitted.release();
      workerQueueDepth.set(this.queueDepth);
    }
  }

  async destroy(): Promise<void> {
    await this.piscina?.destroy();
  }
}

function overloaded(): AppError {
  workerRejected.inc();
  return new AppError('overloaded', 'the analytics workers are saturated; retry shortly', {}, { 'Retry-After': '1' });
}

/** The buffers of the typed arrays in `value` (plain objects and arrays, walked) that span their whole buffer. */
function ownedBuffers(value: unknown, out = new Set<ArrayBuffer>()): ArrayBuffer[] {
  if (ArrayBuffer.isView(value)) {
    if (value.buffer instanceof ArrayBuffer && value.byteOffset === 0 && value.byteLength === value.buffer.byteLength) out.add(value.buffer);
  } else if (Array.isArray(value)) {
    for (const v of value) ownedBuffers(v, out);
  } else if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) ownedBuffers(v, out);
  }
  return [...out];
}
