import type { Area } from '../app.ts';
import { sendData } from '../http/envelope.ts';
import { parse } from '../http/validate.ts';
import { OptionPriceSchema, ProbabilitySchema, StrategyEvSchema } from './schema.ts';
import * as service from './service.ts';

const meta = () => ({ asOf: new Date().toISOString(), source: 'computed', stale: false });

export const analyticsArea: Area = {
  routes(router, { pool }) {
    router.post('/analytics/option-price', 'analytics:read', (req, res) => {
      sendData(res, service.optionPrice(parse(OptionPriceSchema, req.body, 'body')), meta());
    });
    router.post('/analytics/probability', 'analytics:read', (req, res) => {
      sendData(res, service.probability(parse(ProbabilitySchema, req.body, 'body')), meta());
    });
    router.post('/analytics/strategy-ev', 'analytics:read', async (req, res) => {
      sendData(res, await service.strategyEv(pool, parse(StrategyEvSchema, req.body, 'body')), meta());
    });
  },
};
