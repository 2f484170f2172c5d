import client, { AggregatorRegistry, type Aggregator, type MetricObjectWithValues, type MetricValue } from 'prom-client';

// One registry for the process. Every family is created here, once, so every
// module observes into the same series; /metrics renders this registry only.
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

export const admissionBatchSize = new client.Histogram({
  name: 'auth_admission_batch_size',
  help: 'Requests resolved and counted by one admission statement (the requests that arrived while the auth pool was busy go together)',
  buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
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

export const dbConnectionsInUse = new client.Gauge({
  name: 'db_pool_connections_in_use',
  help: 'Units of database work running per pool, each holding one connection permit (at most db_pool_max_connections)',
  labelNames: ['pool'] as const,
  registers: [registry],
});

export const dbUnitsWaiting = new client.Gauge({
  name: 'db_pool_waiting',
  help: 'Units of database work waiting for a connection permit per pool',
  labelNames: ['pool'] as const,
  registers: [registry],
});

export const dbAcquireWait = new client.Histogram({
  name: 'db_pool_acquire_wait_seconds',
  help: 'Time a unit of database work waited for a connection permit',
  labelNames: ['pool'] as const,
  buckets: [0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [registry],
});

export const dbRefused = new client.Counter({
  name: 'db_pool_refused_total',
  help: 'Units of database work refused with 503 before running: the server was marked down (unavailable), too many were waiting (queue_full), or none got a permit in time (timeout)',
  labelNames: ['pool', 'reason'] as const,
  registers: [registry],
});

export const dbAvailable = new client.Gauge({
  name: 'db_available',
  help: '1 while the database server is taken as reachable, 0 from a connection failure until a probe succeeds',
  labelNames: ['server'] as const,
  // Across processes, 0 when any process has the server marked down: its requests get 503.
  aggregator: 'min',
  registers: [registry],
});

export const streamsOpen = new client.Gauge({
  name: 'http_streams_open',
  help: 'Streamed responses being written (bulk price downloads)',
  labelNames: ['route'] as const,
  registers: [registry],
});

export const streamsRefused = new client.Counter({
  name: 'http_streams_refused_total',
  help: 'Streamed requests refused at admission: the account already had its share open (account, 429) or the service had its maximum open (service, 503)',
  labelNames: ['route', 'limit'] as const,
  registers: [registry],
});

export const idleClosed = new client.Counter({
  name: 'http_idle_closed_total',
  help: 'Public requests whose connection was closed because it carried nothing either way for CLIENT_IDLE_TIMEOUT_MS (a reader that stopped reading)',
  labelNames: ['listener', 'route'] as const,
  registers: [registry],
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

export const ingestedRows = new client.Counter({
  name: 'ingest_rows_total',
  help: 'Rows of committed uploads (admin API, demo load, derived snapshots) by ingest kind and what the upsert did with each: inserted, updated, unchanged',
  labelNames: ['kind', 'outcome'] as const,
  registers: [registry],
});

export const upstreamDuration = new client.Histogram({
  name: 'upstream_request_duration_seconds',
  help: 'Calls to outside providers (FRED) by endpoint and outcome (ok, http_<status>, unreachable, unreadable)',
  labelNames: ['provider', 'endpoint', 'outcome'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export const macroReads = new client.Counter({
  name: 'macro_series_reads_total',
  help: 'Macro series reads by how they were served: stored (fresh copy), fetched (refreshed first), stale (copy past its window, refresh impossible), unavailable (nothing to serve)',
  labelNames: ['served'] as const,
  registers: [registry],
});

export const passwordHashes = new client.Histogram({
  name: 'password_hash_seconds',
  help: 'Dashboard password hashes (scrypt) on their thread: sign-ins, invitations and passwords set, by outcome',
  labelNames: ['outcome'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5],
  registers: [registry],
});

export const passwordHashesRefused = new client.Counter({
  name: 'password_hashes_refused_total',
  help: 'Password checks refused with 503 because the hashing thread and its short queue were full',
  registers: [registry],
});

export const passwordHashesRunning = new client.Gauge({
  name: 'password_hashes_running',
  help: 'Dashboard password hashes running on their threads now',
  registers: [registry],
});

export const streamsBlocked = new client.Gauge({
  name: 'http_streams_blocked',
  help: 'Streamed responses waiting for their client to take more (slow or stalled readers)',
  labelNames: ['route'] as const,
  registers: [registry],
});

export const streamsPreempted = new client.Counter({
  name: 'http_streams_preempted_total',
  help: 'Streamed responses cut to give their slot to another account: over_share (their account held more than the asking one) or stalled (their client had taken nothing for 10 s)',
  labelNames: ['route', 'reason'] as const,
  registers: [registry],
});

export const connectionsDropped = new client.Counter({
  name: 'http_connections_dropped_total',
  help: 'Connections a listener closed unanswered: as soon as it accepted them, because it had MAX_CONNECTIONS open (max_connections) or their address had MAX_CONNECTIONS_PER_ADDRESS (per_address); or because no byte of a request came within FIRST_BYTE_TIMEOUT_MS (first_byte_timeout)',
  labelNames: ['listener', 'reason'] as const,
  registers: [registry],
});

export const webWorkersServing = new client.Gauge({
  name: 'web_workers_serving',
  help: 'Processes serving the listeners now; WEB_CONCURRENCY of them while none is being replaced',
  registers: [registry],
});

export const webWorkerExits = new client.Counter({
  name: 'web_worker_exits_total',
  help: 'Serving processes that exited while the service was not stopping (each is replaced after a backoff), by how they ended: code_<n> or the signal',
  labelNames: ['how'] as const,
  registers: [registry],
});

export const dbReplicaServing = new client.Gauge({
  name: 'db_replica_serving',
  help: 'Per replica: 1 while it serves reads (reachable, in recovery, replay lag under DATABASE_REPLICA_MAX_LAG_MS), else 0',
  labelNames: ['replica'] as const,
  registers: [registry],
  aggregator: 'min',
});

export const dbReplicaLag = new client.Gauge({
  name: 'db_replica_lag_seconds',
  help: "Per replica: how far its replay is behind the primary's WAL, at the last check (0 when it has replayed the primary's last sampled position)",
  labelNames: ['replica'] as const,
  registers: [registry],
  aggregator: 'max',
});

export const dbReadUnits = new client.Counter({
  name: 'db_read_units_total',
  help: 'Units of read-only work by the server that ran them (primary, replica-N) and why a replica was not used (none_serving, as_of_not_replayed) or why it was retried on the primary (replica_failed)',
  labelNames: ['server', 'reason'] as const,
  registers: [registry],
});

// Export jobs (server/exports/). The job counts and the queue age are read
// from the database, which every process sees alike: across processes the
// largest sample is the service's, not their sum.
export const exportJobs = new client.Gauge({
  name: 'export_jobs',
  help: 'Export jobs by status (queued, running, ready, failed, cancelled, expired), at the last sample',
  labelNames: ['status'] as const,
  registers: [registry],
  aggregator: 'max',
});

export const exportOldestQueued = new client.Gauge({
  name: 'export_oldest_queued_seconds',
  help: 'How long the oldest queued export job has waited to start (0 when none waits), at the last sample',
  registers: [registry],
  aggregator: 'max',
});

export const exportRunnerPolls = new client.Counter({
  name: 'export_runner_polls_total',
  help: 'Polls of the export runners ended (expired files swept, jobs sampled, queued jobs taken), failed ones included: flat for several EXPORTS_POLL_MS, a runner has stopped',
  registers: [registry],
});

export const exportBytesWritten = new client.Counter({
  name: 'export_bytes_written_total',
  help: 'Bytes of export files written (stored in PostgreSQL), by format',
  labelNames: ['format'] as const,
  registers: [registry],
});

export const exportJobDuration = new client.Histogram({
  name: 'export_job_duration_seconds',
  help: 'Export jobs from start to their end, by outcome (ready, failed, cancelled); a job taken again after its process died counts from its last start',
  labelNames: ['outcome'] as const,
  buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600],
  registers: [registry],
});

/** One process's metrics as prom-client reads them, what processes send each other. */
export type ProcessMetrics = MetricObjectWithValues<MetricValue<string>>[];

/**
 * How prom-client's default families combine across processes where its own
 * choice reads wrong for the service: the event loop of the busiest process
 * is what a slow answer waits on (an average hides it), and the service
 * started when its oldest process did. Our families say so where they are
 * declared (db_available: the minimum); the rest add up.
 */
const AGGREGATE_AS: Record<string, Aggregator> = {
  nodejs_eventloop_lag_seconds: 'max',
  nodejs_eventloop_lag_mean_seconds: 'max',
  nodejs_eventloop_lag_p50_seconds: 'max',
  nodejs_eventloop_lag_p90_seconds: 'max',
  nodejs_eventloop_lag_p99_seconds: 'max',
  nodejs_eventloop_lag_stddev_seconds: 'max',
  process_start_time_seconds: 'min',
};

/** The service's families over several processes' metrics, as /metrics writes them. */
export function aggregateMetrics(processes: ProcessMetrics[]): client.Registry {
  const parts = processes.map((metrics) => metrics.map((m) => (AGGREGATE_AS[m.name] ? { ...m, aggregator: AGGREGATE_AS[m.name] } : m)));
  return AggregatorRegistry.aggregate(parts);
}

/** What /metrics answers: this process's registry, or, in a worker of several processes, the service's (server/runtime/primary-link.ts). */
let metricsSource: () => Promise<string> = () => registry.metrics();

export const renderMetrics = () => metricsSource();

export function setMetricsSource(source: () => Promise<string>): void {
  metricsSource = source;
}

/**
 * Clears this process's gauges of resources it has closed. The primary of
 * several processes opens pools and threads only to migrate and load data,
 * then closes them: what they last reported is none of the service's, while
 * its counters (rows the demo load stored) stay true and keep counting.
 * prom-client's default gauges are read again at each scrape.
 */
export function forgetClosedResources(): void {
  for (const metric of registry.getMetricsAsArray()) if (metric instanceof client.Gauge) metric.reset();
}
