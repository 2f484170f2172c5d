// The analytics scenario's heavy clients, in a process of their own so that
// answering their responses (about 1,000 a second closed loop) never delays
// the latency probe in the bench process. Started by heavyLoad() in
// bench/lib/load.ts with the loads as JSON in HEAVY_LOAD, each closed loop
// (autocannon) or open loop (a fixed rate); prints their results as one JSON
// line.
import { runHeavyLoad, type HeavyLoad } from './lib/load.ts';

const loads = JSON.parse(process.env.HEAVY_LOAD ?? '[]') as HeavyLoad[];
process.stdout.write(`${JSON.stringify(await Promise.all(loads.map(runHeavyLoad)))}\n`);
