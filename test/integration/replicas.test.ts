import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../../server/observability/metrics.ts';
import { HAVE_PG_BIN, StreamingPair } from '../support/streaming-replica.ts';
import { createInstrument, dailyBar, ingest } from './fixtures.ts';
import { startService, type Service } from './harness.ts';
import { until } from '../support/until.ts';

// A real primary and a real streaming replica (pg_basebackup -R) under the
// real service: which server answers is read from the service's own
// db_read_units_total, and told apart by data only the primary has.

async function metricValue(name: string, labels: Record<string, string>): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  return values.filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want)).reduce((sum, v) => sum + v.value, 0);
}

const unitsOn = (server: string, reason?: string) => metricValue('db_read_units_total', reason === undefined ? { server } : { server, reason });
const serving = () => metricValue('db_replica_serving', { replica: 'replica-1' });

describe.skipIf(!HAVE_PG_BIN)('read replicas: a real primary and streaming replica', () => {
  let pair: StreamingPair;
  let svc: Service;
  let key: string;
  let id: string;

  const close = async (query = '') => {
    const res = await svc.get(`/v1/instruments/${id}/prices?from=2024-03-01&to=2024-03-01${query}`, key);
    expect(res.status).toBe(200);
    return { close: res.body.data[0]?.closePrice as number, meta: res.body.meta };
  };

  beforeAll(async () => {
    pair = await StreamingPair.create();
    svc = await startService({
      DATABASE_URL: pair.primaryUrl,
      DATABASE_REPLICA_URLS: pair.replicaUrl,
      DATABASE_REPLICA_MAX_LAG_MS: '1000',
      RATE_LIMIT_LIVE_PER_MINUTE: '100000',
    });
    key = await svc.keyWith(['prices:read']);
    ({ id } = await createInstrument(svc));
    await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2024-03-01', close: 100 })]);
    await until(async () => (await serving()) === 1, { timeoutMs: 30_000, what: 'the replica serves' });
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
    await pair?.destroy();
  });

  it('sends reads to the replica and writes to the primary', async () => {
    const before = await unitsOn('replica-1');
    // The bars were written through the primary (the replica refuses writes) and replayed.
    await until(async () => (await close()).close === 100, { timeoutMs: 30_000, what: 'the replica has the bar' });
    expect(await unitsOn('replica-1')).toBeGreaterThan(before);
    const [replica] = await pair.replicaClient()`select pg_is_in_recovery() as recovery`;
    expect(replica.recovery).toBe(true);
  });

  it('runs a bulk stream and a two-connection intraday read (one exported snapshot) on the replica', async () => {
    const { id: coin } = await createInstrument(svc, { assetClass: 'crypto' });
    const start = Date.UTC(2024, 2, 4);
    // 2,500 minutes in a 2-day window: the 1-minute read is read in two halves on two connections (SPLIT_INTRADAY_BARS).
    const minutes = Array.from({ length: 2500 }, (_, i) => ({
      instrumentId: coin,
      barTimestamp: new Date(start + i * 60_000).toISOString(),
      openPrice: 10 + i,
      highPrice: 11 + i,
      lowPrice: 9 + i,
      closePrice: 10 + i,
      volume: 1,
      quoteCurrency: 'USD',
      quoteUnit: 'USD per coin',
      source: 'test-fixture',
      asOf: new Date(start + i * 60_000 + 60_000).toISOString(),
    }));
    await ingest(svc, '/bars/intraday', minutes);
    const intraday = `/v1/instruments/${coin}/intraday?from=2024-03-04&to=2024-03-05&interval=1min`;
    await until(async () => (await svc.get(intraday, key)).body.data?.length === 2500, { timeoutMs: 30_000, what: 'the replica has the minutes' });
    const before = await unitsOn('replica-1');
    const res = await svc.get(intraday, key);
    expect(res.body.data.map((b: { closePrice: number }) => b.closePrice)).toEqual(minutes.map((m) => m.closePrice));
    const bulk = await svc.get(`/v1/prices/bulk?instrumentIds=${id},${coin}&from=2024-03-01&to=2024-03-01`, key);
    expect(bulk.status).toBe(200);
    expect(bulk.body.data[id].map((b: { closePrice: number }) => b.closePrice)).toEqual([100]);
    expect(await unitsOn('primary', 'replica_failed')).toBe(0);
    expect(await unitsOn('replica-1')).toBeGreaterThan(before + 1);
  });

  it('takes a replica whose replay falls behind the bound out of reads, and back once it catches up', async () => {
    const replica = pair.replicaClient();
    try {
      await replica`select pg_wal_replay_pause()`;
      // A correction only the primary has: a read that sees it was answered by the primary.
      await ingest(svc, '/bars/daily', [dailyBar(id, { barDate: '2024-03-01', close: 101 }, { knownAt: undefined })]);
      await until(async () => (await serving()) === 0, { timeoutMs: 30_000, what: 'the lagging replica is out' });
      const viaPrimary = await unitsOn('primary', 'none_serving');
      expect((await close()).close).toBe(101);
      expect(await unitsOn('primary', 'none_serving')).toBeGreaterThan(viaPrimary);
    } finally {
      await replica`select pg_wal_replay_resume()`;
      await replica.end();
    }
    await until(async () => (await serving()) === 1, { timeoutMs: 30_000, what: 'the replica serves again' });
    const before = await unitsOn('replica-1');
    expect((await close()).close).toBe(101);
    expect(await unitsOn('replica-1')).toBeGreaterThan(before);
  });

  it('answers every read while the replica is killed mid-load, then uses it again when it returns', async () => {
    await until(async () => (await serving()) === 1, { timeoutMs: 30_000, what: 'the replica serves' });
    const statuses: number[] = [];
    let stop = false;
    const client = async () => {
      while (!stop) {
        const res = await svc.get(`/v1/instruments/${id}/prices?from=2024-03-01&to=2024-03-01`, key);
        statuses.push(res.status);
      }
    };
    const load = Promise.all(Array.from({ length: 6 }, client));
    await until(async () => statuses.length >= 50, { timeoutMs: 30_000, what: 'reads run on the replica' });
    await pair.kill('replica');
    await until(async () => (await serving()) === 0, { timeoutMs: 30_000, what: 'the killed replica is out' });
    const served = statuses.length;
    await until(async () => statuses.length >= served + 50, { timeoutMs: 30_000, what: 'reads go on without it' });
    stop = true;
    await load;
    expect(statuses.filter((s) => s !== 200)).toEqual([]);

    await pair.start('replica');
    await until(async () => (await serving()) === 1, { timeoutMs: 30_000, what: 'the returned replica serves' });
    const before = await unitsOn('replica-1');
    expect((await close()).close).toBe(101);
    expect(await unitsOn('replica-1')).toBeGreaterThan(before);
  }, 120_000);

  it('serves an asOf the replica has replayed from the replica, and a later one from the primary', async () => {
    // A bound long enough that the paused replica stays in, to see which reads it may answer.
    const patient = await startService({
      DATABASE_URL: pair.primaryUrl,
      DATABASE_REPLICA_URLS: pair.replicaUrl,
      DATABASE_REPLICA_MAX_LAG_MS: '600000',
      RATE_LIMIT_LIVE_PER_MINUTE: '100000',
      EXPORTS_POLL_MS: '100',
    });
    const patientKey = await patient.keyWith(['prices:read']);
    const read = async (query: string) => {
      const res = await patient.get(`/v1/instruments/${id}/prices?from=2024-03-01&to=2024-03-01${query}`, patientKey);
      expect(res.status).toBe(200);
      return { close: res.body.data[0]?.closePrice as number, asOf: res.body.meta.asOf as string };
    };
    const replica = pair.replicaClient();
    try {
      await until(
        async () => {
          const before = await unitsOn('replica-1');
          return (await read('')).close === 101 && (await unitsOn('replica-1')) > before;
        },
        { timeoutMs: 30_000, what: 'the replica serves this service' },
      );
      const known101 = new Date().toISOString();
      // The router gives the replica an asOf only once it has replayed a primary sample taken at or after it, so when
      // the replica answers asOf=known101, its replay has passed known101 when it stops.
      await until(
        async () => {
          const before = await unitsOn('replica-1');
          expect((await read(`&asOf=${known101}`)).close).toBe(101);
          return (await unitsOn('replica-1')) > before;
        },
        { timeoutMs: 30_000, what: 'the replica answers asOf=known101' },
      );
      await replica`select pg_wal_replay_pause()`;
      await ingest(patient, '/bars/daily', [dailyBar(id, { barDate: '2024-03-01', close: 102 }, { knownAt: undefined })]);
      const committedBy = Date.now();

      // Without asOf: the replica's answer, and, once the router has seen it behind the primary, meta.asOf an instant it
      // had replayed, before the correction committed.
      await until(
        async () => {
          const latest = await read('');
          expect(latest.close).toBe(101);
          return Date.parse(latest.asOf) < committedBy;
        },
        { timeoutMs: 30_000, what: 'meta.asOf says what the replica replayed' },
      );

      // An asOf the replica has replayed: exact there.
      const onReplica = await unitsOn('replica-1');
      expect((await read(`&asOf=${known101}`)).close).toBe(101);
      expect(await unitsOn('replica-1')).toBeGreaterThan(onReplica);

      // An asOf after what it replayed: the primary answers, with the correction.
      const onPrimary = await unitsOn('primary', 'as_of_not_replayed');
      expect((await read(`&asOf=${new Date().toISOString()}`)).close).toBe(102);
      expect(await unitsOn('primary', 'as_of_not_replayed')).toBeGreaterThan(onPrimary);

      // An export job is pinned to the instant it was accepted, after the correction: its reads, made outside any
      // request, go to the primary too, and its file holds the correction.
      const beforeJob = await unitsOn('primary', 'as_of_not_replayed');
      const posted = await patient.post('/v1/exports', patientKey, {
        dataset: 'daily-prices',
        instrumentIds: [id],
        from: '2024-03-01',
        to: '2024-03-01',
        format: 'csv',
        compression: 'none',
      });
      expect(posted.status).toBe(202);
      const job = await until(
        async () => {
          const res = await patient.get(`/v1/exports/${posted.body.data.id}`, patientKey);
          return ['ready', 'failed'].includes(res.body.data?.status) ? res.body.data : null;
        },
        { timeoutMs: 30_000, what: 'the export job ends', intervalMs: 50 },
      );
      expect(job.status).toBe('ready');
      const csv = await (await fetch(job.files[0].url)).text();
      const [header, row] = csv.split('\r\n');
      expect(row.split(',')[header.split(',').indexOf('closePrice')]).toBe('102');
      expect(await unitsOn('primary', 'as_of_not_replayed')).toBeGreaterThan(beforeJob);
    } finally {
      await replica`select pg_wal_replay_resume()`;
      await replica.end();
      await patient.stop();
    }
  }, 120_000);
});
