import { deriveEventReactions } from '../event-reactions/derive.ts';
import type { Derived, DeriveDeps, DeriveRequest } from '../ingest/derived.ts';
import type { DataChanges } from '../ingest/kind.ts';
import { deriveIvSnapshots, deriveIvSnapshotsOverBars } from '../options/derive.ts';
import { deriveSourceLeads, leadsReadClosesOf } from '../sentiment/derive.ts';

/**
 * What the service computes from stored data rather than ingests, and when.
 * Each derivation is idempotent: run twice on the same data it stores nothing
 * the second time. Uploads report what they changed (DataChanges); after the
 * upload commits, the derivations that read it run for what changed, and
 * `POST /admin/v1/derive` runs them all. What the step needs and answers
 * (DeriveDeps, Derived) is server/ingest/derived.ts, which the admin API and
 * the demo load, areas below the wiring, import.
 */

/**
 * Every derivation, for the given instruments or all. The source leads are
 * always derived whole: each pools every instrument's scores, so a run for
 * some instruments would still read them all.
 */
export async function deriveAll(deps: DeriveDeps, request: DeriveRequest = {}): Promise<Derived> {
  return {
    ivSnapshots: await deriveIvSnapshots(deps, { instrumentIds: request.instrumentIds }),
    eventReactions: await deriveEventReactions(deps, { instrumentIds: request.instrumentIds }),
    sourceLeads: await deriveSourceLeads(deps),
  };
}

/** The derivations that read what an upload changed, for what it changed. */
export async function deriveChanged(deps: DeriveDeps, changes: DataChanges): Promise<Derived> {
  const derived: Derived = {};
  if (changes.optionDays?.length) derived.ivSnapshots = await deriveIvSnapshots(deps, { days: changes.optionDays });
  // A snapshot reads the raw bars of its day's window as known at the day's end.
  if (changes.rawBarDays?.length) {
    // New bars under no quoted day change no snapshot: nothing to report.
    const snapshots = await deriveIvSnapshotsOverBars(deps, changes.rawBarDays);
    if (snapshots.rows) derived.ivSnapshots = snapshots;
  }
  // A reaction reads the news item and the adjusted closes around it.
  const reacting = [...new Set([...(changes.news ?? []), ...(changes.adjustedCloses ?? [])])];
  if (reacting.length) {
    // New closes of an instrument without news change no reaction: nothing to report.
    const reactions = await deriveEventReactions(deps, { instrumentIds: reacting });
    if (reactions.instruments) derived.eventReactions = reactions;
  }
  // New closes of an instrument without scores change no lead.
  if (changes.sentiment || (changes.adjustedCloses?.length && (await leadsReadClosesOf(deps, changes.adjustedCloses)))) {
    derived.sourceLeads = await deriveSourceLeads(deps);
  }
  return derived;
}
