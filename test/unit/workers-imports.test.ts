import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// workers/ is pure compute loaded by piscina threads; server/ imports it and
// never the reverse, so a worker thread loads no config, database or metrics
// module, and the task modules run without a service around them. The one
// exception is workers/pool.ts, the server's side of the threads (the piscina
// pool and its admission control): it runs on the request thread, stands on
// server/core/ and server/observability/, and no task module imports it.

const root = fileURLToPath(new URL('../../', import.meta.url));
const workersDir = path.join(root, 'workers');
const serverDir = path.join(root, 'server');

/** Every module specifier in `source`: static and type-only imports, re-exports, import(), typeof import(), require(). */
function specifiers(source: string): string[] {
  return ts.preProcessFile(source, true, true).importedFiles.map((f) => f.fileName);
}

/** Whether `specifier`, written in a file in `fromDir`, names a path under server/. */
function reachesServer(fromDir: string, specifier: string): boolean {
  let target: string;
  if (specifier.startsWith('file:')) target = fileURLToPath(specifier);
  else if (specifier.startsWith('.') || path.isAbsolute(specifier)) target = path.resolve(fromDir, specifier);
  else return false;
  const rel = path.relative(serverDir, target);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** Specifiers of the imports in `source` that load a module at run time (not `import type`). */
function runtimeImports(source: string): string[] {
  const file = ts.createSourceFile('module.ts', source, ts.ScriptTarget.ES2022);
  return file.statements
    .filter((s): s is ts.ImportDeclaration | ts.ExportDeclaration => ts.isImportDeclaration(s) || ts.isExportDeclaration(s))
    .filter((s) => !(ts.isImportDeclaration(s) ? s.importClause?.isTypeOnly : s.isTypeOnly) && s.moduleSpecifier !== undefined)
    .map((s) => (s.moduleSpecifier as ts.StringLiteral).text);
}

/** "file: specifier" for each import under `dir` (recursively) that names a path under server/. */
function serverImports(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !/\.[cm]?[jt]s$/.test(entry.name)) continue;
    const file = path.join(entry.parentPath, entry.name);
    for (const s of specifiers(readFileSync(file, 'utf8'))) {
      if (reachesServer(entry.parentPath, s)) found.push(`${path.relative(root, file)}: ${s}`);
    }
  }
  return found;
}

describe('workers/ imports nothing from server/', () => {
  it('when a file names server/ in any import form, then each one is caught and no other path is', () => {
    const source = [
      "import { a } from '../server/a.ts';",
      "import type { B } from '../server/b.ts';",
      "export { c } from '../server/http/c.ts';",
      "export * from '../server';",
      "const d = await import('../server/d.ts');",
      "type E = typeof import('../server/e.ts');",
      "const f = require('../server/f.cjs');",
      "import { g } from './g.ts';",
      "import { h } from '../serverless/h.ts';",
      "import { Piscina } from 'piscina';",
      "import { i } from '../workers/i.ts';",
    ].join('\n');
    const caught = specifiers(source).filter((s) => reachesServer(workersDir, s));
    expect(new Set(caught)).toEqual(
      new Set(['../server/a.ts', '../server/b.ts', '../server/http/c.ts', '../server', '../server/d.ts', '../server/e.ts', '../server/f.cjs']),
    );
  });

  it('when every module under workers/ is read, then only pool.ts imports from server/, and only core/ and observability/', () => {
    // The scan reads the CommonJS bootstrap too: it finds the task modules it loads.
    expect(specifiers(readFileSync(path.join(workersDir, 'entry.cjs'), 'utf8'))).toContain('./tasks.ts');
    const found = serverImports(workersDir);
    expect(found.filter((f) => !f.startsWith('workers/pool.ts: '))).toEqual([]);
    expect(found.filter((f) => !/^workers\/pool\.ts: \.\.\/server\/(core|observability)\//.test(f))).toEqual([]);
  });

  it('when the threads load the task modules, then the pool is not among them', () => {
    expect(runtimeClosure('tasks.ts')).not.toContain('pool.ts');
    expect(runtimeClosure('tasks.ts')).toContain('technicals.ts');
  });
});

/** The modules `file` (under workers/) loads at run time, transitively, as paths relative to workers/ or package names. */
function runtimeClosure(file: string): string[] {
  const seen = new Set<string>();
  const visit = (rel: string) => {
    for (const s of runtimeImports(readFileSync(path.join(workersDir, rel), 'utf8'))) {
      const target = s.startsWith('.') ? path.relative(workersDir, path.resolve(workersDir, path.dirname(rel), s)) : s;
      if (seen.has(target)) continue;
      seen.add(target);
      if (s.startsWith('.')) visit(target);
    }
  };
  visit(file);
  return [...seen].sort();
}

describe('what the request thread loads from workers/', () => {
  it('when a source holds imports of each kind, then only those that load a module at run time are counted', () => {
    const source =
      "import type { A } from './a.ts';\nimport { b } from './b.ts';\nexport { c } from './c.ts';\nexport type { D } from './d.ts';\nimport './e.ts';";
    expect(new Set(runtimeImports(source))).toEqual(new Set(['./b.ts', './c.ts', './e.ts']));
  });

  it('when the server imports workers/contract.ts, then it loads its own types-and-constants modules and nothing else', () => {
    expect(runtimeClosure('contract.ts')).toEqual(['contract/options.ts', 'contract/statistics.ts', 'contract/strategy.ts', 'contract/technicals.ts']);
  });

  it('when the request thread computes a closed form, then workers/closed-forms.ts loads the pricing modules and no library', () => {
    expect(runtimeClosure('closed-forms.ts')).toEqual([
      'black-scholes.ts',
      'bsm-textbook.ts',
      'contract.ts',
      'contract/options.ts',
      'contract/statistics.ts',
      'contract/strategy.ts',
      'contract/technicals.ts',
      'double-range.ts',
      'normal-distribution.ts',
      'option-structures.ts',
      'probability.ts',
    ]);
  });
});
