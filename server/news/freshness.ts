import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { freshness, SOURCE_SILENCE_DAYS, type Freshness } from '../core/freshness.ts';

/**
 * News and catalyst events are fresh while every source of the returned rows
 * has published something, on any instrument, within SOURCE_SILENCE_DAYS
 * before the read's instant, or later: a wire that has fallen silent for a week has
 * stopped, and what it would have published since is missing (docs/api.md,
 * "Freshness"). A page without rows names no source and is fresh.
 */
export async function newsFreshness(sql: ISql, sources: Set<string>, instant: number): Promise<Freshness<'source_silent'>> {
  if (!sources.size) return freshness<'source_silent'>();
  const rows = await timed(
    'news_source_latest',
    sql<{ latest: Date | null }[]>`
      select (select published_at from news where source = s.source order by published_at desc limit 1) as latest
      from unnest(${[...sources]}::text[]) as s (source)
    `,
  );
  const silentSince = instant - SOURCE_SILENCE_DAYS * 86_400_000;
  return freshness<'source_silent'>(rows.some((r) => r.latest === null || r.latest.getTime() < silentSince) && 'source_silent');
}
