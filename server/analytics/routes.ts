import type { Area } from '../app.ts';
import { sendData } from '../http/envelope.ts';
import { parse } from '../http/validate.ts';
import { IdParamsSchema } from '../http/params.ts';
import { BetaQuerySchema, CorrelationsQuerySchema, OptionPriceSchema, ProbabilitySchema, StrategyEvSchema, TechnicalsQuerySchema } from './schema.ts';
import * as market from './market-service.ts';
import * as service from './service.ts';

const meta = () => ({ asOf: new Date().toISOString(), source: 'computed', stale: false });

export const analyticsArea: Area = {
  routes(router, { pool, readDb }) {
    router.post('/analytics/option-price', 'analytics:read', (req, res) => {
      sendData(res, service.optionPrice(parse(OptionPriceSchema, req.body, 'body')), meta());
    });
    router.post('/analytics/probability', 'analytics:read', (req, res) => {
      sendData(res, service.probability(parse(ProbabilitySchema, req.body, 'body')), meta());
    });
    router.post('/analytics/strategy-ev', 'analytics:read', async (req, res) => {
      sendData(res, await service.strategyEv(pool, parse(StrategyEvSchema, req.body, 'body')), meta());
    });

    router.get('/instruments/:id/technicals', 'technicals:read', async (req, res) => {
      const { id } = parse(IdParamsSchema, req.params, 'params');
      const q = parse(TechnicalsQuerySchema, req.query);
      const data = await pool.withReadSlot('technicals', () => market.technicals(readDb, pool, id, q));
      sendData(res, data, { asOf: data.assumptions.asOf, source: 'computed from adjusted daily bars', stale: false });
    });

    router.get('/correlations', 'correlations:read', async (req, res) => {
      const q = parse(CorrelationsQuerySchema, req.query);
      const data = await pool.withReadSlot('correlations', () => market.correlations(readDb, pool, q));
      sendData(res, data, { asOf: data.assumptions.asOf, source: 'computed from adjusted daily bars', stale: false });
    });

    router.get('/instruments/:id/beta', 'correlations:read', async (req, res) => {
      const { id } = parse(IdParamsSchema, req.params, 'params');
      const q = parse(BetaQuerySchema, req.query);
      const data = await pool.withReadSlot('beta', () => market.beta(readDb, pool, id, q));
      sendData(res, data, { asOf: data.assumptions.asOf, source: 'computed from adjusted daily bars', stale: false });
    });
  },
};
