import type { Express } from 'express';

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
  /** The path a router is mounted at ('/' for `app.use(router)`). */
  rawPath?: unknown;
}

/**
 * `METHOD /path` of every route an Express app serves under `prefix`, each
 * with the path of the routers it is mounted in (405 catch-alls and reserved
 * paths, which answer every method, excluded). A route on a list of paths is
 * one entry, its paths joined by commas, as Express names it.
 */
export function servedRoutes(app: Express, prefix: string): string[] {
  const out: string[] = [];
  const walk = (stack: Layer[], mount: string) => {
    for (const layer of stack) {
      if (layer.route) {
        if (layer.route.methods._all) continue;
        for (const method of Object.keys(layer.route.methods)) out.push(`${method} ${mount}${String(layer.route.path)}`);
      } else if (layer.handle?.stack) {
        walk(layer.handle.stack, typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? mount + layer.rawPath : mount);
      }
    }
  };
  // Express keeps its router on the app without typing it.
  const router: unknown = Reflect.get(app, 'router');
  walk((router as { stack: Layer[] }).stack, '');
  return out.filter((r) => r.split(' ')[1].startsWith(`${prefix}/`));
}
