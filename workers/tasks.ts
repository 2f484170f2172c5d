import { computeBeta } from './beta.ts';
import type { TaskName, Tasks } from './contract.ts';
import { correlationMatrix } from './correlation.ts';
import { chainGreeks } from './option-greeks.ts';
import { sourceLeads } from './source-leads.ts';
import { evaluateStrategy } from './strategy-ev.ts';
import { computeTechnicals } from './technicals.ts';
import { volatilitySnapshot } from './vol-stats.ts';

// Worker-thread entry point. Each task is a pure function over typed arrays
// and numbers: no database handles, no I/O. `dispatch` times the run so the
// main thread can report queue wait and run time separately.

const TASKS: { [K in TaskName]: (input: Tasks[K]['input']) => Tasks[K]['result'] } = {
  strategyEv: evaluateStrategy,
  technicals: computeTechnicals,
  correlations: (input) => correlationMatrix(input.series, input.method),
  beta: (input) => computeBeta(input.subject, input.benchmark),
  chainGreeks,
  sourceLeads,
  volatilitySnapshot,
};

export function dispatch({ task, input, queuedAt }: { task: TaskName; input: unknown; queuedAt: number }) {
  const startedAt = performance.timeOrigin + performance.now();
  const result = (TASKS[task] as (i: unknown) => unknown)(input);
  return { result, waitMs: startedAt - queuedAt, runMs: performance.timeOrigin + performance.now() - startedAt };
}
