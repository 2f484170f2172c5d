import type { Area } from '../area.ts';
import { ivSnapshotIngest, optionContractIngest, optionQuoteIngest } from './ingest.ts';

export const optionsArea: Area = {
  routes: [],
  mount() {},
  ingest: { 'options/contracts': optionContractIngest, 'options/quotes': optionQuoteIngest, 'iv-snapshots': ivSnapshotIngest },
};
