import { z } from 'zod';
import type { Area } from '../http/area.ts';
import type { OptionsDeps } from './service.ts';
import type { AnyIngestKind } from '../ingest/kind.ts';
import { defineRoute } from '../http/route.ts';
import { ivSnapshotIngest, optionContractIngest, optionQuoteIngest } from './ingest.ts';
import {
  ChainItemSchema,
  ChainMetaSchema,
  ChainQuerySchema,
  ContractMetaSchema,
  ContractQuerySchema,
  ExpiriesMetaSchema,
  ExpiriesQuerySchema,
} from './schema.ts';
import { listExpiries, readChain, readContract } from './service.ts';
import { IdParamsSchema, InstrumentParamsSchema } from '../core/ids.ts';

const TAG = 'Options';

export const expiriesRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id/options/expiries',
  operationId: 'listOptionExpiries',
  tag: TAG,
  summary: "An underlying's option expiries, ascending, each with at least one contract listed at the cut-off",
  description:
    'The expiry dates of the chain at the cut-off (asOf; now without it): of the contracts listed by then that had not expired before its day. Never an empty list: an equity, ETF or index without such a contract is 404 options_unavailable (not_ingested), and any other asset class 404 options_unavailable (not_optionable).',
  scope: 'options:read',
  params: InstrumentParamsSchema,
  query: ExpiriesQuerySchema,
  response: { status: 200, description: 'the expiry dates', data: z.array(z.string()), meta: ExpiriesMetaSchema },
  errors: ['not_found', 'options_unavailable'],
});

export const chainRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id/options',
  operationId: 'getOptionChain',
  tag: TAG,
  summary: 'The option chain as it stood at a cut-off: each contract with its latest quote and Greeks',
  description:
    "Greeks are the provider's when the quote carried them (greeksSource provider), else computed with Black–Scholes–Merton from the quote mid (greeksSource computed, with the inputs in model), else absent with greeksUnavailable saying what is missing. meta.greeksCoverage counts the three over the rows returned.",
  scope: 'options:read',
  params: InstrumentParamsSchema,
  query: ChainQuerySchema,
  response: { status: 200, description: 'the chain, by expiry, strike and right', data: z.array(ChainItemSchema), meta: ChainMetaSchema },
  errors: ['not_found', 'options_unavailable'],
});

export const contractRoute = defineRoute({
  method: 'get',
  path: '/options/:id',
  operationId: 'getOptionContract',
  tag: TAG,
  summary: "One option contract at a cut-off, with its latest quote and Greeks by the chain's rules",
  description:
    'The contract as the chain at the cut-off (asOf; now without it) shows it: its latest quote observed at or before the cut-off, or null, and the provider Greeks, computed Greeks or greeksUnavailable. Quotes are append-only, so a past cut-off reads the same forever. An unknown id, or a contract not yet listed at the cut-off, is 404.',
  scope: 'options:read',
  params: IdParamsSchema,
  query: ContractQuerySchema,
  response: { status: 200, description: 'the contract', data: ChainItemSchema, meta: ContractMetaSchema },
  errors: ['not_found'],
});

export const optionsArea: Area<OptionsDeps, AnyIngestKind> = {
  routes: [expiriesRoute, chainRoute, contractRoute],
  mount(routes, deps) {
    routes.handle(expiriesRoute, ({ params, query }) => listExpiries(deps, params.id, query.asOf));
    routes.handle(chainRoute, ({ params, query }) => readChain(deps, params.id, query));
    routes.handle(contractRoute, ({ params, query }) => readContract(deps, params.id, query.asOf));
  },
  ingest: { 'options/contracts': optionContractIngest, 'options/quotes': optionQuoteIngest, 'iv-snapshots': ivSnapshotIngest },
};
