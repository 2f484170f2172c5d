import { openDbServer, startService, benchUuid, cleanupAll, log, benchSql } from './lib.ts';
const db = await openDbServer();
const d = await db.createDatabase('mds_bench_explain');
const s = await startService(d.url);
const id = benchUuid('x');
await s.admin.ok('POST', '/instruments', [{ id, assetClass: 'crypto', displayName: 'X', quoteCurrency: 'USD', quoteUnit: 'USD per BTC', symbols: [{ symbol: 'XX', validFrom: '2000-01-01', validTo: null }] }]);
const t0 = Date.parse('2023-01-01T00:00:00Z');
async function* gen(a: number, b: number) { let s=''; for (let t = t0 + a*86400000; t < t0 + b*86400000; t += 60000) { s += `{"instrumentId":"${id}","barTimestamp":"${new Date(t).toISOString()}","openPrice":10,"highPrice":11,"lowPrice":9,"closePrice":10,"volume":5,"quoteCurrency":"USD","quoteUnit":"USD per BTC","source":"s","asOf":"2024-01-01T00:00:00.000Z"}\n`; if (s.length > 200000) { yield s; s=''; } } if (s) yield s; }
for (const [a, b] of (process.env.STEPS ?? '0-1,1-2,2-4,4-8,8-9').split(',').map((x) => x.split('-').map(Number))) {
  const r = await s.admin.postStream('/bars/intraday', 'application/x-ndjson', gen(a, b));
  log(`days ${a}..${b} (${(b-a)*1440} bars, ${b*1440} stored after): ${r.status} in ${(r.ms/1000).toFixed(1)}s`);
}
const sql = benchSql(d.url);
const N = Number(process.env.LASTDAY ?? 9);
await sql`create table ingest_staging as select instrument_id, bar_ts from intraday_bars where bar_ts >= ${new Date(t0 + (N-1)*86400000)}`;
await sql`analyze ingest_staging`;
const plan = await sql.unsafe(`explain analyze
      with touched as (
        select distinct instrument_id, date_bin('5 minutes'::interval, bar_ts, '2000-01-03T00:00:00Z'::timestamptz) as bucket
        from ingest_staging
      )
      select m.instrument_id, t.bucket, (array_agg(m.open_price order by m.bar_ts))[1], max(m.high_price)
      from touched t
      join intraday_bars m
        on m.instrument_id = t.instrument_id
       and m.bar_ts >= t.bucket
       and m.bar_ts < t.bucket + '5 minutes'::interval
      group by m.instrument_id, t.bucket`);
for (const row of plan) console.log(row['QUERY PLAN']);
await sql.end();
await cleanupAll();
