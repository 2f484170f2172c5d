import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql } from '../../server/db/sql.ts';
import { coverageStatement, selectCoverage, type CoverageFilter } from '../../server/event-reactions/repository.ts';
import { dropScratchSchema, openScratchSchema } from './scratch-schema.ts';

// The coverage read on 2,000 instruments × 50 reactions, in a schema of its
// own migrated like the real one, so the plan is that of the real tables and
// indexes and no other test sees the rows.
const SCHEMA = `coverage_probe_${process.pid}`;
const INSTRUMENTS = 2_000;
const REACTIONS = 50;
const CLASSES = ['earnings_release', 'guidance', 'analyst_rating', 'media_report', 'dividend'];
const TODAY = new Date().toISOString().slice(0, 10);

// The generator's rules, restated for the expectations: instrument n is
// md5('<schema>-n') as a uuid, trades as 'S<n>' (every 100th only from 2999,
// so without a current symbol), and its k-th reaction (k = 0..49) is to news
// of class k mod 5, on 2000-01-03 + k × (n mod 7 + 1) days.
const uuidOf = (text: string) =>
  createHash('md5')
    .update(text)
    .digest('hex')
    .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5');
const idOf = (n: number) => uuidOf(`${SCHEMA}-${n}`);
const hasCurrentSymbol = (n: number) => n % 100 !== 0;
const spacing = (n: number) => (n % 7) + 1;

let sql: Sql;

beforeAll(async () => {
  sql = await openScratchSchema(SCHEMA, 'coverage-probe');
  await sql`
    insert into instruments (id, asset_class, display_name, quote_currency, quote_unit, is_active)
    select md5(${SCHEMA} || '-' || n)::uuid, 'equity', 'Probe ' || n, 'USD', 'USD per share', true
    from generate_series(1, ${INSTRUMENTS}) n
  `;
  await sql`
    insert into instrument_symbols (instrument_id, symbol, valid_from, valid_to)
    select md5(${SCHEMA} || '-' || n)::uuid, 'S' || n, case when n % 100 = 0 then date '2999-01-01' else date '2000-01-01' end, null
    from generate_series(1, ${INSTRUMENTS}) n
  `;
  await sql`
    insert into news (id, instrument_id, event_class, headline, source, url, published_at, is_company_confirmed)
    select md5(${SCHEMA} || '-' || n || '-' || k)::uuid, md5(${SCHEMA} || '-' || n)::uuid, (${CLASSES}::text[])[1 + k % 5],
      'Probe headline', 'probe', 'https://news.example.test/' || n || '/' || k,
      (date '2000-01-03' + k * (n % 7 + 1))::timestamp at time zone 'UTC' + interval '15 hours', k % 2 = 0
    from generate_series(1, ${INSTRUMENTS}) n, generate_series(0, ${REACTIONS - 1}) k
  `;
  await sql`
    insert into event_reactions (event_id, instrument_id, event_class, published_at, event_date, previous_session_date,
      previous_close, session_close, reaction_pct, abs_move_pct, is_corporate_adjusted, action_set_version)
    select id, instrument_id, event_class, published_at, published_at::date, published_at::date - 1, 100, 101, 1, 1, false, null
    from news
  `;
  for (const table of ['instruments', 'instrument_symbols', 'news', 'event_reactions']) await sql`vacuum analyze ${sql(table)}`;
}, 120_000);

afterAll(() => dropScratchSchema(SCHEMA, 'coverage-probe', sql));

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Loops': number;
  'Actual Rows': number;
  Plans?: PlanNode[];
}

const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

async function explain(f: CoverageFilter) {
  const [row] = await sql`explain (analyze, buffers, format json) ${coverageStatement(sql, f)}`;
  return nodes((row['QUERY PLAN'] as { Plan: PlanNode }[])[0].Plan);
}

/** The expectation from the generator's rules: best covered first, then symbol in byte order. */
function expected(f: { classes?: number; minWindowDays?: number; limit: number }) {
  const count = f.classes === undefined ? REACTIONS : (REACTIONS / CLASSES.length) * f.classes;
  return Array.from({ length: INSTRUMENTS }, (_, i) => i + 1)
    .filter(hasCurrentSymbol)
    .map((n) => {
      // With classes 0..c-1 of k mod 5, the last reaction is the largest k of those classes.
      const lastK = f.classes === undefined ? REACTIONS - 1 : REACTIONS - CLASSES.length + f.classes - 1;
      return { n, symbol: `S${n}`, count, window: lastK * spacing(n) };
    })
    .filter((x) => f.minWindowDays === undefined || x.window >= f.minWindowDays)
    .sort((a, b) => b.count - a.count || b.window - a.window || (a.symbol < b.symbol ? -1 : a.symbol > b.symbol ? 1 : 0))
    .slice(0, f.limit)
    .map((x) => [idOf(x.n), x.symbol, x.count, x.window]);
}

describe('event-reaction coverage on 2,000 instruments × 50 reactions', () => {
  it('when every class counts, then one statement reads the reactions once, groups them once, and returns the best covered first', async () => {
    const f: CoverageFilter = { minReactions: 1, limit: 1000, day: TODAY };
    const plan = await explain(f);
    const reactionScans = plan.filter((n) => n['Relation Name'] === 'event_reactions');
    expect(reactionScans).toHaveLength(1);
    expect(reactionScans[0]['Actual Loops']).toBe(1);
    expect(reactionScans[0]['Actual Rows']).toBe(INSTRUMENTS * REACTIONS);
    expect(plan.filter((n) => n['Node Type'] === 'Aggregate')).toHaveLength(1);
    const rows = await selectCoverage(sql, f);
    expect(rows.map((r) => [r.instrumentId, r.symbol, r.reactionCount, r.observationWindowDays])).toEqual(expected({ limit: 1000 }));
  });

  // Whether the planner reads those rows through event_reactions_class_idx or filters one scan of the table depends on
  // the visibility map and cost settings of the server (both occur on the CI tiers); either way it is one pass.
  it('when two classes and a minimum window are asked for, then only the reactions of those classes reach the single aggregate pass', async () => {
    const f: CoverageFilter = { eventClasses: ['earnings_release', 'guidance'], minReactions: 20, minWindowDays: 200, limit: 5000, day: TODAY };
    const plan = await explain(f);
    const reactionScans = plan.filter((n) => n['Relation Name'] === 'event_reactions');
    expect(reactionScans).toHaveLength(1);
    expect(reactionScans[0]['Actual Loops']).toBe(1);
    expect(reactionScans[0]['Actual Rows']).toBe((INSTRUMENTS * REACTIONS * 2) / CLASSES.length);
    expect(plan.filter((n) => n['Node Type'] === 'Aggregate')).toHaveLength(1);
    const rows = await selectCoverage(sql, f);
    expect(rows.map((r) => [r.instrumentId, r.symbol, r.reactionCount, r.observationWindowDays])).toEqual(
      expected({ classes: 2, minWindowDays: 200, limit: 5000 }),
    );
    expect(rows.length).toBeGreaterThan(0);
    expect(await selectCoverage(sql, { ...f, minReactions: 21 })).toEqual([]);
  });
});
