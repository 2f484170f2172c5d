import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// docs/architecture.md opens with a code map: a fenced block whose lines name
// folders and files, indented under the folder they sit in. A rename or a
// removal that the map does not follow fails here, and so does a new entry at
// the top of server/ that the map does not name.

const root = fileURLToPath(new URL('../../', import.meta.url));
const architecture = readFileSync(path.join(root, 'docs', 'architecture.md'), 'utf8');

/** The block under "## Code map". */
function codeMapBlock(markdown: string): string {
  const section = markdown.split(/^## /m).find((s) => s.startsWith('Code map'));
  const block = section?.match(/^```[^\n]*\n([\s\S]*?)^```/m);
  if (!block) throw new Error('docs/architecture.md has no "## Code map" section with a fenced block');
  return block[1];
}

/**
 * The paths a map names, from the repository's root: each line is an entry
 * (its first word) and a description; an entry indented under a folder
 * (a word ending in /) is inside it. A line whose first word is not a path
 * (no / and no extension) continues the description above it.
 */
function mappedPaths(block: string): string[] {
  const paths: string[] = [];
  const parents: { indent: number; dir: string }[] = [];
  for (const line of block.split('\n')) {
    const match = line.match(/^( *)(\S+)/);
    if (!match) continue;
    const [, spaces, word] = match;
    if (!/\/$|\.[a-z]+$/.test(word)) continue;
    const indent = spaces.length;
    while (parents.length && parents.at(-1)!.indent >= indent) parents.pop();
    const full = path.posix.join(parents.at(-1)?.dir ?? '', word);
    paths.push(full);
    if (word.endsWith('/')) parents.push({ indent, dir: full });
  }
  return paths;
}

describe('the code map in docs/architecture.md', () => {
  const paths = mappedPaths(codeMapBlock(architecture));

  it('when a block nests entries, then each is read under its folder and descriptions are skipped', () => {
    const block = [
      'server/   the service',
      '  app.ts    builds the app',
      '  http/     Express',
      '    router.ts  the table',
      '            continued words',
      '  main.ts   listens',
      'sql/      migrations',
    ].join('\n');
    expect(mappedPaths(block)).toEqual(['server/', 'server/app.ts', 'server/http/', 'server/http/router.ts', 'server/main.ts', 'sql/']);
  });

  it('when each folder and file it names is looked up, then every one exists', () => {
    expect(paths.length).toBeGreaterThan(30);
    expect(paths.filter((p) => !existsSync(path.join(root, p)))).toEqual([]);
  });

  it('when server/ is listed, then the map names every entry at its top, and nothing else is there', () => {
    const named = new Set(paths.filter((p) => /^server\/[^/]+\/?$/.test(p)).map((p) => p.replace(/\/$/, '')));
    const listed = readdirSync(path.join(root, 'server')).map((e) => `server/${e}`);
    expect([...listed].sort()).toEqual([...named].sort());
  });

  it('when the top of server/ is listed, then it holds app.ts, main.ts, config.ts and folders only', () => {
    const files = readdirSync(path.join(root, 'server'), { withFileTypes: true }).filter((e) => e.isFile());
    expect(files.map((f) => f.name).sort()).toEqual(['app.ts', 'config.ts', 'main.ts']);
  });
});
