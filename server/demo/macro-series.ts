import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Sql } from '../db/sql.ts';
import * as macro from '../macro/repository.ts';
import { MACRO_SERIES_IDS } from '../macro/schema.ts';
import { DEMO_DATA_DIR } from './catalog-files.ts';
import { DateSchema } from '../core/time.ts';
import { entryOf } from '../core/map-entry.ts';

/**
 * The demo's macro series: real monthly FRED observations from the gretl-data
 * 2022c snapshot (./data/fred_monthly_demo.csv, origin and licence in
 * ./data/SOURCES.md), stored as if fetched, under the snapshot's own `source`.
 * A copy whose source is not `fred` is never fresh, so with FRED_API_KEY set
 * the first read replaces it with a live copy; without a key it is served
 * with meta.stale true.
 */

const Text = z.string().trim().min(1);
const MacroSeriesFileSchema = z.strictObject({
  source: Text,
  note: Text,
  series: z.array(z.strictObject({ seriesId: z.enum(MACRO_SERIES_IDS), title: Text, units: Text, seasonalAdjustment: Text })).min(1),
});

export interface DemoMacroSeries {
  seriesId: string;
  title: string;
  units: string;
  seasonalAdjustment: string;
  observations: { date: string; value: number }[];
}

/** The bundled FRED snapshot: `series,date,value` lines of the five demo series (CRLF line ends, as gretl wrote the file). */
const FRED_MONTHLY_FILE = 'fred_monthly_demo.csv';

const DECIMAL = /^-?\d+(\.\d+)?$/;

/** The snapshot's observations, with each value as the file writes it (the calendar formats those digits exactly). */
export function fredMonthlyRows(): { series: string; date: string; value: string }[] {
  const [header, ...lines] = readFileSync(new URL(FRED_MONTHLY_FILE, DEMO_DATA_DIR), 'utf8').trim().split(/\r?\n/);
  if (header !== 'series,date,value') throw new Error(`${FRED_MONTHLY_FILE}: unexpected header ${header}`);
  return lines.map((line) => {
    const [series, date, value] = line.split(',');
    if (!DateSchema.safeParse(date).success || !DECIMAL.test(value ?? '')) throw new Error(`${FRED_MONTHLY_FILE}: bad line ${line}`);
    return { series, date, value };
  });
}

export function demoMacroSeries(): { source: string; series: DemoMacroSeries[] } {
  const file = MacroSeriesFileSchema.parse(JSON.parse(readFileSync(new URL('macro-series.json', DEMO_DATA_DIR), 'utf8')));
  const byId = new Map<string, { date: string; value: number }[]>(file.series.map((s) => [s.seriesId, []]));
  for (const { series, date, value } of fredMonthlyRows()) {
    const observations = byId.get(series);
    if (!observations) throw new Error(`${FRED_MONTHLY_FILE}: series ${series} is not described in macro-series.json`);
    observations.push({ date, value: Number(value) });
  }
  return {
    source: file.source,
    series: file.series.map((s) => ({ ...s, observations: entryOf(byId, s.seriesId).sort((a, b) => (a.date < b.date ? -1 : 1)) })),
  };
}

/** Stores each demo series that has no stored copy yet (a live copy is never replaced by the snapshot); the count stored. */
export async function loadDemoMacroSeries(sql: Sql, loadedAt = new Date()): Promise<{ rows: number; inserted: number; updated: number; unchanged: number }> {
  const { source, series } = demoMacroSeries();
  let inserted = 0;
  for (const s of series) {
    if (await macro.storedSeries(sql, s.seriesId)) continue;
    const description = { title: s.title, units: s.units, frequency: 'monthly' as const, seasonalAdjustment: s.seasonalAdjustment, providerUpdatedAt: null };
    await macro.replaceSeries(sql, s.seriesId, description, s.observations, source, loadedAt);
    inserted++;
  }
  return { rows: series.length, inserted, updated: 0, unchanged: series.length - inserted };
}
