import type { Freshness } from './freshness.ts';

// The meta every answer carries: when it was read, where it came from, whether it is stale.

export interface Meta {
  asOf: string;
  source: string;
  stale: boolean;
  [extra: string]: unknown;
}

/** meta.source: the sources the data came from, sorted and comma-separated, or 'none' when there is no data. */
export function sourcesMeta(sources: Set<string>): string {
  return sources.size ? [...sources].sort().join(', ') : 'none';
}

/**
 * A page of a list read, with its meta: `rows` were read with a limit of
 * `limit + 1`, so one row more than `limit` says more matched (`truncated`),
 * and then `nextCursor` is the cursor after the page's last row, made by
 * `cursorAfter` from that row's index in `rows`; null when no more matched.
 * `fresh` is the page's stale and staleReason, by its area's rule (docs/api.md, "Freshness").
 */
export function listPage<T extends { source: string }>(rows: T[], limit: number, cursorAfter: (lastIndex: number) => string, fresh: Freshness) {
  const truncated = rows.length > limit;
  const data = truncated ? rows.slice(0, limit) : rows;
  const nextCursor = truncated ? cursorAfter(limit - 1) : null;
  return { data, meta: { asOf: new Date().toISOString(), source: sourcesMeta(new Set(data.map((r) => r.source))), ...fresh, limit, truncated, nextCursor } };
}
