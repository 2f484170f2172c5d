import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql } from '../../server/db/sql.ts';
import { brokerCodeStatement, searchInstruments, searchStatement, searchThresholds, type SearchQuery } from '../../server/instruments/repository.ts';
import { dropScratchSchema, openScratchSchema } from './scratch-schema.ts';

// 20,000 instruments in a schema of their own, migrated like the real one, so
// the plans are those of the real indexes and no other test sees the rows.
const SCHEMA = `index_probe_${process.pid}`;
const COUNT = 20_000;
const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'te', 'vo', 'zi', 'bra', 'cre', 'dri', 'flo', 'gro', 'pla', 'qua', 'sti', 'tro', 'vex', 'wyn'];
const SUFFIXES = ['Holdings', 'Corporation', 'Group', 'Partners', 'Trust', 'Industries', 'Limited', 'Mining', 'Software', 'Energy'];
const TODAY = new Date().toISOString().slice(0, 10);

// The generator's rules, restated for the expectations: instrument n is
// md5('<schema>-n') as a uuid, trades as four letters spread by a multiplier
// coprime to 26^4, and is named by three syllables picked from n.
const idOf = (n: number) =>
  createHash('md5')
    .update(`${SCHEMA}-${n}`)
    .digest('hex')
    .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5');
const symbolOf = (n: number) => {
  const k = (n * 7919) % 26 ** 4;
  return [26 ** 3, 26 ** 2, 26, 1].map((p) => String.fromCharCode(65 + (Math.floor(k / p) % 26))).join('');
};
const nameWordOf = (n: number) => {
  const word = SYLLABLES[n % 20] + SYLLABLES[Math.floor(n / 20) % 20] + SYLLABLES[Math.floor(n / 400) % 20];
  return word[0].toUpperCase() + word.slice(1);
};

let sql: Sql;

beforeAll(async () => {
  sql = await openScratchSchema(SCHEMA, 'index-probe');
  await sql`
    insert into instruments (id, asset_class, display_name, quote_currency, quote_unit, is_active)
    select
      md5(${SCHEMA} || '-' || n)::uuid,
      'equity',
      initcap((${SYLLABLES}::text[])[1 + n % 20] || (${SYLLABLES}::text[])[1 + n / 20 % 20] || (${SYLLABLES}::text[])[1 + n / 400 % 20])
        || ' ' || (${SUFFIXES}::text[])[1 + n * 7 % 10],
      'USD', 'USD per share', true
    from generate_series(1, ${COUNT}) n
  `;
  await sql`
    insert into instrument_symbols (instrument_id, symbol, valid_from, valid_to)
    select
      md5(${SCHEMA} || '-' || n)::uuid,
      chr(65 + k / 17576 % 26) || chr(65 + k / 676 % 26) || chr(65 + k / 26 % 26) || chr(65 + k % 26),
      '2000-01-01', null
    from generate_series(1, ${COUNT}) n, lateral (select n * 7919 % 456976 as k) s
  `;
  await sql`
    insert into instrument_broker_codes (instrument_id, broker, code)
    select md5(${SCHEMA} || '-' || n)::uuid, 'ibkr', 'IB' || n
    from generate_series(1, ${COUNT}) n
  `;
  // VACUUM moves what the GIN indexes hold in their pending list (the fast
  // path an insert takes) into the index proper; left there, the planner
  // prices a trigram probe above a scan. ANALYZE gives it the row counts.
  for (const table of ['instruments', 'instrument_symbols', 'instrument_broker_codes']) await sql`vacuum analyze ${sql(table)}`;
});

afterAll(() => dropScratchSchema(SCHEMA, 'index-probe', sql));

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** Runs EXPLAIN of the statement the repository runs, with its thresholds set as it sets them. */
async function explain(statement: ReturnType<typeof searchStatement> | ReturnType<typeof brokerCodeStatement>) {
  const [, [row]] = await sql.begin((tx) => [tx`${searchThresholds(sql)}`, tx`explain (format json) ${statement}`]);
  const all = nodes((row['QUERY PLAN'] as { Plan: PlanNode }[])[0].Plan);
  return {
    indexes: new Set(all.filter((n) => ['Index Scan', 'Index Only Scan', 'Bitmap Index Scan'].includes(n['Node Type'])).map((n) => n['Index Name'])),
    seqScanned: new Set(all.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name'])),
  };
}

const search = (text: string): SearchQuery => ({ text, day: TODAY, limit: 25, vendorBroker: 'ibkr' });
const SEARCH_INDEXES = ['instrument_symbols_symbol_idx', 'instrument_symbols_trgm', 'instruments_display_name_trgm'];

describe('instrument search on 20,000 instruments', () => {
  const n = 4242;

  it('when the query is a ticker, then the statement probes all three search indexes and never scans the symbol table, and the ticker comes first', async () => {
    const plan = await explain(searchStatement(sql, search(symbolOf(n))));
    expect([...plan.indexes]).toEqual(expect.arrayContaining(SEARCH_INDEXES));
    expect([...plan.seqScanned]).not.toContain('instrument_symbols');
    const found = await searchInstruments(sql, search(symbolOf(n).toLowerCase()));
    expect(found[0]).toMatchObject({ id: idOf(n), currentSymbol: symbolOf(n) });
  });

  it('when the query has one or two letters (exact and prefix only), then the statement probes all three search indexes and never scans the symbol table', async () => {
    const prefix = symbolOf(n).slice(0, 2);
    const plan = await explain(searchStatement(sql, search(prefix)));
    expect([...plan.indexes]).toEqual(expect.arrayContaining(SEARCH_INDEXES));
    expect([...plan.seqScanned]).not.toContain('instrument_symbols');
    const found = await searchInstruments(sql, search(prefix));
    expect(found.length).toBeGreaterThan(0);
    for (const i of found) expect(i.currentSymbol!.startsWith(prefix) || i.displayName.toUpperCase().startsWith(prefix)).toBe(true);
  });

  it('when the query is a misspelt name, then the statement probes all three search indexes and never scans the symbol table', async () => {
    const typo = nameWordOf(n).slice(0, 3) + nameWordOf(n).slice(4);
    const plan = await explain(searchStatement(sql, search(typo)));
    expect([...plan.indexes]).toEqual(expect.arrayContaining(SEARCH_INDEXES));
    expect([...plan.seqScanned]).not.toContain('instrument_symbols');
  });

  it('when a name is a near miss the index only finds at the search threshold (word similarity 0.4 to 0.6), then it is found, and the threshold does not outlive the search', async () => {
    // Below pg_trgm's default word-similarity threshold (0.6) and at or above
    // the search's (0.4): found only if the statement runs with its own.
    const word = nameWordOf(n);
    const nearMiss = word.slice(0, 2) + word.slice(4);
    const [{ similarity }] = await sql`select word_similarity(lower(${nearMiss}), lower(${word})) as similarity`;
    expect(similarity).toBeGreaterThanOrEqual(0.4);
    expect(similarity).toBeLessThan(0.6);
    const found = await searchInstruments(sql, { ...search(nearMiss), limit: 100 });
    expect(found.map((i) => i.id)).toContain(idOf(n));
    const [{ threshold }] = await sql`select current_setting('pg_trgm.word_similarity_threshold') as threshold`;
    expect(Number(threshold)).toBe(0.6);
  });

  it('when looking up a broker code, then the statement probes instrument_broker_codes_lookup_idx and finds the one instrument', async () => {
    const q = { broker: 'ibkr', code: `IB${n}`, day: TODAY, limit: 25, vendorBroker: 'ibkr' };
    const plan = await explain(brokerCodeStatement(sql, q));
    expect([...plan.indexes]).toContain('instrument_broker_codes_lookup_idx');
    expect([...plan.seqScanned]).not.toContain('instrument_broker_codes');
    const rows = await sql`${brokerCodeStatement(sql, q)}`;
    expect(rows.map((r) => r.id)).toEqual([idOf(n)]);
  });
});

describe('bar table indexes', () => {
  it('when migrated, then the bar tables carry their primary keys, and a time-only index only where the rollup refresh reads by time', async () => {
    const [{ tier }] = await sql`select tier from storage_tier`;
    const rows = await sql`
      select c.relname as "table", array_agg(i.relname::text order by i.relname) as indexes
      from pg_class c
      join pg_index x on x.indrelid = c.oid
      join pg_class i on i.oid = x.indexrelid
      where c.relnamespace = ${SCHEMA}::regnamespace
        and c.relname in ('daily_bars', 'intraday_bars', 'intraday_bars_5min', 'intraday_bars_15min', 'intraday_bars_30min', 'intraday_bars_1hour')
      group by c.relname
    `;
    const byTable = Object.fromEntries(rows.map((r) => [r.table, r.indexes]));
    const hypertables = tier === 'timescaledb' || tier === 'timescaledb-apache';
    expect(byTable.daily_bars).toEqual(['daily_bars_pkey']);
    expect(byTable.intraday_bars).toEqual(hypertables ? ['intraday_bars_bar_ts_idx', 'intraday_bars_pkey'] : ['intraday_bars_pkey']);
    // Full TimescaleDB keeps the rollups as continuous aggregates (views), not tables.
    if (tier !== 'timescaledb') {
      for (const rollup of ['5min', '15min', '30min', '1hour']) expect(byTable[`intraday_bars_${rollup}`]).toEqual([`intraday_bars_${rollup}_pkey`]);
    }
  });
});
