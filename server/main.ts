import cluster from 'node:cluster';
import { loadConfigOrExit } from './config.ts';
import { EmbeddedPostgresError } from './db/cluster-placement.ts';
import { PoolerRefusal } from './db/pooler.ts';
import { ListenError } from './runtime/listener.ts';
import { createLogger } from './observability/logger.ts';
import { webWorkersServing } from './observability/metrics.ts';
import { primaryLink } from './runtime/primary-link.ts';
import { ServingProcesses, StartRefusal } from './runtime/processes.ts';
import { Runtime } from './runtime/lifecycle.ts';

const config = loadConfigOrExit();
const passwordOf = (url: string | undefined) => (url ? decodeURIComponent(new URL(url).password) || undefined : undefined);
const logger = createLogger(config.LOG_LEVEL, [
  config.ADMIN_TOKEN,
  config.FRED_API_KEY,
  passwordOf(config.DATABASE_URL),
  passwordOf(config.DATABASE_DIRECT_URL),
  ...config.DATABASE_REPLICA_URLS.map(passwordOf),
]);
// Several processes write to one stream: each line names its process.
if (config.WEB_CONCURRENCY > 1) logger.setBindings({ pid: process.pid });

/** Why start failed, as the one line `npm start` prints: a refusal the user can act on is its one line; anything else is logged whole first. */
function startFailure(err: unknown): string {
  const refusal = err instanceof EmbeddedPostgresError || err instanceof ListenError || err instanceof StartRefusal || err instanceof PoolerRefusal;
  if (!refusal) logger.fatal({ err }, 'start failed');
  return (err as Error).message;
}

/** Installed before start, so a signal while the service waits for its database stops it as promptly as one while it serves. */
function onStopSignal(stop: () => Promise<boolean>): { readonly signalled: boolean } {
  const state = { signalled: false };
  const handle = (signal: string) => {
    if (state.signalled) return;
    state.signalled = true;
    logger.info({ signal }, 'shutting down');
    stop().then(
      (clean) => {
        logger.info('shutdown complete');
        process.exit(clean ? 0 : 1);
      },
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => handle(signal));
  return state;
}

if (cluster.isPrimary && config.WEB_CONCURRENCY > 1) {
  const processes = new ServingProcesses(config, logger);
  const stop = onStopSignal(() => processes.stop());
  try {
    const { publicUrl, adminUrl, tier, pids } = await processes.start();
    logger.info({ public: publicUrl, admin: adminUrl, tier, processes: pids }, 'market-data-service ready');
  } catch (err) {
    // A signal during start stops it; the handler exits.
    if (!stop.signalled) {
      const line = startFailure(err);
      await processes.stop();
      process.stderr.write(`market-data-service could not start: ${line}\n`);
      process.exit(1);
    }
  }
} else {
  const runtime = new Runtime(config, logger);
  const stop = onStopSignal(() => runtime.stop().then(() => true));
  try {
    if (primaryLink) {
      const link = primaryLink;
      await runtime.start({ prepared: () => link.preparedAfterListening(runtime.publicUrl, runtime.adminUrl) });
      link.ready();
    } else {
      await runtime.start();
      webWorkersServing.set(1);
      logger.info({ public: runtime.publicUrl, admin: runtime.adminUrl, tier: runtime.migration?.tier }, 'market-data-service ready');
    }
  } catch (err) {
    if (!stop.signalled) {
      const line = startFailure(err);
      // One of several: the primary prints the line for the whole start.
      if (primaryLink) primaryLink.failed(line);
      else {
        process.stderr.write(`market-data-service could not start: ${line}\n`);
        process.exit(1);
      }
    }
  }
}
