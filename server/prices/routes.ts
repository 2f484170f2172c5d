import type { Area } from '../app.ts';
import { sendData, sendSerialisedData, streamData } from '../http/envelope.ts';
import { StreamSlots } from '../http/stream-slots.ts';
import { IdParamsSchema } from '../http/params.ts';
import { parse } from '../http/validate.ts';
import { dailyBarIngest, intradayBarIngest } from './ingest.ts';
import { BulkPricesQuerySchema, DailyPricesQuerySchema, IntradayQuerySchema } from './schema.ts';
import * as service from './service.ts';

export const pricesArea: Area = {
  routes(router, { readDb, config }) {
    router.get('/instruments/:id/prices', 'prices:read', async (req, res) => {
      const { id } = parse(IdParamsSchema, req.params, 'params');
      const q = parse(DailyPricesQuerySchema, req.query);
      const { dataJson, meta } = await service.readDailyPrices(readDb, id, q);
      sendSerialisedData(res, dataJson, meta);
    });

    const halfThePool = Math.max(1, Math.floor(config.DATABASE_POOL_SIZE / 2));
    const bulkSlots = new StreamSlots('/v1/prices/bulk', { perAccount: config.BULK_STREAMS_PER_ACCOUNT, total: config.BULK_STREAMS_MAX ?? halfThePool });
    // All downloads together read at most two pages at once (a download's
    // plan, one short read, takes the pool like any request). Each download
    // reads a page while it writes the previous one, so without a lane five
    // downloads could hold all ten connections of the default pool; and a
    // page (one 30-year series is 7,800 rows) is parsed on the request thread
    // as it arrives, so pages arriving together stall every other request.
    // Measured with eleven 53 MB downloads starting at once and instrument
    // reads meanwhile, lanes of 1, 2 and 5: reads took 150-375, 340-490 and
    // 540-615 ms on average; three concurrent downloads took 9.2, 9.0 and
    // 10.0-11.9 s, one alone 3.6-4.4, 3.1-3.3 and 3.2 s.
    const bulkPages = readDb.lane('bulk', Math.min(2, halfThePool));
    router.get('/prices/bulk', 'prices:read', async (req, res) => {
      const q = parse(BulkPricesQuerySchema, req.query);
      const release = bulkSlots.admit(res.locals.auth.accountId);
      try {
        await streamData(res, (write) => service.streamBulkPrices(readDb, q, write, { lane: bulkPages, nextPageWaitMs: config.CLIENT_IDLE_TIMEOUT_MS }));
      } finally {
        release();
      }
    });

    router.get('/instruments/:id/intraday', 'prices:read', async (req, res) => {
      const { id } = parse(IdParamsSchema, req.params, 'params');
      const q = parse(IntradayQuerySchema, req.query);
      const { data, meta } = await service.readIntradayBars(readDb, id, q);
      sendData(res, data, meta);
    });
  },
  ingest: { 'bars/daily': dailyBarIngest, 'bars/intraday': intradayBarIngest },
};
