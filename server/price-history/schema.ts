import { z } from 'zod';

// The vocabulary of an instrument's price history that both the price reads
// (prices/) and the corporate-actions area (actions/) speak: the kinds of
// action, how an action's knowledge date is known, an action revision as an
// action set holds it, and a check of the action history against a source.

export const ACTION_KINDS = ['split', 'cash_dividend', 'stock_dividend', 'spinoff', 'merger', 'symbol_change', 'delisting'] as const;
export type ActionKind = (typeof ACTION_KINDS)[number];

/** How an action's knowledge date is known; `backfilled` actions have none and cannot be placed in time. */
export const PROVENANCES = ['observed', 'vendor_pit', 'announced', 'backfilled'] as const;
export type Provenance = (typeof PROVENANCES)[number];

/** A count per provenance, each at zero, in PROVENANCES order. */
export function zeroProvenanceCounts(): Record<Provenance, number> {
  return { observed: 0, vendor_pit: 0, announced: 0, backfilled: 0 };
}

/** Actions counted by knowledge provenance, and whether the figures are point-in-time valid. */
export const ProvenanceCountsSchema = z.strictObject({
  ...(Object.fromEntries(PROVENANCES.map((p) => [p, z.int().min(0)])) as Record<Provenance, z.ZodInt>),
  pitValid: z.boolean().describe('false when a backfilled action (not knowable at the time) entered the figures'),
});

/**
 * A corporate action as one revision states it: what an action set at a
 * version holds (action-set-repository.ts), and the public shape of
 * GET /instruments/:id/corporate-actions.
 */
export const CorporateActionSchema = z
  .strictObject({
    id: z.string(),
    instrumentId: z.string(),
    kind: z.enum(ACTION_KINDS),
    effectiveDate: z.string(),
    announcementDate: z.string().nullable(),
    knowledgeDate: z.string().nullable().describe('when it became knowable; null for backfilled actions'),
    knowledgeProvenance: z.enum(PROVENANCES),
    createdAt: z.string().describe('when the service stored it'),
    params: z.record(z.string(), z.unknown()).describe('ratio for splits and stock dividends; amount and currency for cash dividends'),
    source: z.string(),
    actionSetVersion: z.int().min(1).describe("the instrument's action-set version that added or last changed it"),
  })
  .meta({ id: 'CorporateAction' });

export type CorporateAction = z.infer<typeof CorporateActionSchema>;

/** The latest check of an instrument's action history against a source. */
export interface CoverageCheck {
  checkedAt: string;
  source: string;
  coveredFrom: string;
  actionsFound: number;
}
