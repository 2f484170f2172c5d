import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../server/config.ts';
import { anchorOf, opsPath } from '../support/ops-files.ts';

// docker-compose.yml cannot be run here (no Docker engine), and docs/deployment.md
// describes it: these hold the two to each other and to server/config.ts, so
// that an image, a port, a variable, a scrape target or the replica's set-up
// changed in one and not the other fails here.

const composeText = readFileSync(opsPath('docker-compose.yml'), 'utf8');
/** docker-compose.yml as Compose reads it: YAML merge keys (`<<: *api`) applied. */
const compose = parse(composeText, { merge: true });
const deployment = readFileSync(opsPath('docs', 'deployment.md'), 'utf8');

type Service = {
  image?: string;
  build?: { dockerfile_inline: string };
  command?: string[];
  entrypoint?: string[];
  environment?: string[];
  volumes?: string[];
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
};
const services: Record<string, Service> = compose.services;

/** The services built from this repository: the API processes. */
const apiServices = Object.keys(services).filter((s) => services[s].build);

/** A service's environment as a map; a variable passed through from the host has no value. */
const environmentOf = (service: string) =>
  new Map(
    (services[service].environment ?? []).map((e) => {
      const at = e.indexOf('=');
      return at < 0 ? [e, undefined] : [e.slice(0, at), e.slice(at + 1)];
    }),
  );

/** A value as Compose gives it when no variable is set on the host: each ${VAR:-default} is its default. */
const withComposeDefaults = (text: string) => text.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');

/** The image a service runs: its `image`, or the FROM of the Dockerfile it is built from. */
const imageOf = (service: string) => services[service].image ?? /^FROM (\S+)$/m.exec(services[service].build!.dockerfile_inline)?.[1];

/** A `-c name=value` setting of a service's command. */
const settingOf = (service: string, name: string) => {
  const command = services[service].command ?? [];
  const i = command.findIndex((arg, at) => command[at - 1] === '-c' && arg.startsWith(`${name}=`));
  return i < 0 ? undefined : command[i].slice(name.length + 1);
};

/** The container path at which a service mounts a file of the repository. */
const mountOf = (service: string, file: string) => (services[service].volumes ?? []).map((v) => v.split(':')).find(([host]) => host === `./${file}`)?.[1];

/** A shell script without its comment lines. */
const scriptCode = (file: string) =>
  readFileSync(opsPath(file), 'utf8')
    .split('\n')
    .filter((line) => !line.trim().startsWith('#'))
    .join('\n');

/** The rows of the Markdown table whose header row starts with these cells, each row as its cells. */
function tableOf(text: string, ...header: string[]): string[][] {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => {
    const cells = cellsOf(line);
    return header.every((h, i) => cells[i] === h);
  });
  expect(start, `a table headed ${header.join(' | ')}`).toBeGreaterThanOrEqual(0);
  const rows: string[][] = [];
  for (let i = start + 2; i < lines.length && lines[i].startsWith('|'); i++) rows.push(cellsOf(lines[i]));
  return rows;
}
const cellsOf = (line: string) =>
  line.startsWith('|')
    ? line
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim())
    : [];

/** The text of each `code span` in a piece of Markdown. */
const codeSpans = (text: string) => [...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]);

/** Names written as environment variables: upper case with at least one underscore. */
const variableNames = (text: string) => [...text.matchAll(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g)].map((m) => m[0]);

/** The text of docs/deployment.md's fenced blocks, and of its inline code spans outside them. */
const fenced = [...deployment.matchAll(/^```[^\n]*\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
const inlineCode = codeSpans(deployment.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, ''));

/** A compose service's row of docs/deployment.md's table of services, by service name. */
const serviceRows = new Map(tableOf(deployment, 'Service', 'Image', 'Published ports').map((row) => [codeSpans(row[0])[0], row]));

describe('docker-compose.yml against docs/deployment.md', () => {
  it('when the services are listed, then the docs name exactly the services compose runs, two of them API processes from one build', () => {
    expect([...serviceRows.keys()].sort()).toEqual(Object.keys(services).sort());
    expect(apiServices).toEqual(['api-1', 'api-2']);
    expect(services['api-2'].build).toEqual(services['api-1'].build);
  });

  it('when an image is named, then the docs and compose name the same images with the same tags, service by service', () => {
    for (const [service, row] of serviceRows) {
      const named = codeSpans(row[1]);
      expect(named, service).toEqual([imageOf(service)]);
      if (services[service].build) expect(row[1], service).toMatch(/^built from /);
    }
    // Anywhere else on the page: an image reference is a code span name:tag whose name is no compose service (`api-1:8081` is a scrape target).
    const imageLike = /^[a-z][a-z0-9._-]*(?:\/[a-z0-9._-]+)*:[A-Za-z0-9._-]+$/;
    const named = new Set([...inlineCode, ...fenced.flatMap((block) => block.split(/\s+/))].filter((s) => imageLike.test(s) && !(s.split(':')[0] in services)));
    const composeImages = new Set(Object.keys(services).map(imageOf));
    expect([...named].sort()).toEqual([...composeImages].sort());
    for (const image of composeImages) expect(image, 'pinned').toMatch(/:[^:]*\d[^:]*$/);
  });

  it('when ports are published, then each service publishes exactly the ports of its row, every host port once and the admin listeners on loopback only', () => {
    for (const [service, row] of serviceRows) {
      const documented = row[2] === 'none' ? [] : codeSpans(row[2]);
      expect(documented, service).toEqual(services[service].ports ?? []);
    }
    const hostPorts = Object.values(services).flatMap((s) => (s.ports ?? []).map((p) => p.split(':').slice(0, -1).join(':')));
    const numbers = hostPorts.map((p) => p.split(':').at(-1));
    expect(new Set(numbers).size).toBe(numbers.length);

    for (const service of apiServices) {
      const env = environmentOf(service);
      const byContainerPort = new Map((services[service].ports ?? []).map((p) => [p.split(':').at(-1), p]));
      expect(byContainerPort.get(env.get('PORT')!), `${service} public listener`).toMatch(/^\d+:\d+$/);
      expect(byContainerPort.get(env.get('ADMIN_PORT')!), `${service} admin listener`).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
    }
    expect(services.grafana.ports).toEqual(['127.0.0.1:3000:3000']);
  });

  it('when the API services are configured, then both set the same variables, each a variable of server/config.ts and each in the docs table', () => {
    const [first, ...others] = apiServices.map((s) => services[s].environment);
    for (const environment of others) expect(environment).toEqual(first);
    const names = [...environmentOf(apiServices[0]).keys()];
    expect(names.length).toBeGreaterThanOrEqual(8);
    const configKeys = Object.keys(ConfigSchema.shape);
    for (const name of names) expect(configKeys, `${name} set on the API services`).toContain(name);

    const documented = tableOf(deployment, 'Variable', 'In `docker-compose.yml`').map((row) => codeSpans(row[0])[0]);
    expect(documented.sort()).toEqual([...names].sort());
  });

  it('when docs/deployment.md names an environment variable, then it is one of server/config.ts, or one compose sets or reads for the other services', () => {
    const configKeys = new Set(Object.keys(ConfigSchema.shape));
    const composeVariables = new Set([
      ...Object.keys(services)
        .filter((s) => !services[s].build)
        .flatMap((s) => [...environmentOf(s).keys()]),
      ...[...composeText.matchAll(/\$\{([A-Z_]+)/g)].map((m) => m[1]),
    ]);
    const named = new Set([...inlineCode, ...fenced].flatMap(variableNames));
    expect(named.size).toBeGreaterThan(20);
    for (const name of named) expect(configKeys.has(name) || composeVariables.has(name), `${name} in docs/deployment.md`).toBe(true);
    // The variables of the topology itself are the service's, not compose's.
    for (const name of [
      'DATABASE_URL',
      'DATABASE_REPLICA_URLS',
      'DATABASE_REPLICA_MAX_LAG_MS',
      'WEB_CONCURRENCY',
      'DATABASE_POOL_MODE',
      'DATABASE_PREPARED_STATEMENTS',
      'DATABASE_DIRECT_URL',
      'DATABASE_POOL_SIZE',
    ]) {
      expect(named, name).toContain(name);
      expect(configKeys, name).toContain(name);
    }
  });

  it('when Prometheus scrapes, then its one job targets the admin listener of every API service, as the docs say', () => {
    const prometheus = parse(withComposeDefaults(compose.configs.prometheus_config.content));
    const job = prometheus.scrape_configs.find((s: { job_name: string }) => s.job_name === 'market-data-api');
    const targets = job.static_configs.flatMap((c: { targets: string[] }) => c.targets);
    const expected = apiServices.map((s) => `${s}:${environmentOf(s).get('ADMIN_PORT')}`);
    expect(targets.sort()).toEqual(expected.sort());
    for (const target of expected) expect(inlineCode, target).toContain(target);
    for (const service of apiServices) expect(Object.keys(services.prometheus.depends_on ?? {})).toContain(service);
  });

  it('when the API services connect, then writes go to the primary service and reads to the replica service', () => {
    for (const service of apiServices) {
      const env = environmentOf(service);
      expect(new URL(withComposeDefaults(env.get('DATABASE_URL')!)).hostname).toBe('db');
      const replicas = withComposeDefaults(env.get('DATABASE_REPLICA_URLS')!).split(',');
      expect(replicas.map((u) => new URL(u).hostname)).toEqual(['db-replica']);
      expect(services[service].depends_on?.db?.condition ?? services[service].depends_on?.['api-1']?.condition).toBe('service_healthy');
    }
    // One process runs the migrations and the demo load and writes the admin token before the other starts.
    expect(services['api-2'].depends_on?.['api-1']).toEqual({ condition: 'service_healthy' });
  });
});

describe('the compose replica', () => {
  const replicaScript = 'ops/compose/replica-entrypoint.sh';
  const primaryScript = 'ops/compose/primary-replication.sh';

  it('when it starts on an empty volume, then it runs pg_basebackup -R against the primary service as the role the primary creates, then the image entrypoint', () => {
    const replica = services['db-replica'];
    expect(replica.image).toBe(services.db.image);
    expect(replica.depends_on?.db).toEqual({ condition: 'service_healthy' });
    expect(replica.entrypoint).toEqual(['bash', mountOf('db-replica', replicaScript)]);
    expect(replica.command?.[0]).toBe('postgres');

    const env = environmentOf('db-replica');
    expect(env.get('PRIMARY_HOST')).toBe('db');
    expect(env.get('REPLICATION_PASSWORD')).toBe(environmentOf('db').get('REPLICATION_PASSWORD'));

    const code = scriptCode(replicaScript);
    const backup = /pg_basebackup((?:[^\n]*\\\n)*[^\n]*)/.exec(code)?.[1] ?? '';
    expect(backup).toMatch(/ --host="\$PRIMARY_HOST"/);
    expect(backup).toMatch(/ (?:--write-recovery-conf|-R)\b/);
    expect(backup).toMatch(/ --pgdata="\$PGDATA"/);
    const user = / --username=(\w+)/.exec(backup)?.[1];
    expect(code.trimEnd().endsWith('exec docker-entrypoint.sh "$@"')).toBe(true);

    // The primary creates that role on its first start, and lets it connect for replication.
    const initScript = mountOf('db', primaryScript);
    expect(initScript).toMatch(/^\/docker-entrypoint-initdb\.d\/[^/]+\.sh$/);
    const primary = scriptCode(primaryScript);
    expect(primary).toContain(`create role ${user} with login replication password :'replication_password';`);
    expect(primary).toContain(`host replication ${user} all scram-sha-256`);
    expect(primary).toContain('--set replication_password="${REPLICATION_PASSWORD');
  });

  it('when the standby starts, then it allows at least the connections of the primary, and the docs give the compose connection count from the pool sizes', () => {
    const primaryMax = Number(settingOf('db', 'max_connections'));
    const replicaMax = Number(settingOf('db-replica', 'max_connections'));
    expect(primaryMax).toBeGreaterThan(0);
    expect(replicaMax).toBeGreaterThanOrEqual(primaryMax);
    expect(settingOf('db-replica', 'hot_standby_feedback')).toBe('on');
    expect(settingOf('db', 'wal_keep_size')).toBe('1GB');

    const processes = apiServices.reduce((n, s) => n + Number(environmentOf(s).get('WEB_CONCURRENCY')), 0);
    const pool = Number(environmentOf('api-1').get('DATABASE_POOL_SIZE') ?? ConfigSchema.shape.DATABASE_POOL_SIZE.parse(undefined));
    const auth = declared('server', /^(?:export )?const AUTH_CONNECTIONS = (\d+);$/m);
    // The replica checks' one connection to the primary and to each replica (server/db/replicas.ts).
    const check = declared('server/db', /^function monitorClient\(url: string\): \w+ \{\s+return sqlClient\(url, \{\s+max: (\d+),$/m);
    const onPrimary = processes * (pool + auth + check);
    const onReplica = processes * (pool + check);
    expect(onPrimary).toBeLessThan(primaryMax - 3);
    expect(deployment).toContain(
      `In \`docker-compose.yml\`: ${processes} processes × (${pool} + ${auth} + ${check}) = ${onPrimary} connections on \`db\` and ${processes} × (${pool} + ${check}) = ${onReplica} on \`db-replica\`, each of whose \`max_connections\` is ${primaryMax}.`,
    );
    const pools = new Map(tableOf(deployment, 'Pool', 'Server', 'Connections per process').map((row) => [codeSpans(row[0])[0], row[2]]));
    expect(pools.get('primary')).toBe(`\`DATABASE_POOL_SIZE\` (${ConfigSchema.shape.DATABASE_POOL_SIZE.parse(undefined)})`);
    expect(pools.get('auth')).toBe(String(auth));
    expect(pools.get('replica-1')).toBe(pools.get('primary'));
    expect(pools.get('replica-check')).toBe(`${check} on each`);
  });
});

describe('the links of docs/deployment.md', () => {
  it('when it links a file of the repository, then the file exists, and a heading anchor names a heading of it', () => {
    const links = [...deployment.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((l) => !/^[a-z]+:/.test(l));
    expect(links.length).toBeGreaterThan(10);
    for (const link of links) {
      const [file, anchor] = link.split('#');
      const target = file ? path.join(opsPath('docs'), file) : opsPath('docs', 'deployment.md');
      expect(existsSync(target), link).toBe(true);
      if (anchor === undefined) continue;
      const headings = [...readFileSync(target, 'utf8').matchAll(/^#+ (.+)$/gm)].map((m) => anchorOf(m[1]));
      expect(headings, link).toContain(anchor);
    }
  });
});

describe('the measured figures of docs/deployment.md', () => {
  it('when a row quotes a result, then it links a committed file of bench/results; a row still being measured names the file it will come from', () => {
    const rows = tableOf(deployment, 'Measure', 'Result', 'Result file');
    expect(rows.length).toBeGreaterThanOrEqual(7);
    const committed = new Set(readdirSync(opsPath('bench', 'results')));
    for (const [measure, result, file] of rows) {
      if (result === '(being measured)') {
        expect(file, measure).toMatch(/^[a-z-]+\.json$/);
        continue;
      }
      const [, name, link] = /^\[([a-z-]+\.json)\]\(\.\.\/bench\/results\/([a-z-]+\.json)\)$/.exec(file) ?? [];
      expect(link, measure).toBe(name);
      expect(committed.has(name), `${measure}: bench/results/${name}`).toBe(true);
    }
    expect(rows.filter(([, result]) => result === '(being measured)')).toEqual([]);
  });
});

/** The one number a pattern finds in the server's sources under `dir` (a constant where the server declares it). */
function declared(dir: string, pattern: RegExp): number {
  const found: number[] = [];
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const file = path.join(folder, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith('.ts')) {
        const match = pattern.exec(readFileSync(file, 'utf8'));
        if (match) found.push(Number(match[1]));
      }
    }
  };
  walk(opsPath(dir));
  expect(found, String(pattern)).toHaveLength(1);
  return found[0];
}
