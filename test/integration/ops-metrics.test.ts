import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { buildStartingApp } from '../../server/app.ts';
import { createLogger } from '../../server/observability/logger.ts';
import { httpRequests, registry } from '../../server/observability/metrics.ts';
import { opsExpressions } from '../support/ops-files.ts';
import { namesIn } from '../support/promql.ts';
import { Service, startService } from './harness.ts';
import { createInstrument, dailyBar, weekdays } from './fixtures.ts';

// The dashboard (ops/grafana/dashboards) and the alert rules
// (ops/prometheus/alerts.yml) against what the running service exposes: a
// panel or an alert on a metric the code does not expose would show nothing
// or never fire, and nothing else would say so.

/** Series Prometheus records itself for every scrape target. */
const SCRAPE_SERIES = new Set(['up']);
/** Labels Prometheus adds at scrape (job, instance) or a histogram series carries (le). */
const ADDED_LABELS = ['job', 'instance', 'le'];

let svc: Service;
beforeAll(async () => {
  svc = await startService();
});
afterAll(() => svc.stop());

/** The series names /metrics exposes, from its # TYPE lines: a histogram is its _bucket, _sum and _count series. */
function exposedSeries(text: string): Map<string, string> {
  const families = new Map<string, string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const series =
      type === 'histogram' ? ['_bucket', '_sum', '_count'].map((s) => name + s) : type === 'summary' ? [name, `${name}_sum`, `${name}_count`] : [name];
    for (const s of series) families.set(s, name);
  }
  return families;
}

/** The label names each family was declared with (prom-client keeps them on the metric object). */
function declaredLabels(): Map<string, string[]> {
  return new Map(
    registry.getMetricsAsArray().map((m) => {
      const labelNames: unknown = Reflect.get(m, 'labelNames');
      if (!Array.isArray(labelNames)) throw new Error(`prom-client metric ${m.name} has no labelNames array`);
      return [m.name, labelNames.map(String)];
    }),
  );
}

/** What in `expressions` names a series or a label /metrics does not have, one line each. */
async function unknownNames(expressions: { where: string; expr: string }[]): Promise<string[]> {
  const series = exposedSeries(await (await fetch(`${svc.runtime.adminUrl}/metrics`)).text());
  const labelsOf = declaredLabels();
  const problems: string[] = [];
  for (const { where, expr } of expressions) {
    const { selectors, groupingLabels } = namesIn(expr);
    const inScope = new Set(ADDED_LABELS);
    for (const { metric, labels } of selectors) {
      if (SCRAPE_SERIES.has(metric)) {
        labels.forEach((l) => inScope.add(l));
        continue;
      }
      const family = series.get(metric);
      if (!family) {
        problems.push(`${where}: ${metric} is not exposed`);
        continue;
      }
      const declared = labelsOf.get(family) ?? [];
      declared.forEach((l) => inScope.add(l));
      for (const label of labels) {
        if (!declared.includes(label) && !ADDED_LABELS.includes(label)) problems.push(`${where}: ${metric} has no label ${label}`);
      }
    }
    for (const label of groupingLabels) {
      if (!inScope.has(label)) problems.push(`${where}: no metric of the expression has the label ${label}`);
    }
  }
  return problems;
}

describe('ops: the dashboard and the alert rules against /metrics', () => {
  it('when every expression of the dashboard and the alert rules is read, then each metric it names is exposed by /metrics and each label it names is one of its labels', async () => {
    const expressions = opsExpressions();
    expect(expressions.filter((e) => e.where.startsWith('alert ')).length).toBeGreaterThanOrEqual(5);
    expect(expressions.filter((e) => e.where.startsWith('dashboard ')).length).toBeGreaterThanOrEqual(10);
    expect(await unknownNames(expressions)).toEqual([]);
  });

  it('when an expression names a metric the code does not expose, or a label it lacks, then the check reports it', async () => {
    expect(
      await unknownNames([
        { where: 'misspelt', expr: 'sum(rate(http_request_total[5m]))' },
        { where: 'wrong label', expr: 'sum by (route) (rate(http_requests_total{status_code="500"}[5m]))' },
        { where: 'wrong grouping', expr: 'sum by (server) (db_pool_waiting)' },
      ]),
    ).toEqual([
      'misspelt: http_request_total is not exposed',
      'wrong label: http_requests_total has no label status_code',
      'wrong grouping: no metric of the expression has the label server',
    ]);
  });
});

describe('ops: ingest_rows_total', () => {
  /** ingest_rows_total{kind="daily bars"} by outcome, as /metrics renders it. */
  async function dailyBarRows(): Promise<Record<string, number>> {
    const text = await (await fetch(`${svc.runtime.adminUrl}/metrics`)).text();
    const counts: Record<string, number> = { inserted: 0, updated: 0, unchanged: 0 };
    for (const [, outcome, value] of text.matchAll(/^ingest_rows_total\{kind="daily bars",outcome="(\w+)"\} (\d+)$/gm)) counts[outcome] = Number(value);
    return counts;
  }

  it('when uploads commit, then their rows are counted by outcome; when an upload is refused, then nothing is counted', async () => {
    const { id } = await createInstrument(svc);
    const days = weekdays('2024-01-01', '2024-01-12'); // 10 weekdays
    const rows = days.map((barDate, i) => dailyBar(id, { barDate, close: 50 + i }));
    const before = await dailyBarRows();

    expect((await svc.admin('POST', '/bars/daily', rows)).status).toBe(200);
    const changed = rows.map((r, i) => (i < 3 ? { ...r, closePrice: r.closePrice + 1 } : r));
    expect((await svc.admin('POST', '/bars/daily', changed)).status).toBe(200);
    // The repeated key refuses the whole upload, after its other rows were written in its transaction.
    const refused = [...changed.map((r) => ({ ...r, closePrice: r.closePrice + 2 })), changed[0]];
    expect((await svc.admin('POST', '/bars/daily', refused)).status).toBe(400);

    const after = await dailyBarRows();
    expect({
      inserted: after.inserted - before.inserted,
      updated: after.updated - before.updated,
      unchanged: after.unchanged - before.unchanged,
    }).toEqual({ inserted: 10, updated: 3, unchanged: 7 });
  });
});

describe('ops: the route label of every request', () => {
  const requests = async (route: string, status: string) => {
    const { values } = await httpRequests.get();
    return values.filter((v) => v.labels.listener === 'public' && v.labels.route === route && v.labels.status === status).reduce((n, v) => n + v.value, 0);
  };

  it('when static assets and the health probes answer, then each is counted under its own route; unmatched is only a path nothing serves', async () => {
    const cases: [path: string, route: string, status: number][] = [
      ['/docs/assets/swagger-ui.css', '/docs/assets/*', 200],
      ['/account/assets/dashboard.css', '/account/assets/*', 200],
      ['/account/assets/uplot/uPlot.min.css', '/account/assets/uplot/*', 200],
      ['/healthz', '/healthz', 200],
      ['/readyz', '/readyz', 200],
      ['/no-route-serves-this', 'unmatched', 404],
    ];
    for (const [path, route, status] of cases) {
      const before = await requests(route, String(status));
      const res = await fetch(`${svc.runtime.publicUrl}${path}`);
      await res.arrayBuffer();
      expect(res.status, path).toBe(status);
      expect(await requests(route, String(status)), path).toBe(before + 1);
    }
  });

  it('when the service is starting, then /readyz answers 503 counted under /readyz, and every other path 503 under unmatched', async () => {
    const app = buildStartingApp('public', svc.runtime.config, createLogger('silent'));
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      for (const [path, route] of [
        ['/readyz', '/readyz'],
        ['/v1/instruments', 'unmatched'],
      ]) {
        const before = await requests(route, '503');
        const res = await fetch(`http://127.0.0.1:${port}${path}`);
        expect(res.status, path).toBe(503);
        expect(res.headers.get('retry-after')).toBe('1');
        expect((await res.json()).error.code).toBe('overloaded');
        expect(await requests(route, '503'), path).toBe(before + 1);
      }
    } finally {
      server.close();
    }
  });
});
