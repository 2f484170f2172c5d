// Phase F: an API key pasted into a URL path, searched for in the service's log.
import { sleep } from '../lib/harness.ts';
import type { Service } from '../lib/service.ts';
import { timedGet } from './clients.ts';

export async function keyInPath(service: Service, logLines: string[]) {
  const failures: string[] = [];
  const key = await service.admin.apiKey(['instruments:read']);
  const secret = key.slice('pk_live_'.length);
  const encoded = key.replace(/_/g, '%5F');
  const first = logLines.length;
  const asked = [
    { path: `/v1/instruments/${key}`, auth: false },
    { path: `/v1/instruments/${key}`, auth: true },
    { path: `/v1/instruments/${encoded}`, auth: false },
    { path: `/${key}`, auth: false },
  ];
  const answers = [];
  for (const a of asked) {
    const r = await timedGet(`${service.publicUrl}${a.path}`, a.auth ? { authorization: `Bearer ${key}` } : {}, false);
    answers.push({
      path: a.path.replace(secret, '<secret>').replace(encoded.slice('pk%5Flive%5F'.length), '<secret>'),
      withKeyHeader: a.auth,
      status: r.status,
    });
  }
  // pino writes asynchronously; give its lines time to reach the pipe.
  await sleep(1_000);
  const lines = logLines.slice(first);
  const secretVariants = [secret, secret.replace(/_/g, '%5F'), encodeURIComponent(secret)];
  const leaking = lines.filter((l) => secretVariants.some((v) => l.includes(v)));
  const requestLines = lines
    .map((l) => {
      try {
        return JSON.parse(l) as { msg?: string; path?: string; status?: number; errorCode?: string };
      } catch {
        return null;
      }
    })
    .filter((l): l is { msg: string; path?: string; status?: number; errorCode?: string } => l?.msg === 'request' && l.path?.includes('pk') === true);
  if (leaking.length) failures.push(`${leaking.length} log lines hold the key's secret part`);
  if (requestLines.length < asked.length)
    failures.push(`only ${requestLines.length} of ${asked.length} request lines were found in the log, so the check is incomplete`);
  return {
    logLevel: 'info',
    requests: answers,
    linesSearched: lines.length,
    linesWithSecret: leaking.length,
    loggedPaths: requestLines.map((l) => ({ path: l.path, status: l.status, errorCode: l.errorCode ?? null })),
    note: "the service's stdout and stderr from its start, searched for the key's secret part (after pk_live_) as it is, with _ percent-encoded, and URI-encoded",
    failures,
  };
}
