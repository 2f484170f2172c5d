import client from 'prom-client';

// One registry for the process. Families are created once here so every module
// observes into the same series; /metrics renders this registry only.
export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });

export const httpRequests = new client.Counter({
  name: 'http_requests_total',
  help: 'HTTP requests by route template and status',
  labelNames: ['listener', 'method', 'route', 'status'] as const,
  registers: [registry],
});

export const httpDuration = new client.Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP request latency by route template and status',
  labelNames: ['listener', 'method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export const authFailures = new client.Counter({
  name: 'auth_failures_total',
  help: 'Rejected /v1 requests by error code (missing, invalid, revoked key; insufficient scope; rate limited)',
  labelNames: ['code'] as const,
  registers: [registry],
});

export const dbQueryDuration = new client.Histogram({
  name: 'db_query_duration_seconds',
  help: 'Database query latency by query name and outcome',
  labelNames: ['query', 'outcome'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30],
  registers: [registry],
});

export const dbQueriesInFlight = new client.Gauge({
  name: 'db_queries_in_flight',
  help: 'Queries sent and not yet answered; compare with db_pool_max_connections',
  registers: [registry],
});

export const dbPoolMax = new client.Gauge({
  name: 'db_pool_max_connections',
  help: 'Configured maximum connections of each postgres.js pool',
  labelNames: ['pool'] as const,
  registers: [registry],
});

const openConnectionProbes = new Map<string, () => Promise<number>>();

export function registerOpenConnectionsProbe(pool: string, probe: () => Promise<number>): void {
  openConnectionProbes.set(pool, probe);
}

new client.Gauge({
  name: 'db_pool_open_connections',
  help: 'Connections this process holds open per pool (read from pg_stat_activity at scrape time; absent when the database is unreachable)',
  labelNames: ['pool'] as const,
  registers: [registry],
  async collect() {
    this.reset();
    for (const [pool, probe] of openConnectionProbes) {
      const open = await Promise.race([probe(), new Promise<null>((r) => setTimeout(() => r(null), 500).unref())]).catch(() => null);
      if (open !== null) this.set({ pool }, open);
    }
  },
});

/** Seconds, for the pool's queue waits (a task for a thread, a request for a read slot). */
const WAIT_BUCKETS = [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5];

export const workerQueueDepth = new client.Gauge({
  name: 'worker_pool_queue_depth',
  help: 'Tasks waiting for a worker thread',
  registers: [registry],
});

export const workerTasksInFlight = new client.Gauge({
  name: 'worker_pool_tasks_in_flight',
  help: 'Tasks admitted to the worker pool (running or queued)',
  registers: [registry],
});

export const workerWait = new client.Histogram({
  name: 'worker_task_wait_seconds',
  help: 'Time a task waited in the worker queue',
  labelNames: ['task'] as const,
  buckets: WAIT_BUCKETS,
  registers: [registry],
});

export const workerRun = new client.Histogram({
  name: 'worker_task_run_seconds',
  help: 'Time a task ran on a worker thread, by task and outcome',
  labelNames: ['task', 'outcome'] as const,
  buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10],
  registers: [registry],
});

export const workerRejected = new client.Counter({
  name: 'worker_tasks_rejected_total',
  help: 'Analytics requests refused because the pool or its read slots were full (answered 503 overloaded)',
  registers: [registry],
});

export const readSlotsWaiting = new client.Gauge({
  name: 'worker_pool_reads_waiting',
  help: 'Bar-reading analytics requests (technicals, correlations, beta) waiting for a read slot',
  registers: [registry],
});

export const readSlotWait = new client.Histogram({
  name: 'worker_read_slot_wait_seconds',
  help: 'Time a bar-reading analytics request waited for a read slot',
  labelNames: ['task'] as const,
  buckets: WAIT_BUCKETS,
  registers: [registry],
});
