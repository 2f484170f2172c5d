import type { ISql, Sql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import type { FetchedSeries } from './fred.ts';
import type { MacroFrequency } from './schema.ts';

/** A stored copy's description: what a read reports besides the observations. */
export interface StoredSeries {
  seriesId: string;
  title: string;
  units: string;
  frequency: MacroFrequency;
  seasonalAdjustment: string | null;
  providerUpdatedAt: string | null;
  source: string;
  fetchedAt: Date;
}

interface SeriesRow {
  series_id: string;
  title: string;
  units: string;
  frequency: MacroFrequency;
  seasonal_adjustment: string | null;
  provider_updated_at: Date | null;
  source: string;
  fetched_at: Date;
}

function toStoredSeries(r: SeriesRow): StoredSeries {
  return {
    seriesId: r.series_id,
    title: r.title,
    units: r.units,
    frequency: r.frequency,
    seasonalAdjustment: r.seasonal_adjustment,
    providerUpdatedAt: r.provider_updated_at?.toISOString() ?? null,
    source: r.source,
    fetchedAt: r.fetched_at,
  };
}

/**
 * A stored copy: its description and its observations between two dates
 * (inclusive, either open), ascending, read in one snapshot so they belong to
 * the same fetch even while a refresh replaces the copy.
 */
export function readCopy(
  sql: Sql,
  seriesId: string,
  start?: string,
  end?: string,
): Promise<{ series: StoredSeries; observations: { date: string; value: number }[] }> {
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    const series = await storedSeries(tx, seriesId);
    // Copies are replaced, never removed, so one that was seen stored is still there.
    if (!series) throw new Error(`macro series ${seriesId} has no stored copy`);
    return { series, observations: await observations(tx, seriesId, start, end) };
  });
}

export async function storedSeries(sql: ISql, seriesId: string): Promise<StoredSeries | undefined> {
  const [row] = await timed(
    'macro_series',
    sql<SeriesRow[]>`
      select series_id, title, units, frequency, seasonal_adjustment, provider_updated_at, source, fetched_at
      from macro_series
      where series_id = ${seriesId}
    `,
  );
  return row && toStoredSeries(row);
}

function observations(sql: ISql, seriesId: string, start?: string, end?: string): Promise<{ date: string; value: number }[]> {
  return timed(
    'macro_observations',
    sql<{ date: string; value: number }[]>`
      select obs_date as date, value
      from macro_observations
      where series_id = ${seriesId}
        ${start ? sql`and obs_date >= ${start}` : sql``}
        ${end ? sql`and obs_date <= ${end}` : sql``}
      order by obs_date
    `,
  );
}

/** A stored copy's description and its latest observation (on or before `onOrBefore` when given), in one snapshot. */
export function latestOfCopy(
  sql: Sql,
  seriesId: string,
  onOrBefore?: string,
): Promise<{ series: StoredSeries; latest: { date: string; value: number } | undefined } | undefined> {
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    const series = await storedSeries(tx, seriesId);
    return series && { series, latest: await latestObservation(tx, seriesId, onOrBefore) };
  });
}

async function latestObservation(sql: ISql, seriesId: string, onOrBefore?: string): Promise<{ date: string; value: number } | undefined> {
  const [row] = await timed(
    'macro_latest_observation',
    sql<{ date: string; value: number }[]>`
      select obs_date as date, value
      from macro_observations
      where series_id = ${seriesId}
        ${onOrBefore ? sql`and obs_date <= ${onOrBefore}` : sql``}
      order by obs_date desc
      limit 1
    `,
  );
  return row;
}

/**
 * Replaces a series' stored copy with `fetched` in one transaction. Refreshes of one series take turns on a transaction-scoped
 * advisory lock, so two processes refreshing at once store one copy after the
 * other instead of colliding on the observations' key.
 */
export async function replaceSeries(
  sql: Sql,
  seriesId: string,
  fetched: Omit<FetchedSeries, 'observations'>,
  rows: { date: string; value: number }[],
  source: string,
  fetchedAt: Date,
): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtext(${`macro_series:${seriesId}`}))`;
    await tx`
    insert into macro_series (series_id, title, units, frequency, seasonal_adjustment, provider_updated_at, source, fetched_at)
    values (${seriesId}, ${fetched.title}, ${fetched.units}, ${fetched.frequency}, ${fetched.seasonalAdjustment},
      ${fetched.providerUpdatedAt}, ${source}, ${fetchedAt})
    on conflict (series_id) do update set
      title = excluded.title,
      units = excluded.units,
      frequency = excluded.frequency,
      seasonal_adjustment = excluded.seasonal_adjustment,
      provider_updated_at = excluded.provider_updated_at,
      source = excluded.source,
      fetched_at = excluded.fetched_at
  `;
    await tx`delete from macro_observations where series_id = ${seriesId}`;
    await tx`
    insert into macro_observations (series_id, obs_date, value)
    select ${seriesId}, d, v
    from unnest(${rows.map((r) => r.date)}::date[], ${rows.map((r) => r.value)}::float8[]) as t (d, v)
  `;
  });
}
