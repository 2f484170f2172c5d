import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RuleTester } from 'eslint';
import tseslint from 'typescript-eslint';
import { afterAll, describe, expect, it } from 'vitest';
import { buildImportGraph, importCycles } from '../../eslint-rules/import-cycles.ts';

// The cycle rule reads the files from disk, as it does in a lint run: each
// case writes its modules into a directory of its own.
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function modules(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'import-cycles-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

const relative = (dir: string, files: string[]) => files.map((f) => path.relative(dir, f)).sort();

describe('the import graph', () => {
  it('when two modules import each other only for types, they form one component', () => {
    const dir = modules({
      'a/one.ts': "import type { Two } from '../b/two.ts';\nexport const ONE = 1;\nexport type One = Two;\n",
      'b/two.ts': "import type { One } from '../a/one.ts';\nexport interface Two { one: One }\n",
      'c/three.ts': "import { ONE } from '../a/one.ts';\nexport const THREE = ONE + 2;\n",
    });
    const graph = buildImportGraph([dir]);
    expect(graph.components.map((c) => relative(dir, c))).toEqual([['a/one.ts', 'b/two.ts']]);
  });

  it('when the imports run one way only, it has no component', () => {
    const dir = modules({
      'core.ts': 'export const BASE = 1;\n',
      'mid.ts': "import { BASE } from './core.ts';\nexport type { Base } from './types.ts';\nexport const MID = BASE;\n",
      'types.ts': 'export type Base = number;\n',
      'top.ts': "import type { Base } from './mid.ts';\nimport { MID } from './mid.ts';\nexport const TOP: Base = MID + (await import('./core.ts')).BASE;\n",
    });
    expect(buildImportGraph([dir]).components).toEqual([]);
  });

  it('when a cycle runs through a re-export and a dynamic import, it is found', () => {
    const dir = modules({
      'a.ts': "export { B } from './b.ts';\n",
      'b.ts': "export const B = 2;\nexport const load = () => import('./c.ts');\n",
      'c.ts': "import type { B } from './a.ts';\nexport type C = typeof B;\n",
    });
    expect(buildImportGraph([dir]).components.map((c) => relative(dir, c))).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });
});

describe('local/import-cycles', () => {
  // contract.ts names task.ts's result type; task.ts reads contract.ts's constant.
  const files: Record<string, string> = {
    'contract.ts': "import type { Result } from './task.ts';\nexport const LIMIT = 3;\nexport type Answer = Result;\n",
    'task.ts': "import { LIMIT } from './contract.ts';\nexport interface Result { limit: typeof LIMIT }\n",
    'pool.ts': "import type { Answer } from './contract.ts';\nexport const run = (a: Answer) => a;\n",
  };
  const dir = modules(files);
  const tester = new RuleTester({ languageOptions: { parser: tseslint.parser } });
  const code = (name: string) => files[name];

  it('when a type-only import closes a cycle, it reports that import with the path; an import outside the cycle passes', () => {
    tester.run('import-cycles', importCycles, {
      valid: [{ filename: path.join(dir, 'pool.ts'), code: code('pool.ts'), options: [{ roots: [dir] }] }],
      invalid: [
        {
          filename: path.join(dir, 'contract.ts'),
          code: code('contract.ts'),
          options: [{ roots: [dir] }],
          errors: [
            {
              messageId: 'cycle',
              line: 1,
              data: {
                count: '2',
                route: [path.join(dir, 'contract.ts'), path.join(dir, 'task.ts'), path.join(dir, 'contract.ts')]
                  .map((f) => path.relative(process.cwd(), f))
                  .join(' -> '),
              },
            },
          ],
        },
        {
          filename: path.join(dir, 'task.ts'),
          code: code('task.ts'),
          options: [{ roots: [dir] }],
          errors: [{ messageId: 'cycle', line: 1 }],
        },
      ],
    });
  });
});
