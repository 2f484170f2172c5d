import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';

/** Debian's chromium package, found on PATH (CHROMIUM_PATH overrides). */
export const CHROMIUM =
  process.env.CHROMIUM_PATH ??
  (process.env.PATH ?? '')
    .split(path.delimiter)
    .flatMap((dir) => ['chromium', 'chromium-browser'].map((name) => path.join(dir, name)))
    .find((p) => existsSync(p));

/**
 * Whether the browser tests are skipped: only when no chromium is installed
 * and this is not CI. .ci/run installs chromium, so in CI (CI=true) they run,
 * and a missing browser fails them.
 */
export const SKIP_BROWSER = !CHROMIUM && !process.env.CI;

/** Headless Chromium driven by playwright-core (root in CI: no sandbox). */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM ?? 'chromium', args: ['--no-sandbox'] });
}
