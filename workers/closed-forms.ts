import { priceOption } from './black-scholes.ts';
import type { ClosedFormName, ClosedForms } from './contract.ts';
import { checkStructure } from './option-structures.ts';
import { probabilityOfTarget } from './probability.ts';

// The closed forms the request thread computes itself (closedForm in
// workers/pool.ts): each takes a few microseconds, less than a hop to a
// worker thread and back.

export const CLOSED_FORMS: { [K in ClosedFormName]: (input: ClosedForms[K]['input']) => ClosedForms[K]['result'] } = {
  optionPrice: priceOption,
  probability: probabilityOfTarget,
  structureProblems: ({ structure, legs }) => checkStructure(structure, legs),
};
