import { loadConfigOrExit } from './config.ts';
import { EmbeddedPostgresError } from './db/cluster-placement.ts';
import { createLogger } from './logger.ts';
import { ListenError, Runtime } from './runtime.ts';

const config = loadConfigOrExit();
const passwordOf = (url: string | undefined) => (url ? decodeURIComponent(new URL(url).password) || undefined : undefined);
const logger = createLogger(config.LOG_LEVEL, [config.ADMIN_TOKEN, config.FRED_API_KEY, passwordOf(config.DATABASE_URL), passwordOf(config.DATABASE_READ_URL)]);
const runtime = new Runtime(config, logger);

// Installed before start, so a signal while the service waits for its
// database stops it as promptly as one while it serves.
let signalled = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (signalled) return;
    signalled = true;
    logger.info({ signal }, 'shutting down');
    runtime.stop().then(
      () => {
        logger.info('shutdown complete');
        process.exit(0);
      },
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}

try {
  await runtime.start();
  logger.info({ public: runtime.publicUrl, admin: runtime.adminUrl, tier: runtime.migration?.tier }, 'market-data-service ready');
} catch (err) {
  // A signal during start stops it; the handler above exits.
  if (!signalled) {
    // A refusal the user can act on is its one line; anything else is logged whole.
    if (!(err instanceof EmbeddedPostgresError || err instanceof ListenError)) logger.fatal({ err }, 'start failed');
    process.stderr.write(`market-data-service could not start: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
