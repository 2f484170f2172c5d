// npm run lint: typescript-eslint with type information (no-floating-promises
// needs it) and import-x's no-cycle over server/, workers/, bench/ and test/.
import js from '@eslint/js';
import { importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'docs/openapi/', '.data/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    settings: {
      // no-cycle parses each imported module itself: it needs the TypeScript parser for .ts files.
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/extensions': ['.ts', '.js', '.mjs', '.cjs'],
      'import-x/resolver-next': [importX.createNodeResolver({ extensions: ['.ts', '.js', '.mjs', '.cjs'] })],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  {
    // The layers (docs/architecture.md): core/ is the ground floor and imports
    // nothing else of the server; db/ stands on core/ (with the metrics, the
    // logger and the configuration); neither knows HTTP. workers/ is pure
    // compute and never imports the server, which imports from it only the
    // types-and-constants module, workers/contract.ts.
    files: ['server/**/*.ts', 'workers/**/*.ts'],
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            { target: './server/core', from: './server', except: ['./core'], message: 'core/ is the ground floor: it imports nothing else of the server' },
            {
              target: './server/db',
              from: './server',
              except: ['./db', './core', './metrics.ts', './logger.ts', './config.ts'],
              message: 'db/ stands on core/ alone',
            },
            { target: './workers', from: './server', message: 'workers/ is pure compute: it never imports the server' },
            {
              target: './server',
              from: './workers',
              except: ['./contract.ts'],
              message: 'the server imports only workers/contract.ts (types and constants); server/worker-pool.ts loads the task modules by URL',
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
