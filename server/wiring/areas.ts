import type { AppDeps } from './deps.ts';
import type { Area } from '../http/area.ts';
import type { AnyIngestKind, IngestKind } from '../ingest/kind.ts';
import { adminRouteDefinitions } from '../admin/routes.ts';
import { actionsArea } from '../actions/routes.ts';
import { analyticsArea } from '../analytics/routes.ts';
import { fxArea } from '../fx/routes.ts';
import { earningsArea } from '../earnings/routes.ts';
import { economicEventsArea } from '../economic-events/routes.ts';
import { exportsArea } from '../exports/routes.ts';
import { eventReactionsArea } from '../event-reactions/routes.ts';
import { impliedVolatilityArea } from '../implied-volatility/routes.ts';
import { instrumentsArea } from '../instruments/routes.ts';
import { macroArea } from '../macro/routes.ts';
import { newsArea } from '../news/routes.ts';
import { optionsArea } from '../options/routes.ts';
import { pricesArea } from '../prices/routes.ts';
import { sentimentArea } from '../sentiment/routes.ts';

/** Every public API area, mounted with AppDeps: the compiler checks that AppDeps gives each area the deps it declares. */
export const AREAS: readonly Area<AppDeps, AnyIngestKind>[] = [
  instrumentsArea,
  pricesArea,
  actionsArea,
  analyticsArea,
  macroArea,
  fxArea,
  economicEventsArea,
  optionsArea,
  impliedVolatilityArea,
  earningsArea,
  sentimentArea,
  newsArea,
  eventReactionsArea,
  exportsArea,
];

/** Admin upload routes by path (e.g. `bars/daily`), shared by the admin API and the CLI. */
export function ingestKinds(): Record<string, IngestKind<unknown>> {
  return Object.assign({}, ...AREAS.map((a) => a.ingest ?? {}));
}

export const publicRouteDefinitions = () => AREAS.flatMap((a) => a.routes);

export const adminRoutes = () => adminRouteDefinitions(ingestKinds()).all;
