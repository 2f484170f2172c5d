import type { Area } from '../app.ts';
import { sendData } from '../http/envelope.ts';
import { parse } from '../http/validate.ts';
import { dailyBarIngest, intradayBarIngest } from './ingest.ts';
import { BulkPricesQuerySchema, DailyPricesQuerySchema, InstrumentPathSchema, IntradayQuerySchema } from './schema.ts';
import * as service from './service.ts';

export const pricesArea: Area = {
  routes(router, { readSql }) {
    router.get('/instruments/:id/prices', 'prices:read', async (req, res) => {
      const { id } = parse(InstrumentPathSchema, req.params, 'params');
      const q = parse(DailyPricesQuerySchema, req.query);
      // Serialised by the service so the bars' bytes depend only on the data.
      res.type('application/json').send(await service.readDailyPrices(readSql, id.toLowerCase(), q));
    });

    router.get('/prices/bulk', 'prices:read', async (req, res) => {
      const q = parse(BulkPricesQuerySchema, req.query);
      res.type('application/json');
      await service.streamBulkPrices(readSql, q, {
        write: (chunk) =>
          new Promise((resolve, reject) => {
            if (res.destroyed) return reject(new Error('client went away'));
            if (res.write(chunk)) resolve();
            else {
              res.once('drain', resolve);
              res.once('close', () => reject(new Error('client went away')));
            }
          }),
      });
      res.end();
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
