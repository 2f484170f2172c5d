import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// A module that holds SQL says so in its name (docs/architecture.md): an
// area's repository.ts or *-repository.ts, or *-sql.ts for fragments shared
// by repositories; server/db/ holds the driver. This walks server/ and fails
// on postgres.js SQL anywhere else, read from the syntax tree, so prose in a
// comment or a string is not counted.

const SERVER = path.resolve(import.meta.dirname, '../../server');

const SQL_NAME = /(^|\/)(repository|[a-z0-9-]+-repository|[a-z0-9-]+-sql)\.ts$/;

/** Tags of tagged templates that are not SQL, and why. */
const OTHER_TAGS: Record<string, string> = {
  html: "the dashboard's escaping HTML template (dashboard/html.ts)",
  'String.raw': "JavaScript's raw string",
};

/** A type annotation that declares a postgres.js handle (db/sql.ts's ISql and Sql, postgres's own types). */
const HANDLE_TYPE = /^(postgres\.)?(I?Sql|TransactionSql|ReservedSql)(<.*>)?$/s;

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return modules(full);
    return entry.name.endsWith('.ts') ? [path.relative(SERVER, full)] : [];
  });
}

/**
 * The SQL a module's code holds, one line per use: a tagged template
 * (`sql\`...\``, `sql<Row[]>\`...\``, `tx\`...\``), a call of `.unsafe(`, or a
 * call of a name declared as a postgres.js handle (`sql(identifier)`,
 * `sql(rows, ...columns)` fragments).
 */
function sqlUses(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const handles = new Set<string>();
  const declare = (node: ts.Node) => {
    if ((ts.isParameter(node) || ts.isVariableDeclaration(node)) && ts.isIdentifier(node.name) && node.type && HANDLE_TYPE.test(node.type.getText(source)))
      handles.add(node.name.text);
    ts.forEachChild(node, declare);
  };
  declare(source);
  const uses: string[] = [];
  const where = (node: ts.Node) => `${fileName}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`;
  const visit = (node: ts.Node) => {
    if (ts.isTaggedTemplateExpression(node) && !(node.tag.getText(source) in OTHER_TAGS)) uses.push(`${where(node)} ${node.tag.getText(source)}\`\``);
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      if (ts.isPropertyAccessExpression(callee) && callee.name.text === 'unsafe') uses.push(`${where(node)} ${callee.getText(source)}()`);
      if (ts.isIdentifier(callee) && handles.has(callee.text)) uses.push(`${where(node)} ${callee.text}()`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return uses;
}

describe('SQL sits only in modules named for it', () => {
  const all = modules(SERVER);
  const holding = all.filter((file) => sqlUses(file, readFileSync(path.join(SERVER, file), 'utf8')).length > 0);

  it('no module outside server/db/ holds SQL unless its name is repository.ts, *-repository.ts or *-sql.ts', () => {
    const offenders = holding
      .filter((file) => !file.startsWith('db/') && !SQL_NAME.test(file))
      .flatMap((file) => sqlUses(file, readFileSync(path.join(SERVER, file), 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('sees the SQL where it is (not vacuous)', () => {
    expect(holding).toEqual(
      expect.arrayContaining([
        'prices/daily-bars-repository.ts',
        'prices/intraday-bars-at-repository.ts',
        'prices/adjusted-values-sql.ts',
        'prices/bar-text-sql.ts',
        'keys/repository.ts',
        'db/migrate.ts',
      ]),
    );
    // Every form this codebase writes, in the modules that write it.
    const uses = (file: string) => sqlUses(file, readFileSync(path.join(SERVER, file), 'utf8')).join('\n');
    expect(uses('prices/intraday-bars-at-repository.ts')).toMatch(/ sql\.unsafe\(\)/);
    expect(uses('prices/intraday-bars-at-repository.ts')).toMatch(/ sql\(\)/);
    expect(uses('prices/adjusted-values-sql.ts')).toMatch(/ sql\(\)/);
    expect(uses('prices/daily-bars-repository.ts')).toMatch(/ sql``/);
    expect(uses('ingest/repository.ts')).toMatch(/ tx``/);
    // The dashboard's HTML templates are not SQL.
    expect(holding.filter((file) => file.startsWith('dashboard/'))).toEqual(['dashboard/repository.ts']);
  });

  it('catches each form in a module of its own, and not prose', () => {
    const forms = [
      'export const a = (sql: ISql) => sql`select 1`;',
      'export const a = (sql: ISql) => sql<{ n: number }[]>`select 1 as n`;',
      'export const a = (tx: TransactionSql) => tx`select 1`;',
      "export const a = (db: Sql) => db.unsafe('select 1');",
      "export const a = (sql: ISql) => sql('bar_ts');",
      "export const a = (sql: postgres.Sql) => sql.unsafe('select 1', []);",
    ];
    for (const form of forms) expect(sqlUses('area/service.ts', form), form).toHaveLength(1);
    expect(sqlUses('area/service.ts', '// sql`select 1` in a comment\nexport const b = "sql`select 1`";')).toEqual([]);
    expect(sqlUses('area/page.ts', 'export const p = html`<p>${name}</p>`;')).toEqual([]);
  });
});
