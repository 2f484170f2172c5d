import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.ts';
import type { Logger } from '../observability/logger.ts';

export async function resolveAdminToken(config: Config, logger: Logger): Promise<string> {
  if (config.ADMIN_TOKEN) return config.ADMIN_TOKEN;
  const file = path.resolve(config.DATA_DIR, 'admin-token');
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const token = `adm_${randomBytes(32).toString('base64url')}`;
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  // Only where it is: a process's stderr is a log too once a supervisor
  // (systemd, docker compose logs) keeps it, and no secret goes to a log.
  logger.info({ file }, 'admin token generated; read it from the file (mode 0600)');
  return token;
}
