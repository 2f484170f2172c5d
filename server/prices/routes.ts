import type { Area } from '../app.ts';
import { sendData, sendSerialisedData, streamData } from '../http/envelope.ts';
import { StreamSlots } from '../http/stream-slots.ts';
import { parse } from '../http/validate.ts';
import { dailyBarIngest, intradayBarIngest } from './ingest.ts';
import { BulkPricesQuerySchema, DailyPricesQuerySchema, InstrumentPathSchema, IntradayQuerySchema } from './schema.ts';
import * as service from './service.ts';

export const pricesArea: Area = {
  routes(router, { readDb, config }) {
    router.get('/instruments/:id/prices', 'prices:read', async (req, res) => {
      const { id } = parse(InstrumentPathSchema, req.params, 'params');
      const q = parse(DailyPricesQuerySchema, req.query);
      const { dataJson, meta } = await service.readDailyPrices(readDb, id.toLowerCase(), q);
      sendSerialisedData(res, dataJson, meta);
    });

    const bulkSlots = new StreamSlots('/v1/prices/bulk', {
      perAccount: config.BULK_STREAMS_PER_ACCOUNT,
      total: config.BULK_STREAMS_MAX ?? Math.max(1, Math.floor(config.DATABASE_POOL_SIZE / 2)),
    });
    router.get('/prices/bulk', 'prices:read', async (req, res) => {
      const q = parse(BulkPricesQuerySchema, req.query);
      const release = bulkSlots.admit(res.locals.auth.accountId);
      try {
        await streamData(res, (write) => service.streamBulkPrices(readDb, q, write));
      } finally {
        release();
      }
    });

    router.get('/instruments/:id/intraday', 'prices:read', async (req, res) => {
      const { id } = parse(InstrumentPathSchema, req.params, 'params');
      const q = parse(IntradayQuerySchema, req.query);
      const { data, meta } = await service.readIntradayBars(readDb, id.toLowerCase(), q);
      sendData(res, data, meta);
    });
  },
  ingest: { 'bars/daily': dailyBarIngest, 'bars/intraday': intradayBarIngest },
};
