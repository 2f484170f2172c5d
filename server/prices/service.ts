import type { Database } from '../db/database.ts';
import { AppError } from '../http/errors.ts';
import { sourcesMeta, type Meta } from '../http/envelope.ts';
import { requireInstrument } from '../instruments/service.ts';
import { actionCoverage, latestCoverageChecks, provenanceMeta } from '../actions/service.ts';
import { BarAdjuster } from './adjustment.ts';
import { planAdjustments, priceBasisMeta } from './adjustment-plan.ts';
import * as repo from './repository.ts';
import { dailyBarJson, INTRADAY_ASSET_CLASSES, type DailyPricesQuery, type INTERVALS } from './schema.ts';

export { streamBulkPrices } from './bulk-stream.ts';

export async function readDailyPrices(db: Database, id: string, q: DailyPricesQuery): Promise<{ dataJson: string; meta: Meta }> {
  const readAt = new Date();
  const { plan, coverage, stored } = await db.run(async (sql) => {
    await requireInstrument(sql, id);
    // planAdjustments refuses a pinned version the instrument has not reached.
    const [plans, coverage] = await Promise.all([planAdjustments(sql, [id], q), latestCoverageChecks(sql, [id], q.asOf?.instant)]);
    return { plan: plans.get(id)!, coverage, stored: await repo.selectDailyBars(sql, [id], q.from, q.to) };
  });
  const adjuster = new BarAdjuster(q.adjusted ? plan.factors : []);
  const sources = new Set<string>();
  let stale = false;
  const bars = stored.map((raw) => {
    const bar = adjuster.adjust(raw);
    sources.add(bar.source);
    stale ||= bar.stale;
    return dailyBarJson(bar);
  });
  const meta = {
    asOf: q.asOf?.input ?? readAt.toISOString(),
    source: sourcesMeta(sources),
    stale,
    adjusted: q.adjusted,
    actionSetVersion: plan.version,
    actionSetVersionPinned: q.actionSetVersion !== undefined,
    includeBackfilled: q.includeBackfilled,
    provenance: provenanceMeta(adjuster.provenanceCounts()),
    priceBasis: priceBasisMeta(q, adjuster, plan, readAt),
    actionCoverage: actionCoverage(coverage.get(id), stored[0]?.barDate ?? q.from),
  };
  return { dataJson: `[${bars.join(',')}]`, meta };
}

export async function readIntradayBars(db: Database, id: string, q: { from: string; to: string; interval: (typeof INTERVALS)[number] }) {
  const rows = await db.run(async (sql) => {
    const instrument = await requireInstrument(sql, id);
    if (!(INTRADAY_ASSET_CLASSES as readonly string[]).includes(instrument.assetClass)) {
      throw new AppError('invalid_request', `intraday bars are served for ${INTRADAY_ASSET_CLASSES.join(', ')} only`, {
        id: [`asset class ${instrument.assetClass} has no intraday bars`],
      });
    }
    return repo.intradayBars(sql, id, q.interval, new Date(`${q.from}T00:00:00.000Z`), new Date(`${q.to}T23:59:59.999Z`));
  });
  const sources = new Set<string>();
  let latest = '';
  // The public bar is the stored one without asOf, which meta reports as the latest.
  const bars = rows.map(({ asOf, ...bar }) => {
    sources.add(bar.source);
    if (asOf > latest) latest = asOf;
    return bar;
  });
  return {
    data: bars,
    meta: {
      asOf: latest || new Date().toISOString(),
      source: sourcesMeta(sources),
      stale: false,
      interval: q.interval,
      adjusted: false,
      from: `${q.from}T00:00:00.000Z`,
      to: `${q.to}T23:59:59.999Z`,
      bucketing: q.interval === '1min' ? 'stored 1-minute bars' : 'UTC buckets: open first, high max, low min, close last, volume sum',
    },
  };
}
