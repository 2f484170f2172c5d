// The analytics scenario's heavy clients, in a process of their own so that
// answering their ~1,000 responses a second never delays the latency probe
// in the bench process. Started by heavyLoad() in bench/lib/load.ts with the loads
// as JSON in HEAVY_LOAD; prints the autocannon results as one JSON line.
import autocannon from 'autocannon';
import { autocannonOptions, type LoadOptions } from './lib/load.ts';

const loads = JSON.parse(process.env.HEAVY_LOAD ?? '[]') as LoadOptions[];
const results = await Promise.all(loads.map((o) => autocannon({ ...autocannonOptions(o), duration: o.durationSec })));
process.stdout.write(
  `${JSON.stringify(results.map((r) => ({ requests: r.requests.total, ok: r['2xx'], non2xx: r.non2xx, errors: r.errors, timeouts: r.timeouts, p50Ms: r.latency.p50, p99Ms: r.latency.p99 })))}\n`,
);
