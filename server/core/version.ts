import { readFileSync } from 'node:fs';

/** The service's version: package.json's, read once. It is what /v1/health, the OpenAPI documents and `mds status` report. */
export const VERSION: string = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;
