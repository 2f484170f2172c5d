import { computeBeta } from './beta.ts';
import { correlationMatrix, type CorrelationMethod, type DatedCloses } from './correlation.ts';
import { chainGreeks, type ChainGreeksInput } from './option-greeks.ts';
import { sourceLeads, type SourceLeadsInput } from './source-leads.ts';
import { evaluateStrategy, type StrategyInput } from './strategy-ev.ts';
import { computeTechnicals, type OhlcvBars } from './technicals.ts';

// Worker-thread entry point. Each task is a pure function over typed arrays
// and numbers: no database handles, no I/O. `dispatch` times the run so the
// main thread can report queue wait and run time separately.

const TASKS = {
  strategyEv: (input: StrategyInput) => evaluateStrategy(input),
  technicals: (bars: OhlcvBars) => computeTechnicals(bars),
  correlations: (input: { series: DatedCloses[]; method: CorrelationMethod }) => correlationMatrix(input.series, input.method),
  beta: (input: { subject: DatedCloses; benchmark: DatedCloses }) => computeBeta(input.subject, input.benchmark),
  chainGreeks: (input: ChainGreeksInput) => chainGreeks(input),
  sourceLeads: (input: SourceLeadsInput) => sourceLeads(input),
} satisfies Record<string, (input: never) => unknown>;

export type Tasks = typeof TASKS;

export function dispatch({ task, input, queuedAt }: { task: keyof Tasks; input: unknown; queuedAt: number }) {
  const startedAt = performance.timeOrigin + performance.now();
  const result = (TASKS[task] as (i: unknown) => unknown)(input);
  return { result, waitMs: startedAt - queuedAt, runMs: performance.timeOrigin + performance.now() - startedAt };
}
