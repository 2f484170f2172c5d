// The OpenAPI documents as committed files: docs/openapi/public.json and
// admin.json. `npm run openapi` (server/cli/write-openapi.ts) writes them
// from the wired routes; test/unit/openapi.test.ts fails when the committed
// files differ from what the code generates.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const OPENAPI_DIR = fileURLToPath(new URL('../../docs/openapi', import.meta.url));

/** Each document's file name and text: pretty-printed JSON, ending in a newline. */
export const openApiFileTexts = (documents: { public: object; admin: object }) => ({
  'public.json': `${JSON.stringify(documents.public, null, 2)}\n`,
  'admin.json': `${JSON.stringify(documents.admin, null, 2)}\n`,
});

/** Writes `files` (name → text) into `dir`, a line on standard output for each. */
export async function writeOpenApiFiles(files: Record<string, string>, dir = OPENAPI_DIR): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    await writeFile(path.join(dir, name), text);
    process.stdout.write(`wrote ${path.relative(process.cwd(), path.join(dir, name))} (${text.length} bytes)\n`);
  }
}
