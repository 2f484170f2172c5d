import { z } from 'zod';
import type { ISql } from '../db/sql.ts';
import { ingestCounts, type StagedIngestKind } from '../ingest/kind.ts';
import { repeatedStagedKeys } from '../ingest/repository.ts';
import { rejectFirstRow } from '../ingest/row-checks.ts';
import * as staged from './staged-repository.ts';
import { InstrumentIngestSchema, type InstrumentIngestRow } from './schema.ts';
import { dayOf } from './service.ts';

/** rejectFirstRow for a check whose message names what it found in the row. */
async function rejectFound<T extends { row_index: number }>(check: PromiseLike<readonly T[]>, field: string, message: (row: T) => string) {
  const [row] = await check;
  if (row) await rejectFirstRow(Promise.resolve([row]), field, message(row));
}

/**
 * An instrument has no natural key that stays fixed: tickers are renamed and
 * recycled, names change, ISINs are absent for crypto, FX and indices and
 * shared by listings on several exchanges. An id derived from such fields
 * would change with a correction (a duplicate) or coincide for two
 * instruments (a merge). So the id is the identity, and a row without one is
 * a new instrument, refused when its natural key is taken: one of its symbols
 * held, case aside, on an overlapping day by another instrument of the same
 * asset class and exchange, stored (and kept as it is by the batch) or
 * earlier in the batch. The message names the holder's id.
 */
async function rejectTakenSymbols(tx: ISql) {
  await rejectFound(staged.stagedSymbolClashes(tx), 'id', (r) =>
    r.holder_row === null
      ? `required: ${r.symbol} is held on overlapping days by the stored instrument ${r.holder_id} of the same asset class and exchange; include its id to update it`
      : `required: ${r.symbol} is held on overlapping days by row ${r.holder_row} of this batch (same asset class and exchange); one row per instrument`,
  );
}

/**
 * Instruments upsert on id; their symbol history (when the row gives one) and
 * broker codes are replaced by the batch's (the batch states the whole
 * history). A row as GET returns it is accepted: its currentSymbol is checked
 * against the history the batch leaves, and its vendorCode by the row schema.
 */
export const instrumentIngest: StagedIngestKind<InstrumentIngestRow> = {
  writes: 'staged',
  label: 'instruments',
  rowSchema: InstrumentIngestSchema,
  resultSchema: z.strictObject({ ...ingestCounts, ids: z.array(z.string()).describe('the id of each row, in upload order (the first 10,000)') }),
  stagingColumns: [
    ['id', 'uuid'],
    ['asset_class', 'text'],
    ['display_name', 'text'],
    ['exchange', 'text'],
    ['region', 'text'],
    ['isin', 'text'],
    ['cusip', 'text'],
    ['distribution_policy', 'text'],
    ['quote_currency', 'text'],
    ['quote_unit', 'text'],
    ['is_active', 'bool'],
    ['broker_codes', 'jsonb'],
    ['broker_codes_source', 'text'],
    ['symbols', 'jsonb'],
    ['current_symbol', 'text'],
  ],
  toStagingValues: (r) => [
    r.id ?? null,
    r.assetClass,
    r.displayName,
    r.exchange ?? null,
    r.region ?? null,
    r.isin ?? null,
    r.cusip ?? null,
    r.distributionPolicy ?? null,
    r.quoteCurrency ?? null,
    r.quoteUnit ?? null,
    r.isActive,
    JSON.stringify(r.brokerCodes),
    r.brokerCodesSource ?? null,
    r.symbols ? JSON.stringify(r.symbols) : null,
    r.currentSymbol ?? null,
  ],
  async apply(tx) {
    await rejectFirstRow(repeatedStagedKeys(tx, 'id'), 'id', 'the same instrument id appears twice in the batch');
    await rejectFirstRow(
      staged.stagedNewWithoutSymbols(tx),
      'symbols',
      'required for an instrument not stored yet; only a stored instrument keeps its history when symbols is left out',
    );
    await rejectTakenSymbols(tx);
    await staged.assignStagedIds(tx);
    const counts = await staged.upsertStagedInstruments(tx);
    await staged.replaceStagedSymbols(tx);
    await staged.replaceStagedBrokerCodes(tx);
    // The day GET /v1/instruments/{id} maps the symbol on.
    const day = dayOf(undefined);
    await rejectFound(
      staged.stagedCurrentSymbolContradictions(tx, day),
      'currentSymbol',
      (r) => `is read-only and contradicts the symbol history, which gives ${r.symbol === null ? 'no symbol' : r.symbol} on ${day}; change symbols instead`,
    );
    const ids = await staged.stagedIds(tx, 10_000);
    return {
      rows: counts.rows,
      inserted: counts.inserted,
      updated: counts.updated,
      unchanged: counts.rows - counts.inserted - counts.updated,
      ids,
    };
  },
};
