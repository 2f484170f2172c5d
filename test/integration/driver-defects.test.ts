import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../server/config.ts';
import { databaseUrl } from './harness.ts';

const run = promisify(execFile);

// A connection whose statement_timeout (1 ms) cancels postgres.js's own
// array-types query (porsager/postgres#1205): in a process of its own, since
// the rejection it leaves unhandled is what is under test.
const script = (guarded: boolean) => `
  import { sqlClient } from ${JSON.stringify(path.join(PROJECT_ROOT, 'server/db/sql.ts'))};
  import { survivePostgresTypesFetchFailures } from ${JSON.stringify(path.join(PROJECT_ROOT, 'server/db/driver-defects.ts'))};
  let warned;
  // Without the guard the process ends at the unhandled rejection; with it, it goes on once the guard has warned.
  // 10 s bounds a run in which neither happens.
  const outcome = new Promise((resolve) => {
    const deadline = setTimeout(resolve, 10_000);
    warned = () => (clearTimeout(deadline), resolve());
  });
  if (${guarded}) survivePostgresTypesFetchFailures({ warn: (o, m) => (console.log('warned:', m), warned()) });
  const sql = sqlClient(process.env.URL, { max: 1, connection: { statement_timeout: 1 }, onnotice: () => {} });
  await sql\`select pg_sleep(0.01)\`.catch((err) => console.log('query failed:', err.code));
  await outcome;
  await sql.end({ timeout: 0 });
  console.log('still running');
`;

const runScript = (guarded: boolean) =>
  run(process.execPath, ['--input-type=module', '-e', script(guarded)], { env: { ...process.env, URL: databaseUrl() } }).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
  );

describe('postgres.js array-types query failing on a new connection', () => {
  it('ends a process without the guard, and only logs with it', async () => {
    const bare = await runScript(false);
    expect(bare.code).not.toBe(0);
    expect(bare.stdout).not.toContain('still running');

    const guarded = await runScript(true);
    expect(guarded).toMatchObject({ code: 0 });
    expect(guarded.stdout).toContain("warned: a new database connection failed while postgres.js read the server's array types");
    expect(guarded.stdout).toContain('still running');
  });
});
