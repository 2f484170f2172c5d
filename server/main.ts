import { loadConfigOrExit } from './config.ts';
import { createLogger } from './logger.ts';
import { startRuntime } from './runtime.ts';

const config = loadConfigOrExit();
const logger = createLogger(config.LOG_LEVEL);
const runtime = await startRuntime(config, logger);
logger.info({ public: runtime.publicUrl, admin: runtime.adminUrl, tier: runtime.migration.tier }, 'market-data-service listening');

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
