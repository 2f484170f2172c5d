import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Comments and docs name the files they point a reader to ("the cut-off rule
// is in server/core/time.ts"). After a rename such a name leads nowhere: this
// finds every file name in the comments of server/, workers/ and bench/, in
// docs/, README.md and the migrations, and fails on one that names no file.
// An applied migration cannot be edited (its checksum is recorded), so a file
// it names that has since moved is listed in sql/README.md with where it is.

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Every file under `dir` (relative to the root), skipping what git does not hold. */
function filesUnder(dir: string): string[] {
  const skip = new Set(['node_modules', 'results', 'openapi', '.data']);
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const entry of readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = path.posix.join(rel, entry.name);
      if (entry.isDirectory()) {
        if (!skip.has(entry.name)) walk(child);
      } else out.push(child);
    }
  };
  walk(dir);
  return out;
}

/** A name of a source, script or migration file, with the folders written before it. */
const FILE_NAME = /(?<![\w@.*/-])((?:[\w.-]+\/)*(?:[\w-]+(?:\.[\w-]+)*\.(?:ts|mjs|cjs|sh)|\d{3}_[a-z0-9_]+\.sql))(?![\w/])/g;

/** The text a reader reads as prose: comments of code files, all of a document or a migration. */
function prose(file: string, text: string): string[] {
  if (/\.(md|sql)$/.test(file)) return text.split('\n');
  return text.split('\n').map((line) => {
    const comment = line.match(/\/\/(.*)$|^\s*\/?\*+(.*)$/);
    return comment ? (comment[1] ?? comment[2] ?? '').trim() : '';
  });
}

/** Whether `name`, written in `file`, names a file: from the root, beside `file`, under server/ or workers/, or (a bare name) anywhere. */
function resolves(name: string, file: string, everyFile: Set<string>, baseNames: Set<string>): boolean {
  const candidates = [name, path.posix.join(path.posix.dirname(file), name), `server/${name}`, `workers/${name}`, `test/${name}`, `bench/${name}`];
  if (candidates.some((c) => everyFile.has(path.posix.normalize(c)))) return true;
  return !name.includes('/') && baseNames.has(name);
}

/** "file:line: name" for each name in `file`'s prose that leads nowhere. */
function unresolved(file: string, everyFile: Set<string>, baseNames: Set<string>): string[] {
  const found: string[] = [];
  prose(file, readFileSync(path.join(root, file), 'utf8')).forEach((line, i) => {
    for (const [, name] of line.matchAll(FILE_NAME)) {
      if (!resolves(name, file, everyFile, baseNames)) found.push(`${file}:${i + 1}: ${name}`);
    }
  });
  return found;
}

/** sql/README.md's table of moved files: the name a migration uses → where that file is. */
function movedFiles(): Map<string, string> {
  const readme = readFileSync(path.join(root, 'sql', 'README.md'), 'utf8');
  return new Map([...readme.matchAll(/^\| `([^`]+)` \| `([^`]+)`/gm)].map((m) => [m[1], m[2]]));
}

describe('file names in comments and docs', () => {
  const every = ['server', 'workers', 'bench', 'test', 'sql', 'docs', 'ops', '.ci', 'eslint-rules'].flatMap(filesUnder);
  const everyFile = new Set([...every, ...readdirSync(root)]);
  const baseNames = new Set(every.map((f) => path.posix.basename(f)));
  const read = [...every.filter((f) => /^(server|workers|bench)\/.*\.(ts|mjs|cjs)$/.test(f) || /^docs\/.*\.md$/.test(f)), 'README.md'];

  it('when a comment names files that exist and one that does not, then only the missing one is reported', () => {
    const scratch = 'test/unit/file-references.test.ts';
    const names = [...'// see server/core/time.ts, db/sql.ts and server/gone-away.ts; x.ts is code'.matchAll(FILE_NAME)].map((m) => m[1]);
    expect(names).toEqual(['server/core/time.ts', 'db/sql.ts', 'server/gone-away.ts', 'x.ts']);
    expect(names.filter((n) => !resolves(n, scratch, everyFile, baseNames))).toEqual(['server/gone-away.ts', 'x.ts']);
    expect(prose('a.ts', 'if (x.ts !== y.ts) return; // x.ts')).toEqual(['x.ts']);
  });

  it('when the code, the docs and the README are read, then every file they name exists', () => {
    expect(read.length).toBeGreaterThan(200);
    expect(read.flatMap((f) => unresolved(f, everyFile, baseNames))).toEqual([]);
  });

  it('when the migrations are read, then every file they name exists or sql/README.md says where it is', () => {
    const moved = movedFiles();
    const lost = every
      .filter((f) => /^sql\/\d{3}_.*\.sql$/.test(f))
      .flatMap((f) => unresolved(f, everyFile, baseNames))
      .filter((ref) => {
        const name = ref.split(': ')[1];
        const now = moved.get(name);
        return now === undefined || !existsSync(path.join(root, now));
      });
    expect(lost).toEqual([]);
  });
});
