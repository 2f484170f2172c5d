import { z } from 'zod';
import type { Area } from '../http/area.ts';
import type { Reads } from '../db/database.ts';
import type { Config } from '../config.ts';
import type { ListCursors } from '../core/cursor.ts';
import type { AnyIngestKind } from '../ingest/kind.ts';
import { defineRoute } from '../http/route.ts';
import { instrumentIngest } from './ingest.ts';
import {
  InstrumentBulkMetaSchema,
  InstrumentBulkSchema,
  InstrumentMetaSchema,
  InstrumentSchema,
  InstrumentSearchMetaSchema,
  InstrumentSearchSchema,
} from './schema.ts';
import * as service from './service.ts';
import { instrumentsMeta } from './freshness.ts';
import { InstrumentParamsSchema } from '../core/ids.ts';
import { NoQuerySchema } from '../core/params.ts';

const TAG = 'Instruments';

export const searchInstrumentsRoute = defineRoute({
  method: 'get',
  path: '/instruments',
  operationId: 'searchInstruments',
  tag: TAG,
  summary: 'Search instruments by text, or look one up by broker code',
  description:
    'Exactly one mode: `query` (free text over symbols and names, ranked), or `brokerCode` with `broker` (exact). Symbols are those valid on the `asOf` day.',
  scope: 'instruments:read',
  query: InstrumentSearchSchema,
  response: {
    status: 200,
    description: 'the matching instruments, best first, at most limit of them; meta.nextCursor reads on',
    data: z.array(InstrumentSchema),
    meta: InstrumentSearchMetaSchema,
  },
  errors: [],
});

export const instrumentsBulkRoute = defineRoute({
  method: 'get',
  path: '/instruments/bulk',
  operationId: 'getInstrumentsBulk',
  tag: TAG,
  summary: 'Instruments by id, up to 500',
  description: 'Unknown ids are absent from `data`; `meta.requested` and `meta.found` count them.',
  scope: 'instruments:read',
  query: InstrumentBulkSchema,
  response: { status: 200, description: 'the instruments found, in the order asked', data: z.array(InstrumentSchema), meta: InstrumentBulkMetaSchema },
  errors: [],
});

export const instrumentRoute = defineRoute({
  method: 'get',
  path: '/instruments/:id',
  operationId: 'getInstrument',
  tag: TAG,
  summary: 'One instrument',
  description:
    'Its reference data as stored now, with currentSymbol the symbol in force today (UTC) by its symbol history and vendorCode its code at the broker the service is configured for. Instruments are never deleted: a delisted one is served with isActive false. An unknown id is 404.',
  scope: 'instruments:read',
  params: InstrumentParamsSchema,
  query: NoQuerySchema,
  response: { status: 200, description: 'the instrument', data: InstrumentSchema, meta: InstrumentMetaSchema },
  errors: ['not_found'],
});

/** What the area's handlers need (the wiring's AppDeps provides it). */
export interface InstrumentsDeps {
  readDb: Reads;
  config: Pick<Config, 'VENDOR_CODE_BROKER'>;
  cursors: ListCursors;
}

export const instrumentsArea: Area<InstrumentsDeps, AnyIngestKind> = {
  routes: [searchInstrumentsRoute, instrumentsBulkRoute, instrumentRoute],
  mount(routes, { readDb, config, cursors }) {
    routes.handle(searchInstrumentsRoute, async ({ query: q }) => {
      const page = await service.searchInstruments(readDb, cursors, q, config.VENDOR_CODE_BROKER);
      return {
        data: page.data,
        meta: {
          asOf: q.asOf?.input ?? new Date().toISOString(),
          ...(await instrumentsMeta(readDb, page.data, page.day)),
          mode: q.query !== undefined ? 'search' : 'reverse_lookup',
          limit: page.limit,
          truncated: page.truncated,
          nextCursor: page.nextCursor,
        },
      };
    });

    routes.handle(instrumentsBulkRoute, async ({ query: q }) => {
      const data = await service.getInstruments(readDb, q.ids, config.VENDOR_CODE_BROKER);
      const meta = await instrumentsMeta(readDb, data, service.dayOf(undefined));
      return { data, meta: { asOf: new Date().toISOString(), ...meta, requested: q.ids.length, found: data.length } };
    });

    routes.handle(instrumentRoute, async ({ params }) => {
      const data = await service.getInstrument(readDb, params.id, config.VENDOR_CODE_BROKER);
      return { data, meta: { asOf: new Date().toISOString(), ...(await instrumentsMeta(readDb, [data], service.dayOf(undefined))) } };
    });
  },
  ingest: { instruments: instrumentIngest },
};
