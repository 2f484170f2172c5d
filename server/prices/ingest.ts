import { z } from 'zod';
import { ingestCounts, type CopyBatch, type KeyedIngestKind, type KeyedUpload, type OrdinalRange, type WriteCounts } from '../ingest/kind.ts';
import { analyzeStaging, restage } from '../ingest/repository.ts';
import { copyField } from '../ingest/copy-text.ts';
import {
  barFieldsText,
  DailyBarRowSchema,
  fastDailyBar,
  fastIntradayBar,
  IntradayBarRowSchema,
  instantMs,
  MINUTE_MS,
  statedKnownAt,
  type DailyBarRow,
  type IntradayBarRow,
} from './bar-rows.ts';
import { appendDailyBars, DAILY_COLUMNS, latestBarDates, writeStagedDailyBars } from '../price-history/bars-repository.ts';
import { dayNumber, dayToDate } from '../core/day-numbers.ts';
import { InstrumentIdSchema } from '../core/ids.ts';
import { latestSessionClose, sessionClose } from '../core/session-close.ts';
import { actionSetVersions, bumpVersions, lockPriceHistory } from '../price-history/versions-repository.ts';
import type { ISql } from '../db/sql.ts';
import { readStorageTier, type StorageTier } from '../db/migrate.ts';
import * as repo from './repository.ts';
import { entryOf } from '../core/map-entry.ts';

/** The instant (ms) a bar row states it became known, undefined when it states none. */
function knownMs(r: { asOf?: string; knownAt?: string }): number | undefined {
  const stated = statedKnownAt(r);
  return stated === undefined ? undefined : instantMs(stated);
}

const minuteEnd = (r: { barTimestamp: string }) => Date.parse(r.barTimestamp) + MINUTE_MS;

export const dailyBarIngest: KeyedIngestKind<DailyBarRow> = {
  writes: 'keyed',
  label: 'daily bars',
  rowSchema: DailyBarRowSchema,
  resultSchema: z.strictObject({
    ...ingestCounts,
    actionSetVersions: z
      .record(z.string(), z.int().min(1))
      .describe('instrument id → its new action-set version, for each instrument whose stored bars the upload corrected or filled in'),
  }),
  fastRow: fastDailyBar,
  stagingColumns: DAILY_COLUMNS,
  toStagingValues: (r, upload) => [
    r.instrumentId,
    r.barDate,
    r.openPrice,
    r.highPrice,
    r.lowPrice,
    r.closePrice,
    r.volume,
    r.quoteCurrency,
    r.quoteUnit,
    r.stale,
    r.priceBasis,
    r.reflectsActionsThrough,
    r.source,
    statedKnownAt(r) ?? upload.startedAt,
  ],
  copyLine: (r, raw, upload) =>
    `${r.instrumentId}\t${r.barDate}\t${barFieldsText(r, raw)}\t${r.stale}\t${r.priceBasis}\t${r.reflectsActionsThrough ?? '\\N'}\t` +
    `${copyField(r.source)}\t${statedKnownAt(r) ?? upload.startedAt}`,
  key: { field: 'barDate', instrumentId: (r) => r.instrumentId, ordinal: (r) => dayNumber(r.barDate) },
  knowledge: {
    noun: 'daily bar',
    statedKnownAt: knownMs,
    knownOnAnyMarket: (r) => latestSessionClose(r.barDate),
    earliest: (r, market) => sessionClose(r.barDate, market),
  },
  startUpload: () => new DailyBarUpload(),
  // The adjusted closes of every instrument it wrote; and, by each one's first
  // and last bar date, the implied-volatility snapshots whose windows of raw
  // bars may hold them.
  changes: (instrumentIds, spans) => ({
    adjustedCloses: instrumentIds,
    rawBarDays: [...spans].map(([id, span]) => ({ instrumentId: InstrumentIdSchema.parse(id), from: dayToDate(span.first), to: dayToDate(span.last) })),
  }),
};

/** An instrument of a daily upload: its version and latest bar date when the upload first wrote it, and the version the upload bumped it to. */
interface HistoryHead {
  instrumentId: string;
  version: number;
  latestBefore: string | null;
  bumpedTo?: number;
}

/** One daily-bar upload's writes, and the heads of the instruments it has met. */
class DailyBarUpload implements KeyedUpload {
  /** Set once the upload's first batch has taken the price-history lock. */
  private heads: Map<string, HistoryHead> | undefined;

  /**
   * Under the price-history lock (versions, sql/015): a batch that only
   * appends, every bar after its instrument's latest date before the upload,
   * is copied straight into daily_bars, at the cost of a bare COPY, and
   * changes no version. Any other batch goes through staging: what it
   * replaces (a bar's values, or a bar's absence on or before the latest
   * date) is kept under the instrument's next version, the version is bumped
   * once per upload, and the bars are written, all over one join of the
   * staged bars with the stored ones (writeStagedDailyBars).
   */
  async writeBatch(tx: ISql, batch: CopyBatch): Promise<WriteCounts> {
    const heads = await this.headsOf(tx, batch);
    const appendsOnly = [...batch.firstByInstrument].every(([id, first]) => {
      const latest = entryOf(heads, id).latestBefore;
      return latest === null || first > dayNumber(latest);
    });
    if (appendsOnly) {
      await appendDailyBars(tx, batch.text);
      return { inserted: batch.rows, updated: 0 };
    }
    await restage(tx, batch.text);
    // Statistics, so the search for what the batch replaces joins by hash: without them
    // the planner probes daily_bars once per staged row, and an unchanged re-post of
    // 1,000,000 bars took 44.0 s instead of 17.5 s (npm run bench -- ingest).
    await analyzeStaging(tx);
    const writes = [...heads.values()].map((h) => ({ instrumentId: h.instrumentId, version: h.bumpedTo ?? h.version + 1, latestBefore: h.latestBefore }));
    const span = { instrumentIds: [...batch.firstByInstrument.keys()], from: dayToDate(batch.first), to: dayToDate(batch.last) };
    const { inserted, updated, revised } = await writeStagedDailyBars(tx, writes, span);
    const replaced = revised.map((id) => entryOf(heads, id)).filter((h) => h.bumpedTo === undefined);
    if (replaced.length) {
      const bumped = await bumpVersions(
        tx,
        replaced.map((h) => ({ instrumentId: h.instrumentId, priorLastBarDate: h.latestBefore })),
      );
      for (const h of replaced) h.bumpedTo = entryOf(bumped, h.instrumentId);
    }
    return { inserted, updated };
  }

  summarise() {
    return {
      actionSetVersions: Object.fromEntries([...(this.heads?.values() ?? [])].filter((h) => h.bumpedTo !== undefined).map((h) => [h.instrumentId, h.bumpedTo])),
    };
  }

  /**
   * The heads of the batch's instruments, read when the upload first meets
   * each, after taking the price-history lock on the upload's first batch: no
   * other upload can then bump a version or write a bar until this one ends.
   */
  private async headsOf(tx: ISql, batch: CopyBatch): Promise<Map<string, HistoryHead>> {
    if (!this.heads) {
      await lockPriceHistory(tx);
      this.heads = new Map();
    }
    // Instrument ids arrive lower-cased (the row schema), as the database writes them.
    const all = this.heads;
    const ids = [...batch.firstByInstrument.keys()];
    const unseen = ids.filter((id) => !all.has(id));
    if (unseen.length) {
      // One transaction's connection: the two reads run one after the other.
      const versions = await actionSetVersions(tx, unseen);
      const latest = await latestBarDates(tx, unseen);
      for (const id of unseen) all.set(id, { instrumentId: id, version: entryOf(versions, id), latestBefore: latest.get(id) ?? null });
    }
    return new Map(ids.map((id) => [id, entryOf(all, id)]));
  }
}

export const intradayBarIngest: KeyedIngestKind<IntradayBarRow> = {
  writes: 'keyed',
  label: 'intraday bars',
  rowSchema: IntradayBarRowSchema,
  resultSchema: z.strictObject({ ...ingestCounts, firstBarTimestamp: z.string().optional(), lastBarTimestamp: z.string().optional() }),
  fastRow: fastIntradayBar,
  stagingColumns: repo.INTRADAY_COLUMNS,
  toStagingValues: (r, upload) => [
    r.instrumentId,
    r.barTimestamp,
    r.openPrice,
    r.highPrice,
    r.lowPrice,
    r.closePrice,
    r.volume,
    r.quoteCurrency,
    r.quoteUnit,
    r.source,
    statedKnownAt(r) ?? upload.startedAt,
  ],
  copyLine: (r, raw, upload) =>
    `${r.instrumentId}\t${r.barTimestamp}\t${barFieldsText(r, raw)}\t${copyField(r.source)}\t${statedKnownAt(r) ?? upload.startedAt}`,
  key: { field: 'barTimestamp', instrumentId: (r) => r.instrumentId, ordinal: (r) => Date.parse(r.barTimestamp) / MINUTE_MS },
  knowledge: {
    noun: '1-minute bar',
    statedKnownAt: knownMs,
    knownOnAnyMarket: minuteEnd,
    earliest: (r) => ({ at: minuteEnd(r), rule: 'the end of its minute' }),
  },
  startUpload: () => new IntradayBarUpload(),
  async afterCommit(sql, range) {
    if ((await readStorageTier(sql)).tier !== 'timescaledb') return;
    // A continuous aggregate refresh cannot run inside a transaction. Real-time
    // aggregation already serves unmaterialised buckets; this re-materialises
    // buckets a correction touched.
    // Whole hours, a boundary of every rollup width, so no touched bucket is
    // cut off.
    const hour = 3_600_000;
    const first = new Date(Math.floor((range.first * MINUTE_MS) / hour) * hour);
    const lastHour = new Date(Math.floor((range.last * MINUTE_MS) / hour) * hour);
    await repo.refreshContinuousAggregates(sql, first, lastHour);
  },
};

/** One intraday upload's writes, and the storage tier, read on its first batch. */
class IntradayBarUpload implements KeyedUpload {
  private tier: StorageTier | undefined;

  async writeBatch(tx: ISql, batch: CopyBatch): Promise<WriteCounts> {
    await restage(tx, batch.text);
    const span = {
      instrumentIds: [...batch.firstByInstrument.keys()],
      from: new Date(batch.first * MINUTE_MS).toISOString(),
      to: new Date(batch.last * MINUTE_MS).toISOString(),
    };
    const written = await repo.writeStagedIntradayBars(tx, span);
    this.tier ??= (await readStorageTier(tx)).tier;
    // Full TimescaleDB keeps the rollups as continuous aggregates, refreshed after commit.
    if (this.tier !== 'timescaledb') {
      await analyzeStaging(tx);
      await repo.refreshRollups(tx, batch.first, batch.last);
    }
    return written;
  }

  summarise(range: OrdinalRange) {
    return {
      firstBarTimestamp: new Date(range.first * MINUTE_MS).toISOString(),
      lastBarTimestamp: new Date(range.last * MINUTE_MS).toISOString(),
    };
  }
}
