import type { RouteDefinition } from './route.ts';
import type { RouteTable } from './router.ts';

/**
 * One API area: the public routes it declares, their handlers, and the admin
 * ingest kinds it adds. `mount` must attach a handler to each of `routes` and
 * to nothing else (RouteTable.build checks). `Deps` is what the area's
 * handlers need, declared by the area; the wiring's AppDeps satisfies every
 * area's (server/wiring/areas.ts, checked by the compiler: `mount` is a
 * property, so its parameter is checked contravariantly). `Kind` is the
 * ingest kinds' type (IngestKind, from ingest/, an area above http/).
 */
export interface Area<Deps, Kind = never> {
  readonly routes: readonly RouteDefinition[];
  readonly mount: (routes: RouteTable, deps: Deps) => void;
  readonly ingest?: Readonly<Record<string, Kind>>;
}
