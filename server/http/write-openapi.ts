// `npm run openapi`: writes the public and admin OpenAPI documents to
// docs/openapi/, where they are committed; test/unit/openapi.test.ts fails
// when the committed files differ from what the code generates.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { adminDocument, publicDocument } from './api-reference.ts';
import { VERSION } from '../core/version.ts';

export const OPENAPI_DIR = fileURLToPath(new URL('../../docs/openapi', import.meta.url));

export const openApiFiles = () => ({
  'public.json': `${JSON.stringify(publicDocument(VERSION), null, 2)}\n`,
  'admin.json': `${JSON.stringify(adminDocument(VERSION), null, 2)}\n`,
});

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await mkdir(OPENAPI_DIR, { recursive: true });
  for (const [name, text] of Object.entries(openApiFiles())) {
    await writeFile(path.join(OPENAPI_DIR, name), text);
    process.stdout.write(`wrote ${path.relative(process.cwd(), path.join(OPENAPI_DIR, name))} (${text.length} bytes)\n`);
  }
}
