import type { Reads } from '../db/database.ts';
import { freshness, type Freshness } from '../core/freshness.ts';
import { sourcesMeta } from '../core/meta.ts';
import { activeWithoutSymbolOn, brokerCodeSources, REFERENCE_SOURCE } from './repository.ts';

/**
 * What an instrument read's meta says of the rows it returned (docs/api.md,
 * "Freshness"): `source` names the instrument master (`mds-reference`) and
 * the sources of the rows' broker codes (the demo's are `synthetic-demo`);
 * `none` without rows. Reference data is stale when it contradicts itself
 * at the read's day: an instrument marked active with no symbol period
 * covering that day (its symbology has lapsed: a listing ended or a rename
 * not recorded), `symbol_history_lapsed`. A delisted instrument, marked
 * inactive, keeps its closed history and is fresh.
 */
export async function instrumentsMeta(db: Reads, rows: { id: string }[], day: string): Promise<{ source: string } & Freshness<'symbol_history_lapsed'>> {
  const ids = rows.map((r) => r.id);
  const [codeSources, lapsed] = await db.run((sql) => Promise.all([brokerCodeSources(sql, ids), activeWithoutSymbolOn(sql, ids, day)]));
  return {
    source: sourcesMeta(new Set(ids.length ? [REFERENCE_SOURCE, ...codeSources] : [])),
    ...freshness<'symbol_history_lapsed'>(lapsed.length > 0 && 'symbol_history_lapsed'),
  };
}
