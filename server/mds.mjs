#!/usr/bin/env node
// The `mds` command: registers the TypeScript loader, then runs the CLI.
import { register } from 'tsx/esm/api';

register();
await import('./cli.ts');
