import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// Every read of daily and 1-minute bars goes through one interface that takes
// the read's instant (docs/api.md, "Point in time"): prices/daily-bars.ts and
// its intraday twin, prices/intraday-bars.ts. This walks the server's modules
// and fails on SQL over the bar tables anywhere but the modules that hold
// those interfaces' statements and the upload's writes, and on any other
// module importing those statements around the interfaces.

const SERVER = path.resolve(import.meta.dirname, '../../server');

/** The modules whose SQL may name the bar tables, and why. */
const BAR_SQL: Record<string, string> = {
  'price-history/bars-repository.ts': 'the daily knowledge rule (dailyBarsAt and its walk), versions, prior closes, the staged writes',
  'prices/daily-bars-repository.ts': 'daily reads as columns and lookups, through the knowledge rule, for daily-bars.ts',
  'prices/daily-text-repository.ts': 'daily reads as response text, through the knowledge rule, for daily-bars.ts',
  'prices/intraday-bars-at-repository.ts': 'the 1-minute knowledge rule, for intraday-bars.ts',
  'prices/intraday-text-repository.ts': 'intraday reads as response text, for intraday-bars.ts',
  'prices/repository.ts': "the intraday upload's writes and the rollups they keep",
};

/** The modules that may import the statements of BAR_SQL, besides each other (type-only imports aside). */
const INTERFACES: Record<string, string> = {
  'prices/daily-bars.ts': 'the daily read interface',
  'prices/intraday-bars.ts': 'the intraday read interface',
  'price-history/adjustment-plan.ts': "a dividend's prior close, read at the plan's instant",
  'actions/repository.ts': 'the latest stored bar date a version records, inside the upload that bumps it',
  'prices/ingest.ts': "the bar uploads' writes",
  'runtime/migrations.ts': 'the text of rollup bars and days stored before sql/026 and sql/028, written once by those migrations (a write)',
};

const TABLES = /\b(daily_bars|daily_bar_revisions|intraday_bars(?:_5min|_15min|_30min|_1hour)?|intraday_bar_revisions|intraday_rollup_days)\b/;

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return modules(full);
    return entry.name.endsWith('.ts') ? [path.relative(SERVER, full)] : [];
  });
}

/** The module's text without its comments, so prose that names a table is not counted as SQL. */
function code(file: string): string {
  return readFileSync(path.join(SERVER, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** The modules `file` imports at run time (not `import type`), as paths relative to server/. */
function runtimeImports(file: string): string[] {
  const text = code(file);
  const out: string[] = [];
  for (const m of text.matchAll(/^import\s+(type\s+)?[^;]*?from\s+'(\.[^']+)';/gms)) {
    if (m[1]) continue;
    const names = m[0].slice(0, m[0].indexOf(' from '));
    // `import { type A, type B } from` is type-only too.
    if (
      /^import\s+\{([^}]*)\}/.test(names) &&
      names
        .match(/\{([^}]*)\}/)![1]
        .split(',')
        .every((n) => n.trim() === '' || n.trim().startsWith('type '))
    )
      continue;
    out.push(path.relative(SERVER, path.resolve(path.dirname(path.join(SERVER, file)), m[2])));
  }
  return out;
}

describe('reads of bars go through the interfaces that take the instant', () => {
  const all = modules(SERVER);

  it('finds the modules it names (a rename must update this test)', () => {
    for (const file of [...Object.keys(BAR_SQL), ...Object.keys(INTERFACES)]) expect(all, file).toContain(file);
  });

  it('no module outside the bar statements names a bar table in its code', () => {
    const naming = all.filter((file) => TABLES.test(code(file)));
    expect(naming.filter((file) => !(file in BAR_SQL))).toEqual([]);
    // Not vacuous: the walk sees the tables where they are.
    expect(naming).toEqual(
      expect.arrayContaining(['price-history/bars-repository.ts', 'prices/daily-bars-repository.ts', 'prices/intraday-bars-at-repository.ts']),
    );
  });

  it('only the interfaces (and the bar statements themselves) import the bar statements', () => {
    const offenders = all.flatMap((file) =>
      runtimeImports(file)
        .filter((target) => target in BAR_SQL && !(file in BAR_SQL) && !(file in INTERFACES))
        .map((target) => `${file} imports ${target}`),
    );
    expect(offenders).toEqual([]);
    // Not vacuous: the interfaces are seen importing them.
    expect(runtimeImports('prices/daily-bars.ts')).toContain('prices/daily-bars-repository.ts');
    expect(runtimeImports('prices/intraday-bars.ts')).toContain('prices/intraday-text-repository.ts');
  });
});
