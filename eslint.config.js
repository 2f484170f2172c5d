// npm run lint: typescript-eslint with type information (no-floating-promises
// needs it), the layers as import-x/no-restricted-paths zones, and
// local/import-cycles (eslint-rules/import-cycles.ts) over server/, workers/,
// bench/ and test/. import-cycles counts `import type` edges, which
// import-x/no-cycle skips, so it replaces no-cycle.
import js from '@eslint/js';
import { importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';
import local from './eslint-rules/import-cycles.ts';

/** The API areas: each stands on http/ and the layers below it, and may import another area. */
const AREAS = [
  'accounts',
  'actions',
  'admin',
  'analytics',
  'dashboard',
  'demo',
  'earnings',
  'economic-events',
  'event-reactions',
  'exports',
  'fx',
  'implied-volatility',
  'ingest',
  'instruments',
  'keys',
  'macro',
  'news',
  'options',
  'price-history',
  'prices',
  'sentiment',
];

export default tseslint.config(
  { ignores: ['node_modules/', 'docs/openapi/', '.data/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX, local },
    settings: {
      // no-restricted-paths resolves each specifier: it needs the TypeScript parser for .ts files.
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/extensions': ['.ts', '.js', '.mjs', '.cjs'],
      'import-x/resolver-next': [importX.createNodeResolver({ extensions: ['.ts', '.js', '.mjs', '.cjs'] })],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      'local/import-cycles': ['error', { roots: ['server', 'workers', 'bench', 'test'] }],
    },
  },
  {
    // The layers (docs/architecture.md), bottom up; each imports only from
    // the layers below it and its own, `import type` included (no-restricted-paths
    // checks every import form):
    //   core/ < observability/, config.ts < db/ < workers/ < http/ < the areas
    //   < wiring/ < app.ts, main.ts, runtime/, cli/.
    // workers/ is pure compute and never imports the server, except
    // workers/pool.ts, the server's side of the threads, which stands on core/
    // and observability/; the server imports from workers/ only that pool and
    // workers/contract.ts (types and constants). An area may import another
    // area; nothing below wiring/ knows the area table or AppDeps.
    files: ['server/**/*.ts', 'workers/**/*.ts'],
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            { target: './server/core', from: './server', except: ['./core'], message: 'core/ is the ground floor: it imports nothing else of the server' },
            {
              target: ['./server/observability', './server/config.ts'],
              from: './server',
              except: ['./observability', './core', './config.ts'],
              message: 'observability/ and config.ts stand on core/ alone',
            },
            {
              target: './server/db',
              from: './server',
              except: ['./db', './core', './observability', './config.ts'],
              message: 'db/ stands on core/, observability/ and config.ts',
            },
            {
              target: './server/http',
              from: './server',
              except: ['./http', './db', './core', './observability', './config.ts'],
              message: 'http/ stands on db/, core/, observability/ and config.ts: what an area or the wiring gives it comes in as a parameter',
            },
            {
              target: AREAS.map((area) => `./server/${area}`),
              from: ['./server/wiring', './server/runtime', './server/cli', './server/app.ts', './server/main.ts'],
              message: 'an area stands on http/ and below: what it needs from the wiring or the process comes in through its deps',
            },
            {
              target: './server/wiring',
              from: ['./server/runtime', './server/cli', './server/app.ts', './server/main.ts'],
              message: 'wiring/ composes the areas: the process (app.ts, main.ts, runtime/, cli/) stands on it, not the reverse',
            },
            {
              target: './workers',
              from: './server',
              except: ['./core', './observability'],
              message: 'workers/ is pure compute: only workers/pool.ts imports the server, and only core/ and observability/',
            },
            {
              target: ['./workers/!(pool).ts'],
              from: './server',
              message: "workers/ is pure compute: it never imports the server (workers/pool.ts is the server's side of the threads)",
            },
            {
              target: './server',
              from: './workers',
              except: ['./contract.ts', './pool.ts'],
              message:
                'the server imports only workers/contract.ts (types and constants) and workers/pool.ts, which loads the task modules by URL on the threads',
            },
          ],
        },
      ],
    },
  },
  {
    // Services and repositories never see Express or HTTP: routes translate their results into HTTP.
    files: [
      'server/**/service.ts',
      'server/**/*-service.ts',
      'server/**/repository.ts',
      'server/**/*-repository.ts',
      'server/core/**/*.ts',
      'server/db/**/*.ts',
    ],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['express', '**/http/*'], message: 'services, repositories, core/ and db/ know no HTTP' }] }],
    },
  },
  {
    // Tests and benchmarks read JSON answers whose shape the test itself checks.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Constants and reference values are written as published (Cody's normal
    // CDF, Acklam, Haug's worked examples, Gauss-Legendre tables), so each can
    // be checked against its source; what runs is the double nearest each.
    files: ['workers/black-scholes.ts', 'workers/normal-distribution.ts', 'workers/lognormal-quadrature.ts', 'test/**/*.ts'],
    rules: { 'no-loss-of-precision': 'off' },
  },
  {
    // The dashboard's browser scripts, served as they are (no build step); uPlot is loaded before usage.js.
    files: ['server/dashboard/assets/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: { window: 'readonly', document: 'readonly', history: 'readonly', location: 'readonly', navigator: 'readonly', uPlot: 'readonly' },
    },
  },
  {
    // A non-null assertion states what the types do not carry: each one left
    // is disabled on its line with the reason its value exists.
    files: ['server/**/*.ts', 'workers/**/*.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'error' },
  },
  {
    // CommonJS on purpose (workers/entry.cjs says why): require is how it imports.
    files: ['**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', require: 'readonly', module: 'writable', exports: 'writable', __dirname: 'readonly' },
    },
  },
);
