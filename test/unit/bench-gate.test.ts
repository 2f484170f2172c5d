import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHECK_DIR, confirmed, GATE_BARS, gateEnv, gateTable, judge, toRunAgain } from '../../bench/check.ts';
import { ROOT } from '../../bench/report.ts';

const spread = (median: number) => ({ median, min: median - 0.1, max: median + 0.2, p25: median - 0.05, p75: median + 0.05, rounds: 15, byRound: [] });

/** A run's latest.json holding the given scenarios' results. */
const summary = (scenarios: Record<string, unknown>, aborted?: string) => ({
  startedAt: '2026-02-01T00:00:00.000Z',
  ...(aborted ? { aborted } : {}),
  scenarios,
});

const bulk = (ratio: number) => ({ scenario: 'bulk-read', ratios: { httpOverPostgresJs: ratio }, spreads: { 'ratios.httpOverPostgresJs': spread(ratio) } });
const intraday = (ratio: number) => ({ scenario: 'intraday', ratios: { speedUpSql: 6, httpOverRollupSql: ratio } });
const platform = (p50: number) => ({ scenario: 'platform-overhead', ratios: { overKeyLookup: { p50, p99: 9, rps: 0.1 } } });

describe('the bench:check gate', () => {
  it('holds the bars of issue 39: bulk 1.2×, intraday 1.5×, platform p50 1.3×', () => {
    expect(GATE_BARS.map((b) => [b.scenario, b.ratio, b.bar])).toEqual([
      ['bulk-read', 'ratios.httpOverPostgresJs', 1.2],
      ['intraday', 'ratios.httpOverRollupSql', 1.5],
      ['platform-overhead', 'ratios.overKeyLookup.p50', 1.3],
    ]);
  });

  it('when every headline ratio is at or below its bar, every bar passes, with the spread the result holds', () => {
    const rows = judge(summary({ 'bulk-read': bulk(1.2), intraday: intraday(1.1), 'platform-overhead': platform(0.9) }));
    expect(rows.map((r) => [r.scenario, r.value, r.pass, r.problem])).toEqual([
      ['bulk-read', 1.2, true, null],
      ['intraday', 1.1, true, null],
      ['platform-overhead', 0.9, true, null],
    ]);
    expect(rows[0].spread).toEqual(spread(1.2));
    expect(rows[1].spread).toBeNull();
  });

  it('when a headline ratio is above its bar, that bar fails and the others still pass', () => {
    const rows = judge(summary({ 'bulk-read': bulk(1.1), intraday: intraday(2.01), 'platform-overhead': platform(1.31) }));
    expect(rows.map((r) => r.pass)).toEqual([true, false, false]);
    const table = gateTable(rows);
    expect(table).toMatch(/^intraday +1-hour rollup over HTTP ÷ its SQL +2\.01× +— +≤ 1\.50× +FAIL \(above its bar\)$/m);
    expect(table).toMatch(/^bulk-read .* 1\.10× +1\.00×–1\.30×; 1\.05×–1\.15× \(15\) +≤ 1\.20× +pass$/m);
  });

  it('when a scenario failed, its bar fails with its error, whatever the others measured', () => {
    const rows = judge(
      summary({ 'bulk-read': bulk(1.0), intraday: { scenario: 'intraday', error: 'intraday read answered 500' }, 'platform-overhead': platform(1.0) }),
    );
    expect(rows.map((r) => r.pass)).toEqual([true, false, true]);
    expect(rows[1].problem).toBe('the scenario failed: intraday read answered 500');
    expect(gateTable(rows)).toContain('\nintraday: the scenario failed: intraday read answered 500');
  });

  it('when the run stopped before a scenario, or wrote nothing, each bar without a result fails and says why', () => {
    const cut = judge(summary({ 'platform-overhead': platform(1.0) }, 'the run exceeded BENCH_MAX_SECONDS=420'));
    expect(cut.map((r) => [r.scenario, r.pass, r.problem])).toEqual([
      ['bulk-read', false, 'no result: the run stopped (the run exceeded BENCH_MAX_SECONDS=420) before this scenario'],
      ['intraday', false, 'no result: the run stopped (the run exceeded BENCH_MAX_SECONDS=420) before this scenario'],
      ['platform-overhead', true, null],
    ]);
    expect(judge(null).map((r) => [r.pass, r.problem])).toEqual(GATE_BARS.map(() => [false, 'the run wrote no results']));
    expect(judge(summary({ 'bulk-read': bulk(1.0) }))[1].problem).toBe('no result: the run wrote none for this scenario');
  });

  it('when a result holds no number at the ratio the bar reads, that bar fails rather than passing by default', () => {
    const rows = judge(summary({ 'bulk-read': { scenario: 'bulk-read', ratios: {} }, intraday: intraday(Number.NaN), 'platform-overhead': platform(1.0) }));
    expect(rows.map((r) => [r.pass, r.problem])).toEqual([
      [false, 'the result holds no ratio at ratios.httpOverPostgresJs'],
      [false, 'the result holds no ratio at ratios.httpOverRollupSql'],
      [true, null],
    ]);
    expect(gateTable(rows)).toContain('FAIL (no ratio)');
  });

  it('runs again only the scenarios above their bar, and fails a bar only when its ratio is above it in both runs', () => {
    const first = judge(summary({ 'bulk-read': bulk(1.25), intraday: intraday(1.53), 'platform-overhead': { scenario: 'platform-overhead', error: 'boom' } }));
    // Platform gave no ratio: it has failed already, and is not run again.
    expect(toRunAgain(first)).toEqual(['bulk-read', 'intraday']);
    const againBars = GATE_BARS.filter((b) => b.scenario !== 'platform-overhead');

    const noise = confirmed(first, judge(summary({ 'bulk-read': bulk(1.1), intraday: intraday(1.38) }), againBars));
    expect(noise.map((r) => [r.scenario, r.value, r.pass, r.firstRun])).toEqual([
      ['bulk-read', 1.1, true, 1.25],
      ['intraday', 1.38, true, 1.53],
      ['platform-overhead', null, false, undefined],
    ]);
    expect(gateTable(noise)).toMatch(/^intraday .* 1\.38× \(first run 1\.53×\) .* pass$/m);

    const regression = confirmed(first, judge(summary({ 'bulk-read': bulk(1.1), intraday: intraday(1.93) }), againBars));
    expect(regression.map((r) => r.pass)).toEqual([true, false, false]);
    expect(regression[1]).toMatchObject({ value: 1.93, firstRun: 1.53 });
    expect(gateTable(regression)).toMatch(/^intraday .* 1\.93× \(first run 1\.53×\) .* FAIL \(above its bar\)$/m);

    // A second run that gives no ratio fails the bar with its problem.
    const broken = confirmed(first, judge(summary({}, 'the run exceeded BENCH_MAX_SECONDS=60'), againBars));
    expect(broken[1]).toMatchObject({ value: null, pass: false, firstRun: 1.53 });
    expect(broken[1].problem).toContain('BENCH_MAX_SECONDS=60');
  });

  it("runs with its own sizes and results folder, dropping the caller's other BENCH_* settings", () => {
    const env = gateEnv({
      PATH: '/bin',
      BENCH_DATABASE_URL: 'postgres://127.0.0.1/x',
      BENCH_RUNS: '99',
      BENCH_BULK_INSTRUMENTS: '5000',
      BENCH_RESULTS_DIR: 'bench/results',
    });
    expect(env.PATH).toBe('/bin');
    expect(env.BENCH_DATABASE_URL).toBe('postgres://127.0.0.1/x');
    expect(env.BENCH_RUNS).toBeUndefined();
    expect(env.BENCH_BULK_INSTRUMENTS).not.toBe('5000');
    expect(env.BENCH_BULK_MEMORY).toBe('off');
    expect(env.BENCH_RESULTS_DIR).toBe(CHECK_DIR);
    // Never the committed full-size results.
    expect(path.relative(path.join(ROOT, 'bench', 'results'), CHECK_DIR)).toBe('check');
  });
});
