#!/usr/bin/env node
// The `mds` command. It runs on the project's Node.js (the pinned `node`
// dependency, first on PATH in npm scripts), which strips TypeScript's types itself.
if (!process.features.typescript) {
  process.stderr.write(`mds needs Node.js 24 (this is ${process.version}): run it as npm run cli -- <command>\n`);
  process.exit(2);
}
await import('./cli.ts');
