import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DOC, END_MARKER, readResults, renderReport, replaceGenerated, ROOT, START_MARKER, type ScenarioRun } from '../../bench/report.ts';

const machine = { node: 'v20.0.0', platform: 'linux 6.1', cpus: 4, cpuModel: 'Test CPU', memGiB: 8 };

function run(scenario: string, file: string, startedAt: string, result: Record<string, unknown>): ScenarioRun {
  return {
    scenario,
    file,
    startedAt,
    machine,
    result: { scenario, tier: 'postgresql', database: { kind: 'embedded', serverVersion: '15.1', timescaledbVersion: null }, ...result },
  };
}

const bulkRead = (commit: string, medianMs: number) => ({
  code: { commit, uncommitted: [] },
  config: { instruments: 10, window: { from: '2020-01-01', to: '2020-12-31', bars: 2620 } },
  measured: {
    httpBulk: { runs: 3, medianMs, responseBytes: 4 * 2 ** 20 },
    httpBulkCompressed: {
      gzip: { medianMs: 1800, responseBytes: 2 ** 20, ratioOverPostgresJs: 18 },
      br: { medianMs: 1700, responseBytes: 2 ** 19, ratioOverPostgresJs: 17 },
    },
  },
  baseline: { postgresJs: { medianMs: 100 } },
  ratios: { httpOverPostgresJs: medianMs / 100 },
  memory: { bars: 26090, mbReceived: 7, readPaceMBps: 1.5, growthMb: 12.25, peakRssMb: 200 },
  memoryBr: { growthMb: 14, peakRssMb: 201 },
  memoryTenReaders: { readers: 10, readPaceMBps: 0.3, growthMb: 61, peakRssMb: 250 },
  targets: { httpOverPostgresJs: '<= 2', memoryGrowthMb: '< 50', memoryGrowthMbTenReaders: '< 100' },
  meetsTarget: { httpOverPostgresJs: medianMs <= 200, memoryGrowthMb: true, memoryGrowthMbTenReaders: false },
});

/** The generated table as docs/benchmarks.md holds it. */
function committedTable(doc: string): string {
  const start = doc.indexOf(START_MARKER);
  const end = doc.indexOf(END_MARKER);
  expect(start).toBeGreaterThanOrEqual(0);
  expect(end).toBeGreaterThan(start);
  return doc.slice(start + START_MARKER.length, end).trim();
}

describe('bench report', () => {
  it('when the committed table in docs/benchmarks.md differs from what bench/results gives, this fails (run npm run bench:report)', () => {
    const generated = renderReport(readResults());
    expect(committedTable(readFileSync(DOC, 'utf8'))).toBe(generated);
  });

  it('every bench/results file the README and docs/ link to is committed', () => {
    const docs = [
      'README.md',
      ...readdirSync(path.join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    // latest.json is the last run's summary, never committed.
    const committed = new Set(readdirSync(path.join(ROOT, 'bench', 'results')).filter((f) => f !== 'latest.json'));
    const linked = docs
      .flatMap((d) => [...readFileSync(path.join(ROOT, d), 'utf8').matchAll(/bench\/results\/([\w.-]+\.json)/g)].map((m) => ({ doc: d, file: m[1] })))
      .filter((l) => l.file !== 'latest.json');
    expect(linked.length).toBeGreaterThan(0);
    expect(linked.filter((l) => !committed.has(l.file))).toEqual([]);
  });

  it('a result file holds exactly the scenario it is named for; a failed scenario is left out', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-results-'));
    const write = (file: string, scenarios: Record<string, unknown>) =>
      writeFileSync(path.join(dir, file), JSON.stringify({ startedAt: '2026-02-01T00:00:00.000Z', machine, scenarios }));
    try {
      write('bulk-read.json', { 'bulk-read': bulkRead('aaaaaaa', 300) });
      write('ingest.json', { ingest: { error: 'failed' } });
      write('latest.json', { 'bulk-read': {}, ingest: {} });
      expect([...readResults(dir).keys()]).toEqual(['bulk-read']);
      expect(readResults(dir).get('bulk-read')?.file).toBe('bulk-read.json');
      write('intraday.json', { 'bulk-read': bulkRead('bbbbbbb', 150) });
      expect(() => readResults(dir)).toThrow('bench/results/intraday.json must hold the one scenario intraday; it holds bulk-read');
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('the table shows the newest figures with their commit and machine, and names scenarios without a result', () => {
    const table = renderReport(new Map([['bulk-read', run('bulk-read', 'bulk-read.json', '2026-02-01T10:20:30.000Z', bulkRead('bbbbbbb', 1500))]]));
    expect(table).toContain(
      '| `bulk-read` | `GET /v1/prices/bulk`, 10 instruments × 2020-01-01..2020-12-31 (2,620 bars), adjusted, uncompressed, to the last byte; median of 3 | 1,500 ms | postgres.js fetching the same rows: 100 ms | 15.00× | <= 2 | no |',
    );
    expect(table).toContain('| the same with `Accept-Encoding: gzip` (1.0 MB on the wire, 4.0 MB uncompressed) | 1,800 ms | postgres.js: 100 ms | 18.00× |');
    expect(table).toContain('| the same with `Accept-Encoding: br` (0.5 MB on the wire, 4.0 MB uncompressed) | 1,700 ms | postgres.js: 100 ms | 17.00× |');
    expect(table).toContain('to one reader at 1.5 MB/s: uncompressed / br | +12.3 MB (peak 200.0 MB) / +14.0 MB (peak 201.0 MB) |  |  | < 50 MB | yes |');
    expect(table).toContain('| the same to 10 readers at once, half gzip and half br, each at 0.3 MB/s | +61.0 MB (peak 250.0 MB) |  |  | < 100 MB | no |');
    expect(table).toContain('| `ingest` | no committed result |');
    expect(table).toContain(
      '| `bulk-read` | [bulk-read.json](../bench/results/bulk-read.json) | `bbbbbbb` | 2026-02-01 10:20 | 4 × Test CPU, 8.0 GiB, linux 6.1, Node v20.0.0 | `postgresql` tier, embedded PostgreSQL 15.1 |',
    );
  });

  it('the intraday rows put HTTP against the rollup read in SQL, with its target', () => {
    const intraday = run('intraday', 'intraday.json', '2026-02-01T00:00:00.000Z', {
      config: { minuteBars: 525600, hourBars: 8760 },
      measured: { rollupSql: { runs: 7, medianMs: 20 }, rollupHttp: { medianMs: 27 } },
      baseline: { onTheFlyAggregateSql: { medianMs: 400 } },
      ratios: { speedUpSql: 20, httpOverRollupSql: 1.35 },
      targets: { httpOverRollupSql: '<= 1.5 (the rollup over HTTP against the same rows in SQL)' },
      meetsTarget: { httpOverRollupSql: true, resultsEqual: false },
    });
    const table = renderReport(new Map([['intraday', intraday]]));
    expect(table).toContain(
      '| `intraday` | the same over HTTP, uncompressed, to the last byte | 27.0 ms | the rollup in SQL: 20.0 ms | 1.35× | <= 1.5 (the rollup over HTTP against the same rows in SQL) | yes |',
    );
    expect(table).toContain('hold the same bars |  |  |  | equal | no |');
  });

  it('a ratio measured in interleaved rounds shows the median with its range, interquartile range and number of rounds', () => {
    const spread = { median: 1.35, min: 1.1, max: 1.9, p25: 1.3, p75: 1.42, rounds: 41, byRound: [] };
    const intraday = run('intraday', 'intraday.json', '2026-02-01T00:00:00.000Z', {
      measured: { rollupSql: { runs: 41, medianMs: 20 }, rollupHttp: { medianMs: 27 } },
      ratios: { speedUpSql: 20, httpOverRollupSql: 1.35 },
      spreads: { 'ratios.httpOverRollupSql': spread, 'ratios.speedUpSql': { ...spread, median: 20, min: 18, max: 22, p25: 19.5, p75: 20.5 } },
    });
    const table = renderReport(new Map([['intraday', intraday]]));
    expect(table).toContain('| the rollup in SQL: 20.0 ms | 1.35× (1.10–1.90, IQR 1.30–1.42, 41 rounds) |');
    expect(table).toContain('| 20.00× faster (18.00–22.00, IQR 19.50–20.50, 41 rounds) |');
    const platform = run('platform-overhead', 'platform-overhead.json', '2026-02-01T00:00:00.000Z', {
      config: { route: 'POST /v1/analytics/probability', connections: 50, rounds: 15, windowSec: 1, spreadAccounts: 10 },
      ratios: { overKeyLookup: { p50: 0.9 } },
    });
    expect(renderReport(new Map([['platform-overhead', platform]]))).toContain('p50 latency, 50 connections, 15 interleaved rounds of 1 s |');
  });

  it('a result measured with uncommitted changes says so beside its commit', () => {
    const dirty = run('bulk-read', 'bulk-read.json', '2026-02-01T00:00:00.000Z', {
      ...bulkRead('ccccccc', 150),
      code: { commit: 'ccccccc', uncommitted: ['server/app.ts'] },
    });
    expect(renderReport(new Map([['bulk-read', dirty]]))).toContain('`ccccccc` with uncommitted changes to `server/app.ts`');
  });

  it('rewriting keeps the text around the markers and replaces only what is between them', () => {
    const doc = `intro\n${START_MARKER}\nold table\n${END_MARKER}\noutro\n`;
    expect(replaceGenerated(doc, 'new table')).toBe(`intro\n${START_MARKER}\nnew table\n${END_MARKER}\noutro\n`);
    expect(() => replaceGenerated('no markers', 'x')).toThrow(/markers/);
  });
});
