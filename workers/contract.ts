// What crosses between the server and workers/: each task's input and
// result types, and the constants the server's schemas and answers name.
// Types and constants only: importing this loads no task code, so the request
// thread never loads the task modules or their libraries (jstat). The server
// imports nothing else from workers/ (eslint.config.js); workers/pool.ts
// loads the task modules themselves, on its threads or, for the closed forms,
// on the calling thread. The task modules import their input and result
// types from here. The types and constants are in contract/, one module per
// domain (options, strategies, statistics over closes, technicals), which
// import nothing but each other's types; this module holds the task tables
// and re-exports them, the one entry the server imports.

import type {
  ChainGreeksInput,
  ContractGreeks,
  OptionLeg,
  OptionPriceResult,
  OptionPricingInput,
  VolatilitySnapshot,
  VolatilitySnapshotInput,
} from './contract/options.ts';
import type { BetaResult, CorrelationMatrixResult, CorrelationMethod, DatedCloses, SourceLead, SourceLeadsInput } from './contract/statistics.ts';
import type { ProbabilityInput, ProbabilityResult, StrategyInput, StrategyResult } from './contract/strategy.ts';
import type { OhlcvBars, TechnicalsData } from './contract/technicals.ts';

interface Task<Input, Result> {
  input: Input;
  result: Result;
}

/** The tasks the pool runs on its threads (WorkerPool.run): heavy numerics over typed arrays. */
export interface Tasks {
  strategyEv: Task<StrategyInput, StrategyResult>;
  technicals: Task<OhlcvBars, TechnicalsData>;
  correlations: Task<{ series: DatedCloses[]; method: CorrelationMethod }, CorrelationMatrixResult>;
  beta: Task<{ subject: DatedCloses; benchmark: DatedCloses }, BetaResult>;
  chainGreeks: Task<ChainGreeksInput, ContractGreeks[]>;
  sourceLeads: Task<SourceLeadsInput, SourceLead[]>;
  volatilitySnapshot: Task<VolatilitySnapshotInput, VolatilitySnapshot>;
}

/**
 * Closed forms of a few microseconds, computed on the calling thread
 * (closedForm in workers/pool.ts): a hop to a thread would cost more than
 * the work.
 */
export interface ClosedForms {
  optionPrice: Task<OptionPricingInput, OptionPriceResult>;
  probability: Task<ProbabilityInput, ProbabilityResult>;
  /** What keeps `legs` from being the named structure: nothing when they are. */
  structureProblems: Task<{ structure: string; legs: readonly OptionLeg[] }, string[]>;
}

export type TaskName = keyof Tasks;
export type ClosedFormName = keyof ClosedForms;

export * from './contract/options.ts';
export * from './contract/statistics.ts';
export * from './contract/strategy.ts';
export * from './contract/technicals.ts';
