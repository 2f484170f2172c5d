import { existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { namesIn } from '../support/promql.ts';
import { ALERT_RULES, anchorOf, DASHBOARD, opsPath, panelsOf, readAlertRules, readDashboard, readYaml } from '../support/ops-files.ts';

// docker-compose.yml cannot be run here (no Docker engine): these hold what
// can be checked without one. The file parses, every file it mounts exists,
// the files Prometheus and Grafana load parse and agree with each other, and
// nothing requires a variable to be preset. test/unit/deployment.test.ts holds
// the topology (images, ports, variables, the replica) to docs/deployment.md.

/** docker-compose.yml as Compose reads it: YAML merge keys (`<<: *api`) applied. */
const compose = parse(readFileSync(opsPath('docker-compose.yml'), 'utf8'), { merge: true });

/** The API services: those built from this repository. */
const apiServices = Object.keys(compose.services).filter((s) => compose.services[s].build);

/** Compose file text as Compose reads it when no variable is set on the host: each ${VAR:-default} is its default. */
const withComposeDefaults = (text: string) => text.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');

/** The configuration the compose Prometheus loads. */
const prometheusConfig = parse(withComposeDefaults(compose.configs.prometheus_config.content));

/** The bind mounts of a service: [host path, container path]. */
const bindMounts = (service: string): [string, string][] =>
  (compose.services[service].volumes ?? []).filter((v: string) => v.startsWith('./')).map((v: string) => v.split(':').slice(0, 2) as [string, string]);

describe('docker-compose.yml', () => {
  it('when its database image is read, then it is the TimescaleDB release and PostgreSQL major CI builds and tests, as is the Testcontainers image', () => {
    const script = readFileSync(opsPath('.ci/timescaledb.sh'), 'utf8');
    const version = /^FULL_VERSION=(\S+)$/m.exec(script)?.[1];
    const major = /^PG_MAJOR="\$\{PG_MAJOR:-(\d+)\}"$/m.exec(script)?.[1];
    expect([version, major]).toEqual(['2.28.3', '15']);
    const image = `timescale/timescaledb:${version}-pg${major}`;
    expect(compose.services.db.image).toBe(image);
    expect(readFileSync(opsPath('test/global-setup.ts'), 'utf8')).toContain(`export const TIMESCALEDB_IMAGE = '${image}';`);
  });

  it('when it is parsed, then it has the six services and every file it mounts or loads as a config exists', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api-1', 'api-2', 'db', 'db-replica', 'grafana', 'prometheus']);
    const files = [
      ...Object.keys(compose.services).flatMap((s) => bindMounts(s).map(([host]) => host)),
      ...Object.values<{ file?: string }>(compose.configs).flatMap((c) => (c.file ? [c.file] : [])),
    ];
    expect(files.length).toBeGreaterThanOrEqual(4);
    for (const file of files) expect(existsSync(opsPath(file)), file).toBe(true);
    for (const service of Object.values<{ configs?: { source: string }[] }>(compose.services)) {
      for (const config of service.configs ?? []) expect(Object.keys(compose.configs)).toContain(config.source);
    }
  });

  it('when no variable is set on the host, then nothing is required: no ${VAR:?} and ADMIN_TOKEN is passed through only when set', () => {
    const text = readFileSync(opsPath('docker-compose.yml'), 'utf8');
    expect(text).not.toMatch(/\$\{[A-Z_]+:?\?/);
    expect(apiServices).toHaveLength(2);
    for (const service of apiServices) {
      const environment: string[] = compose.services[service].environment;
      expect(environment, service).toContain('ADMIN_TOKEN');
      expect(
        environment.filter((e) => e.startsWith('ADMIN_TOKEN=')),
        service,
      ).toEqual([]);
    }
  });

  it('when the service generates its admin token, then it lands in DATA_DIR, a named volume the image creates for the node user, one for both API services', () => {
    for (const service of apiServices) {
      const dataDir = (compose.services[service].environment as string[]).find((e) => e.startsWith('DATA_DIR='))?.slice('DATA_DIR='.length);
      expect(dataDir, service).toBe('/app/.data');
      const volume = (compose.services[service].volumes as string[]).find((v) => v.endsWith(`:${dataDir}`));
      expect(volume?.split(':')[0], service).toBe('api-data');
      // Created after `USER node`, so an empty volume mounted on it takes node as its owner.
      const dockerfile: string = compose.services[service].build.dockerfile_inline;
      expect(dockerfile.indexOf(`RUN mkdir ${dataDir}`), service).toBeGreaterThan(dockerfile.indexOf('USER node'));
    }
    expect(Object.keys(compose.volumes)).toContain('api-data');
  });

  it('when Prometheus starts, then its configuration loads the alert rules file of the repository and scrapes the job the rules name', () => {
    const mounted = Object.fromEntries(
      (compose.services.prometheus.configs as { source: string; target: string }[]).map((c) => [c.target, compose.configs[c.source].file]),
    );
    expect(prometheusConfig.rule_files).toEqual(['/etc/prometheus/alerts.yml']);
    expect(mounted['/etc/prometheus/alerts.yml']).toBe(`./${ALERT_RULES.join('/')}`);
    const jobs = prometheusConfig.scrape_configs.map((s: { job_name: string }) => s.job_name);
    const upJobs = readAlertRules().flatMap((r) => [...r.expr.matchAll(/\bup\{job="([^"]+)"\}/g)].map((m) => m[1]));
    expect(upJobs.length).toBeGreaterThan(0);
    for (const job of upJobs) expect(jobs).toContain(job);
  });

  it('when Grafana starts, then its image is pinned and it provisions the Prometheus data source every panel uses and a provider that loads the committed dashboard', () => {
    expect(compose.services.grafana.image).toMatch(/^grafana\/grafana:\d+\.\d+\.\d+$/);
    const mounts = Object.fromEntries(bindMounts('grafana'));
    expect(mounts['./ops/grafana/provisioning/datasources']).toBe('/etc/grafana/provisioning/datasources');
    expect(mounts['./ops/grafana/provisioning/dashboards']).toBe('/etc/grafana/provisioning/dashboards');
    const datasources = readYaml('ops/grafana/provisioning/datasources/prometheus.yml');
    const providers = readYaml('ops/grafana/provisioning/dashboards/market-data-service.yml');

    expect(datasources.datasources).toHaveLength(1);
    const [source] = datasources.datasources;
    expect(source).toMatchObject({ type: 'prometheus', url: 'http://prometheus:9090' });
    expect(Object.keys(compose.services)).toContain(new URL(source.url).hostname);

    expect(providers.providers).toHaveLength(1);
    expect(providers.providers[0].type).toBe('file');
    expect(mounts[`./${DASHBOARD.slice(0, -1).join('/')}`]).toBe(providers.providers[0].options.path);

    const panels = panelsOf(readDashboard().panels).filter((p) => p.type !== 'row');
    expect(panels.length).toBeGreaterThan(0);
    for (const p of panels) {
      expect(p.datasource?.uid, p.title).toBe(source.uid);
      for (const t of p.targets ?? []) expect(t.datasource?.uid ?? source.uid, p.title).toBe(source.uid);
    }
  });
});

describe('the Grafana dashboard', () => {
  const dashboard = readDashboard();
  const panels = panelsOf(dashboard.panels);

  it('when it is parsed, then it has a uid and a title, unique panel ids, panels inside the 24-column grid, and a query on every panel', () => {
    expect(dashboard.uid).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
    expect(dashboard.title).toBeTruthy();
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    for (const p of panels) {
      expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
      if (p.type === 'row') continue;
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets!) expect(t.expr.trim(), p.title).not.toBe('');
    }
  });

  it('when its queries are read, then it shows request rate, errors and latency by route, pool wait, worker queue and task time, ingest rows and the event-loop delay', () => {
    const metrics = new Set(panels.flatMap((p) => (p.targets ?? []).flatMap((t) => namesIn(t.expr).selectors.map((s) => s.metric))));
    for (const metric of [
      'http_requests_total',
      'http_request_duration_seconds_bucket',
      'db_pool_acquire_wait_seconds_bucket',
      'db_pool_waiting',
      'db_pool_connections_in_use',
      'db_pool_max_connections',
      'worker_pool_queue_depth',
      'worker_task_wait_seconds_bucket',
      'worker_task_run_seconds_bucket',
      'ingest_rows_total',
      'nodejs_eventloop_lag_p99_seconds',
    ]) {
      expect(metrics, metric).toContain(metric);
    }
  });
});

describe('the Prometheus alert rules', () => {
  const rules = readAlertRules();
  const operations = readFileSync(opsPath('docs', 'operations.md'), 'utf8');
  const anchors = new Set([...operations.matchAll(/^#+ (.+)$/gm)].map((m) => anchorOf(m[1])));

  it('when they are read, then each alert has a unique name, a severity, a for duration, a summary, a description and a runbook_url that Prometheus expands to an absolute URL of its heading in docs/operations.md', () => {
    const externalLabels: Record<string, string> = prometheusConfig.global.external_labels;
    expect(new Set(rules.map((r) => r.alert)).size).toBe(rules.length);
    for (const rule of rules) {
      expect(['critical', 'warning'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/);
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      expect(rule.annotations?.description, rule.alert).toBeTruthy();
      const runbook = rule.annotations?.runbook_url ?? '';
      const [template, label, anchor] = runbook.match(/^\{\{ \$externalLabels\.(\w+) \}\}#([\w-]+)$/) ?? [];
      expect(template, `${rule.alert}: ${runbook}`).toBe(runbook);
      expect(anchor, rule.alert).toBe(rule.alert.toLowerCase());
      expect(anchors.has(anchor), `${rule.alert}: #${anchor}`).toBe(true);
      // As Prometheus expands it with the compose configuration: new URL() without a base refuses a relative URL.
      const base = externalLabels[label];
      expect(base, `${rule.alert}: external label ${label}`).toBeTruthy();
      expect(base, rule.alert).not.toContain('#');
      const url = new URL(runbook.replace(`{{ $externalLabels.${label} }}`, base));
      expect(['https:', 'http:'], rule.alert).toContain(url.protocol);
      expect(url.hash, rule.alert).toBe(`#${anchor}`);
    }
  });

  it('when they are read, then they cover a 5xx rate, p99 latency, database unavailable, the scrape failing, pool saturation, worker-pool rejections and FRED failing', () => {
    const metricsOf = (name: string) => namesIn(rules.find((r) => r.alert === name)!.expr).selectors.map((s) => s.metric);
    expect(metricsOf('MarketDataHigh5xxRate')).toContain('http_requests_total');
    expect(metricsOf('MarketDataHighLatencyP99')).toEqual(['http_request_duration_seconds_bucket']);
    expect(metricsOf('MarketDataDatabaseUnavailable')).toEqual(['db_available']);
    expect(metricsOf('MarketDataApiDown')).toEqual(['up']);
    expect(metricsOf('MarketDataDbPoolRefusing')).toEqual(['db_pool_refused_total']);
    expect(metricsOf('MarketDataDbPoolSaturated')).toEqual(['db_pool_acquire_wait_seconds_bucket']);
    expect(metricsOf('MarketDataWorkerPoolRejecting')).toEqual(['worker_tasks_rejected_total']);
    // Calls to FRED that failed, unless one succeeded: a service without FRED_API_KEY never calls FRED, so it stays quiet.
    const fredCalls = { metric: 'upstream_request_duration_seconds_count', labels: ['provider', 'outcome'] };
    expect(namesIn(rules.find((r) => r.alert === 'MarketDataMacroProviderFailing')!.expr).selectors).toEqual([fredCalls, fredCalls]);
  });
});

describe('the names a PromQL expression refers to', () => {
  it('when an expression nests aggregations, functions, ranges, matchers and vector matching, then only its selectors are metrics', () => {
    expect(
      namesIn(
        'histogram_quantile(0.99, sum by (pool, le) (rate(db_pool_acquire_wait_seconds_bucket{pool!="auth"}[$__rate_interval]))) > 0.25 and on (pool) max without (instance) (db_pool_waiting offset 5m) > bool 0',
      ),
    ).toEqual({
      selectors: [
        { metric: 'db_pool_acquire_wait_seconds_bucket', labels: ['pool'] },
        { metric: 'db_pool_waiting', labels: [] },
      ],
      groupingLabels: ['pool', 'le', 'pool', 'instance'],
    });
  });

  it('when matcher values and comments hold words, then they are not taken for names', () => {
    expect(namesIn('sum(rate(http_requests_total{listener="public", status=~"5..|rate"}[5m])) # ratio of up\n/ up{job=\'x\'}')).toEqual({
      selectors: [
        { metric: 'http_requests_total', labels: ['listener', 'status'] },
        { metric: 'up', labels: ['job'] },
      ],
      groupingLabels: [],
    });
  });

  it('when a selector has no metric name, then it is refused rather than passed unchecked', () => {
    expect(() => namesIn('{__name__="http_requests_total"}')).toThrow(/without a metric name/);
  });
});
