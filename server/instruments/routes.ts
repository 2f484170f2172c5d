import type { Area } from '../app.ts';
import { sendData } from '../http/envelope.ts';
import { parse } from '../http/validate.ts';
import { IdParamsSchema, NoQuerySchema } from '../http/params.ts';
import { instrumentIngest } from './ingest.ts';
import { InstrumentBulkSchema, InstrumentSearchSchema } from './schema.ts';
import * as service from './service.ts';

const SOURCE = 'mds-reference';

export const instrumentsArea: Area = {
  routes(router, { readDb, config }) {
    router.get('/instruments', 'instruments:read', async (req, res) => {
      const q = parse(InstrumentSearchSchema, req.query);
      const data = await service.searchInstruments(readDb, q, config.VENDOR_CODE_BROKER);
      sendData(res, data, { asOf: q.asOf?.input ?? new Date().toISOString(), source: SOURCE, stale: false, mode: q.query !== undefined ? 'search' : 'reverse_lookup' });
    });

    // Registered before /instruments/:id so "bulk" is never read as an id.
    router.get('/instruments/bulk', 'instruments:read', async (req, res) => {
      const q = parse(InstrumentBulkSchema, req.query);
      const data = await service.getInstruments(readDb, q.ids, config.VENDOR_CODE_BROKER);
      sendData(res, data, { asOf: new Date().toISOString(), source: SOURCE, stale: false, requested: q.ids.length, found: data.length });
    });

    router.get('/instruments/:id', 'instruments:read', async (req, res) => {
      const { id } = parse(IdParamsSchema, req.params, 'params');
      parse(NoQuerySchema, req.query);
      const data = await service.getInstrument(readDb, id, config.VENDOR_CODE_BROKER);
      sendData(res, data, { asOf: new Date().toISOString(), source: SOURCE, stale: false });
    });
  },
  ingest: { instruments: instrumentIngest },
};
