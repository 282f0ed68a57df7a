/**
 * A value built on first use, then kept in this closure. Every zod schema that workflow code can
 * reach is made this way, for two reasons. The modules that define them are preloaded into the
 * workflow sandbox's shared module cache (workers/workflow-bundle.ts), which the SDK deep-freezes:
 * a schema reachable from an export would be frozen and could not parse, while one held in a
 * closure is out of the freeze's reach. And built lazily, a schema costs only the trajectories
 * that use it — once per worker thread, since the preloaded modules are shared.
 */
export function lazy<T>(build: () => T): () => T {
  let value: T | undefined;
  let built = false;
  return () => {
    if (!built) {
      value = build();
      built = true;
    }
    return value as T;
  };
}
