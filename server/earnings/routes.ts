import { z } from 'zod';
import type { Area } from '../http/area.ts';
import type { Reads } from '../db/database.ts';
import type { AnyIngestKind } from '../ingest/kind.ts';
import { defineRoute } from '../http/route.ts';
import { earningsIngest } from './ingest.ts';
import { EarningsMetaSchema, EarningsReportSchema, InstrumentEarningsQuerySchema, MAX_WINDOW_DAYS, MarketEarningsQuerySchema } from './schema.ts';
import { listInstrumentEarnings, listMarketEarnings } from './service.ts';
import { InstrumentParamsSchema } from '../core/ids.ts';

const ORDER = 'earliest reportDate first; ties by symbol (none last), then instrumentId, fiscalYear and fiscalPeriod';
const ROW_NOTES =
  "Each row carries the symbol in force on its reportDate, from the instrument's symbol history. A rescheduled report is the same row with a new reportDate or session. There is no EPS estimate, actual, consensus or confirmation flag.";

export const instrumentEarningsRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id/earnings',
  operationId: 'getInstrumentEarnings',
  tag: 'Earnings',
  summary: "An instrument's scheduled and reported earnings, earliest first",
  description: `from and to bound reportDate, inclusive; either may be omitted. ${ROW_NOTES}`,
  scope: 'earnings:read',
  params: InstrumentParamsSchema,
  query: InstrumentEarningsQuerySchema,
  response: { status: 200, description: `the reports, ${ORDER}`, data: z.array(EarningsReportSchema), meta: EarningsMetaSchema },
  errors: ['not_found'],
});

export const marketEarningsRoute = defineRoute({
  method: 'get',
  path: '/earnings',
  operationId: 'listEarnings',
  tag: 'Earnings',
  summary: 'The earnings calendar of every instrument reporting in a window, earliest first',
  description: `from and to are required and bound reportDate, inclusive; the window spans at most ${MAX_WINDOW_DAYS} days, both ends counted (2022-01-01 to 2022-12-31 is ${MAX_WINDOW_DAYS}), and a longer one is 400. instrumentId narrows it to one instrument. ${ROW_NOTES}`,
  scope: 'earnings:read',
  query: MarketEarningsQuerySchema,
  response: { status: 200, description: `the reports, ${ORDER}`, data: z.array(EarningsReportSchema), meta: EarningsMetaSchema },
  errors: ['not_found'],
});

/** What the area's handlers need (the wiring's AppDeps provides it). */
export interface EarningsDeps {
  readDb: Reads;
}

export const earningsArea: Area<EarningsDeps, AnyIngestKind> = {
  routes: [instrumentEarningsRoute, marketEarningsRoute],
  mount(routes, { readDb }) {
    routes.handle(instrumentEarningsRoute, ({ params, query }) => listInstrumentEarnings(readDb, params.id, query));
    routes.handle(marketEarningsRoute, ({ query }) => listMarketEarnings(readDb, query));
  },
  ingest: { earnings: earningsIngest },
};
