/**
 * A workflow bundle evaluated the way Temporal's reusable V8 context evaluates it
 * (@temporalio/worker/lib/workflow/reusable-vm.js, SDK 1.24), without a worker: the bundle's
 * script once, then its preload (`__TEMPORAL__.preloadModules()`), then the context's globals and
 * every module evaluated so far deep-frozen (the same deepFreeze), then, per simulated workflow,
 * a fresh module cache in front of which the shared one is looked up first.
 *
 * Used by `npm run bench:sandbox` (with per-module timing) and by
 * test/core/workflow-bundle.test.ts (what the preload reaches, and whether it still works frozen).
 */
import vm from 'node:vm';

export type Module = { exports: Record<string, unknown> };

export interface ReusableSandbox {
  /** A module by webpack id (`./core/key.ts`): the current workflow's own copy, else the shared one. */
  module(id: string): Module | undefined;
  /** Webpack ids of the modules every workflow shares: the bundle's entry and the preload's. */
  sharedIds(): string[];
  /** Runs code in the context (e.g. `__TEMPORAL__.importWorkflows()`). */
  run(code: string): unknown;
  /** Starts a simulated workflow: a fresh module cache. */
  nextWorkflow(): void;
}

/** As reusable-vm.js's deepFreeze: own properties (getters read), then the object itself; functions are frozen but not walked. */
export function deepFreeze(object: unknown, visited = new WeakSet<object>()): unknown {
  if (object == null || (typeof object !== 'object' && typeof object !== 'function') || visited.has(object)) return object;
  visited.add(object);
  if (Object.isFrozen(object)) return object;
  if (typeof object === 'object') {
    for (const name of [...Object.getOwnPropertyNames(object), ...Object.getOwnPropertySymbols(object)]) {
      const value = (object as Record<PropertyKey, unknown>)[name];
      if (value && (typeof value === 'object' || typeof value === 'function')) {
        try {
          deepFreeze(value, visited);
        } catch {
          // as the SDK: some objects cannot be frozen (typed arrays with elements)
        }
      }
    }
  }
  return Object.freeze(object);
}

/**
 * @param preload run the bundle's preload (what the worker does); false: every module but the
 *   entry's is evaluated per workflow (a bundle without preloadModules). The freeze is done either way.
 * @param globals host objects the bundle needs (the SDK injects its own; these are not frozen).
 */
export function reusableSandbox(bundle: string, options: { preload: boolean; globals?: Record<string, unknown> }): ReusableSandbox {
  const shared = new Map<string, Module>();
  let current: Map<string, Module> | null = null;
  const host: Record<string, unknown> = {
    TextEncoder,
    TextDecoder,
    URL,
    URLSearchParams,
    AbortController,
    performance,
    console,
    ...options.globals,
  };
  const context = vm.createContext({
    ...host,
    // As reusable-vm.js: a module evaluated before the first workflow lands in the shared cache,
    // later ones in the running workflow's; a lookup tries the shared cache first.
    __webpack_module_cache__: new Proxy(
      {},
      {
        get: (_, id) => shared.get(id as string) ?? current?.get(id as string),
        set: (_, id, value: Module) => ((current ?? shared).set(id as string, value), true),
        deleteProperty: (_, id) => current?.delete(id as string) ?? false,
        has: (_, id) => shared.has(id as string) || !!current?.has(id as string),
      },
    ),
  });
  vm.runInContext(bundle, context, { filename: 'workflow-bundle.js' });
  if (options.preload) vm.runInContext('__TEMPORAL__.preloadModules?.()', context);
  const globals = vm.runInContext('Object.getOwnPropertyDescriptors(globalThis)', context) as Record<string, PropertyDescriptor>;
  for (const [k, d] of Object.entries(globals)) {
    if (k !== 'globalThis' && k !== '__webpack_module_cache__' && !(k in host)) deepFreeze(d.value);
  }
  for (const m of shared.values()) deepFreeze(m);
  return {
    module: (id) => current?.get(id) ?? shared.get(id),
    sharedIds: () => [...shared.keys()],
    run: (code) => vm.runInContext(code, context),
    nextWorkflow() {
      current = new Map();
    },
  };
}
