import { z } from 'zod';
import { ingestCounts, type StagedIngestKind, type UploadResult } from '../ingest/kind.ts';
import { repeatedStagedKeys } from '../ingest/repository.ts';
import { rejectFirstRow, rejectUnknownInstruments } from '../ingest/row-checks.ts';
import * as repo from './repository.ts';
import type { SnapshotDay } from './repository.ts';
import {
  IvSnapshotRowSchema,
  OptionContractRowSchema,
  OptionQuoteRowSchema,
  type IvSnapshotRow,
  type OptionContractRow,
  type OptionQuoteRow,
} from './schema.ts';

const counts = z.strictObject(ingestCounts);

/** The snapshots an upload may have changed, as the upload's DataChanges. */
function changedDays(optionDays: SnapshotDay[]): Pick<UploadResult, 'changes'> {
  return optionDays.length ? { changes: { optionDays } } : {};
}

/** Contracts, upserted on id: a delisting (isActive false) or a corrected field updates the contract. */
export const optionContractIngest: StagedIngestKind<OptionContractRow> = {
  writes: 'staged',
  label: 'option contracts',
  rowSchema: OptionContractRowSchema,
  resultSchema: counts,
  stagingColumns: [
    ['id', 'uuid'],
    ['instrument_id', 'uuid'],
    ['contract_symbol', 'text'],
    ['expiry', 'date'],
    ['strike', 'float8'],
    ['option_right', 'text'],
    ['multiplier', 'int4'],
    ['is_active', 'bool'],
    ['listed_at', 'timestamptz'],
    ['source', 'text'],
  ],
  toStagingValues: (r) => [r.id, r.instrumentId, r.contractSymbol, r.expiry, r.strike, r.right, r.multiplier, r.isActive, r.listedAt, r.source],
  async apply(tx) {
    await rejectUnknownInstruments(tx);
    await rejectFirstRow(repeatedStagedKeys(tx, 'id'), 'id', 'the same contract appears twice in this batch');
    await rejectFirstRow(repo.stagedContractsOfAnotherInstrument(tx), 'instrumentId', 'this contract id belongs to another underlying');
    const { rows, inserted, updated } = await repo.upsertStagedContracts(tx);
    return { rows, inserted, updated, unchanged: rows - inserted - updated, ...changedDays(await repo.stagedContractQuoteDays(tx)) };
  },
};

/**
 * Quote observations, append-only: a new (contract, observedAt) is stored,
 * the same one again with the same values is unchanged, and the same one with
 * other values refuses the batch, so what was stored for a past instant never
 * changes.
 */
export const optionQuoteIngest: StagedIngestKind<OptionQuoteRow> = {
  writes: 'staged',
  label: 'option quotes',
  rowSchema: OptionQuoteRowSchema,
  resultSchema: counts,
  stagingColumns: [
    ['contract_id', 'uuid'],
    ['observed_at', 'timestamptz'],
    ['bid', 'float8'],
    ['ask', 'float8'],
    ['last_price', 'float8'],
    ['volume', 'float8'],
    ['open_interest', 'float8'],
    ['source', 'text'],
    ['delta', 'float8'],
    ['gamma', 'float8'],
    ['theta', 'float8'],
    ['vega', 'float8'],
    ['rho', 'float8'],
    ['implied_volatility', 'float8'],
  ],
  toStagingValues: (r) => {
    const g = r.greeks;
    return [
      r.contractId,
      r.observedAt,
      r.bid,
      r.ask,
      r.lastPrice,
      r.volume,
      r.openInterest,
      r.source,
      g?.delta ?? null,
      g?.gamma ?? null,
      g?.theta ?? null,
      g?.vega ?? null,
      g?.rho ?? null,
      g?.impliedVolatility ?? null,
    ];
  },
  async apply(tx) {
    await rejectFirstRow(repo.stagedQuotesOfUnknownContracts(tx), 'contractId', 'unknown option contract');
    await rejectFirstRow(repeatedStagedKeys(tx, 'contract_id', 'observed_at'), 'observedAt', 'the same contract and observedAt appear twice in this batch');
    await rejectFirstRow(
      repo.stagedQuotesThatRewrite(tx),
      'observedAt',
      'this observation is stored with other values; observations are append-only: post a new observedAt',
    );
    const { rows, inserted } = await repo.appendStagedQuotes(tx);
    return { rows, inserted, updated: 0, unchanged: rows - inserted, ...changedDays(await repo.stagedQuoteDays(tx)) };
  },
};

/** Implied-volatility snapshots, upserted on (instrument, asOfDate). */
export const ivSnapshotIngest: StagedIngestKind<IvSnapshotRow> = {
  writes: 'staged',
  label: 'implied-volatility snapshots',
  rowSchema: IvSnapshotRowSchema,
  resultSchema: counts,
  stagingColumns: [
    ['instrument_id', 'uuid'],
    ['as_of_date', 'date'],
    ['underlying_price', 'float8'],
    ['atm_implied_volatility', 'float8'],
    ['implied_volatility_30d', 'float8'],
    ['historical_volatility_30d', 'float8'],
    ['parkinson_historical_volatility_30d', 'float8'],
    ['put_call_iv_ratio_30d', 'float8'],
    ['term_structure', 'jsonb'],
    ['source', 'text'],
  ],
  toStagingValues: (r) => [
    r.instrumentId,
    r.asOfDate,
    r.underlyingPrice,
    r.atmImpliedVolatility,
    r.impliedVolatility30d,
    r.historicalVolatility30d,
    r.parkinsonHistoricalVolatility30d,
    r.putCallIvRatio30d,
    JSON.stringify(r.termStructure),
    r.source,
  ],
  async apply(tx) {
    await rejectUnknownInstruments(tx);
    await rejectFirstRow(repeatedStagedKeys(tx, 'instrument_id', 'as_of_date'), 'asOfDate', 'the same instrument and asOfDate appear twice in this batch');
    const { rows, inserted, updated } = await repo.upsertStagedIvSnapshots(tx);
    return { rows, inserted, updated, unchanged: rows - inserted - updated };
  },
};
