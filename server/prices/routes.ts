import type { Area } from '../app.ts';
import { sendData, sendSerialisedData, streamData } from '../http/envelope.ts';
import { parse } from '../http/validate.ts';
import { dailyBarIngest, intradayBarIngest } from './ingest.ts';
import { BulkPricesQuerySchema, DailyPricesQuerySchema, InstrumentPathSchema, IntradayQuerySchema } from './schema.ts';
import * as service from './service.ts';

export const pricesArea: Area = {
  routes(router, { readSql }) {
    router.get('/instruments/:id/prices', 'prices:read', async (req, res) => {
      const { id } = parse(InstrumentPathSchema, req.params, 'params');
      const q = parse(DailyPricesQuerySchema, req.query);
      const { dataJson, meta } = await service.readDailyPrices(readSql, id.toLowerCase(), q);
      sendSerialisedData(res, dataJson, meta);
    });

    router.get('/prices/bulk', 'prices:read', async (req, res) => {
      const q = parse(BulkPricesQuerySchema, req.query);
      await streamData(res, (write) => service.streamBulkPrices(readSql, q, write));
    });

    router.get('/instruments/:id/intraday', 'prices:read', async (req, res) => {
      const { id } = parse(InstrumentPathSchema, req.params, 'params');
      const q = parse(IntradayQuerySchema, req.query);
      const { data, meta } = await service.readIntradayBars(readSql, id.toLowerCase(), q);
      sendData(res, data, meta);
    });
  },
  ingest: { 'bars/daily': dailyBarIngest, 'bars/intraday': intradayBarIngest },
};
