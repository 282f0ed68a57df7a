/**
 * How settle's workflow code is bundled: the one source of the bundle options for every place
 * that bundles it (the worker when it bundles itself, the tests' global setup, the benchmarks,
 * chaos, the production lane). Imports nothing heavy, so scripts can use it without a worker.
 *
 * ## Preloaded modules (issue #16)
 *
 * With Temporal's reusable V8 context (the default) every workflow gets a fresh webpack module
 * cache, so every module its code imports is evaluated again per trajectory: zod's classes and
 * our schemas cost ~11 ms of CPU per trajectory against ~0.2 ms for a plain workflow. Modules
 * listed in `preloadModules` are evaluated once per worker thread, before any workflow, into a
 * cache every workflow shares; the SDK then deep-freezes them
 * (@temporalio/worker/lib/workflow/reusable-vm.js: every module evaluated during the preload,
 * transitively, has its `module` object and everything reachable from its exports through object
 * properties frozen, getters read; closures, Map/Set/WeakMap contents, function properties and
 * prototypes are not reached).
 *
 * Two rules follow for every module below, and for anything it imports:
 *
 * 1. No zod schema is reachable from an export: a frozen schema cannot parse (zod defines members
 *    on first use and resets `lastIndex` on its regexes). Schemas are built on first use by
 *    `lazy()` (core/lazy.ts) and live in its closure; what is exported is the function. No
 *    exported getter builds one either (deepFreeze reads getters): the catalog's `args` is a
 *    function for that reason.
 * 2. No state that one workflow can change and another observe. The audit, module by module
 *    (test/core/workflow-bundle.test.ts fails when the preload reaches a module not listed here):
 *
 * - zod (zod/**): its module-level state is `globalRegistry` (a WeakMap of `.describe()` texts
 *   keyed by schema objects, which are built once per thread from fixed definitions; also set as
 *   `globalThis.__zod_globalRegistry`), `globalConfig` (set by its own `config(en())` at load, then
 *   frozen; settle never calls `z.config`), the memoizer's per-parse handoff and stack (set and
 *   cleared within one synchronous parse), the `Error`-capture latch in core.js (decides only
 *   whether zod suppresses stack capture, never a result) and members installed lazily on its
 *   classes' prototypes (pure, same for every workflow). Parse results depend only on the schema
 *   and the value.
 * - @noble/hashes (sha2, hmac, _md, _u64, utils): constant tables, and SHA-2 scratch arrays that
 *   every compression fully rewrites before it reads them (within one synchronous call).
 * - canonicalize: one pure function.
 * - core/zod-preload.ts: builds and uses one throwaway schema during the preload, so that zod
 *   writes its lazily set global configuration (default locale, memoizer) before the freeze.
 * - core/lazy.ts: no state of its own; each `lazy()` closure caches one value built from constants.
 * - core/tools/{bash-execute,file-edit,file-view,grep-search,http-request,common}.ts, core/capability/subagent.ts,
 *   core/capability/token.ts, core/trajectory-input.ts: constants and lazily built schemas (rule 1);
 *   token.ts's module-level TextEncoder and the non-global regexes (token.ts, http-request.ts's
 *   URL grammar) hold no state between calls.
 * - core/tools/catalog.ts: constant tables (LEVEL_ORDER, LEVEL_OF, CATALOG; frozen, never written).
 * - core/capability/rules.ts: `parsedObjects`, a bounded memo of `parseObject`, which is pure (its
 *   results are only read); a hit or a miss gives the same answer, so trajectories cannot tell.
 * - core/json-text.ts: `NUMBER`, a sticky regex whose `lastIndex` is set before every `exec`
 *   (one synchronous parse at a time); the rest is constants and a per-call Parser.
 * - core/printable.ts: one module-level global regex, used only by `String.prototype.replace`
 *   (which resets its `lastIndex`) and never exported, so not frozen; no other state.
 * - core/key.ts, core/paths.ts: constants, non-global regexes (`test` writes no `lastIndex`) and
 *   a TextEncoder. KEY_PATTERN and TOOL_NAME_PATTERN are exported, hence frozen: never hand them
 *   to zod's `.regex()` (it writes `lastIndex`).
 * - core/errors.ts: one Error subclass (frozen constructor; instances are per workflow).
 * - core/calls.ts, core/capability/access.ts, core/capability/rights.ts, core/failures.ts, core/history-budget.ts,
 *   core/jcs.ts, core/json-limits.ts, core/observation.ts, core/operator-details.ts,
 *   core/reserved-variables.ts, core/tools/compensation.ts, core/trajectory-ids.ts, core/validation.ts:
 *   constants and pure functions only.
 *
 * Nothing here may import @temporalio/workflow APIs that need a running workflow at load (there
 * is none during the preload), nor read Date.now() or Math.random() at load.
 *
 * The workflows/ modules are not preloaded: they are the workflow code proper (module-level
 * definitions of signals and updates, per-run state by design) and cost little to evaluate.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BundleOptions } from '@temporalio/worker';

/** `.ts` when this runs from the sources, `.js` when compiled (dist/, the packed package): the workflow modules beside it have the same. */
const EXTENSION = path.extname(fileURLToPath(import.meta.url));

export const WORKFLOWS_PATH = fileURLToPath(new URL(`../workflows/index${EXTENSION}`, import.meta.url));

/** Packages shared by every workflow of a worker thread (audited above). */
export const PRELOADED_PACKAGES = [
  'zod',
  '@noble/hashes/sha2.js',
  '@noble/hashes/hmac.js',
  '@noble/hashes/utils.js',
  'canonicalize',
] as const;

/** settle's own modules shared by every workflow of a worker thread, relative to the repository root (audited above). */
export const PRELOADED_SOURCES = [
  // First: zod's lazily written global configuration, written before the freeze.
  'core/zod-preload.ts',
  'core/calls.ts',
  'core/capability/access.ts',
  'core/capability/rights.ts',
  'core/capability/rules.ts',
  'core/capability/subagent.ts',
  'core/capability/token.ts',
  'core/errors.ts',
  'core/failures.ts',
  'core/history-budget.ts',
  'core/jcs.ts',
  'core/json-limits.ts',
  'core/json-text.ts',
  'core/key.ts',
  'core/lazy.ts',
  'core/observation.ts',
  'core/operator-details.ts',
  'core/paths.ts',
  'core/printable.ts',
  'core/reserved-variables.ts',
  'core/tools/bash-execute.ts',
  'core/tools/catalog.ts',
  'core/tools/common.ts',
  'core/tools/compensation.ts',
  'core/tools/file-edit.ts',
  'core/tools/file-view.ts',
  'core/tools/grep-search.ts',
  'core/tools/http-request.ts',
  'core/trajectory-ids.ts',
  'core/trajectory-input.ts',
  'core/validation.ts',
] as const;

/** What `preloadModules` lists: the packages by name, our modules by absolute path. */
export const PRELOAD_MODULES: readonly string[] = [
  ...PRELOADED_PACKAGES,
  ...PRELOADED_SOURCES.map((p) => fileURLToPath(new URL(`../${p.replace(/\.ts$/, EXTENSION)}`, import.meta.url))),
];

/**
 * The options of every settle workflow bundle: `bundleWorkflowCode(settleBundleOptions(logger))`,
 * or, when the worker bundles itself, `workflowsPath: WORKFLOWS_PATH` with
 * `bundlerOptions: { preloadModules: [...PRELOAD_MODULES] }`.
 */
export function settleBundleOptions(logger?: BundleOptions['logger']): BundleOptions {
  return { workflowsPath: WORKFLOWS_PATH, preloadModules: [...PRELOAD_MODULES], ...(logger ? { logger } : {}) };
}

/**
 * The bundle `npm run build` writes beside the compiled package (dist/workflow-bundle.js), and
 * the @temporalio/workflow version it was built with (a bundle runs only on the SDK it was built
 * with). In a checkout there is none: the worker bundles at start.
 */
export const PREBUILT_BUNDLE = fileURLToPath(new URL('../workflow-bundle.js', import.meta.url));
export const PREBUILT_BUNDLE_SDK = `${PREBUILT_BUNDLE}.sdk-version`;
export const WORKFLOW_BUNDLE_VARIABLE = 'SETTLE_WORKFLOW_BUNDLE';

/** The installed @temporalio/workflow's version, as the worker resolves it. */
export function workflowSdkVersion(): string {
  return (createRequire(import.meta.url)('@temporalio/workflow/package.json') as { version: string }).version;
}

/**
 * The pre-built bundle a worker starts from, in a second instead of bundling (tens of seconds on a
 * busy host): SETTLE_WORKFLOW_BUNDLE when set, else the package's own when it was built with the
 * @temporalio/workflow installed beside it; null: bundle at start.
 */
export function prebuiltWorkflowBundle(env: NodeJS.ProcessEnv = process.env): { codePath: string } | null {
  const named = env[WORKFLOW_BUNDLE_VARIABLE];
  if (named) return { codePath: named };
  if (!fs.existsSync(PREBUILT_BUNDLE) || !fs.existsSync(PREBUILT_BUNDLE_SDK)) return null;
  return fs.readFileSync(PREBUILT_BUNDLE_SDK, 'utf8').trim() === workflowSdkVersion() ? { codePath: PREBUILT_BUNDLE } : null;
}
